"""The Ray executor when no cluster is connected yet: it starts (and stops) its own, keeps Ray's files in
the temp dir it was given, and refuses bad addresses and options before any work."""

from __future__ import annotations

import shutil
import socket
import tempfile
from pathlib import Path
from typing import Any

import pytest

from argus_eval.errors import ConfigError, ExecutorError
from argus_eval.results_model import results_json
from argus_eval.runner.config import RunSpec, parse_config
from argus_eval.runner.pipeline import run
from pipeline_fixtures import tiny_config

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'argus-eval[ray]'")


@pytest.fixture(autouse=True)
def _no_cluster() -> None:
    assert not ray.is_initialized(), "another test module left Ray connected"


def _cfg(cache: Path, **options: Any) -> RunSpec:
    d = tiny_config(cache, tasks=["retrieval"], efficiency=True)
    d["executor"], d["executor_options"] = "ray", options
    return parse_config(d, "test")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: nothing listens there


def test_own_local_cluster_started_in_temp_dir_and_shut_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # Ray must not write ~/.ray (auth token) or usage stats
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    monkeypatch.delenv("RAY_USAGE_STATS_ENABLED", raising=False)
    temp = Path(tempfile.mkdtemp(prefix="argus-ray-test-"))  # short: Ray's unix sockets live under it
    try:
        got = run(_cfg(tmp_path / "cache", num_cpus=2, temp_dir=str(temp)), tmp_path / "out", quiet=True)
        assert not ray.is_initialized()
        assert any(temp.glob("session_*")), "Ray's session files are not in the temp dir it was given"
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    assert not (home / ".ray").exists()
    assert got.stats.records_written > 0 and got.stats.failed == 0
    # efficiency is measured after the Ray work, on the driver, for a model Ray workers ran
    eff = results_json(got.results)["efficiency"]["clip"]
    assert eff["latency_ms_p50"] > 0 and eff["flops_per_sample"] > 0


def test_unreachable_address_fails_fast(tmp_path: Path) -> None:
    port = _closed_port()
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        with pytest.raises(
            ExecutorError, match=f"cannot reach the Ray cluster at {address}.*ray start --head"
        ):
            run(_cfg(tmp_path / "cache", address=address), tmp_path / "out", quiet=True)
    with pytest.raises(ExecutorError, match="not HOST:PORT"):
        run(_cfg(tmp_path / "cache", address="nowhere"), tmp_path / "out", quiet=True)
    assert not ray.is_initialized()


def test_bad_options_name_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"executor_options\.gpus_per_modle: unknown key"):
        run(_cfg(tmp_path / "cache", gpus_per_modle=1), tmp_path / "out", quiet=True)
    with pytest.raises(ConfigError, match=r"executor_options\.models: \['blip'\] are not models"):
        run(_cfg(tmp_path / "cache", models={"blip": {"gpus": 1}}), tmp_path / "out", quiet=True)
