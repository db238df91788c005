"""The users' layouts: lmms-lab parquet through `hf_datasets` (nested columns, presets, save_to_disk,
globs, one file per distinct embedded image) and VLMEvalKit TSVs (base64, back-references, multiple choice,
COCO_VAL captions); what each refuses, as one line naming the file, row and column."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest
import yaml
from PIL import Image

import argus_eval.data.loaders  # noqa: F401
from argus_eval.data.formats import FORMATS, LoadContext, load_dataset
from argus_eval.data.loaders.columns import ColumnShapeError, parse_path
from argus_eval.data.types import Dataset
from argus_eval.errors import DatasetError
from layout_fixtures import write_tsv
from pipeline_fixtures import cli

datasets = pytest.importorskip("datasets")

IMAGE_FEATURE = {"image": datasets.Image()}


def _png(color: tuple[int, int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (12, 10), color).save(buf, format="PNG")
    return buf.getvalue()


RED, BLUE = _png((200, 10, 10)), _png((10, 10, 200))


def _load(tmp_path: Path, **entry: Any) -> Dataset:
    options = FORMATS.get(entry["format"]).options.model_validate({"name": "t", **entry})
    return load_dataset(options, LoadContext(cache_dir=tmp_path / "cache"))


def _parquet(path: Path, rows: dict[str, list[Any]], features: dict[str, Any] | None = None) -> Path:
    feats = None
    if features is not None:
        inferred = datasets.Dataset.from_dict({k: v for k, v in rows.items() if k not in features}).features
        feats = datasets.Features({**inferred, **features})
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_dict(rows, features=feats).to_parquet(str(path))
    return path


def _vqav2(n: int = 3, images: list[bytes] | None = None) -> dict[str, list[Any]]:
    """lmms-lab/VQAv2 columns: ten {answer, answer_confidence, answer_id} per question."""
    pics = images or [RED, RED, BLUE]
    return {
        "question_id": [100 + i for i in range(n)],
        "question": [f"What is {i}?" for i in range(n)],
        "answers": [
            [
                {"answer": a, "answer_confidence": "yes", "answer_id": j}
                for j, a in enumerate(["2"] * 7 + ["3"] * 3)
            ]
            for _ in range(n)
        ],
        "multiple_choice_answer": ["2"] * n,
        "answer_type": ["number"] * n,
        "question_type": ["how many"] * n,
        "image_id": [7, 7, 8][:n],
        "image": [{"bytes": pics[i % len(pics)], "path": f"{i}.png"} for i in range(n)],
    }


def test_column_paths_reach_into_lists_of_structs_and_convert() -> None:
    row = {"answers": [{"answer": "a"}, {"answer": "b"}], "meta": {"src": "x"}, "qid": "000000179765.jpg"}
    assert parse_path("answers[].answer", "answers").pick(row) == ["a", "b"]
    assert parse_path("meta.src", "m").pick(row) == "x"
    assert parse_path("qid|file_number", "id").pick(row) == 179765
    # a Sequence of structs arrives as a dict of lists: read the same
    assert parse_path("answers[].answer", "answers").pick({"answers": {"answer": ["a", "b"]}}) == ["a", "b"]
    with pytest.raises(ColumnShapeError, match="has no field 'text'"):
        parse_path("answers[].text", "answers").pick(row)
    with pytest.raises(DatasetError, match=r"columns.answers: 'answers\[\]\[' is not a column path"):
        parse_path("answers[][", "answers")


def test_lmms_vqav2_preset_gives_ten_answers_and_one_image_per_content(tmp_path: Path) -> None:
    f = _parquet(tmp_path / "val" / "validation-00000-of-00001.parquet", _vqav2(), IMAGE_FEATURE)
    ds = _load(tmp_path, format="hf_datasets", builder="parquet", data_files=[f], preset="lmms-vqav2")
    by = {s.sample_id: s for s in ds.samples}
    assert list(by) == ["q/100", "q/101", "q/102"]
    assert by["q/100"].answers == ("2",) * 7 + ("3",) * 3
    assert by["q/100"].metadata["answer_type"] == "number"
    assert by["q/100"].metadata["categories"] == {"answer_type": "number"}
    # the two questions on the red image share one stored file; the blue one has its own
    assert by["q/100"].image == by["q/101"].image != by["q/102"].image
    red, blue = by["q/100"].image, by["q/102"].image
    assert red is not None and blue is not None
    assert sorted(p.name for p in ds.image_root.iterdir()) == sorted({red, blue})
    assert ds.image_path(by["q/102"]).read_bytes() == BLUE


def test_the_swap_control_never_pairs_questions_that_share_an_embedded_image(tmp_path: Path) -> None:
    """Stored once per content, the two questions on the red image are one image to the controls: the swap
    shows each of them the blue one, never the other red question's (identical) picture."""
    from argus_eval.perturb.controls import swap_partners

    f = _parquet(tmp_path / "v.parquet", _vqav2(), IMAGE_FEATURE)
    ds = _load(tmp_path, format="hf_datasets", builder="parquet", data_files=[f], preset="lmms-vqav2")
    by = {s.sample_id: s for s in ds.samples}
    for seed in range(5):
        partners = swap_partners([(s.sample_id, s.image) for s in ds.samples], seed)
        assert partners["q/100"] == partners["q/101"] == "q/102" and partners["q/102"] in ("q/100", "q/101")
        for sid, partner in partners.items():
            assert ds.image_path(by[sid]).read_bytes() != ds.image_path(by[partner]).read_bytes()


