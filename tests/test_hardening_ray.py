"""The Ray executor recomputes stale records like the local one: the whole fixed batch runs, only the
stale records are written, and they equal a fresh local run's."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
from argus_eval.runner.store import Store
from hardening_fixtures import karpathy_config, write_image
from test_ray_executor import cluster  # noqa: F401  (its local two-CPU cluster; skips without Ray)


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
