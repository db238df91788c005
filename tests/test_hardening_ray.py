"""The Ray executor recomputes stale records like the local one: the whole fixed batch runs, only the
stale records are written, and they equal a fresh local run's."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
from argus_eval.runner.store import Store
from hardening_fixtures import karpathy_config, karpathy_dataset, write_image
from ray_fixtures import cluster  # noqa: F401  (one local two-CPU cluster per module; skips without Ray)


@pytest.mark.usefixtures("cluster")
def test_ray_recomputes_a_replaced_image_like_a_fresh_run(tmp_path: Path) -> None:
    data = tmp_path / "data"
    cfg = karpathy_config(data)
    first = run(parse_config(cfg, "test"), tmp_path / "reused", quiet=True)
    image = data / "images" / "im1.png"
    stamp = image.stat()
    write_image(image, seed=99)
    os.utime(image, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 10**9))
    again = run(parse_config({**cfg, "executor": "ray"}, "test"), tmp_path / "reused", quiet=True)
    assert again.stats.stale == len(first.plan.cells) == again.stats.records_written
    run(parse_config(cfg, "test"), tmp_path / "fresh", quiet=True)
    with Store(tmp_path / "reused" / "store.sqlite") as a, Store(tmp_path / "fresh" / "store.sqlite") as b:
        for cell, _ in b.iter_cells():
            ra, rb = a.read(cell), b.read(cell)
            assert ra.keys() == rb.keys()
            for sid, r in rb.items():
                for name, arr in r.arrays.items():
                    np.testing.assert_array_equal(ra[sid].arrays[name], arr)


def _session_processes(sid: int) -> dict[int, str]:
    """pid -> process title of every process of a session (Ray names its processes ray::...)."""
    out = subprocess.run(["ps", "-o", "pid=,args=", "-s", str(sid)], capture_output=True, text=True).stdout
    return {int(pid): args for pid, _, args in (line.strip().partition(" ") for line in out.splitlines())}


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="needs ray")
def test_a_killed_dashboard_agent_ends_the_run_with_one_error_line_naming_it(tmp_path: Path) -> None:
    """SIGKILL of the local cluster's dashboard agent mid-run: the raylet fate-shares with it and Ray ends
    the driver from C++ (exit status 1, before: nothing printed). The supervised run ends with one error
    line naming the agent and how to resume; rerunning on the same --out completes the run."""
    data = tmp_path / "data"
    karpathy_dataset(data, n=8)
    cfg = karpathy_config(data)  # clean and one perturbation: 16 samples, one a shard (so it is mid-run)
    cfg["models"][0]["batch_size"] = 1
    cfg["executor_options"] = {"num_cpus": 2, "shard_size": 1}
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "out"
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    argv = [sys.executable, "-m", "argus_eval.cli", "run", "-c", str(config), "--out", str(out), "-q"]
    child = subprocess.Popen(
        [*argv, "--executor", "ray"], env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
        text=True, start_new_session=True,
    )  # fmt: skip
    killed = None
    deadline = time.monotonic() + 240
    while child.poll() is None and time.monotonic() < deadline:
        procs = _session_processes(child.pid)
        agents = [p for p, a in procs.items() if a.startswith("ray::DashboardAgent")]
        if killed is None and agents and any(a.startswith("ray::ModelWorker") for a in procs.values()):
            killed = agents[0]
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.2)
    _, stderr = child.communicate(timeout=60)
    assert killed is not None, "the run ended before its workers started"
    assert child.returncode == 2, stderr
    ours = [line for line in stderr.splitlines() if not line.startswith("[")]  # [...]: Ray's C++ log
    assert "Traceback" not in stderr
    (line,) = [x for x in ours if x.strip()]
    # Which side notices first is a race: the driver ending abruptly, or (on a loaded machine) every
    # worker actor dying before it; either way one line names the lost component and says to rerun.
    abrupt = "error: the run on Ray ended abruptly (exit status 1): the local Ray cluster lost a "
    workers_died = "error: every Ray worker of model 'clip' died (ActorDiedError); "
    assert line.startswith((abrupt, workers_died)), line
    assert "the local Ray cluster lost a component: dashboard_agent failed" in line
    assert ("rerun the same command to resume" if line.startswith(abrupt) else "rerun to complete") in line
    # the same command, as the line says (its executor_options are Ray's: the local executor refuses them)
    rerun = subprocess.run([*argv, "--executor", "ray"], env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert (out / "results.json").is_file()


def test_a_supervised_ray_run_that_ends_as_the_cli_ends_keeps_its_status_and_line(tmp_path: Path) -> None:
    """The supervisor adds nothing when the child ended through the CLI: one error line, exit 2."""
    cfg = karpathy_config(tmp_path / "data")
    cfg["datasets"][0]["annotations"] = str(tmp_path / "missing.json")
    cfg["executor"] = "ray"
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump(cfg))
    argv = [sys.executable, "-m", "argus_eval.cli", "run", "-c", str(config), "--out", str(tmp_path / "o")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: Karpathy split file ") and "missing.json not found" in line


def test_an_abrupt_end_names_what_the_raylet_said(tmp_path: Path) -> None:
    from argus_eval.commands.supervise import abrupt_end
    from argus_eval.runner.ray.loss import Note

    logs = tmp_path / "ray" / "session_latest" / "logs"
    logs.mkdir(parents=True)
    (logs / "raylet.out").write_text(
        "[state-dump] ...\nThe raylet fate shares with the agent.\n"
        'reason_message: "dashboard_agent failed and raylet fate-shares with it."\n'
    )
    line = abrupt_end(1, Note(temp_dir=tmp_path / "ray", own=True, exited=False))
    assert line == (
        "the run on Ray ended abruptly (exit status 1): the local Ray cluster lost a component: "
        "dashboard_agent failed and raylet fate-shares with it; rerun the same command to resume "
        "(the store keeps every finished batch)"
    )
    assert not (tmp_path / "ray").exists()  # the run's own temp dir, which the child could not remove
    assert "killed by signal 9" in abrupt_end(-9, Note())
