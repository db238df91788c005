"""Reports built only from results.json and samples.jsonl: HTML, markdown, CSV."""