def test_rows_past_the_limit_store_no_image(tmp_path: Path) -> None:
    f = _parquet(tmp_path / "v.parquet", _vqav2(images=[RED, BLUE]), IMAGE_FEATURE)
    ds = _load(
        tmp_path, format="hf_datasets", builder="parquet", data_files=[f], preset="lmms-vqav2", limit=1
    )
    assert [s.sample_id for s in ds.samples] == ["q/100"]
    assert [p.read_bytes() for p in ds.image_root.iterdir()] == [RED]


def test_a_list_of_structs_mapped_as_text_is_refused_naming_the_column(tmp_path: Path) -> None:
    f = _parquet(tmp_path / "v.parquet", _vqav2(), IMAGE_FEATURE)
    cols = {"id": "question_id", "image": "image", "question": "question", "answers": "answers"}
    with pytest.raises(DatasetError) as e:
        _load(tmp_path, format="hf_datasets", builder="parquet", data_files=[f], columns=cols)
    assert str(e.value) == (
        f"{f}: row 0: column 'answers' (columns.answers) holds dict values where text is expected; "
        "map the text inside it, e.g. answers: answers[].<field> or answers.<field>"
    )
    numbers = _parquet(
        tmp_path / "n.parquet", {"q": ["How many?"], "a": [[2, 3]], "image": [RED]}, IMAGE_FEATURE
    )
    with pytest.raises(DatasetError, match=r"row 0: column 'a' \(columns.answers\) holds int values"):
        _load(tmp_path, format="hf_datasets", builder="parquet", data_files=[numbers],
              columns={"question": "q", "answers": "a", "image": "image"})  # fmt: skip
    # a null caption inside a list is an empty text: left out and counted, never the string "None"
    nulls = _parquet(tmp_path / "c.parquet", {"c": [["A cat.", None]], "image": [RED]}, IMAGE_FEATURE)
    ds = _load(tmp_path, format="hf_datasets", builder="parquet", data_files=[nulls],
               columns={"texts": "c", "image": "image"})  # fmt: skip
    assert ds.samples[0].texts == ("A cat.",) and len(ds.skipped) == 1


def test_parquet_globs_and_save_to_disk_read_the_same_rows(tmp_path: Path) -> None:
    rows = _vqav2()
    half = {k: v[:2] for k, v in rows.items()}
    rest = {k: v[2:] for k, v in rows.items()}
    _parquet(tmp_path / "p" / "validation-00000.parquet", half, IMAGE_FEATURE)
    _parquet(tmp_path / "p" / "validation-00001.parquet", rest, IMAGE_FEATURE)
    pattern = tmp_path / "p" / "validation-*.parquet"
    globbed = _load(
        tmp_path, format="hf_datasets", builder="parquet", data_files=[pattern], preset="lmms-vqav2"
    )
    feats = datasets.Dataset.from_dict({k: v for k, v in rows.items() if k != "image"}).features
    saved = datasets.Dataset.from_dict(rows, features=datasets.Features({**feats, **IMAGE_FEATURE}))
    datasets.DatasetDict({"validation": saved}).save_to_disk(str(tmp_path / "disk"))
    disk = _load(
        tmp_path, format="hf_datasets", builder="save_to_disk", data_files=[tmp_path / "disk"],
        split="validation", preset="lmms-vqav2",
    )  # fmt: skip
    assert [s.to_json() for s in globbed.samples] == [s.to_json() for s in disk.samples]
    assert len(globbed.samples) == 3
    with pytest.raises(DatasetError, match="no split 'test'; its splits: \\['validation'\\]"):
        _load(
            tmp_path,
            format="hf_datasets",
            builder="save_to_disk",
            data_files=[tmp_path / "disk"],
            split="test",
        )
    with pytest.raises(DatasetError, match=r"pattern .*nothing-\*.parquet' matches no file"):
        _load(tmp_path, format="hf_datasets", builder="parquet", data_files=[tmp_path / "nothing-*.parquet"])


