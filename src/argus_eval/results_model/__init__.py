"""The results.json contract: a typed, frozen Results model that the runner writes and that report,
compare and the advisor read. It imports nothing of the project but errors, so every wing may use it."""

from argus_eval.results_model.document import SCHEMA, Results
from argus_eval.results_model.io import load_results, results_from_data, results_json, results_text

__all__ = ["SCHEMA", "Results", "load_results", "results_from_data", "results_json", "results_text"]
