"""Executing a plan's missing work: the request, the executor registry, the local executor, the model pool."""
