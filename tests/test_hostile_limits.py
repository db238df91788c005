"""Hostile inputs at three more surfaces, each case one line or a bounded answer, never a traceback:
a server's retry hints (backoff stays within max_wait_s), a detector checkpoint or config out of its
domain (refused at load, naming the tensor or key), and two runs that share names but not data
(compare lists the cells as not comparable, never pairs them)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from argus_eval.errors import ModelLoadError
from argus_eval.models.api import retry_after, retry_wait
from argus_eval.models.frcnn.config import FrcnnConfig
from argus_eval.models.frcnn.provider import FrcnnRegionFeatures
from argus_eval.report.compare import compare_runs
from argus_eval.testing.tiny_frcnn import build_detector_dir
from report_fixtures import make_run

# ---- backoff: whatever the server asks, a wait never exceeds max_wait_s ----


@pytest.mark.parametrize(
    ("attempt", "asked_s", "backoff_s", "max_wait_s", "expected"),
    [
        (8, 0.0, 1.0, 30.0, 30.0),  # 2**7 s of backoff, capped
        (1, 86_400.0, 0.5, 60.0, 60.0),  # a Retry-After of a day, capped
        (10**9, 0.0, 1.0, 10.0, 10.0),  # an absurd attempt number: no overflow, capped
        (3, 2.0, 0.5, 60.0, 2.0),  # the longer of the hint (2 s) and the backoff (0.5 * 4 = 2 s)
        (0, 0.0, 0.25, 60.0, 0.25),  # attempt 0 counts as the first
    ],
)
def test_a_wait_is_the_longer_of_hint_and_backoff_within_the_cap(
    attempt: int, asked_s: float, backoff_s: float, max_wait_s: float, expected: float
) -> None:
    assert retry_wait(attempt, asked_s, backoff_s, max_wait_s) == expected


@pytest.mark.parametrize("header", ["soon", "-5", "nan-ish", "Thu, 99 Foo 2026 00:00:00 GMT", ""])
def test_a_retry_after_that_is_no_wait_asks_none(header: str) -> None:
    assert retry_after(header) == 0.0


def test_a_retry_after_date_far_ahead_is_still_capped() -> None:
    asked = retry_after("Fri, 01 Jan 2100 00:00:00 GMT")
    assert asked > 1e9 and retry_wait(1, asked, 0.5, 45.0) == 45.0


# ---- detector checkpoints and configs out of their domain ----

CLS = "roi_heads.box_predictor.cls_score.weight"
BIAS = "roi_heads.box_predictor.bbox_pred.bias"
ANCHORS = "proposal_generator.anchor_generator.cell_anchors.0"
Damage = Callable[[dict[str, torch.Tensor]], dict[str, torch.Tensor]]
DETECTOR_DAMAGE: list[tuple[str, Damage, str]] = [
    ("nan-weight", lambda s: {**s, CLS: torch.full_like(s[CLS], math.nan)}, r"cls_score\.weight holds NaN"),
    (
        "neg-inf-bias",
        lambda s: {**s, BIAS: torch.full_like(s[BIAS], -math.inf)},
        r"bbox_pred\.bias holds NaN",
    ),
    ("int-anchors", lambda s: {**s, ANCHORS: s[ANCHORS].to(torch.int64)}, r"cell_anchors\.0 has dtype"),
]


@pytest.mark.parametrize(("case", "damage", "says"), DETECTOR_DAMAGE, ids=[d[0] for d in DETECTOR_DAMAGE])
def test_a_detector_checkpoint_out_of_domain_is_refused_naming_the_tensor(
    tmp_path: Path, case: str, damage: Damage, says: str
) -> None:
    d = build_detector_dir(tmp_path / "det")
    state = torch.load(d / "pytorch_model.bin", weights_only=True)
    torch.save(damage(state), d / "pytorch_model.bin")
    with pytest.raises(ModelLoadError, match=says) as ei:
        FrcnnRegionFeatures(str(d))
    assert "\n" not in str(ei.value), case


@pytest.mark.parametrize("boxes", [0, -3, 1_000_001])
def test_a_box_count_out_of_bounds_is_one_line(boxes: int) -> None:
    with pytest.raises(ModelLoadError, match=rf"boxes = {boxes}; expected between 1 and 1000") as ei:
        FrcnnConfig(boxes=boxes, min_boxes=1).check("det/config.yaml")
    assert "\n" not in str(ei.value)


# ---- compare: the same names, other data ----


@pytest.fixture(scope="module")
def base_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("hostile-cmp") / "a", hostile=False)


def _manifest_edit(run_dir: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    doc = json.loads((run_dir / "results.json").read_text())
    edit(doc["manifest"])
    (run_dir / "results.json").write_text(json.dumps(doc))


@pytest.mark.parametrize("datasets_changed", [1, 2, "all"])
def test_datasets_of_the_same_name_but_other_data_are_never_paired(
    base_run: Path, tmp_path: Path, datasets_changed: int | str
) -> None:
    other = make_run(tmp_path / "b", hostile=False)
    names = sorted(json.loads((other / "results.json").read_text())["manifest"]["datasets"])
    changed = set(names if datasets_changed == "all" else names[: int(datasets_changed)])

    def regenerate(manifest: dict[str, Any]) -> None:
        for name in changed:
            manifest["datasets"][name]["fingerprint"] = "e" * 16

    _manifest_edit(other, regenerate)
    cmp = compare_runs(base_run, other, resamples=20)
    assert {c["dataset"] for c in cmp.not_comparable} == changed
    assert all("different data" in c["why"] for c in cmp.not_comparable)
    assert not {c.dataset for c in cmp.cells} & changed  # never paired
