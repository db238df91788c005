"""The report's one pass over samples.jsonl: the fast line parser accepts and refuses exactly what the
reference path (Python's json, then model_validate: the reader as it always was) does, one pass serves
the gallery and the shortfall note, and the page is the same whether the gallery reads the file itself
or is handed the pass."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_core import PydanticCustomError

import argus_eval.report.build as build
import argus_eval.report.gallery as gallery
from argus_eval.errors import ResultsError
from argus_eval.report.gallery import select_worst
from argus_eval.report.html import HtmlOptions, render_html
from argus_eval.report.samples import SampleLine, iter_samples, parse_with_json, samples_shortfall
from argus_eval.results_model import load_results
from argus_eval.results_model.base import _json
from report_fixtures import make_run


def reference_read(path: Path) -> Iterator[SampleLine]:
    """Line by line through the reference path only (Python's json, then model_validate)."""
    with open(path, encoding="utf-8") as fh:
        yield from (parse_with_json(line, path, n) for n, line in enumerate(fh, 1) if line.strip())


def outcome(read: Iterator[SampleLine]) -> tuple[str, str]:
    """('ok', the record as repr: an int stays an int, floats to the last bit) or ('error', message)."""
    try:
        return "ok", repr([r.model_dump() for r in read])
    except ResultsError as e:
        return "error", str(e)


def same_as_reference(tmp_path: Path, line: str) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    assert outcome(iter_samples(path)) == outcome(reference_read(path)), line


BASE = '{"model": "m", "task": "t", "dataset": "d", "condition": "clean", "sample_id": "s"'

EDGE_LINES = [
    BASE + ', "question": "a\tb"}',  # a raw control character in a string: invalid JSON to both
    BASE + ', "question": "\\ud800"}',  # a lone surrogate: Python's json takes it, pydantic-core not
    BASE + ', "question": "\\ud83d\\ude00 \\u00e9\\/"}',
    BASE + ', "score": NaN}',
    BASE + ', "score": -Infinity}',
    BASE + ', "score": 1e400}',  # overflows to inf: not a finite number
    BASE + ', "question": [1, [NaN]]}',
    BASE + ', "unused": NaN}',  # an ignored key with a value only Python's json reads
    BASE + ', "score": 0.1000000000000000055511151231257827}',
    BASE + ', "score": 2.2250738585072011e-308}',
    BASE + ', "score": 4.9e-324}',
    BASE + ', "score": 123456789012345678901234567890}',
    BASE + ', "score": -0.0}',
    BASE + ', "score": 1E2}',
    BASE + ', "score": true}',
    BASE + ', "score": "0.5"}',
    BASE + ', "severity": 3.0}',
    BASE + ', "severity": "3"}',
    BASE + ', "sample_id": 7}',
    BASE + ', "question": {"k": 1, "k": [2, {"x": null}]}}',  # a duplicate key: the last one wins
    BASE + ', "model": "twice"}',
    BASE + "}  trailing",
    BASE + ",}",
    BASE + ', "score": 01}',
    "\ufeff" + BASE + "}",
    '["a", "list"]',
    '"a string"',
    "null",
    '{"model": "m"}',
]


@pytest.mark.parametrize("line", EDGE_LINES)
def test_edge_lines_read_as_the_reference_reader_reads_them(tmp_path: Path, line: str) -> None:
    same_as_reference(tmp_path, line)


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
_values = st.recursive(
    _scalars,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=4), kids, max_size=4),
    max_leaves=12,
)
_records = st.fixed_dictionaries(
    {
        "model": st.text(max_size=4),
        "task": st.just("t"),
        "dataset": st.just("d"),
        "sample_id": st.text(max_size=4) | _values,
    },
    optional={
        "condition": st.sampled_from(["clean", "image:fog@3"]) | _values,
        "severity": _values,
        "score": _values,
        "question": _values,
        "reference": _values,
        "image_path": _values,
        "extra": _values,
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(record=_records, cut=st.integers(min_value=0, max_value=400), mangle=st.booleans())
def test_any_line_reads_as_the_reference_reader_reads_it(
    tmp_path: Path, record: dict[str, Any], cut: int, mangle: bool
) -> None:
    line = json.dumps(record)  # NaN and Infinity written as Python's json writes them
    if mangle:  # a line cut short, as a killed writer leaves it
        line = line[: cut % (len(line) + 1)]
    same_as_reference(tmp_path, line)


def reference_json(value: Any) -> Any:
    """The free-form JSON validator as it was before strings skipped the call per item."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise PydanticCustomError("finite_number", "Input should be a finite number")
        return value
    if isinstance(value, (list, tuple)):
        return [reference_json(v) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise PydanticCustomError("json_key", "Object keys should be strings")
        return {k: reference_json(v) for k, v in value.items()}
    raise PydanticCustomError(
        "json", "Input should be a JSON value, got {kind}", {"kind": type(value).__name__}
    )


class Label(str):
    """A str subclass: still a string to the validator."""


_python_values = st.recursive(
    _scalars | st.builds(Label, st.text(max_size=3)) | st.builds(bytes) | st.just(object()),
    lambda kids: (
        st.lists(kids, max_size=4)
        | st.lists(kids, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=3) | st.integers(0, 3), kids, max_size=3)
    ),
    max_leaves=12,
)


def _json_outcome(fn: Any, value: Any) -> tuple[str, str]:
    try:
        return "ok", repr(fn(value))
    except PydanticCustomError as e:
        return "error", str(e)


@settings(max_examples=300, deadline=None)
@given(value=_python_values)
def test_free_form_json_validator_equals_the_recursive_reference(value: Any) -> None:
    assert _json_outcome(_json, value) == _json_outcome(reference_json, value)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("run"), hostile=False)


def test_the_pass_counts_the_lines_the_shortfall_counts(run: Path, tmp_path: Path) -> None:
    cells = load_results(run / "results.json").cells
    lines = (run / "samples.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    cut = tmp_path / "samples.jsonl"
    cut.write_text("".join(lines[: len(lines) - 7]), encoding="utf-8")  # the last cell loses 7 lines
    last = json.loads(lines[-1])
    expected = Counter((r["model"], r["task"], r["dataset"], r["condition"]) for r in map(json.loads, lines))
    worst = select_worst(iter_samples(cut), per_cell=3)
    assert worst.total == len(lines) - 7
    key = (last["model"], last["task"], last["dataset"], last["condition"])
    assert worst.lines[key] == expected[key] - 7 and +(expected - worst.lines) == Counter({key: 7})
    note = samples_shortfall(cut, cells, worst.lines)
    assert note is not None and note == samples_shortfall(cut, cells)  # counted by its own pass
    assert f"holds {len(lines) - 7} of the {len(lines)} sample lines" in note
    assert f"{' / '.join(key)}: {expected[key] - 7} of {expected[key]}" in note
    assert (
        samples_shortfall(
            run / "samples.jsonl", cells, select_worst(iter_samples(run / "samples.jsonl"), 3).lines
        )
        is None
    )


def test_write_reports_reads_samples_jsonl_once_and_the_page_is_unchanged(
    run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = load_results(run / "results.json")
    opts = HtmlOptions(gallery_per_cell=2)
    own_pass = render_html(results, run / "samples.jsonl", opts)  # the gallery reads the file itself
    reads: list[Path] = []

    def counted(path: Path) -> Iterator[SampleLine]:
        reads.append(path)
        return iter_samples(path)

    monkeypatch.setattr(build, "iter_samples", counted)
    monkeypatch.setattr(gallery, "iter_samples", counted)
    build.write_reports(run, opts)
    assert reads == [run / "samples.jsonl"]
    assert (run / "report.html").read_text(encoding="utf-8") == own_pass
