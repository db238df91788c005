"""Run conditions: ids, parsing, seeds, config entries and presets."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel, ValidationError

from argus_eval.errors import PerturbationError
from argus_eval.perturb import image as image_perturb
from argus_eval.perturb import text as text_perturb
from argus_eval.perturb.conditions import (
    CLEAN,
    PRESETS,
    Condition,
    ConditionEntry,
    apply_image,
    apply_text,
    derive_seed,
    expand_conditions,
)


def test_ids_round_trip_for_every_preset_condition() -> None:
    conditions = expand_conditions([{"preset": "full"}])
    assert conditions[0] is CLEAN and CLEAN.id == "clean"
    for c in conditions:
        assert Condition.parse(c.id) == c
    assert Condition("image", "fog", 3).id == "image:fog@3"
    assert Condition("text", "typos", 2).id == "text:typos@2"


@pytest.mark.parametrize("bad", ["", "image:fog", "fog@3", "image:fog@x", "image::3", "Clean"])
def test_malformed_ids_are_rejected(bad: str) -> None:
    with pytest.raises(PerturbationError, match="malformed"):
        Condition.parse(bad)


@pytest.mark.parametrize(
    ("kind", "name", "severity", "must_name"),
    [
        ("image", "fogg", 3, "gaussian_noise"),
        ("text", "typo", 3, "char_swap"),
        ("image", "fog", 0, "jpeg_compression"),
        ("image", "fog", 6, "jpeg_compression"),
        ("text", "typos", 9, "punctuation"),
        ("sound", "hiss", 1, "image"),
    ],
)
def test_invalid_conditions_name_the_valid_choices(
    kind: str, name: str, severity: int, must_name: str
) -> None:
    with pytest.raises(PerturbationError, match=must_name):
        Condition(kind, name, severity)
    with pytest.raises(PerturbationError):
        Condition.parse(f"{kind}:{name}@{severity}")


def test_numpy_severity_is_normalised() -> None:
    c = Condition("image", "fog", np.int64(3))  # type: ignore[arg-type]
    assert type(c.severity) is int and c == Condition("image", "fog", 3) and c.id == "image:fog@3"


def test_clean_takes_no_name_or_severity() -> None:
    with pytest.raises(PerturbationError):
        Condition("clean", "fog", 0)
    with pytest.raises(PerturbationError):
        Condition("clean", "", 2)


def test_derive_seed_range_determinism_and_sensitivity() -> None:
    seeds = {
        derive_seed(r, s, c) for r in (0, 1) for s in ("a", "b", "a b") for c in ("clean", "image:fog@3")
    }
    assert len(seeds) == 12  # every field matters
    assert all(0 <= s < 2**32 for s in seeds)
    assert derive_seed(7, "x", "text:typos@2") == derive_seed(7, "x", "text:typos@2")
    # Separator collisions: ("ab", "c") and ("a", "bc") must not meet.
    assert derive_seed(0, "ab", "c") != derive_seed(0, "a", "bc")


def test_derive_seed_is_stable_across_processes() -> None:
    code = (
        "from argus_eval.perturb.conditions import derive_seed; print(derive_seed(3, 'img-1', 'image:fog@3'))"
    )
    outs = set()
    for hash_seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        outs.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout)
    assert outs == {f"{derive_seed(3, 'img-1', 'image:fog@3')}\n"}


def test_expand_orders_dedupes_and_starts_clean() -> None:
    got = expand_conditions(
        [
            {"text": "typos", "severity": 3},
            {"image": ["fog", "snow"], "severity": [5, 1]},
            {"image": "fog", "severity": 5},
            {"text": "typos", "severity": [3]},
        ]
    )
    assert [c.id for c in got] == [
        "clean",
        "text:typos@3",
        "image:fog@5",
        "image:fog@1",
        "image:snow@5",
        "image:snow@1",
    ]
    assert [c.id for c in expand_conditions([])] == ["clean"]
    assert expand_conditions([{"preset": "none"}]) == [CLEAN]


def test_missing_severity_means_all_five() -> None:
    got = expand_conditions([{"image": "contrast"}])
    assert [c.severity for c in got[1:]] == [1, 2, 3, 4, 5]


def test_presets_have_the_advertised_sizes() -> None:
    image_full = expand_conditions([{"preset": "image-full"}])
    assert len(image_full) == 1 + 15 * 5
    assert {c.name for c in image_full[1:]} == set(image_perturb.IMAGENET_C_NAMES)
    text_full = expand_conditions([{"preset": "text-full"}])
    assert {c.name for c in text_full[1:]} == set(text_perturb.NAMES)
    assert len(text_full) == 1 + len(text_perturb.NAMES) * 5
    full = expand_conditions([{"preset": "full"}])
    assert len(full) == 1 + (len(image_perturb.names()) + len(text_perturb.NAMES)) * 5
    default = expand_conditions([{"preset": "default"}])
    assert 1 < len(default) <= 16
    assert {c.kind for c in default} == {"clean", "image", "text"}
    assert set(PRESETS) >= {"none", "default", "image-full", "text-full", "full"}


@pytest.mark.parametrize(
    "entry",
    [
        {"image": "fogg"},
        {"text": "typos", "severity": 6},
        {"text": "typos", "severity": []},
        {"text": "typos", "severity": True},
        {"image": "fog", "text": "typos"},
        {"preset": "default", "severity": 3},
        {"severity": 3},
        {"image": "fog", "level": 3},
        {"preset": "nope"},
    ],
)
def test_invalid_entries_raise_perturbation_error(entry: dict[str, object]) -> None:
    with pytest.raises(PerturbationError):
        expand_conditions([entry])


def test_custom_and_recursive_presets() -> None:
    presets: dict[str, list[dict[str, Any]]] = {
        "mine": [{"image": "fog", "severity": 2}],
        "loop": [{"preset": "loop"}],
    }
    assert [c.id for c in expand_conditions([{"preset": "mine"}], presets)] == ["clean", "image:fog@2"]
    with pytest.raises(PerturbationError, match="includes itself"):
        expand_conditions([{"preset": "loop"}], presets)


def test_condition_entry_validates_inside_a_config_model() -> None:
    class Config(BaseModel):
        conditions: list[ConditionEntry]

    ok = Config.model_validate({"conditions": [{"preset": "default"}, {"image": "fog", "severity": [1, 3]}]})
    assert [c.id for c in expand_conditions(ok.conditions)][-2:] == ["image:fog@1", "image:fog@3"]
    with pytest.raises(ValidationError, match="gaussian_noise"):
        Config.model_validate({"conditions": [{"image": "fogg"}]})
    with pytest.raises(ValidationError):
        Config.model_validate({"conditions": [{"image": "fog", "extra": 1}]})


def test_apply_is_identity_for_other_kinds() -> None:
    img = np.random.default_rng(0).integers(0, 256, (40, 40, 3), dtype=np.uint8)
    text = "What color is the large cube?"
    typos, contrast = Condition("text", "typos", 3), Condition("image", "contrast", 3)
    assert apply_image(CLEAN, img, 1) is img
    assert apply_image(typos, img, 1) is img
    assert apply_text(CLEAN, text, 1) == text
    assert apply_text(contrast, text, 1) == text
    assert np.array_equal(apply_image(contrast, img, 1), image_perturb.corrupt(img, "contrast", 3, 1))
    assert apply_text(typos, text, 1) == text_perturb.perturb(text, "typos", 3, 1)
    assert apply_text(typos, text, 1) != text
