"""Typed samples and datasets: the one shape every loader yields and every task consumes."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Sample:
    """One evaluation item.

    texts are the image's reference texts (captions; retrieval positives). question/choices/answers
    describe a reasoning item; answers holds every gold answer (10 for VQA v2, 1 for CLEVR) and
    answer_index the correct choice for multiple-choice items. metadata carries skill tags
    (e.g. question family) as JSON-able values.
    """

    sample_id: str
    image: str | None
    texts: tuple[str, ...] = ()
    question: str | None = None
    choices: tuple[str, ...] = ()
    answers: tuple[str, ...] = ()
    answer_index: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "sample_id": self.sample_id,
            "image": self.image,
            "texts": list(self.texts),
            "question": self.question,
            "choices": list(self.choices),
            "answers": list(self.answers),
            "answer_index": self.answer_index,
            "metadata": dict(self.metadata),
        }


@dataclass(frozen=True)
class SkippedRecord:
    """A record a loader could not use, with where it was and why (loaders never drop silently)."""

    source: str
    record: str
    reason: str

    def line(self) -> str:
        """How a person reads it: file, record (line or index) and reason."""
        return f"{self.source}: {self.record}: {self.reason}"

    def to_json(self) -> dict[str, str]:
        """One line of skipped.jsonl (the dataset's name is added by the writer)."""
        return {"source": self.source, "record": self.record, "reason": self.reason}


# (family, question_type, answer) triples of a training split
TrainAnswers = tuple[tuple[str, str, str], ...]


@dataclass(frozen=True)
class TrainPrior:
    """A QA dataset's training-split answers, what its blind (question-only) baseline is fitted on, or
    why there are none."""

    answers: TrainAnswers = ()
    # Why answers is empty although the format has a training split (the blind baseline says so).
    withheld: str | None = None
    # Where the answers came from (file and config key), for the plan and the report.
    source: str | None = None
    # How an answer reads: "text" (the answer itself) or "option_index" (the position of the right
    # option, for multiple-choice items whose options differ per question, as VCR's do).
    form: str = "text"


@dataclass
class Dataset:
    """A loaded dataset: samples plus where their images live and a content fingerprint."""

    name: str
    samples: list[Sample]
    image_root: Path
    fingerprint: str
    skipped: list[SkippedRecord] = field(default_factory=list)
    # The answer vocabulary of closed-form QA (CLEVR's 28 answers), used by substitute protocols.
    answer_vocab: tuple[str, ...] = ()
    # Training-split text material available to substitute protocols (e.g. a caption bank).
    caption_bank: tuple[str, ...] = ()
    train_prior: TrainPrior = TrainPrior()
    info: dict[str, Any] = field(default_factory=dict)
    # Whether an image may be a link that resolves outside image_root (data/paths.py checks it).
    allow_symlinks: bool = False

    def image_path(self, sample: Sample) -> Path:
        if sample.image is None:
            raise ValueError(f"sample {sample.sample_id} has no image")
        return self.image_root / sample.image


def fingerprint_of(*parts: Any, files: Sequence[Path] = ()) -> str:
    """sha256 over JSON-able parts and the bytes of files; short hex."""
    h = hashlib.sha256()
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, default=str).encode())
    for f in files:
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:16]
