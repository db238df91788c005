"""Property-based fuzzing of every loader over its official schema: each field of each record kind is
corrupted (removed, or replaced by a value of any JSON type); a load then gives a well-formed dataset
or one DatasetError naming the file, never another exception."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import argus_eval.data.loaders  # noqa: F401  (registers the formats)
from argus_eval.data.formats import FORMATS, LoadContext
from argus_eval.data.types import Dataset
from argus_eval.errors import DatasetError

FIX = Path(__file__).parent / "fixtures" / "data"
MISSING = object()

Locator = Callable[[Any], dict[str, Any]]


@dataclass(frozen=True)
class Schema:
    """One official file layout: the fixture files it needs, the one corrupted, and its record kinds."""

    format: str
    files: dict[str, str]  # option name -> fixture path under FIX
    target: str  # option whose file is corrupted
    records: dict[str, Locator]  # record kind -> where its first record sits in the parsed file
    options: dict[str, Any] = field(default_factory=dict)
    jsonl: bool = False


VG = {
    "image_data": "vg/image_data.json",
    "region_descriptions": "vg/region_descriptions.json",
    "question_answers": "vg/question_answers.json",
}
SCHEMAS = {
    "coco": Schema("coco", {"annotations": "coco/captions_val2014.json"}, "annotations",
                   {"image": lambda t: t["images"][0], "annotation": lambda t: t["annotations"][0]}),
    "karpathy": Schema("karpathy", {"annotations": "karpathy/dataset_coco.json"}, "annotations",
                       {"image": lambda t: t["images"][0],
                        "sentence": lambda t: t["images"][0]["sentences"][0]}),
    "lavis": Schema("karpathy", {"annotations": "karpathy/coco_karpathy_test.json"}, "annotations",
                    {"entry": lambda t: t[0]}),
    "vqa-questions": Schema("vqa", {"questions": "vqa/v2_OpenEnded_mscoco_val2014_questions.json",
                                    "annotations": "vqa/v2_mscoco_val2014_annotations.json"}, "questions",
                            {"question": lambda t: t["questions"][0]}),
    "vqa-annotations": Schema("vqa", {"questions": "vqa/v2_OpenEnded_mscoco_val2014_questions.json",
                                      "annotations": "vqa/v2_mscoco_val2014_annotations.json"}, "annotations",
                              {"annotation": lambda t: t["annotations"][0],
                               "answer": lambda t: t["annotations"][0]["answers"][0]}),
    "clevr": Schema("clevr", {"questions": "clevr/questions/CLEVR_val_questions.json",
                              "scenes": "clevr/scenes/CLEVR_val_scenes.json"}, "questions",
                    {"question": lambda t: t["questions"][0],
                     "program step": lambda t: t["questions"][0]["program"][0]}),
    "clevr-scenes": Schema("clevr", {"questions": "clevr/questions/CLEVR_val_questions.json",
                                     "scenes": "clevr/scenes/CLEVR_val_scenes.json"}, "scenes",
                           {"scene": lambda t: t["scenes"][0]}),
    "vcr": Schema("vcr", {"annotations": "vcr/val.jsonl"}, "annotations", {"item": lambda t: t}, jsonl=True),
    "vg-images": Schema("visual_genome", VG, "image_data", {"image": lambda t: t[0]}),
    "vg-regions": Schema("visual_genome", VG, "region_descriptions",
                         {"entry": lambda t: t[0], "region": lambda t: t[0]["regions"][0]}),
    "vg-qas": Schema("visual_genome", VG, "question_answers",
                     {"entry": lambda t: t[0], "qa": lambda t: t[0]["qas"][0]}),
}  # fmt: skip


def _read(path: Path, jsonl: bool) -> Any:
    text = path.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()] if jsonl else json.loads(text)


def _cases() -> list[tuple[str, str, str]]:
    """(schema, record kind, field) for every field of the first record of every kind."""
    out = []
    for name, schema in SCHEMAS.items():
        top = _read(FIX / schema.files[schema.target], schema.jsonl)
        for kind, locate in schema.records.items():
            record = locate(top[0] if schema.jsonl else top)
            out += [(name, kind, key) for key in record]
    return out


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)  # fmt: skip
CORRUPT = (
    st.just(MISSING) | JSON_VALUES | st.sampled_from(["", " ", "../../etc/passwd", "/abs.jpg", "\ud800"])
)


def _load(schema: Schema, root: Path) -> Dataset:
    spec = FORMATS.get(schema.format)
    opts = {"name": "fuzz", "format": schema.format, **schema.options}
    opts |= {k: str(root / Path(v).name) for k, v in schema.files.items()}
    opts["images"] = str(root)
    return spec.load(spec.options.model_validate(opts), LoadContext(cache_dir=root / "cache"))


def _check_shape(ds: Dataset) -> None:
    for s in ds.samples:
        assert isinstance(s.sample_id, str) and s.sample_id
        assert all(isinstance(t, str) and t.strip() for t in s.texts)
        assert s.question is None or (isinstance(s.question, str) and s.question.strip())
        assert all(isinstance(a, str) for a in s.answers)
        assert s.image is None or (isinstance(s.image, str) and ".." not in s.image.split("/"))


@pytest.mark.parametrize(("schema_name", "kind", "key"), _cases())
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bad=CORRUPT)
def test_a_corrupted_field_loads_or_is_one_named_error(
    schema_name: str, kind: str, key: str, bad: Any
) -> None:
    schema = SCHEMAS[schema_name]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for rel in schema.files.values():
            shutil.copy(FIX / rel, root / Path(rel).name)
        target = root / Path(schema.files[schema.target]).name
        top = _read(target, schema.jsonl)
        record = schema.records[kind](top[0] if schema.jsonl else top)
        if bad is MISSING:
            del record[key]
        else:
            record[key] = bad
        if schema.jsonl:
            target.write_text("".join(json.dumps(r) + "\n" for r in top), encoding="utf-8")
        else:
            target.write_text(json.dumps(top), encoding="utf-8")
        try:
            ds = _load(schema, root)
        except DatasetError as e:
            assert target.name in str(e) or str(root) in str(e), str(e)
            assert "\n" not in str(e)
            return
        _check_shape(ds)
