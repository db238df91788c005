"""What a run and `argus report` make of hostile files: an image bomb and an image name too long for the
file system are counted sample failures (and a placeholder thumbnail), skipped records are named on the
console, in results.json and in skipped.jsonl, an answer with lone surrogates cannot poison the store, a
damaged store is one line, a cut samples.jsonl is said, and no credential of a signed URL is written."""

from __future__ import annotations

import base64
import json
import random
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from api_server import RawState, raw_json, serve_raw
from argus_eval.cli import main
from argus_eval.report.gallery import TOO_LARGE
from hardening_fixtures import karpathy_config, karpathy_dataset, png_header

LONG_NAME = "x" * 300 + ".png"  # over the 255 bytes a file name may have


def _cli(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `argus ARGV` in this process."""
    monkeypatch.setattr(sys, "argv", ["argus", *argv])
    monkeypatch.setenv("COLUMNS", "3000")
    with pytest.raises(SystemExit) as ei:
        main()
    code = ei.value.code
    out = capsys.readouterr()
    return (code if isinstance(code, int) else 1), out.out, out.err


@pytest.fixture
def hostile_run(tmp_path: Path) -> tuple[Path, Path]:
    """A Karpathy config over 4 images: a 30,000 x 30,000 PNG header (im1), a file name of 300 characters
    (image 2, in the annotations only), a caption with a lone surrogate and an image without a usable
    caption (both skipped)."""
    data = tmp_path / "data"
    ann = karpathy_dataset(data, n=5)
    (data / "images" / "im1.png").write_bytes(png_header(30_000, 30_000))
    top = json.loads(ann.read_text())
    top["images"][2]["filename"] = LONG_NAME
    top["images"][3]["sentences"][0]["raw"] = "a photo \ud800 of 3"
    top["images"][4]["sentences"] = [{"raw": " ", "sentid": 90}]
    ann.write_text(json.dumps(top))
    cfg = karpathy_config(data)
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump(cfg))
    return config, tmp_path / "out"


def test_bombs_and_long_names_are_counted_failures_and_skips_are_named(
    hostile_run: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config, out = hostile_run
    code, stdout, stderr = _cli(["datasets", "--check", str(config)], monkeypatch, capsys)
    assert code == 2 and "missing or corrupt images in k3" in stderr
    assert "corrupt: sample img/1" in stdout and "too large to decode safely" in stdout
    assert f"missing: img/2: {config.parent / 'data' / 'images' / LONG_NAME}" in stdout
    assert "  skipped: " in stdout and "images[3].sentences[0]: caption 'raw' contains an unpaired" in stdout

    code, stdout, stderr = _cli(["run", "-c", str(config), "--out", str(out), "-q"], monkeypatch, capsys)
    assert code == 1 and "exit 1: more than --max-failed" in stdout, stderr  # written, then exit 1
    results = json.loads((out / "results.json").read_text())
    for cell in results["cells"]:
        assert cell["samples"] == 4 and cell["failed"] == 2, cell
        reasons = " ".join(cell["failure_reasons"])
        assert "img/1" in reasons and "too large to decode safely" in reasons
        assert "img/2" in reasons and "File name too long" in reasons
    skipped = [json.loads(line) for line in (out / "skipped.jsonl").read_text().splitlines()]
    assert [(s["dataset"], s["record"]) for s in skipped] == [
        ("k3", "images[3].sentences[0]"), ("k3", "images[4].sentences[0]"), ("k3", "images[4] (id 4)"),
    ]  # fmt: skip
    assert all(s["source"].endswith("dataset_coco.json") and s["reason"] for s in skipped)
    named = [n for n in results["notes"] if n.startswith("dataset k3:")]
    assert named[0] == "dataset k3: 3 annotation record(s) skipped by the loader, each named in skipped.jsonl"
    assert len(named) == 4 and all(
        f"{s['record']}: {s['reason']}" in n for s, n in zip(skipped, named[1:], strict=True)
    )
    for note in named:
        assert f"note: {note}" in stdout
    page = (out / "report.html").read_text()
    assert TOO_LARGE in page  # the bomb's gallery item: a placeholder, never decoded


def test_report_says_when_samples_jsonl_is_cut_short(
    hostile_run: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config, out = hostile_run
    argv = ["run", "-c", str(config), "--out", str(out), "-q", "--max-failed", "1"]
    assert _cli(argv, monkeypatch, capsys)[0] == 0
    lines = (out / "samples.jsonl").read_text().splitlines(keepends=True)
    cells = json.loads((out / "results.json").read_text())["cells"]
    assert len(lines) == sum(c["samples"] for c in cells) == 8
    (out / "samples.jsonl").write_text("".join(lines[:5]))  # cut at a line boundary
    code, stdout, stderr = _cli(["report", str(out)], monkeypatch, capsys)
    assert code == 0, stderr
    said = "samples.jsonl holds 5 of the 8 sample lines results.json counts (1 cell(s) short"
    assert f"warning: {out / said}" in stdout.replace("\n", "")
    for report in ("summary.md", "report.html"):
        assert said in (out / report).read_text(), report
    (out / "samples.jsonl").write_text("".join(lines))
    code, stdout, _ = _cli(["report", str(out)], monkeypatch, capsys)
    assert code == 0 and "warning" not in stdout and said not in (out / "summary.md").read_text()


def test_report_shows_a_placeholder_for_a_900_megapixel_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """samples.jsonl written elsewhere, its image_path pointing at a 900-megapixel PNG among the run's
    images (a file outside its data roots is not read at all: tests/test_hostile_report_inputs.py)."""
    data = tmp_path / "data"
    cfg = karpathy_config(data)
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "out"
    assert _cli(["run", "-c", str(config), "--out", str(out), "-q"], monkeypatch, capsys)[0] == 0
    bomb = data / "images" / "bomb.png"
    bomb.write_bytes(png_header(30_000, 30_000))
    lines = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    for line in lines:
        line.update({"image_path": str(bomb), "score": 0.0})
    (out / "samples.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    code, _, stderr = _cli(["report", str(out)], monkeypatch, capsys)
    assert code == 0, stderr
    assert TOO_LARGE in (out / "report.html").read_text()


def test_a_store_damaged_in_its_middle_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump(karpathy_config(data)))
    out = tmp_path / "out"
    assert _cli(["run", "-c", str(config), "--out", str(out), "-q"], monkeypatch, capsys)[0] == 0
    store = out / "store.sqlite"
    size = store.stat().st_size
    rng = random.Random(0)
    with open(store, "r+b") as fh:  # every page after the first two: the header and schema survive
        fh.seek(8192)
        fh.write(bytes(rng.randrange(256) for _ in range(size - 8192)))
    code, _, stderr = _cli(["run", "-c", str(config), "--out", str(out), "-q"], monkeypatch, capsys)
    assert code == 2
    (line,) = stderr.strip().splitlines()
    assert line.startswith(f"error: store {store} is unreadable (")
    assert "move it aside" in line and "rerun on the same --out" in line
    store.rename(store.with_suffix(".broken"))  # doing what it says completes the run afresh
    assert _cli(["run", "-c", str(config), "--out", str(out), "-q"], monkeypatch, capsys)[0] == 0


def _served(data: Path, spec: str) -> dict[str, Any]:
    cfg = karpathy_config(data, models=[{"name": "served", "spec": spec, "options": {"max_retries": 0}}])
    cfg["tasks"] = [{"name": "captioning", "metrics": ["CIDEr"]}]
    cfg["perturbations"] = []
    return cfg


def test_an_answer_with_lone_surrogates_is_stored_repaired_and_a_rerun_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The served answer holds an escaped lone surrogate: stored with U+FFFD in its place (the rule of
    data/text.py), samples.jsonl written; a store holding one raw (written before the rule) reruns too."""
    answer = {"choices": [{"message": {"content": "a \ud800 shape \udfff"}}]}
    state = RawState(next=raw_json(200, json.dumps(answer).encode()))
    with serve_raw(state) as url:
        config = tmp_path / "run.yaml"
        config.write_text(yaml.safe_dump(_served(tmp_path / "data", f"api:{url}#m")))
        out = tmp_path / "out"
        code, _, stderr = _cli(["run", "-c", str(config), "--out", str(out), "-q"], monkeypatch, capsys)
        assert code == 0, stderr
        predictions = [
            json.loads(x)["prediction"] for x in (out / "samples.jsonl").read_text("utf-8").splitlines()
        ]
        assert predictions == ["a \ufffd shape \ufffd"] * 3
        with sqlite3.connect(out / "store.sqlite") as db:  # as an older version stored it: raw
            (output,) = db.execute("SELECT output FROM records LIMIT 1").fetchone()
            raw = output.replace("\\ufffd", "\\ud800")
            assert raw != output
            db.execute("UPDATE records SET output=?", (raw,))
        code, stdout, stderr = _cli(["run", "-c", str(config), "--out", str(out), "-q"], monkeypatch, capsys)
        assert code == 0, stderr
        assert "model forward calls: 0" in stdout
        (out / "samples.jsonl").read_text("utf-8")  # valid UTF-8
        assert state.served == 3


SECRETS = {"password": "PW-7a1", "api_key": "KEY-7a2", "sig": "SIG-7a3", "X-Amz-Signature": "AMZ-7a4",
           "X-Amz-Credential": "CRED-7a5", "token": "TOK-7a6"}  # fmt: skip


def test_no_credential_of_a_signed_url_reaches_any_output_or_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    basic = base64.b64encode(f"argus:{SECRETS['password']}".encode()).decode()
    query = "&".join(f"{k}={v}" for k, v in SECRETS.items() if k != "password")
    answer = {"choices": [{"message": {"content": "a shape"}}]}
    streams: list[str] = []
    state = RawState(next=raw_json(200, json.dumps(answer).encode()))
    with serve_raw(state) as url:
        host = url.removeprefix("http://")
        spec = f"api:http://argus:{SECRETS['password']}@{host}?{query}#m"
        config = tmp_path / "run.yaml"
        config.write_text(yaml.safe_dump(_served(tmp_path / "data", spec)))
        out = tmp_path / "out"
        for argv in (
            ["run", "-c", str(config), "--out", str(out), "-q"],
            ["report", str(out)],
            ["run", "-c", str(config), "--dry-run"],
            ["run", "-c", str(config), "--dry-run", "--json"],
        ):
            code, stdout, stderr = _cli(argv, monkeypatch, capsys)  # fmt: skip
            assert code == 0, stderr
            streams += [stdout, stderr]
        assert state.served == 3
    # An invalid spec with user:password@: the error line and the dry run's "left out" line.
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        yaml.safe_dump(_served(tmp_path / "data", f"api:ftp://argus:{SECRETS['password']}@h/v1?{query}#m"))
    )
    code, stdout, stderr = _cli(
        ["run", "-c", str(bad), "--out", str(tmp_path / "bad"), "-q"], monkeypatch, capsys
    )
    assert code == 2 and "an api spec is api:http(s)://" in stderr
    streams += [stdout, stderr]
    code, stdout, stderr = _cli(["run", "-c", str(bad), "--dry-run"], monkeypatch, capsys)
    shown = "models[0].spec (model 'served'): model 'api:ftp://***@h/v1?api_key=***&sig=***"
    assert f"left out: served / ?: {shown}" in stdout
    streams += [stdout, stderr]
    found = []
    for path in sorted(p for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".yaml"):
        blob = path.read_bytes()
        found += [f"{path.name}: {s}" for s in [*SECRETS.values(), basic] if s.encode() in blob]
    for i, text in enumerate(streams):
        found += [f"stream {i}: {s}" for s in [*SECRETS.values(), basic] if s in text]
    assert found == []
    assert "sig=***" in (out / "results.json").read_text()
