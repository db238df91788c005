"""Builders of tiny, randomly initialised checkpoints of each supported family, for the tests and the
benchmarks: never imported by a run, the CLI or the zoo (they live apart from the runtime path)."""
