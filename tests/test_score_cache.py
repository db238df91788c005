"""Scored parts kept in the store (runner/score/score_cache.py): a rerun reads them and writes the same bytes,
a changed record rescores exactly its cell, and the paired bootstrap equals a plain per-cell one."""

from __future__ import annotations

import json
import shutil
import sqlite3
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from argus_eval.metrics import _ptb
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
from argus_eval.runner.plan.cell_keys import cell_key
from argus_eval.runner.store import Store
from argus_eval.scoring.paired import align, group_rows, paired_counts
from argus_eval.scoring.types import CellData, CellKey
from argus_eval.tasks.base import Task
from pipeline_fixtures import tiny_config

OUTPUTS = ("results.json", "samples.jsonl")


def _task_classes() -> Iterator[type[Task]]:
    todo = list(Task.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if "finalize" in vars(cls):
            yield cls


@pytest.fixture
def finalized(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, tuple[str, ...]]]:
    """Every finalize call of the test: (task, dataset, sample ids of the records it scored)."""
    calls: list[tuple[str, str, tuple[str, ...]]] = []
    for cls in _task_classes():
        original = vars(cls)["finalize"]

        def counted(
            self: Task, dataset: Any, samples: Any, records: Any, protocol: Any, _f: Any = original
        ) -> Any:
            calls.append((self.name, dataset.name, tuple(sorted(records))))
            return _f(self, dataset, samples, records, protocol)

        monkeypatch.setattr(cls, "finalize", counted)
    return calls


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """One tiny run (retrieval, captioning, reasoning; 200 resamples) whose folder the tests copy."""
    root = tmp_path_factory.mktemp("scorecache")
    cfg = tiny_config(root / "cache", tasks=["retrieval", "captioning", "reasoning"], resamples=200)
    run(parse_config(cfg, "test"), root / "out", quiet=True)
    return cfg, root / "out"


def _copy(src: Path, dst: Path, *, drop_scored: bool = False) -> Path:
    shutil.copytree(src, dst)
    if drop_scored:
        with sqlite3.connect(dst / "store.sqlite") as db:
            db.execute("DELETE FROM scored")
    return dst


def _files(out: Path) -> dict[str, bytes]:
    return {name: (out / name).read_bytes() for name in OUTPUTS}


def _scored_rows(out: Path) -> int:
    with sqlite3.connect(out / "store.sqlite") as db:
        return int(db.execute("SELECT COUNT(*) FROM scored").fetchone()[0])


def test_cached_rescoring_equals_fresh_and_calls_no_finalize(
    first_run: tuple[dict[str, Any], Path], tmp_path: Path, finalized: list[Any]
) -> None:
    cfg, out = first_run
    assert _scored_rows(out) > 0
    spec = parse_config(cfg, "test")
    cached = run(spec, _copy(out, tmp_path / "cached"), quiet=True)
    assert cached.stats.forward_calls == 0
    assert finalized == []  # every cell's result and finish rows came from the store
    fresh = run(spec, _copy(out, tmp_path / "fresh", drop_scored=True), quiet=True)
    assert len(finalized) == len(fresh.plan.cells)  # scored afresh: every cell finalized
    assert _files(tmp_path / "cached") == _files(tmp_path / "fresh") == _files(out)


def test_a_changed_record_rescores_its_cell_only(
    first_run: tuple[dict[str, Any], Path], tmp_path: Path, finalized: list[Any]
) -> None:
    cfg, out = first_run
    changed = _copy(out, tmp_path / "changed")
    with sqlite3.connect(changed / "store.sqlite") as db:
        cell, sid, output = db.execute(
            "SELECT cell, sample_id, output FROM records WHERE output LIKE '%caption%' "
            "ORDER BY cell, sample_id"
        ).fetchone()
        caption = json.loads(output)["caption"]
        new = {**json.loads(output), "caption": f"{caption} and a purple dodecagon"}
        db.execute("UPDATE records SET output=? WHERE cell=? AND sample_id=?", (json.dumps(new), cell, sid))
    spec = parse_config(cfg, "test")
    rerun = run(spec, changed, quiet=True)
    assert rerun.stats.forward_calls == 0
    target = next(c for c in rerun.plan.cells if c.key == cell)
    assert len(finalized) == 1 and finalized[0][:2] == (target.task.name, target.dataset.name)
    assert sid in finalized[0][2]
    # what the cache gave equals a scoring from nothing of the same records
    fresh = run(spec, _copy(changed, tmp_path / "fresh", drop_scored=True), quiet=True)
    assert _files(changed) == _files(tmp_path / "fresh")
    before = json.loads((out / "results.json").read_text())["cells"]
    after = json.loads((changed / "results.json").read_text())["cells"]
    moved = [a for a, b in zip(after, before, strict=True) if a != b]
    assert len(moved) == 1 and moved[0]["task"] == "captioning"
    assert fresh.stats.forward_calls == 0


