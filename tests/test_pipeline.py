"""The whole house end to end: config -> plan -> runner -> store -> scoring -> results, with resume."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from argus_eval.results_model import SCHEMA, load_results, results_json, results_text
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
from pipeline_fixtures import tiny_config

ROOT = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_end_to_end_and_cached_rerun(tmp_path: Path, cache: Path) -> None:
    cfg = parse_config(
        tiny_config(cache, efficiency=True, tasks=["retrieval", "captioning", "reasoning"]), "test"
    )
    first = run(cfg, tmp_path / "out", quiet=True)
    assert first.stats.forward_calls > 0
    res = results_json(first.results)
    clip = res["models"]["clip"]
    for axis in ("P", "CDC", "RR", "E", "ARGUS"):
        assert clip[axis] is not None and 0.0 <= clip[axis] <= 1.0, axis
        lo, hi = clip["intervals"][axis]
        assert lo <= clip[axis] + 1e-12 and clip[axis] <= hi + 1e-12
    # every cell names the protocol that produced it; CLIP reasons and captions through substitutes
    protocols = {(c["task"], c["protocol"], c["native_protocol"]) for c in res["cells"]}
    assert ("retrieval", "embed", True) in protocols
    assert ("reasoning", "embed-statements", False) in protocols
    assert ("captioning", "caption-by-retrieval", False) in protocols
    # captioning takes image conditions only; text perturbations hit retrieval and reasoning
    conds = {(c["task"], c["condition"]) for c in res["cells"]}
    assert ("captioning", "text:typos@2") not in conds and ("reasoning", "text:typos@2") in conds
    manifest = res["manifest"]
    for key in ("config", "seeds", "versions", "git", "hardware"):
        assert key in manifest
    eff = res["efficiency"]["clip"]
    assert eff["flops_per_sample"] > 0 and eff["latency_ms_p50"] > 0 and eff["params"] > 0
    lines = _lines(tmp_path / "out" / "samples.jsonl")
    assert len(lines) == sum(c["samples"] for c in res["cells"])
    keys = Counter((d["model"], d["task"], d["dataset"], d["condition"], d["sample_id"]) for d in lines)
    assert max(keys.values()) == 1
    before = (tmp_path / "out" / "results.json").read_bytes()
    # the file is the Results model's text: loading it validates it, and writing it again changes no byte
    loaded = load_results(tmp_path / "out" / "results.json")
    assert loaded.schema_ == SCHEMA and results_text(loaded).encode("utf-8") == before
    assert results_text(first.results).encode("utf-8") == before

    second = run(cfg, tmp_path / "out", quiet=True)
    assert second.stats.forward_calls == 0
    assert second.stats.records_written == 0
    assert (tmp_path / "out" / "results.json").read_bytes() == before


def test_text_perturbation_never_touches_references(tmp_path: Path, cache: Path) -> None:
    cfg = parse_config(tiny_config(cache, tasks=["reasoning"]), "test")
    run(cfg, tmp_path / "out", quiet=True)
    lines = _lines(tmp_path / "out" / "samples.jsonl")
    clean = {d["sample_id"]: d["reference"] for d in lines if d["condition"] == "clean"}
    typo = {d["sample_id"]: d["reference"] for d in lines if d["condition"] == "text:typos@2"}
    assert clean == typo


DRIVER = """
import sys, time, yaml
from pathlib import Path
from argus_eval.models.loading import load_model
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run

class Slow:
    # delegates to the real model, sleeping per call so the parent can kill us half way
    def __init__(self, inner):
        self._inner = inner
    def __getattr__(self, name):
        attr = getattr(self._inner, name)
        if callable(attr) and name.startswith(("embed", "generate", "classify", "choose", "score")):
            def slow(*a, **k):
                time.sleep(0.25)
                return attr(*a, **k)
            return slow
        return attr

cfg = parse_config(yaml.safe_load(Path(sys.argv[1]).read_text()), sys.argv[1])
run(cfg, Path(sys.argv[2]), quiet=True, loader=lambda c: Slow(load_model(c)))
"""


def test_sigkill_half_way_then_resume_equals_uninterrupted(tmp_path: Path, cache: Path) -> None:
    cfg_dict = tiny_config(cache, batch_size=2)
    cfg_path = tmp_path / "run.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg_dict))
    cfg = parse_config(cfg_dict, "test")
    # the uninterrupted reference run
    ref = run(cfg, tmp_path / "ref", quiet=True)
    total = ref.stats.records_written
    assert total > 10

    killed = tmp_path / "killed"
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, str(driver), str(cfg_path), str(killed)], env=env)
    store = killed / "store.sqlite"
    done = 0
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if store.exists():
            try:
                with sqlite3.connect(store, timeout=1) as db:
                    done = db.execute("SELECT COUNT(*) FROM records").fetchone()[0]
            except sqlite3.OperationalError:
                done = 0
            if done >= total // 3:
                break
        time.sleep(0.05)
    assert proc.poll() is None, "driver finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with sqlite3.connect(store) as db:
        partial = db.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    assert 0 < partial < total

    resumed = run(cfg, killed, quiet=True)
    assert resumed.stats.records_written == total - partial
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT cell, sample_id, COUNT(*) FROM records GROUP BY cell, sample_id").fetchall()
    assert len(rows) == total and all(r[2] == 1 for r in rows)
    # identical except the source revision, which moves if a commit lands between the two runs
    a, b = (json.loads((d / "results.json").read_text()) for d in (killed, tmp_path / "ref"))
    a["manifest"].pop("git"), b["manifest"].pop("git")
    assert a == b
    assert (killed / "samples.jsonl").read_bytes() == (tmp_path / "ref" / "samples.jsonl").read_bytes()
