"""A reused --out never serves stale records: seed, image files and model options are part of the key."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import RunOutcome, run
from argus_eval.runner.store import Store
from hardening_fixtures import assert_same_as_fresh, karpathy_config, write_image


def _run(cfg: dict[str, Any], out: Path) -> RunOutcome:
    return run(parse_config(cfg, "test"), out, quiet=True)


def test_changed_seed_recomputes_exactly_the_seeded_records(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = _run(karpathy_config(data, seed=0), tmp_path / "reused")
    n_clean = sum(len(c.samples) for c in first.plan.cells if c.condition.kind == "clean")
    n_seeded = sum(len(c.samples) for c in first.plan.cells if c.condition.kind != "clean")
    assert n_clean and n_seeded
    again = _run(karpathy_config(data, seed=1), tmp_path / "reused")
    assert again.stats.stale == n_seeded  # the clean records do not depend on the seed
    assert again.stats.records_written == n_seeded
    _run(karpathy_config(data, seed=1), tmp_path / "fresh")
    assert_same_as_fresh(tmp_path / "reused", tmp_path / "fresh")


def test_replaced_image_recomputes_exactly_its_records(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = _run(karpathy_config(data), tmp_path / "reused")
    image = data / "images" / "im1.png"
    stat = image.stat()
    write_image(image, seed=99)
    os.utime(image, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # a copy may land in the same tick
    again = _run(karpathy_config(data), tmp_path / "reused")
    affected = sum(1 for c in first.plan.cells for s in c.samples if s.image == "im1.png")
    assert affected == len(first.plan.cells)
    assert again.stats.stale == affected and again.stats.records_written == affected
    _run(karpathy_config(data), tmp_path / "fresh")
    assert_same_as_fresh(tmp_path / "reused", tmp_path / "fresh")


def test_unchanged_rerun_makes_no_calls(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _run(karpathy_config(data), tmp_path / "out")
    again = _run(karpathy_config(data), tmp_path / "out")
    assert again.stats.forward_calls == 0 and again.stats.stale == 0 and again.stats.records_written == 0


def test_model_option_that_reaches_the_model_is_in_its_key() -> None:
    from argus_eval.models.loading import model_fingerprint
    from argus_eval.models.spec import ModelConfig

    base = ModelConfig(name="m", spec="api:http://127.0.0.1:1/v1#m")
    assert model_fingerprint(base) != model_fingerprint(base.model_copy(update={"max_new_tokens": 5}))
    runtime_only = base.model_copy(update={"options": {"concurrency": 2}})
    assert model_fingerprint(base) == model_fingerprint(runtime_only)


def test_a_plan_with_no_cell_says_why(tmp_path: Path) -> None:
    import pytest

    from argus_eval.errors import ConfigError

    cfg = karpathy_config(tmp_path / "data")
    cfg["tasks"] = ["reasoning"]  # the Karpathy data holds captions only, like questions_per_image: 0
    with pytest.raises(
        ConfigError, match=r"nothing to evaluate: task reasoning has no samples in dataset k3"
    ):
        _run(cfg, tmp_path / "out")


def test_one_pixel_image_runs_clean_and_fails_only_where_a_kernel_needs_room(tmp_path: Path) -> None:
    from PIL import Image

    data = tmp_path / "data"
    cfg = karpathy_config(data)
    Image.fromarray(np.full((1, 1, 3), 9, dtype=np.uint8)).save(data / "images" / "im0.png")
    out = _run(cfg, tmp_path / "out")
    with Store(tmp_path / "out" / "store.sqlite") as st:
        by_cond = {c.condition.id: st.read(c.key)["img/0"] for c in out.plan.cells}
    assert by_cond["clean"].error is None
    noisy = by_cond["image:gaussian_noise@3"].error
    assert noisy is not None and noisy.startswith("input: ") and "1x1 pixels" in noisy


def test_questions_per_image_zero_says_so(tmp_path: Path) -> None:
    import pytest

    from argus_eval.errors import ConfigError
    from pipeline_fixtures import tiny_config

    cfg = tiny_config(tmp_path / "cache", tasks=["reasoning"])
    for d in cfg["datasets"]:
        d["questions_per_image"] = 0
    with pytest.raises(ConfigError) as e:
        _run(cfg, tmp_path / "out")
    msg = str(e.value)
    assert "nothing to evaluate: task reasoning has no samples in dataset studio" in msg
    assert "questions_per_image" in msg