def test_flickr30k_and_coco_caption2017_presets(tmp_path: Path) -> None:
    flickr = _parquet(
        tmp_path / "flickr.parquet",
        {
            "image": [{"bytes": RED, "path": "1000092795.jpg"}],
            "caption": [["A red square.", "Red."]],
            "sentids": [["0", "1"]],
            "img_id": ["0"],
            "filename": ["1000092795.jpg"],
        },
        IMAGE_FEATURE,
    )
    (s,) = _load(
        tmp_path, format="hf_datasets", builder="parquet", data_files=[flickr], preset="lmms-flickr30k"
    ).samples
    assert (s.sample_id, s.texts, s.question) == ("img/0", ("A red square.", "Red."), None)
    assert s.metadata == {"filename": "1000092795.jpg"}
    coco = _parquet(
        tmp_path / "coco.parquet",
        {
            "image": [{"bytes": BLUE, "path": None}],
            "question_id": ["000000179765.jpg"],
            "id": [38],
            "answer": [["A blue square.", "Blue.", "A square."]],
        },
        IMAGE_FEATURE,
    )
    (c,) = _load(
        tmp_path, format="hf_datasets", builder="parquet", data_files=[coco], preset="lmms-coco-caption2017"
    ).samples
    assert (c.sample_id, c.texts) == ("img/179765", ("A blue square.", "Blue.", "A square."))


def test_parquet_bad_cells_are_one_line_naming_file_row_and_column(tmp_path: Path) -> None:
    missing = _vqav2()
    del missing["answers"]
    f = _parquet(tmp_path / "missing.parquet", missing, IMAGE_FEATURE)
    with pytest.raises(DatasetError) as e:
        _load(tmp_path, format="hf_datasets", builder="parquet", data_files=[f], preset="lmms-vqav2")
    assert str(e.value).startswith(
        f"{f}: row 0: column 'answers' (columns.answers: 'answers[].answer') is not"
    )
    broken = _vqav2()
    broken["image"][2] = {"bytes": b"\x89PNG not really", "path": "2.png"}
    g = _parquet(tmp_path / "broken.parquet", broken, IMAGE_FEATURE)
    with pytest.raises(DatasetError, match=rf"^{g}: row 2: column 'image': the image does not decode"):
        _load(tmp_path, format="hf_datasets", builder="parquet", data_files=[g], preset="lmms-vqav2")


def _bad_entry(tmp_path: Path, kind: str) -> tuple[dict[str, Any], str]:
    """A dataset entry with one bad cell of this kind, and the start of the line that must name it."""
    rows = _vqav2()
    parquet = {"name": "bad", "format": "hf_datasets", "builder": "parquet", "preset": "lmms-vqav2"}
    if kind == "missing column":
        del rows["answers"]
        f = _parquet(tmp_path / "missing.parquet", rows, IMAGE_FEATURE)
        return {**parquet, "data_files": [str(f)]}, f"{f}: row 0: column 'answers' (columns.answers"
    if kind == "undecodable image":
        rows["image"][1] = {"bytes": b"garbage", "path": "1.png"}
        f = _parquet(tmp_path / "broken.parquet", rows, IMAGE_FEATURE)
        return {**parquet, "data_files": [str(f)]}, f"{f}: row 1: column 'image': the image does not decode"
    header = ["index", "image", "question", "answer"]
    t = write_tsv(tmp_path / "a.tsv", header, [["0", _b64(RED), "q?", "a"], ["1", "7", "q?", "a"]])
    entry = {"name": "bad", "format": "vlmevalkit-tsv", "tsv": str(t)}
    return entry, f"{t}: line 3 (index 1): column 'image': back-reference '7' names no row holding an image"


