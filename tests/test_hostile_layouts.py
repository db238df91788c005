"""Users' layouts refuse what they cannot read truthfully (issue 39): ids that are not integers or text,
answer indices outside the choices, stringified lists that hold other than text, blank questions, and
image paths that escape the image root. Each is a counted skip or one error naming file, row and column,
never a silently wrong sample."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

import argus_eval.data.loaders  # noqa: F401
from argus_eval.data.formats import FORMATS, LoadContext, load_dataset
from argus_eval.data.types import Dataset
from argus_eval.errors import DatasetError
from layout_fixtures import write_tsv

datasets = pytest.importorskip("datasets")


def _png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (10, 200, 10)).save(buf, format="PNG")
    return buf.getvalue()


def _load(tmp: Path, **entry: Any) -> Dataset:
    options = FORMATS.get(entry["format"]).options.model_validate({"name": "t", **entry})
    return load_dataset(options, LoadContext(cache_dir=tmp / "cache"))


def _parquet(tmp: Path, rows: dict[str, list[Any]], name: str = "d.parquet") -> Path:
    path = tmp / "data" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_dict(rows).to_parquet(str(path))
    return path


def _mc(tmp: Path, index: list[Any], **extra: Any) -> Dataset:
    n = len(index)
    rows: dict[str, list[Any]] = {"qid": list(range(n)), "q": [f"Which {i}?" for i in range(n)],
            "opts": [["red", "blue", "green"]] * n, "gold": index,
            "image": [{"bytes": _png(), "path": None}] * n}  # fmt: skip
    f = _parquet(tmp, rows)
    cols = {"id": "qid", "question": "q", "choices": "opts", "answer_index": "gold", "image": "image"}
    return _load(tmp, format="hf_datasets", builder="parquet", data_files=[f], columns=cols, **extra)


@pytest.mark.parametrize("bad", [1.5, None, float("nan")])
def test_a_parquet_id_that_is_not_an_integer_or_text_is_refused(tmp_path: Path, bad: Any) -> None:
    rows = {"qid": [0, bad], "q": ["a?", "b?"], "a": ["x", "y"]}
    f = _parquet(tmp_path, rows)
    with pytest.raises(DatasetError, match="ids must be integers or non-empty strings") as e:
        _load(tmp_path, format="hf_datasets", builder="parquet", data_files=[f],
              columns={"id": "qid", "question": "q", "answers": "a"})  # fmt: skip
    assert ": row " in str(e.value) and "\n" not in str(e.value)  # Arrow may type the whole column


@pytest.mark.parametrize(
    ("bad", "good", "why"),
    [(-1, 0, "outside the 3 choices"), (3, 0, "outside the 3 choices"), (99, 1, "outside the 3 choices"),
     (1.7, 2.0, "not a whole number")],
)  # fmt: skip
def test_an_answer_index_outside_the_choices_is_a_counted_skip(
    tmp_path: Path, bad: Any, good: Any, why: str
) -> None:
    ds = _mc(tmp_path, [bad, good])
    assert [s.sample_id for s in ds.samples] == ["q/1"] and len(ds.skipped) == 1
    assert why in str(ds.skipped[0]) and "row 0" in str(ds.skipped[0])
    with pytest.raises(DatasetError, match=why):
        _mc(tmp_path / "strict", [bad, good], strict=True)


def test_a_boolean_answer_index_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"no usable sample.*True is not a whole number"):
        _mc(tmp_path, [True, False])


def test_whole_answer_indices_are_kept(tmp_path: Path) -> None:
    ds = _mc(tmp_path, [0, 2, 1])
    assert [s.answer_index for s in ds.samples] == [0, 2, 1] and not ds.skipped
    floats = _mc(tmp_path / "f", [0.0, 2.0])  # a float column of whole numbers reads as those numbers
    assert [s.answer_index for s in floats.samples] == [0, 2]


@pytest.mark.parametrize("bad", ["../outside.png", "/etc/passwd", "a/../../b.png"])
def test_a_parquet_image_path_that_escapes_the_root_is_refused(tmp_path: Path, bad: str) -> None:
    f = _parquet(tmp_path, {"q": ["a?"], "a": ["x"], "img": [bad]})
    with pytest.raises(DatasetError, match=r"absolute|escapes") as e:
        _load(tmp_path, format="hf_datasets", builder="parquet", data_files=[f],
              columns={"question": "q", "answers": "a", "image": "img"})  # fmt: skip
    assert "\n" not in str(e.value)


def test_an_absolute_image_path_inside_the_root_is_made_relative(tmp_path: Path) -> None:
    (tmp_path / "data" / "imgs").mkdir(parents=True)
    inside = tmp_path / "data" / "imgs" / "one.png"
    inside.write_bytes(_png())
    f = _parquet(tmp_path, {"q": ["a?", "b?"], "a": ["x", "y"], "img": [str(inside), "imgs/one.png"]})
    ds = _load(tmp_path, format="hf_datasets", builder="parquet", data_files=[f],
               columns={"question": "q", "answers": "a", "image": "img"})  # fmt: skip
    assert [s.image for s in ds.samples] == ["imgs/one.png", "imgs/one.png"]
    assert ds.image_path(ds.samples[0]) == inside


def _tsv(tmp: Path, rows: list[list[str]], header: list[str] | None = None) -> Dataset:
    head = header or ["index", "image", "question", "answer"]
    path = write_tsv(tmp / "t.tsv", head, rows)
    return _load(tmp, format="vlmevalkit-tsv", tsv=str(path))


IMAGE = base64.b64encode(_png()).decode()


@pytest.mark.parametrize("cell", ["['blue', 1]", "[]", "[None]", "[['a']]"])
def test_a_stringified_list_of_other_than_text_is_a_skip(tmp_path: Path, cell: str) -> None:
    ds = _tsv(tmp_path, [["1", IMAGE, "What colour?", cell], ["2", IMAGE, "What colour?", "['blue', 'red']"]])
    assert [s.answers for s in ds.samples] == [("blue", "red")]
    assert len(ds.skipped) == 1 and "line 2 (index 1)" in str(ds.skipped[0])  # the file's line


@pytest.mark.parametrize("blank", ["   ", "\t", " \n "])
def test_a_blank_question_is_a_skip_not_a_caption(tmp_path: Path, blank: str) -> None:
    header = ["index", "image", "question", "answer", "A", "B"]
    ds = _tsv(tmp_path, [["1", IMAGE, blank, "A", "red", "blue"], ["2", IMAGE, "Which?", "B", "red", "blue"]],
              header)  # fmt: skip
    assert [(s.sample_id, s.answer_index) for s in ds.samples] == [("q/2", 1)]
    assert len(ds.skipped) == 1 and "blank" in str(ds.skipped[0])


def test_a_row_without_a_question_is_still_a_captioning_row(tmp_path: Path) -> None:
    ds = _tsv(tmp_path, [["1", IMAGE, "", "['a red square', 'a green square']"]])
    assert [s.texts for s in ds.samples] == [("a red square", "a green square")]


def _raw_tsv(tmp: Path, lines: list[str]) -> Dataset:
    """A TSV written line by line, quotes as given (csv.writer would balance them)."""
    path = tmp / "raw.tsv"
    path.write_text("\n".join(["index\timage\tquestion\tanswer", *lines]) + "\n", encoding="utf-8")
    return _load(tmp, format="vlmevalkit-tsv", tsv=str(path))


@pytest.mark.parametrize(
    ("lines", "kept", "swallowed"),
    [
        # a stray quote opening a question: the next three rows vanished into it
        (
            [f"1\t{IMAGE}\tWhat colour?\tblue", f'2\t{IMAGE}\t"Is it big?\tyes',
             f"3\t{IMAGE}\tHow many?\ttwo", f"4\t{IMAGE}\tWhere?\tleft", f'5\t{IMAGE}\tWhich?" no\tred',
             f"6\t{IMAGE}\tLast?\tno"],
            ["q/1", "q/6"], "line 3) swallowed lines 4-6, 3 more row(s)",
        ),
        # a quote that never closes: every row to the end of the file
        (
            [f"1\t{IMAGE}\tWhat colour?\tblue", f'2\t{IMAGE}\tHow big?\t"large',
             f"3\t{IMAGE}\tHow many?\ttwo"],
            ["q/1"], "line 3) swallowed lines 4-4, 1 more row(s)",
        ),
        # in the answer, closed by a later row's quote: the field count matches, the rows are still gone
        (
            [f'1\t{IMAGE}\tWhat colour?\t"blue', f"2\t{IMAGE}\tHow many?\ttwo", f'3\t{IMAGE}\tWhere?\tleft"',
             f"4\t{IMAGE}\tLast?\tno"],
            ["q/4"], "line 2) swallowed lines 3-4, 2 more row(s)",
        ),
    ],
)  # fmt: skip
def test_rows_an_unbalanced_quote_swallows_are_named(
    tmp_path: Path, lines: list[str], kept: list[str], swallowed: str
) -> None:
    ds = _raw_tsv(tmp_path, lines)
    assert [s.sample_id for s in ds.samples] == kept
    (skip,) = ds.skipped
    assert "an unbalanced quote in this row" in str(skip) and swallowed in str(skip), str(skip)


def test_a_quoted_question_over_two_lines_is_kept(tmp_path: Path) -> None:
    ds = _raw_tsv(tmp_path, [f'1\t{IMAGE}\t"What colour\nis it?"\tblue', f"2\t{IMAGE}\tHow many?\ttwo"])
    assert [s.question for s in ds.samples] == ["What colour\nis it?", "How many?"] and not ds.skipped


def _damaged(tmp: Path, kind: str) -> tuple[Path, dict[str, Any]]:
    """A dataset file or folder of one kind of damage, and the entry naming it."""
    rows: dict[str, list[Any]] = {"qid": [1, 2], "question": ["What?", "Which?"], "answers": [["a"], ["b"]]}
    columns = {"id": "qid", "question": "question", "answers": "answers"}
    if kind in ("garbage-parquet", "truncated-parquet"):
        path = _parquet(tmp, rows)
        body = path.read_bytes()
        path.write_bytes(b"\x07" * 400 if kind == "garbage-parquet" else body[: len(body) // 2])
        return path, {"builder": "parquet", "data_files": [str(path)], "columns": columns}
    folder = tmp / "saved"
    datasets.Dataset.from_dict(rows).save_to_disk(str(folder))
    target = folder / ("state.json" if kind == "state" else next(p.name for p in folder.glob("*.arrow")))
    target.write_bytes(b"\x87\x00 not what it was" if kind == "state" else target.read_bytes()[:40])
    return target, {"builder": "save_to_disk", "data_files": [str(folder)], "columns": columns}


@pytest.mark.parametrize("kind", ["garbage-parquet", "truncated-parquet", "state", "arrow"])
def test_an_unreadable_parquet_arrow_or_state_file_is_one_error_naming_it(
    tmp_path: Path, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    from argus_eval.errors import DatasetError

    damaged, entry = _damaged(tmp_path, kind)
    with pytest.raises(DatasetError) as ei:
        _load(tmp_path, format="hf_datasets", **entry)
    text = str(ei.value)
    folder = damaged.parent if kind in ("state", "arrow") else damaged
    assert text.startswith(f"{folder}: cannot be read as a dataset file (") and "\n" not in text, text
    assert not [r for r in caplog.records if r.name.startswith("datasets")]  # said once, by the error


@pytest.mark.parametrize("side", [15_000, 30_000])  # over PIL's limit (a warning), over twice it (an error)
@pytest.mark.parametrize("layout", ["tsv-base64", "parquet-bytes"])
def test_an_embedded_decompression_bomb_is_a_counted_failed_sample(
    tmp_path: Path, layout: str, side: int
) -> None:
    from argus_eval.data.check import check_dataset
    from argus_eval.data.images import load_image
    from argus_eval.errors import SampleError
    from hardening_fixtures import png_header

    bomb = png_header(side, side)
    if layout == "tsv-base64":
        cells = [IMAGE, base64.b64encode(bomb).decode(), IMAGE]
        ds = _tsv(tmp_path, [[str(i), c, f"Question {i}?", "a"] for i, c in enumerate(cells)])
    else:
        images = [{"bytes": b, "path": None} for b in (_png(), bomb, _png())]
        rows: dict[str, list[Any]] = {
            "qid": [0, 1, 2],
            "image": images,
            "question": ["Q0?", "Q1?", "Q2?"],
            "answers": [["a"]] * 3,
        }
        path = _parquet(tmp_path, rows)
        columns = {"id": "qid", "image": "image", "question": "question", "answers": "answers"}
        ds = _load(tmp_path, format="hf_datasets", builder="parquet", data_files=[str(path)], columns=columns)
    assert len(ds.samples) == 3  # loaded: the bomb is a sample's problem, as a file on disk would be
    report = check_dataset(ds)
    assert len(report.corrupt) == 1 and "too large to decode safely" in report.corrupt[0]
    (sample,) = [s for s in ds.samples if s.sample_id.endswith("1")]
    with pytest.raises(SampleError, match="too large to decode safely"):
        load_image(ds.image_path(sample), sample.sample_id)
