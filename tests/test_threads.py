"""Threads that fit the machine: cores from the affinity mask and the cgroup quota, requests clipped
with a note, the passive OpenMP wait policy in place before torch loads, the choice recorded in the
manifest, and results that do not depend on the thread count."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from argus_eval.results_model import results_json
from argus_eval.runner import threads
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
from pipeline_fixtures import tiny_config

SRC = str(Path(threads.__file__).resolve().parents[2])


def _v2(tmp_path: Path, cpu_max: str | None, parent_max: str | None = None) -> tuple[Path, Path]:
    root = tmp_path / "cg"
    own = root / "box" / "job"
    own.mkdir(parents=True)
    (root / "cgroup.controllers").write_text("cpu memory\n")
    if parent_max is not None:
        (root / "box" / "cpu.max").write_text(parent_max + "\n")
    if cpu_max is not None:
        (own / "cpu.max").write_text(cpu_max + "\n")
    proc = tmp_path / "proc_cgroup"
    proc.write_text("0::/box/job\n")
    return root, proc


def test_cgroup_v2_quota_is_read_and_the_tightest_ancestor_binds(tmp_path: Path) -> None:
    root, proc = _v2(tmp_path, "150000 100000", parent_max="100000 100000")
    assert threads.cgroup_quota(root, proc) == (1.0, "cgroup v2 cpu.max")
    root, proc = _v2(tmp_path / "b", "250000 100000")
    assert threads.cgroup_quota(root, proc) == (2.5, "cgroup v2 cpu.max")
    root, proc = _v2(tmp_path / "c", "max 100000")
    assert threads.cgroup_quota(root, proc) is None


def test_cgroup_v1_quota_is_read(tmp_path: Path) -> None:
    root = tmp_path / "cg"
    own = root / "cpu,cpuacct" / "job"
    own.mkdir(parents=True)
    (root / "cpu,cpuacct" / "cpu.cfs_quota_us").write_text("-1\n")
    (root / "cpu,cpuacct" / "cpu.cfs_period_us").write_text("100000\n")
    (own / "cpu.cfs_quota_us").write_text("50000\n")
    (own / "cpu.cfs_period_us").write_text("100000\n")
    proc = tmp_path / "proc_cgroup"
    proc.write_text("4:cpu,cpuacct:/job\n3:memory:/job\n")
    assert threads.cgroup_quota(root, proc) == (0.5, "cgroup v1 cpu.cfs_quota_us")


def test_available_cores_is_the_affinity_mask_lowered_to_the_quota(tmp_path: Path) -> None:
    affinity = len(os.sched_getaffinity(0))
    none = threads.available_cores(tmp_path / "missing", tmp_path / "missing_proc")
    assert none == threads.Cores(affinity, "sched_getaffinity", affinity, None)
    root, proc = _v2(tmp_path, "50000 100000")  # half a core: one thread
    got = threads.available_cores(root, proc)
    assert got.count == 1 and got.quota == 0.5
    assert got.source == ("cgroup v2 cpu.max" if affinity > 1 else "sched_getaffinity")


def test_a_request_above_the_cores_is_clipped_with_a_note() -> None:
    cores = threads.Cores(2, "cgroup v2 cpu.max", 8, 2.0)
    assert threads.fit(None, cores, "threads") == (2, None)
    assert threads.fit(1, cores, "threads") == (1, None)
    n, note = threads.fit(6, cores, "threads")
    assert n == 2 and note == (
        "threads: 6 thread(s) asked but 2 core(s) are available (cgroup v2 cpu.max); clipped to 2"
    )
    assert threads.fit(None, cores, "threads", workers=2) == (1, None)  # 2 workers x 1 thread
    plan = threads.plan_threads(6, timing=4, cores=cores)
    assert (plan.intra_op, plan.inter_op, plan.timing) == (2, 1, 2)
    assert [n.split(":")[0] for n in plan.notes] == ["threads", "efficiency.cpu_threads"]


def _in_child(code: str, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k not in threads.WAIT_POLICY}
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**base, "PYTHONPATH": SRC, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return out.stdout.strip()


# What the OpenMP runtime reads when it loads: the C environment, read after torch is imported.
_PROBE = """
import ctypes, sys
import argus_eval.cli
before = 'torch' in sys.modules
import torch
torch.ones(64, 64) @ torch.ones(64, 64)  # start the OpenMP pool
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
print(before, libc.getenv(b'OMP_WAIT_POLICY').decode(), libc.getenv(b'KMP_BLOCKTIME').decode())
"""


def test_the_cli_sets_the_passive_wait_policy_before_torch_loads() -> None:
    assert _in_child(_PROBE) == "False PASSIVE 0"
    assert _in_child(_PROBE, OMP_WAIT_POLICY="ACTIVE") == "False ACTIVE 0"  # the user's choice is kept


def _tiny(tmp_path: Path, n: int | None) -> dict[str, object]:
    # zoo models, large enough that torch splits their ops across threads; one domain keeps it short
    cfg = tiny_config(tmp_path / "cache", tasks=["retrieval", "reasoning"], resamples=20)
    cfg["models"] = [
        {"name": "clip", "spec": "zoo:clip", "device": "cpu", "batch_size": 4},
        {"name": "vqa", "spec": "zoo:blip_vqa", "device": "cpu", "batch_size": 4},
    ]
    cfg["datasets"] = cfg["datasets"][:1]
    if n is not None:
        cfg["threads"] = n
    return cfg


def _without_threads(res: dict[str, object]) -> str:
    manifest = res["manifest"]
    assert isinstance(manifest, dict)
    manifest["hardware"].pop("threads")
    manifest["config"].pop("threads")
    return json.dumps(res, sort_keys=True)


def test_results_do_not_depend_on_the_thread_count(tmp_path: Path) -> None:
    many = 64  # every core (2 here), clipped with a note
    one = results_json(run(parse_config(_tiny(tmp_path, 1), "t"), tmp_path / "one", quiet=True).results)
    two = results_json(run(parse_config(_tiny(tmp_path, many), "t"), tmp_path / "many", quiet=True).results)
    cores = threads.available_cores().count
    used = two["manifest"]["hardware"]["threads"]
    assert used["intra_op_threads"] == min(many, cores) and used["inter_op_threads"] == 1
    assert used["cores_available"] == cores and used["omp_wait_policy"] == os.environ.get("OMP_WAIT_POLICY")
    clipped = [n for n in two["notes"] if n.startswith("threads:")]
    assert clipped == (
        []
        if many <= cores
        else [
            f"threads: {many} thread(s) asked but {cores} core(s) "
            f"are available ({used['cores_source']}); clipped to {cores}"
        ]
    )
    if many > cores:
        two["notes"].remove(clipped[0])
    assert one["manifest"]["hardware"]["threads"]["intra_op_threads"] == 1
    assert _without_threads(one) == _without_threads(two)


def test_blas_and_torch_threads_follow_the_plan_inside_a_run_whatever_was_imported_first() -> None:
    # torch imported before argus_eval (a library caller), numpy's BLAS loaded: both set inside, restored
    code = """
import torch, numpy
from threadpoolctl import threadpool_info
from argus_eval.runner import threads
blas = lambda: sorted({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})
before = (torch.get_num_threads(), blas())
plan = threads.plan_threads(1, cores=threads.Cores(2, "test", 2, None))
with threads.using(plan):
    inside = (torch.get_num_threads(), blas())
import json
print(json.dumps([before, inside, (torch.get_num_threads(), blas())]))
"""
    before, inside, after = json.loads(_in_child(code))
    assert inside == [1, [1]] and after == before
