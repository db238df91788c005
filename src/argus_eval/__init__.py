"""ARGUS-EVAL: evaluate vision-language models on capability, consistency, robustness and efficiency.

``argus_eval.evaluate(config, models=..., out=...)`` runs an evaluation from Python (docs/python.md). It
is imported on first use, so that ``import argus_eval`` loads none of the wings (and no torch)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from argus_eval.version import __version__

if TYPE_CHECKING:
    from argus_eval.runner.entry import evaluate

__all__ = ["__version__", "evaluate"]


def __getattr__(name: str) -> Any:
    """``evaluate``, imported when first asked for (the runner and what it imports load then)."""
    if name == "evaluate":
        from argus_eval.runner.entry import evaluate

        return evaluate
    raise AttributeError(f"module 'argus_eval' has no attribute {name!r}")
