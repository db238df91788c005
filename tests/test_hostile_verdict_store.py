"""Judge verdicts kept in the store verify themselves (runner/judge/judging.py): a verdict whose record was
edited, truncated or made NaN (its stamp's digest recomputed, so only the re-read of its raw text can
tell) is never used; it is judged again and counted (run_log.json judge.rejected), and the run's
results.json and samples.jsonl equal the undamaged run's."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from api_server import ServerState, serve
from argus_eval.data.types import fingerprint_of
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
from judge_fixtures import judged_config


def _served(prompt: str) -> str:
    # deterministic: the verdict depends on the prompt alone
    return "Yes, correct." if len(prompt) % 2 else "No, that is wrong."


def _config(url: str, cache: Path) -> dict[str, Any]:
    judge = {"model": f"api:{url}#judge", "options": {"concurrency": 1}, "primary": "judge", "device": "cpu"}
    return {**judged_config("verdicts", judge), "cache_dir": str(cache)}


Row = tuple[str, str, str | None, str | None, str]  # cell, sample id, output, error, stamp


def _flip_verdict(row: Row) -> Row:
    out = json.loads(row[2] or "{}")
    out["verdict"] = 1.0 - out["verdict"]
    return (*row[:2], json.dumps(out, sort_keys=True), row[3], row[4])


def _truncate_raw(row: Row) -> Row:
    out = json.loads(row[2] or "{}")
    out["raw"] = out["raw"][:3]
    return (*row[:2], json.dumps(out, sort_keys=True), row[3], row[4])


def _nan_resealed(row: Row) -> Row:
    """A NaN verdict with the stamp's digest made for it: the digest holds, the re-read does not."""
    out = {**json.loads(row[2] or "{}"), "verdict": float("nan")}
    prompt_part = row[4].split(":", 1)[0]
    return (*row[:2], json.dumps(out, sort_keys=True), row[3], f"{prompt_part}:{fingerprint_of(out, row[3])}")


def _resealed_flip(row: Row) -> Row:
    flipped = _flip_verdict(row)
    out = json.loads(flipped[2] or "{}")
    return (*flipped[:4], f"{row[4].split(':', 1)[0]}:{fingerprint_of(out, row[3])}")


def _stamp_digest(row: Row) -> Row:
    return (*row[:4], row[4][:-1] + ("0" if row[4][-1] != "0" else "1"))


DAMAGE: list[tuple[Callable[[Row], Row], str]] = [
    (_flip_verdict, "does not match its digest"),
    (_truncate_raw, "does not match its digest"),
    (_nan_resealed, "not what its raw text reads as"),
    (_resealed_flip, "not what its raw text reads as"),
    (_stamp_digest, "does not match its digest"),
]


def _files(out: Path) -> dict[str, bytes]:
    return {n: (out / n).read_bytes() for n in ("results.json", "samples.jsonl")}


def test_damaged_verdicts_are_judged_again_and_counted(tmp_path: Path) -> None:
    state = ServerState(answer=_served)
    with serve(state) as url:
        cfg = parse_config(_config(url, tmp_path / "cache"), "verdicts.yaml")
        first = run(cfg, tmp_path / "out", quiet=True)
        model_cells = {c.key for c in first.plan.cells}
        shutil.copytree(tmp_path / "out", tmp_path / "sound")
        with sqlite3.connect(tmp_path / "out" / "store.sqlite") as db:
            rows: list[Row] = [
                (str(c), str(s), o, e, str(t))
                for c, s, o, e, t in db.execute(
                    "SELECT cell, sample_id, output, error, stamp FROM records ORDER BY cell, sample_id"
                )
                if str(c) not in model_cells and e is None
            ]
            assert len(rows) >= len(DAMAGE)
            for row, (change, _why) in zip(rows, DAMAGE, strict=False):
                cell, sid, output, error, stamp = change(row)
                db.execute(
                    "UPDATE records SET output=?, error=?, stamp=? WHERE cell=? AND sample_id=?",
                    (output, error, stamp, cell, sid),
                )
        asked = state.requests
        run(cfg, tmp_path / "sound", quiet=True)
        assert state.requests == asked  # the undamaged store: every verdict stands
        run(cfg, tmp_path / "out", quiet=True)
        assert state.requests - asked == len(DAMAGE)  # exactly the damaged verdicts judged again
        log = json.loads((tmp_path / "out" / "run_log.json").read_text())
        rejected = log["judge"]["rejected"]
        assert sum(rejected.values()) == len(DAMAGE), rejected
        for _change, why in DAMAGE:
            assert any(why in reason for reason in rejected), (why, rejected)
        assert _files(tmp_path / "out") == _files(tmp_path / "sound")
        # judged again, kept sound: a further rerun asks nothing and rejects nothing
        asked = state.requests
        run(cfg, tmp_path / "out", quiet=True)
        log = json.loads((tmp_path / "out" / "run_log.json").read_text())
        assert state.requests == asked and "rejected" not in log["judge"]
