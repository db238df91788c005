"""One line, exit 2, never a raw traceback: each case the hostile-user pass found, with its message."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from argus_eval.cli import main
from argus_eval.runner.store import Store
from argus_eval.runner.write import run_files
from hardening_fixtures import karpathy_config

Outcome = tuple[int, str]


def _cli(argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Outcome:
    monkeypatch.setattr(sys, "argv", ["argus", *argv])
    with pytest.raises(SystemExit) as ei:
        main()
    code = ei.value.code
    err = capsys.readouterr().err
    return (int(code) if isinstance(code, int) else 1), err


def _one_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _config_file(tmp_path: Path, **changes: Any) -> Path:
    cfg = karpathy_config(tmp_path / "data")
    cfg.update(changes)
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_usage_error_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _cli(["run", "--bogus"], monkeypatch, capsys)
    line = _one_line(err)
    assert code == 2 and "No such option: --bogus" in line and "argus run --help" in line


def test_out_that_is_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "taken"
    out.write_text("not a folder")
    code, err = _cli(["run", "-c", str(_config_file(tmp_path)), "--out", str(out)], monkeypatch, capsys)
    assert code == 2 and f"--out {out} is a file; give a folder" in _one_line(err)


def test_name_too_long(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / ("x" * 300)
    code, err = _cli(["run", "-c", str(_config_file(tmp_path)), "--out", str(out)], monkeypatch, capsys)
    line = _one_line(err)
    assert code == 2 and "File name too long; shorten the name" in line and "x" * 300 in line


def test_unwritable_out_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "locked" / "run"

    def denied(self: Path, *a: Any, **k: Any) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(self))

    cfg = _config_file(tmp_path)
    monkeypatch.setattr(Path, "mkdir", denied)  # tests run as root, where chmod is not enforced
    code, err = _cli(["run", "-c", str(cfg), "--out", str(out)], monkeypatch, capsys)
    assert (
        code == 2
        and "Permission denied; check the folder's permissions or give another --out" in _one_line(err)
    )


def test_read_only_out_is_not_called_unreadable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from argus_eval.errors import OutputError

    with Store(tmp_path / "store.sqlite"):
        pass
    real = sqlite3.connect

    def read_only(*a: Any, **k: Any) -> sqlite3.Connection:
        db: sqlite3.Connection = real(*a, **k)
        db.execute("PRAGMA query_only = ON")  # every write fails as on a read-only folder
        return db

    monkeypatch.setattr(sqlite3, "connect", read_only)
    with pytest.raises(OutputError) as e:
        Store(tmp_path / "store.sqlite").set_meta("k", "v")
    msg = str(e.value)
    assert "store.sqlite: the run folder is read-only" in msg and "give another --out" in msg
    assert "delete" not in msg


def test_deep_yaml_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("a: " + "[" * 20000 + "]" * 20000 + "\n")
    code, err = _cli(["run", "-c", str(path)], monkeypatch, capsys)
    assert code == 2 and "deep.yaml is nested too deeply to be a run config" in _one_line(err)


def test_infinite_weight_is_rejected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = _config_file(tmp_path)
    cfg.write_text(cfg.read_text().replace("resamples: 0", "resamples: 0\n  weights: {P: .inf}"))
    code, err = _cli(["run", "-c", str(cfg)], monkeypatch, capsys)
    line = _one_line(err)
    assert code == 2 and "scoring.weights.P" in line and "finite number" in line


def _results(tmp_path: Path) -> Path:
    """A small real run to edit."""
    from argus_eval.runner.config import parse_config
    from argus_eval.runner.pipeline import run

    out = tmp_path / "run"
    run(parse_config(karpathy_config(tmp_path / "data"), "test"), out, quiet=True)
    return out


def test_nan_and_future_schema_in_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _results(tmp_path)
    good = (out / "results.json").read_text()
    other = tmp_path / "other"
    shutil.copytree(out, other)
    data = json.loads(good)
    data["cells"][0]["primary"] = float("nan")
    (out / "results.json").write_text(json.dumps(data))
    for argv in (["report", str(out)], ["compare", str(other), str(out)], ["recommend", str(out)]):
        code, err = _cli(argv, monkeypatch, capsys)
        line = _one_line(err)
        assert code == 2 and "results.json is not readable JSON (it holds NaN" in line, argv
    data["cells"][0]["primary"] = 0.5
    data["schema"] = "argus-eval/results/9"
    (out / "results.json").write_text(json.dumps(data))
    for argv in (["report", str(out)], ["compare", str(other), str(out)], ["recommend", str(out)]):
        code, err = _cli(argv, monkeypatch, capsys)
        line = _one_line(err)
        assert code == 2 and "schema: 'argus-eval/results/9' is not one this ARGUS-EVAL reads" in line, argv
        assert "argus run --out" in line, argv


def test_corrupt_store_records_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from argus_eval.errors import StoreError
    from argus_eval.tasks.records import Record

    path = tmp_path / "s.sqlite"
    with Store(path) as st:
        st.write("cellA", [Record("a", {"x": 1}, {"e": np.ones(3, np.float32)}), Record("b", {"x": 2})])
    db = sqlite3.connect(path)
    db.execute("UPDATE records SET output = '{not json' WHERE sample_id = 'a'")
    db.commit()
    with (
        Store(path) as st,
        pytest.raises(StoreError, match=r"record 'a' of cell cellA is corrupt .*fresh --out"),
    ):
        st.read("cellA")
    db.execute("UPDATE records SET output = NULL, arrays = X'504B0304DEADBEEF' WHERE sample_id = 'a'")
    db.commit()
    db.close()
    with Store(path) as st, pytest.raises(StoreError, match=r"record 'a' of cell cellA is corrupt"):
        st.read("cellA")
    # The same through a rerun of a real run: one line, exit 2.
    out = _results(tmp_path / "r")
    db = sqlite3.connect(out / "store.sqlite")
    db.execute("UPDATE records SET output = '{not json' WHERE rowid = 1")
    db.commit()
    db.close()
    code, err = _cli(["run", "-c", str(_config_file(tmp_path / "r")), "--out", str(out)], monkeypatch, capsys)
    assert code == 2 and "is corrupt" in _one_line(err)


def _full_after(extra_pages: int) -> Any:
    real = sqlite3.connect

    def limited(*a: Any, **k: Any) -> sqlite3.Connection:
        db: sqlite3.Connection = real(*a, **k)
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        db.execute(f"PRAGMA max_page_count = {max(pages, 6) + extra_pages}")  # SQLite's own 'disk full'
        return db

    return limited


def test_full_disk_exits_2_naming_the_file_and_the_store_resumes_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = _config_file(tmp_path)
    out = tmp_path / "full"
    with monkeypatch.context() as m:
        m.setattr(sqlite3, "connect", _full_after(2))
        code, err = _cli(["run", "-c", str(cfg), "--out", str(out), "-q"], monkeypatch, capsys)
    line = _one_line(err)
    assert code == 2 and f"cannot write {out / 'store.sqlite'}: the disk is full" in line
    with Store(out / "store.sqlite") as st:  # intact: opens, and holds whatever batches finished
        kept = st.count()
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(out, elsewhere)
    code, _ = _cli(["run", "-c", str(cfg), "--out", str(elsewhere), "-q"], monkeypatch, capsys)
    assert code == 0
    code, _ = _cli(["run", "-c", str(cfg), "--out", str(tmp_path / "fresh"), "-q"], monkeypatch, capsys)
    assert code == 0
    with Store(elsewhere / "store.sqlite") as a, Store(tmp_path / "fresh" / "store.sqlite") as b:
        assert a.count() == b.count() > kept
        for cell, _ in b.iter_cells():
            ra, rb = a.read(cell), b.read(cell)
            assert {k: r.output for k, r in ra.items()} == {k: r.output for k, r in rb.items()}
            for k, r in rb.items():
                for name, arr in r.arrays.items():
                    np.testing.assert_array_equal(ra[k].arrays[name], arr)


def test_full_disk_while_writing_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from argus_eval.data.atomic import atomic_write_text as real  # what run_files calls

    def full(path: Path, text: str) -> None:
        if path.name == "results.json":
            raise OSError(errno.ENOSPC, "No space left on device")  # mid-write: no file name attached
        real(path, text)

    monkeypatch.setattr(run_files, "atomic_write_text", full)
    out = tmp_path / "out"
    code, err = _cli(["run", "-c", str(_config_file(tmp_path)), "--out", str(out), "-q"], monkeypatch, capsys)
    line = _one_line(err)
    assert (
        code == 2 and f"cannot write {out / 'results.json'}: No space left on device; free some space" in line
    )


def test_sigint_says_how_to_resume(tmp_path: Path) -> None:
    script = (
        "import sys, time\n"
        "import argus_eval.commands.listing as listing\n"
        "def slow(*a, **k):\n"
        "    print('started', flush=True)\n"
        "    time.sleep(30)\n"
        "listing.list_formats = slow\n"
        "from argus_eval.cli import main\n"
        "sys.argv = ['argus', 'datasets']\n"
        "main()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline().strip() == "started"
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert _one_line(err) == "interrupted; rerun the same command to resume"
