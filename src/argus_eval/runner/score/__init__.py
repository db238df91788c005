"""Scoring a run from its store: cell results, the failures block, the results.json model."""