@pytest.mark.parametrize("kind", ["missing column", "undecodable image", "missing back-reference"])
def test_the_cli_refuses_a_bad_cell_in_one_line_with_exit_2(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    entry, expected = _bad_entry(tmp_path, kind)
    config = tmp_path / "run.yaml"
    run = {"name": "x", "cache_dir": str(tmp_path / "c"), "datasets": [entry], "tasks": ["reasoning"]}
    config.write_text(yaml.safe_dump({**run, "models": [{"name": "z", "spec": "zoo:gemma3"}]}))
    capsys.readouterr()  # what writing the file printed
    for argv in (
        ["datasets", "--check", str(config)],
        ["run", "--config", str(config), "--out", str(tmp_path / "o")],
    ):
        code, printed = cli(argv, monkeypatch, capsys)
        lines = printed.strip().splitlines()
        assert code == 2 and len(lines) == 1 and expected in lines[0], (argv, printed)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_vlmevalkit_tsv_back_references_multiple_choice_and_captions(tmp_path: Path) -> None:
    vqa = write_tsv(
        tmp_path / "VQA.tsv",
        ["index", "image", "question", "answer", "category"],
        [
            ["0", _b64(RED), "What colour?", "red", "colour"],
            ["1", "0", "What shape?", "['square', 'box']", "shape"],  # refers to row 0's image
            ["2", _b64(BLUE), "Anything?", "", "x"],  # no answer: unscorable
        ],
    )
    ds = _load(tmp_path, format="vlmevalkit-tsv", tsv=vqa)
    s = {x.sample_id: x for x in ds.samples}
    assert s["q/0"].answers == ("red",) and s["q/1"].answers == ("square", "box")
    assert s["q/0"].image == s["q/1"].image != s["q/2"].image
    assert ds.image_path(s["q/1"]).read_bytes() == RED
    assert s["q/0"].metadata["categories"] == {"category": "colour"}
    assert s["q/2"].metadata["unscorable"] is True and s["q/2"].answers == ()
    mc = write_tsv(
        tmp_path / "MC.tsv",
        ["index", "image", "question", "A", "B", "C", "D", "answer"],
        [
            ["5", _b64(RED), "Which colour?", "blue", "red", "green", "", "B"],
            ["6", "5", "Which shape?", "circle", "square", "", "", "C"],  # no option C: skipped
        ],
    )
    m = _load(tmp_path, format="vlmevalkit-tsv", tsv=mc)
    (q,) = m.samples
    assert (q.choices, q.answer_index) == (("blue", "red", "green"), 1)
    assert [r.line() for r in m.skipped] == [
        f"{mc}: line 3 (index 6): column 'answer': answer 'C' is not one of the options ['A', 'B']"
    ]
    caps = write_tsv(
        tmp_path / "COCO_VAL.tsv",
        ["index", "image", "answer"],
        [["9", _b64(BLUE), "['A blue square.', 'Blue.']"]],
    )
    (c,) = _load(tmp_path, format="vlmevalkit-tsv", tsv=caps).samples
    assert (c.sample_id, c.texts, c.question) == ("img/9", ("A blue square.", "Blue."), None)


def test_vlmevalkit_tsv_bad_cells(tmp_path: Path) -> None:
    header = ["index", "image", "question", "answer"]
    dangling = write_tsv(tmp_path / "a.tsv", header, [["0", _b64(RED), "q?", "a"], ["1", "7", "q?", "a"]])
    with pytest.raises(DatasetError) as e:
        _load(tmp_path, format="vlmevalkit-tsv", tsv=dangling)
    assert str(e.value).startswith(
        f"{dangling}: line 3 (index 1): column 'image': back-reference '7' names no row"
    )
    broken = write_tsv(tmp_path / "b.tsv", header, [["0", _b64(b"x" * 80), "q?", "a"]])
    with pytest.raises(
        DatasetError, match=rf"^{broken}: line 2 \(index 0\): column 'image': the image does not"
    ):
        _load(tmp_path, format="vlmevalkit-tsv", tsv=broken)
    not64 = write_tsv(tmp_path / "c.tsv", header, [["0", "!" * 80, "q?", "a"]])
    with pytest.raises(
        DatasetError, match=rf"^{not64}: line 2 \(index 0\): column 'image': the cell is not base64"
    ):
        _load(tmp_path, format="vlmevalkit-tsv", tsv=not64)
    short = write_tsv(
        tmp_path / "d.tsv", header, [["0", _b64(RED), "q?", "a"], ["1", "0", "q?"], ["2", "0", "", ""]]
    )
    skipped = _load(tmp_path, format="vlmevalkit-tsv", tsv=short).skipped
    assert [r.line() for r in skipped] == [
        f"{short}: line 3: row has 3 fields, the header has 4",
        f"{short}: line 4 (index 2): column 'answer': a row without a question needs captions",
    ]
    with pytest.raises(DatasetError, match="lacks column 'index'"):
        _load(
            tmp_path,
            format="vlmevalkit-tsv",
            tsv=write_tsv(tmp_path / "e.tsv", ["id", "image"], [["0", "x"]]),
        )
