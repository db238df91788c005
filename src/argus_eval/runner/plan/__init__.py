"""Planning a run: its datasets, cells, baselines, and what it will cost before it runs."""
