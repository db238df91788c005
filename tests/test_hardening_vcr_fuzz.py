"""Property-based fuzzing of VCR lines (beside the field fuzz of every loader in test_hardening_fuzz.py):
whole lines are generated, from well-formed to hostile (labels of any value, any number of choices, tokens
of any JSON type, lone surrogates, texts over the cap, bad object tags). A load gives samples whose every
text can reach a tokenizer, with each line either loaded or skipped and named, or one DatasetError naming
the file; never another exception."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import argus_eval.data.loaders  # noqa: F401  (registers the formats)
from argus_eval.data.formats import FORMATS, LoadContext
from argus_eval.data.text import MAX_TEXT_CHARS, is_valid_unicode
from argus_eval.errors import DatasetError

WORD = st.sampled_from(["the", "dog", "runs", "?", ".", "'s", "\ud800", "\udfff", "", " "]) | st.text(
    max_size=8
)
TAG = st.lists(st.integers(-1, 3), max_size=3)
TOKENS = st.lists(WORD | TAG, min_size=1, max_size=6) | st.just(["long"] * (MAX_TEXT_CHARS // 5 + 1))
JSONISH = (
    st.none() | st.booleans() | st.integers(-5, 9) | st.text(max_size=4) | st.lists(st.integers(), max_size=2)
)


def mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """good seven times in eight, else bad (one_of would draw the two alike)."""
    return st.integers(0, 7).flatmap(lambda i: bad if i == 7 else good)


@st.composite
def vcr_lines(draw: st.DrawFn, k: int) -> dict[str, Any]:
    """One VCR line: mostly well-formed, any field may be hostile."""
    four = st.lists(TOKENS, min_size=4, max_size=4)
    line: dict[str, Any] = {
        "annot_id": f"val-{k}",
        "img_fn": f"m/{k}.jpg",  # bad paths are the field fuzz's (test_hardening_fuzz.py)
        "objects": draw(
            mostly(st.lists(st.sampled_from(["person", "dog", "car"]), min_size=4, max_size=4), JSONISH)
        ),
        "question": draw(mostly(TOKENS, JSONISH)),
        "answer_choices": draw(mostly(four, st.lists(TOKENS, max_size=5) | JSONISH)),
        "rationale_choices": draw(mostly(four, st.lists(TOKENS, max_size=5) | JSONISH)),
        "answer_label": draw(mostly(st.integers(0, 3), st.integers(-2, 6) | JSONISH)),
        "rationale_label": draw(mostly(st.integers(0, 3), st.integers(-2, 6) | JSONISH)),
    }
    for key in draw(mostly(st.just(set()), st.sets(st.sampled_from(sorted(line)), max_size=1))):
        del line[key]
    return line


@settings(max_examples=150, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
@given(lines=st.integers(1, 4).flatmap(lambda n: st.tuples(*[vcr_lines(k) for k in range(n)])))
def test_generated_vcr_lines_load_as_usable_text_or_one_named_error(
    lines: tuple[dict[str, Any], ...],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "val.jsonl"
        path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
        spec = FORMATS.get("vcr")
        options = spec.options.model_validate(
            {"name": "f", "format": "vcr", "annotations": str(path), "images": tmp}
        )
        try:
            ds = spec.load(options, LoadContext(cache_dir=Path(tmp) / "cache"))
        except DatasetError as e:
            assert str(path) in str(e) and "\n" not in str(e), str(e)
            event("one DatasetError")
            return
    event(f"loaded, {'with' if ds.skipped else 'no'} skips")
    loaded = {s.metadata["annot_id"] for s in ds.samples}
    assert len(loaded) + len(ds.skipped) == len(lines)  # each line: loaded, or skipped and named
    for skip in ds.skipped:
        assert skip.source == str(path) and skip.record.startswith("line ") and skip.reason
    for s in ds.samples:
        assert s.question is not None and s.question.strip()
        for text in (s.question, *s.choices, *s.answers):
            assert is_valid_unicode(text) and len(text) <= 2 * MAX_TEXT_CHARS + 1, text[:80]
        assert s.answer_index is None or 0 <= s.answer_index < len(s.choices)
