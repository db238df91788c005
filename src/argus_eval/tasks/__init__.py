"""How it is asked and scored: tasks turn samples into protocol requests and predictions into scores."""
