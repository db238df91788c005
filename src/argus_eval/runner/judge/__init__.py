"""Judging open answers after the models answered, and the judges block of results.json."""
