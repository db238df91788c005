"""Outputs written safely (issue 39): every file a run writes into --out goes through a temporary file
renamed over it, so a symlink planted where an output goes is replaced and the file it points to is left
byte for byte as it was; a --out that is a symlink is resolved once and named in the manifest; a write
that fails half-way keeps the previous file and leaves no temporary file."""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from argus_eval.data.atomic import atomic_binary, atomic_text, atomic_write_bytes, atomic_write_text
from argus_eval.errors import OutputError
from argus_eval.report.build import write_reports
from argus_eval.runner.config import parse_config
from argus_eval.runner.inputs.perturbed_store import PerturbedStore
from argus_eval.runner.pipeline import run
from argus_eval.runner.score import score
from argus_eval.runner.write.outputs import prepare_out_dir

# every file a run (with its reports) writes into --out; perturbed/ entries are covered by the helper
OUTPUTS = (
    "results.json",
    "samples.jsonl",
    "skipped.jsonl",
    "summary.md",
    "report.html",
    "scorecard.csv",
    "cells.csv",
    "thumbnails.cache.json",
    "run_log.json",
)
# what changes from one invocation to the next (wall times)
VARIES = {"run_log.json"}


def _config(cache: Path) -> dict[str, Any]:
    """The smallest run that writes every output: the zoo's CLIP, 4 ShapesWorld images, one corruption
    (so the gallery has thumbnails)."""
    return {
        "name": "outs",
        "seed": 0,
        "cache_dir": str(cache),
        "models": [{"name": "z", "spec": "zoo:clip", "device": "cpu"}],
        "datasets": [
            {
                "name": "s",
                "format": "shapesworld",
                "split": "test",
                "n_images": 4,
                "train_images": 4,
                "questions_per_image": 1,
            }
        ],
        "tasks": ["retrieval"],
        "perturbations": [{"image": "brightness", "severity": 2}],
        "scoring": {"resamples": 20},
        "efficiency": {"enabled": False},
    }


def _run(root: Path, out: Path, reports: Any = None) -> Any:
    cfg = parse_config(_config(root / "cache"), "outs.yaml")
    return run(cfg, out, quiet=True, reports=reports or (lambda d: write_reports(d)))


def _contents(folder: Path) -> dict[str, bytes]:
    return {n: (folder / n).read_bytes() for n in OUTPUTS}


def _resumed(base: Path, out: Path) -> Path:
    """A run folder holding the first run's store: a run into it calls no model."""
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(base / "store.sqlite", out / "store.sqlite")
    return out


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    """The run into a plain folder: its folder and every output's bytes."""
    root = tmp_path_factory.mktemp("outs")
    out = root / "plain"
    _run(root, out)
    assert all((out / n).is_file() and not (out / n).is_symlink() for n in OUTPUTS)
    return out, _contents(out)


@pytest.fixture(scope="module")
def planted(first: tuple[Path, dict[str, bytes]]) -> tuple[Path, Path]:
    """The run again into the same folder after each output was made a symlink to a file outside it."""
    out, _ = first
    outside = out.parent / "outside"
    outside.mkdir()
    for name in OUTPUTS:
        (outside / name).write_bytes(f"precious {name}\n".encode())
        (out / name).unlink()
        (out / name).symlink_to(outside / name)
    _run(out.parent, out)
    return out, outside


@pytest.mark.parametrize("name", OUTPUTS)
def test_a_planted_symlink_is_replaced_and_its_target_untouched(
    name: str, first: tuple[Path, dict[str, bytes]], planted: tuple[Path, Path]
) -> None:
    _, before = first
    out, outside = planted
    assert (outside / name).read_bytes() == f"precious {name}\n".encode()  # byte-identical
    assert sorted(p.name for p in outside.iterdir()) == sorted(OUTPUTS)  # nothing written beside it
    path = out / name
    assert not path.is_symlink() and stat.S_ISREG(path.lstat().st_mode)
    if name in VARIES:
        log = json.loads(path.read_text(encoding="utf-8"))
        assert log["samples_jsonl_lines"] == len(before["samples.jsonl"].splitlines()) == 8
        assert log["forward_calls"] == 0 and log["records_written"] == 0  # resumed from the store
    else:
        assert path.read_bytes() == before[name]  # the same inputs write the same file


