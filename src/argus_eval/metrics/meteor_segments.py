"""Per-segment METEOR kept for the process: a segment's score depends on its tokenised candidate and
references alone (the jar's SCORE statistics and EVAL's per-line score read nothing else), so a run's
caption cells, which share references and many captions, score each distinct segment once, in one
exchange with the JVM (caption.components_ahead), rather than two round trips per cell.

Only per-segment scores are kept: the jar's corpus aggregate over summed statistics depends on the whole
corpus, so score_captions, which reports it, asks the JVM every time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from argus_eval.metrics.meteor_remote import MeteorScorer

Segment = tuple[str, tuple[str, ...]]

_KNOWN: dict[Segment, float] = {}
_KNOWN_LIMIT = 2_000_000


def segment_scores(
    scorer: Callable[[], MeteorScorer], candidates: Sequence[str], references: Sequence[Sequence[str]]
) -> NDArray[np.float64]:
    """Per-segment METEOR of tokenised candidates and references; only segments not scored before in
    this process go to the scorer (made when needed), each once, in one call."""
    keys = [(c, tuple(r)) for c, r in zip(candidates, references, strict=True)]
    missing = list(dict.fromkeys(k for k in keys if k not in _KNOWN))
    if missing:
        _corpus, per = scorer().score([c for c, _ in missing], [list(r) for _, r in missing])
        if len(_KNOWN) + len(missing) > _KNOWN_LIMIT:
            _KNOWN.clear()
        _KNOWN.update(zip(missing, (float(x) for x in per), strict=True))
    return np.array([_KNOWN[k] for k in keys], dtype=np.float64)


def forget_segments() -> None:
    """Drop the segments scored so far (tests and benchmarks that time the JVM clear them first)."""
    _KNOWN.clear()


class KeptSegments:
    """A MeteorScorer over segment_scores for callers that use per-segment scores only: the scorer is
    made (a JVM started, if none is live) only when some segment is new; the corpus value is NaN."""

    def __init__(self, scorer: Callable[[], MeteorScorer]) -> None:
        self._scorer = scorer

    def score(
        self, candidates: Sequence[str], references: Sequence[Sequence[str]]
    ) -> tuple[float, NDArray[np.float64]]:
        """NaN and the per-segment scores."""
        return float("nan"), segment_scores(self._scorer, candidates, references)
