"""What an executor keeps while it runs: decoded images, swap partners, text galleries, and the
per-image features models share (a detector's regions; models/feature_cache.py).

One context per executor run (the local executor) or per worker (Ray), created and dropped by its
owner, so nothing outlives a run in module state and two runs in one process never share entries.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from argus_eval.data.types import Sample
from argus_eval.models.feature_cache import FeatureCache, MemoryFeatureCache
from argus_eval.runner.inputs.images import ImageCache


@dataclass
class ExecutionContext:
    """Per-run memo of the inputs every batch of a cell shares; entries are keyed by cell key and seed."""

    images: ImageCache = field(default_factory=ImageCache)
    partners: dict[tuple[str, int], dict[str, Sample]] = field(default_factory=dict)
    galleries: dict[tuple[str, int], tuple[str, ...]] = field(default_factory=dict)
    features: FeatureCache = field(default_factory=MemoryFeatureCache)