def test_no_temporary_file_is_left_in_the_run_folder(planted: tuple[Path, Path]) -> None:
    out, _ = planted
    left = [p for p in out.rglob("*") if p.name.endswith(".tmp")]
    assert left == []


def test_a_plain_out_names_no_out_dir_in_the_manifest(first: tuple[Path, dict[str, bytes]]) -> None:
    _, before = first
    assert "out_dir" not in json.loads(before["results.json"])["manifest"]


def _without_out_dir(text: bytes) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(text)
    data["manifest"].pop("out_dir")
    return data


@pytest.mark.parametrize("exists", [True, False], ids=["to-a-folder", "to-a-folder-not-yet-made"])
def test_a_symlinked_out_is_resolved_and_named_in_the_manifest(
    exists: bool, first: tuple[Path, dict[str, bytes]], tmp_path: Path
) -> None:
    base, before = first
    real = tmp_path / "real" / "run"
    if exists:
        _resumed(base, real)
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    outcome = _run(base.parent, link)
    assert outcome.out_dir == real.resolve()
    assert link.is_symlink() and link.resolve() == real.resolve()  # the link itself is left alone
    manifest = json.loads((real / "results.json").read_text(encoding="utf-8"))["manifest"]
    assert manifest["out_dir"] == {"given": str(link), "resolved": str(real.resolve())}
    assert sorted(p.name for p in real.iterdir() if p.is_file()) == sorted([*OUTPUTS, "store.sqlite"])
    if exists:  # resumed: the same figures as the plain run; only the folder it names differs
        assert _without_out_dir((real / "results.json").read_bytes()) == json.loads(before["results.json"])


def test_a_symlinked_out_repointed_during_the_run_keeps_writing_where_it_began(
    first: tuple[Path, dict[str, bytes]], tmp_path: Path
) -> None:
    base, _ = first
    real = _resumed(base, tmp_path / "real")
    other = tmp_path / "other"
    other.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)

    def repoint_then_report(run_dir: Path) -> None:  # between results.json and run_log.json
        link.unlink()
        link.symlink_to(other, target_is_directory=True)
        write_reports(run_dir)

    _run(base.parent, link, repoint_then_report)
    assert list(other.iterdir()) == []
    assert all((real / n).is_file() for n in OUTPUTS)


