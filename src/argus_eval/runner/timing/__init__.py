"""Timing trials inside a run: every model timed on every task it ran, interleaved."""
