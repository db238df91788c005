"""Kept scored parts that were damaged are never used (runner/score/score_cache.py): an edited, truncated,
re-sealed-but-NaN or undecodable cell result or finish-row blob is rejected on read, its cell is
finalized again from its records, the rejection is counted in run_log.json, and results.json and
samples.jsonl equal those of the undamaged run. Kept parts are also keyed by who scores (the captioning
metrics this machine computes and METEOR's jar), so a machine without Java or with another jar rescores."""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
from argus_eval.runner.seal import seal, unseal
from argus_eval.tasks import captioning
from argus_eval.tasks.base import Task
from pipeline_fixtures import tiny_config

OUTPUTS = ("results.json", "samples.jsonl")


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    root = tmp_path_factory.mktemp("hostile-scored")
    cfg = tiny_config(root / "cache", tasks=["retrieval", "captioning"], resamples=50)
    cfg["datasets"] = cfg["datasets"][:1]
    cfg["tasks"] = ["retrieval", {"name": "captioning", "metrics": ["Bleu_4", "CIDEr"]}]
    run(parse_config(cfg, "test"), root / "out", quiet=True)
    return cfg, root / "out"


@pytest.fixture
def finalized(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The task name of every finalize call of the test."""
    calls: list[str] = []
    todo, seen = list(Task.__subclasses__()), []
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if "finalize" in vars(cls):
            seen.append(cls)
    for cls in seen:
        original = vars(cls)["finalize"]

        def counted(self: Task, *args: Any, _f: Any = original) -> Any:
            calls.append(self.name)
            return _f(self, *args)

        monkeypatch.setattr(cls, "finalize", counted)
    return calls


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _files(out: Path) -> dict[str, bytes]:
    return {name: (out / name).read_bytes() for name in OUTPUTS}


def _log(out: Path) -> dict[str, Any]:
    return json.loads((out / "run_log.json").read_text())  # type: ignore[no-any-return]


def _edit(out: Path, kind: str, change: Callable[[bytes], bytes]) -> int:
    """Apply change to every kept value of a kind ("cell" or "rows"); how many there were."""
    with sqlite3.connect(out / "store.sqlite") as db:
        rows = db.execute("SELECT key, value FROM scored WHERE key LIKE ?", (f"{kind}:%",)).fetchall()
        for key, value in rows:
            db.execute("UPDATE scored SET value=? WHERE key=?", (change(bytes(value)), key))
    return len(rows)


def _flip(blob: bytes) -> bytes:
    mid = len(blob) // 2
    return blob[:mid] + bytes([blob[mid] ^ 0x01]) + blob[mid + 1 :]


def _nan_components(blob: bytes) -> bytes:
    """A cell result whose components hold a NaN, sealed anew (the digest matches: the range check must
    catch it)."""
    plain = unseal(blob)
    n = int.from_bytes(plain[:8], "little")
    comp = np.load(io.BytesIO(plain[8 + n :]), allow_pickle=False).astype(np.float64)
    comp.flat[0] = np.nan
    buf = io.BytesIO()
    np.save(buf, comp, allow_pickle=False)
    return seal(plain[: 8 + n] + buf.getvalue())


def _nan_rows(blob: bytes) -> bytes:
    with np.load(io.BytesIO(unseal(blob)), allow_pickle=False) as z:
        rows = {k: z[k].astype(np.float64) for k in z.files}
    first = sorted(rows)[0]
    rows[first].flat[-1] = np.inf
    buf = io.BytesIO()
    np.savez(buf, **rows)  # type: ignore[arg-type]
    return seal(buf.getvalue())


DAMAGE: dict[str, tuple[str, Callable[[bytes], bytes], str]] = {
    "cell-flipped-byte": ("cell", _flip, "does not match its digest"),
    "cell-truncated": ("cell", lambda b: b[: len(b) // 3], "does not match its digest"),
    "cell-no-seal": ("cell", lambda b: unseal(b), "no seal"),
    "cell-nan-resealed": ("cell", _nan_components, "non-finite"),
    "cell-garbage-resealed": ("cell", lambda b: seal(b"\x05" * 40), "does not decode"),
    "rows-flipped-byte": ("rows", _flip, "does not match its digest"),
    "rows-empty": ("rows", lambda b: b"", "no seal"),
    "rows-inf-resealed": ("rows", _nan_rows, "non-finite"),
    "rows-garbage-resealed": ("rows", lambda b: seal(b"PK\x03\x04 not a zip"), "do not decode"),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_damaged_scored_parts_are_recomputed_and_counted(
    case: str, first_run: tuple[dict[str, Any], Path], tmp_path: Path, finalized: list[str]
) -> None:
    cfg, out = first_run
    kind, change, why = DAMAGE[case]
    damaged = _copy(out, tmp_path / "damaged")
    n = _edit(damaged, kind, change)
    assert n > 0
    rerun = run(parse_config(cfg, "test"), damaged, quiet=True)
    assert rerun.stats.forward_calls == 0
    assert _files(damaged) == _files(out)  # the damaged parts changed nothing
    rejected = _log(damaged)["scored_parts_rejected"]
    assert len(rejected) == n, rejected
    part = "cell result" if kind == "cell" else "finish rows"
    for reasons in rejected.values():
        assert len(reasons) == 1 and reasons[0].startswith(part) and why in reasons[0], reasons
    assert finalized  # the damaged cells were finalized again from their records
    # the parts were rewritten sound: a further rerun rejects none and finalizes none
    finalized.clear()
    run(parse_config(cfg, "test"), damaged, quiet=True)
    assert "scored_parts_rejected" not in _log(damaged) and finalized == []
    assert _files(damaged) == _files(out)


def test_an_undamaged_rerun_rejects_nothing(first_run: tuple[dict[str, Any], Path], tmp_path: Path) -> None:
    cfg, out = first_run
    again = _copy(out, tmp_path / "again")
    run(parse_config(cfg, "test"), again, quiet=True)
    assert "scored_parts_rejected" not in _log(again)


def test_kept_captioning_scores_follow_who_scores(
    first_run: tuple[dict[str, Any], Path],
    tmp_path: Path,
    finalized: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cfg, out = first_run
    same = _copy(out, tmp_path / "same")
    run(parse_config(cfg, "test"), same, quiet=True)
    assert finalized == []
    # another METEOR jar (or options) on this machine: METEOR is not among this config's metrics, so
    # nothing changes; with METEOR asked for, the identity names the jar
    monkeypatch.setattr(captioning, "meteor_version", lambda: "argus-meteor/9 meteor-2.0 jar-sha256:0")
    run(parse_config(cfg, "test"), same, quiet=True)
    assert finalized == []
    task = captioning.CaptioningTask(captioning.CaptioningTask.options_model(name="captioning"))
    monkeypatch.setattr(shutil, "which", lambda _name: "/usr/bin/java")
    with_java = task.scoring_hash()
    assert "meteor-2.0" in task.scorer_identity()
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    assert task.scoring_hash() != with_java and "METEOR" not in task.scorer_identity()