def test_a_run_whose_samples_fail_mid_stream_keeps_the_previous_files(
    first: tuple[Path, dict[str, bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, before = first
    out = _resumed(base, tmp_path / "again")
    for name in OUTPUTS:
        shutil.copy(base / name, out / name)
    copied = _contents(out)
    assert copied["samples.jsonl"] == before["samples.jsonl"]
    real = score.iter_sample_lines

    def breaking(scored: Any, run_seed: int) -> Iterator[dict[str, Any]]:
        for i, line in enumerate(real(scored, run_seed)):
            if i == 3:
                raise KeyboardInterrupt  # three lines are in the temporary file by now
            yield line

    monkeypatch.setattr(score, "iter_sample_lines", breaking)
    with pytest.raises(KeyboardInterrupt):
        _run(base.parent, out)
    assert _contents(out) == copied  # samples.jsonl whole, and nothing after it was written
    assert sorted(p.name for p in out.iterdir() if p.is_file()) == sorted([*OUTPUTS, "store.sqlite"])


def test_a_symlink_loop_as_out_is_one_error_naming_it(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.symlink_to(b)
    b.symlink_to(a)
    with pytest.raises(OutputError, match=rf"--out {a} is a symlink that cannot be resolved"):
        prepare_out_dir(a)


# the helper itself


class Boom(Exception):
    pass


def _only(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("error", [Boom, KeyboardInterrupt, MemoryError])
def test_an_exception_mid_write_keeps_the_previous_file_and_no_temporary(
    error: type[BaseException], tmp_path: Path
) -> None:
    path = tmp_path / "results.json"
    path.write_text("old\n", encoding="utf-8")
    with pytest.raises(error), atomic_text(path) as fh:
        fh.write("new, half")
        fh.flush()
        raise error()
    assert path.read_text(encoding="utf-8") == "old\n"
    assert _only(tmp_path) == ["results.json"]


def test_an_exception_mid_write_over_a_symlink_keeps_the_link_and_its_target(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_bytes(b"precious\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "samples.jsonl").symlink_to(target)
    with pytest.raises(Boom), atomic_binary(out / "samples.jsonl") as fh:
        fh.write(b"x" * 100_000)
        raise Boom()
    assert (out / "samples.jsonl").is_symlink() and target.read_bytes() == b"precious\n"
    assert _only(out) == ["samples.jsonl"]


def test_a_failed_rename_leaves_no_temporary(tmp_path: Path) -> None:
    # a folder where the file goes: os.replace fails after the whole file was written
    (tmp_path / "report.html" / "inside").mkdir(parents=True)
    with pytest.raises(OSError):
        atomic_write_text(tmp_path / "report.html", "<html>")
    assert _only(tmp_path) == ["report.html"] and _only(tmp_path / "report.html") == ["inside"]


def test_an_error_names_the_output_not_its_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = os.open

    def denied(path: Any, *a: Any, **k: Any) -> int:
        if str(path).endswith(".tmp"):  # a read-only folder (tests run as root, where chmod is not enforced)
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *a, **k)

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(PermissionError) as e:
        atomic_write_text(tmp_path / "summary.md", "# s\n")
    assert e.value.filename == str(tmp_path / "summary.md") and e.value.strerror == "Permission denied"
    monkeypatch.undo()
    (tmp_path / "cells.csv" / "x").mkdir(parents=True)  # the rename fails: named as the output too
    with pytest.raises(OSError) as renamed:
        atomic_write_text(tmp_path / "cells.csv", "a,b\n")
    assert renamed.value.filename == str(tmp_path / "cells.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cells.csv"]


def test_a_perturbed_entry_planted_as_a_symlink_is_replaced(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.bin"
    target.write_bytes(b"precious\n")
    store = PerturbedStore(tmp_path / "perturbed")
    key = PerturbedStore.key("0" * 64, "image:brightness@2", 0)
    entry = tmp_path / "perturbed" / key[:2] / key
    entry.parent.mkdir(parents=True)
    entry.symlink_to(target)
    image = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3)
    store.put(key, image)
    assert target.read_bytes() == b"precious\n" and not entry.is_symlink() and entry.is_file()
    got = PerturbedStore(tmp_path / "perturbed").get(key)
    assert got is not None and np.array_equal(got, image) and store.counts.written == 1
    assert [p.name for p in entry.parent.iterdir()] == [key]


def test_the_streaming_samples_writer_keeps_the_old_file_when_a_line_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text('{"old": 1}\n', encoding="utf-8")

    def lines(_: object, __: int) -> Iterator[dict[str, Any]]:
        yield {"sample_id": "a"}
        yield {"sample_id": "b"}
        raise Boom("the third line")

    monkeypatch.setattr(score, "iter_sample_lines", lines)
    with pytest.raises(Boom):
        score.write_samples([], path, 0)
    assert path.read_text(encoding="utf-8") == '{"old": 1}\n' and _only(tmp_path) == ["samples.jsonl"]

    monkeypatch.setattr(score, "iter_sample_lines", lambda *_: iter([{"sample_id": "a"}, {"sample_id": "b"}]))
    assert score.write_samples([], path, 0) == 2
    assert path.read_text(encoding="utf-8") == '{"sample_id": "a"}\n{"sample_id": "b"}\n'


def test_a_written_file_has_the_mode_open_gives(tmp_path: Path) -> None:
    # the umask decides, as for open(..., "w"): a temporary file's 0600 must not become the output's
    for umask in (0o022, 0o077, 0o002):
        old = os.umask(umask)
        try:
            ref = tmp_path / f"ref{umask}"
            ref.write_bytes(b"")
            atomic_write_bytes(tmp_path / f"out{umask}", b"data")
        finally:
            os.umask(old)
        mode = stat.S_IMODE((tmp_path / f"out{umask}").stat().st_mode)
        assert mode == stat.S_IMODE(ref.stat().st_mode) == 0o666 & ~umask
