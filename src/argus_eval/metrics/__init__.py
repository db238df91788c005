"""Pure metric functions over predictions and references: no model code, no I/O."""
