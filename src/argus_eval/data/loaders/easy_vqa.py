"""easy-vqa (PyPI easy-vqa, MIT): 64x64 single-shape images, 13 answers, shipped inside the package.

Needs the package installed (pip install easy-vqa); without it, loading raises DatasetError saying so.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from pydantic import Field

from argus_eval.data.formats import DatasetOptions, FormatSpec, LoadContext
from argus_eval.data.loaders._common import counts, limit_each_kind
from argus_eval.data.paths import safe_relpath
from argus_eval.data.types import Dataset, Sample, fingerprint_of
from argus_eval.errors import DatasetError

# split -> (questions function, image paths function) of the easy_vqa package
SPLIT_API: dict[str, tuple[str, str]] = {
    "train": ("get_train_questions", "get_train_image_paths"),
    "test": ("get_test_questions", "get_test_image_paths"),
}


class EasyVqaOptions(DatasetOptions):
    """Which easy-vqa split to load."""

    split: str = Field(default="test", description="train or test")


def _module() -> Any:
    try:
        return importlib.import_module("easy_vqa")
    except ImportError:
        raise DatasetError("format easy_vqa needs the easy-vqa package: pip install easy-vqa") from None


def load_easy_vqa(options: DatasetOptions, ctx: LoadContext) -> Dataset:
    """Load an easy-vqa split as question samples (closed vocabulary from get_answers())."""
    assert isinstance(options, EasyVqaOptions)
    if options.split not in SPLIT_API:
        raise DatasetError(
            f"dataset {options.name!r}: easy_vqa split {options.split!r}; valid: {sorted(SPLIT_API)}"
        )
    mod = _module()
    q_fn, p_fn = SPLIT_API[options.split]
    questions, answers, image_ids = getattr(mod, q_fn)()
    paths: dict[Any, str] = getattr(mod, p_fn)()
    root = Path(os.path.commonpath(list(paths.values()))) if paths else Path(".")
    samples = []
    for k, (q, a, iid) in enumerate(zip(questions, answers, image_ids, strict=True)):
        if iid not in paths:
            raise DatasetError(f"easy_vqa {options.split}: question {k}: image id {iid!r} has no image path")
        rel = safe_relpath(
            os.path.relpath(paths[iid], root), source="easy_vqa", record=f"question {k}", field="image"
        )
        samples.append(Sample(f"q/{k}", rel, question=q, answers=(str(a),), metadata={"image_id": iid}))
    samples = limit_each_kind(samples, options.limit)
    vocab = tuple(str(a) for a in mod.get_answers())
    return Dataset(
        name=options.name,
        samples=samples,
        image_root=root,
        fingerprint=fingerprint_of(
            options.model_dump(mode="json"), getattr(mod, "__version__", ""), len(samples)
        ),
        answer_vocab=vocab,
        info={"split": options.split, "counts": counts(samples)},
    )


SPEC = FormatSpec(
    options=EasyVqaOptions, load=load_easy_vqa, description="easy-vqa package data (if installed)"
)