def _cell(key: CellKey, ids: list[str], comp: np.ndarray) -> CellData:
    def finish(sums: np.ndarray) -> np.ndarray:
        out: np.ndarray = sums[:, 0] / np.maximum(sums[:, 1], 1e-300) + 0.1 * sums[:, 2] / np.maximum(
            sums[:, 1], 1e-300
        )
        return out

    return CellData(key=key, sample_ids=ids, components=comp, finish=finish)


def test_paired_bootstrap_equals_a_plain_per_cell_bootstrap() -> None:
    """group_rows (one count matrix per group, one matmul for all its cells) against resampling each cell
    on its own, one resample at a time, from a generator seeded the documented way."""
    rng = np.random.default_rng(7)
    n, resamples, seed = 37, 300, 11
    ids = [f"s{i:03d}" for i in range(n)]
    cells = []
    for cond in ("clean", "image:defocus_blur@2", "text:typos@1"):
        comp = np.column_stack([rng.random(n), np.ones(n), rng.random(n)])
        order = rng.permutation(n)  # cells list their samples in any order
        cells.append(_cell(cell_key("m", "t", "d", cond), [ids[i] for i in order], comp[order]))
    (group,) = align(cells)
    rows, _flips = group_rows(group, paired_counts(group, resamples, seed))

    draw = np.random.default_rng([seed, zlib.crc32(b"t/d")])
    picks = [draw.integers(0, n, size=n) for _ in range(resamples)]  # indices into the sorted ids
    for c in cells:
        by_id = dict(zip(c.sample_ids, c.components, strict=True))
        sorted_comp = np.stack([by_id[s] for s in sorted(c.sample_ids)])
        expected = [c.finish(sorted_comp.sum(0)[None, :])[0]]
        expected += [c.finish(sorted_comp[idx].sum(0)[None, :])[0] for idx in picks]
        np.testing.assert_allclose(rows[c.key], np.array(expected), rtol=0, atol=1e-12)


@pytest.mark.skipif(shutil.which("java") is None, reason="java not on PATH (PTB tokenizer jar)")
def test_fresh_scoring_tokenises_every_caption_cell_in_one_jar_call(
    first_run: tuple[dict[str, Any], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg, out = first_run
    calls: list[int] = []
    real = _ptb._run_jar

    def counted(lines: Any) -> list[str]:
        calls.append(len(lines))
        return real(lines)

    decoded: list[str] = []
    real_decode = Store.decode

    def counted_decode(self: Store, cell: str, rows: Any) -> Any:
        decoded.append(cell)
        return real_decode(self, cell, rows)

    monkeypatch.setattr(_ptb, "_run_jar", counted)
    monkeypatch.setattr(Store, "decode", counted_decode)
    _ptb.forget_tokens()  # the first run in this process tokenised these sentences already
    fresh = run(parse_config(cfg, "test"), _copy(out, tmp_path / "fresh", drop_scored=True), quiet=True)
    captioning = [c for c in fresh.plan.cells if c.task.name == "captioning"]
    assert len(captioning) > 1
    assert len(calls) == 1  # before_finalize sent every cell's sentences; each finalize found them
    # each cell's records read once, whether its task looked at them ahead (captioning) or not
    assert sorted(decoded) == sorted(c.key for c in fresh.plan.cells)
    assert _files(tmp_path / "fresh") == _files(out)
