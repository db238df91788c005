"""The built-in condition kinds own what the runner used to decide by testing a condition's kind."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from argus_eval.data.images import load_image
from argus_eval.errors import PerturbationError
from argus_eval.perturb import image as image_perturb
from argus_eval.perturb.conditions import CLEAN, Condition, expand_conditions
from argus_eval.runner.inputs.images import ImageCache
from argus_eval.tasks.captioning import CaptioningTask
from argus_eval.tasks.reasoning import ReasoningTask
from argus_eval.tasks.retrieval import RetrievalTask

IDS = ["clean", "image:brightness@2", "image:fog@3", "text:typos@2", "control:blank@1", "control:swap@1"]


def test_seed_partner_and_gallery_behaviour_per_kind() -> None:
    conds = [Condition.parse(i) for i in IDS]
    # the run seed reaches perturbations and swaps, not clean, blank or a deterministic corruption
    assert [c.uses_seed for c in conds] == [False, False, True, True, False, True]
    assert [c.needs_partner for c in conds] == [False, False, False, False, False, True]
    assert [c.shows_perturbed_image for c in conds] == [False, True, True, False, False, False]


def test_which_tasks_accept_which_conditions() -> None:
    # retrieval: clean, image, text; captioning (texts are references): clean, image, controls;
    # reasoning: all of them
    expected = {
        RetrievalTask(): [True, True, True, True, False, False],
        CaptioningTask(): [True, True, True, False, True, True],
        ReasoningTask(): [True] * 6,
    }
    for task, accepts in expected.items():
        assert [task.accepts(Condition.parse(i)) for i in IDS] == accepts, task.name


@pytest.mark.parametrize(
    "entry", [{"image": 3}, {"image": ["fog", 3]}, {"clean": "x"}, {"control": "swap", "severity": 1}]
)
def test_entries_name_a_registered_kind_and_its_names(entry: dict[str, object]) -> None:
    with pytest.raises(PerturbationError):
        expand_conditions([entry])


def test_the_image_cache_decodes_once_and_stores_only_changed_pixels(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    path = tmp_path / "a.png"
    Image.fromarray(rng.integers(0, 256, (40, 48, 3), dtype=np.uint8)).save(path)
    cache = ImageCache()
    clean = cache.get(path, "a", CLEAN, 1)
    text = cache.get(path, "a", Condition.parse("text:typos@2"), 2)
    swap = cache.get(path, "a", Condition.parse("control:swap@1"), 3)
    assert text is clean and swap is clean and not clean.flags.writeable
    fog = Condition.parse("image:fog@3")
    foggy = cache.get(path, "a", fog, 4)
    assert np.array_equal(foggy, image_perturb.corrupt(load_image(path, "a"), "fog", 3, 4))
    assert cache.get(path, "a", fog, 4) is foggy and cache._bytes == clean.nbytes + foggy.nbytes
    blank = cache.get(path, "a", Condition.parse("control:blank@1"), 5)
    assert np.unique(blank).tolist() == [128] and blank.shape == clean.shape
