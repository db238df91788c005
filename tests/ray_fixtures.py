"""One local two-CPU Ray cluster per test module that uses it (skips without Ray)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'argus-eval[ray]'")
    temp = tempfile.mkdtemp(prefix="argus-ray-test-")  # short: Ray's unix sockets live under it
    # the workers import this module from TESTS, and the package from where the driver does
    path = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH", "")) if p)
    env = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": path}
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)  # the local cluster's processes inherit these
        ray.init(num_cpus=2, include_dashboard=False, _temp_dir=temp, log_to_driver=False)
    yield ray
    ray.shutdown()
    shutil.rmtree(temp, ignore_errors=True)
