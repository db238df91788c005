"""What a user reads on bad input: one line naming the file, key or sample and the fix, exit status 2
(the traceback only with --debug, wherever it is typed)."""

from __future__ import annotations

import base64
import io
import sys
from pathlib import Path

import pytest
from PIL import Image

from argus_eval.cli import main
from argus_eval.errors import ConfigError, ResultsError
from argus_eval.results_model import load_results
from argus_eval.runner.config import load_config

SHAPES = "datasets: [{name: d, format: shapesworld, domain: studio, split: test, n_images: 4}]\n"


def _cli(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["argus", *argv])
    with pytest.raises(SystemExit) as ei:
        main()
    code = ei.value.code
    out = capsys.readouterr()
    return int(code) if isinstance(code, int) else 1, out.out, out.err


def _cfg(tmp_path: Path, text: str, name: str = "run.yaml") -> Path:
    p = tmp_path / name
    p.write_text(f"cache_dir: {tmp_path / 'cache'}\n" + text)
    return p


# 1. --debug after the subcommand, and exit 2 with it


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_anywhere_shows_the_traceback_and_exits_2(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    p = _cfg(tmp_path, "name: x\ndatasetz: []\n")
    argv = ["run", "--config", str(p)]
    argv = ["--debug", *argv] if where == "before" else [*argv, "--debug"]
    code, _, err = _cli(argv, monkeypatch, capsys)
    assert code == 2, err
    assert "Traceback" in err and "No such option" not in err
    assert err.strip().splitlines()[-1].startswith("error: ") and "run.yaml" in err


# 2. str paths in the Python API


def test_load_config_and_results_take_str_paths(tmp_path: Path) -> None:
    p = _cfg(tmp_path, "models: [{name: m, spec: 'zoo:clip'}]\n" + SHAPES)
    assert load_config(str(p)).models[0].name == "m"
    with pytest.raises(ResultsError, match=r"results\.json not found"):
        load_results(str(tmp_path / "runs" / "x" / "results.json"))


# 3. an unknown zoo name lists the valid ones; only a known name is told to train


def test_unknown_zoo_name_lists_valid_names_not_a_train_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    p = _cfg(tmp_path, "models: [{name: m, spec: 'zoo:clp'}]\n" + SHAPES)
    code, _, err = _cli(["run", "-c", str(p), "-o", str(tmp_path / "o"), "-q"], monkeypatch, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "unknown zoo model 'clp' (did you mean 'zoo:clip'?); valid: blip, " in err
    assert "argus zoo train" not in err


# 4. every model failed to load: the hint is about the specs, naming the file and key path


def test_nothing_loaded_points_at_the_model_specs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    p = _cfg(tmp_path, "models: [{name: CLIP, spec: 'hf:/nonexistent/dir'}]\n" + SHAPES)
    code, _, err = _cli(["run", "-c", str(p), "-o", str(tmp_path / "o"), "-q"], monkeypatch, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"error: {p}: nothing to evaluate: CLIP could not load" in err
    assert "fix the model spec(s) at models[0].spec in the config" in err
    assert "questions_per_image" not in err


# 5 and 6. a non-UTF-8 byte in a TSV row is a counted skip naming the file, line and column


def _tsv(tmp_path: Path) -> Path:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(buf, "PNG")
    image = base64.b64encode(buf.getvalue()).decode()
    lines = ["index\timage\tquestion\tanswer"]
    lines += [f"{i}\t{image if i == 0 else '0'}\tWhat colour {i}?\tred" for i in range(6)]
    data = ("\n".join(lines) + "\n").encode().replace(b"colour 3", b"colo\xffur 3")  # index 3: line 5
    f = tmp_path / "bench.tsv"
    f.write_bytes(data)
    return f


def test_tsv_bad_byte_is_a_skip_naming_file_line_and_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tsv = _tsv(tmp_path)
    entry = f"datasets: [{{name: v, format: vlmevalkit-tsv, tsv: {tsv}}}]\ntasks: [reasoning]\n"
    p = _cfg(tmp_path, "models: [{name: m, spec: 'zoo:clip'}]\n" + entry)
    code, out, err = _cli(["datasets", "--check", str(p)], monkeypatch, capsys)
    assert code == 0, err
    text = " ".join(out.split())  # rich wraps the console's lines
    assert "5 questions" in text and "1 records skipped" in text
    assert f"{tsv}: line 5: column 'question': is not UTF-8 (byte 0xff)" in text


def test_tsv_rows_are_named_by_their_line_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tsv = tmp_path / "short.tsv"
    tsv.write_text("index\timage\tquestion\tanswer\n0\t0\n")  # the data row is line 2 of the file
    entry = f"datasets: [{{name: v, format: vlmevalkit-tsv, tsv: {tsv}, strict: true}}]\n"
    p = _cfg(tmp_path, "models: [{name: m, spec: 'zoo:clip'}]\n" + entry)
    code, _, err = _cli(["datasets", "--check", str(p)], monkeypatch, capsys)
    assert code == 2 and "line 2: row has 2 fields, the header has 4" in err, err


# 7. an unknown key is named first, with the key it may have meant


CLIP = "models: [{name: m, spec: 'zoo:clip'}]\n"
UNKNOWN = [
    (
        "name: x\ndatasetz: []\n" + CLIP,
        "unknown key 'datasetz' (did you mean 'datasets'?); valid: name, seed, models, datasets",
    ),
    (CLIP + SHAPES + "scorin: {}\n", "unknown key 'scorin' (did you mean 'scoring'?)"),
    (
        CLIP.replace("}", ", devic: cpu}") + SHAPES,
        "unknown key 'models[0].devic' (model 'm') (did you mean 'device'?)",
    ),
    (
        CLIP + SHAPES.replace("n_images", "n_image"),
        "datasets[0] (d): unknown key 'n_image' (did you mean 'n_images'?)",
    ),
    (
        CLIP + SHAPES.replace("studio", "studioo"),
        "datasets[0] (d).domain: unknown ShapesWorld domain 'studioo' (did you mean 'studio'?); valid: "
        "clutter, palette, studio",
    ),
]


@pytest.mark.parametrize(("text", "wanted"), UNKNOWN)
def test_unknown_keys_and_names_suggest_the_close_one(
    text: str,
    wanted: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    p = _cfg(tmp_path, text)
    code, _, err = _cli(["run", "--config", str(p), "--dry-run"], monkeypatch, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"error: {p}: {wanted}" in err
    with pytest.raises(ConfigError, match="did you mean"):
        load_config(p)


# 8. an object: spec from the command line: one line says so, the run goes on with the others


def test_object_spec_from_the_cli_is_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    p = _cfg(
        tmp_path,
        "models: [{name: clip, spec: 'zoo:clip'}, {name: mine, spec: 'object:mine'}]\n"
        + SHAPES.replace("n_images: 4", "n_images: 4, questions_per_image: 1")
        + "tasks: [retrieval]\nefficiency: {enabled: false}\n",
    )
    code, out, err = _cli(["run", "-c", str(p), "-o", str(tmp_path / "o"), "-q"], monkeypatch, capsys)
    assert code == 1, err  # mine's samples did not run: more than --max-failed 0
    text = " ".join(out.split())
    # in full on its "not loaded:" line and its "failed:" line (the one logs are searched for), not on
    # the notes and the other lines, which each quoted it too
    assert text.count("is a Python object") == 2, out
    assert "not loaded: mine (object:mine): models[1].spec (model 'mine'): model 'object:mine' is a" in text
    failed = "failed: mine: 4 of 4 samples (100.0%) failed or did not run: not run: models[1].spec (model"
    assert failed in text and "could not load (see its 'not loaded' entry)" in text
