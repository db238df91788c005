"""Writing a run's output files: provenance, skipped records, errors naming the file."""
