"""Zoo training pieces: seeded determinism, the schedule, question oversampling, tokenizers, the CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import itertools

from argus_eval.zoo.training.data import load_split
from argus_eval.zoo.training.loop import Schedule
from argus_eval.zoo.training.qa_mix import QuestionSampler, is_zero_hop


def _weights(d: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(next(d.glob("*.safetensors"))))


def _quiet(_: str) -> None:
    pass


def test_one_clip_step_is_deterministic_from_seed(tmp_path: Path) -> None:
    from argus_eval.zoo.training.train_clip import train

    runs = {}
    for tag, seed in (("a", 7), ("b", 7), ("c", 8)):
        train(tmp_path / tag, seed, None, _quiet, steps=1, n_images=12)
        runs[tag] = _weights(tmp_path / tag)
    assert runs["a"].keys() == runs["c"].keys()
    assert all(torch.equal(runs["a"][k], runs["b"][k]) for k in runs["a"])
    assert not all(torch.equal(runs["a"][k], runs["c"][k]) for k in runs["a"])


def test_schedule_warms_up_then_decays_to_its_floor() -> None:
    s = Schedule(steps=100, lr=1.0, warmup=10, final_lr_fraction=0.05)
    assert s.lr_at(0, 100) == pytest.approx(1 / 10)
    assert s.lr_at(9, 100) == pytest.approx(1.0)
    assert s.lr_at(100, 100) == pytest.approx(0.05)
    lrs = [s.lr_at(i, 100) for i in range(10, 101)]
    assert all(a >= b for a, b in itertools.pairwise(lrs))


def test_question_sampler_oversamples_zero_hop_deterministically() -> None:
    split = load_split("studio", "train", 12)
    sampler = QuestionSampler(split, easy_share=0.75)
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    b1, b2 = sampler.batch(16, g1), sampler.batch(16, g2)
    assert b1 == b2
    assert all(is_zero_hop(split.questions[i]) for i in b1[:12])
    assert len(b1) == 16


def test_word_level_tokenizer_covers_test_texts() -> None:
    from argus_eval.zoo.training.vocab import shapesworld_words, word_level

    tok = word_level(["<pad>", "<unk>"], shapesworld_words())
    unk = tok.token_to_id("<unk>")
    split = load_split("clutter", "test", 300)  # the held-out split zoo evals read
    texts = [c for caps in split.captions[:50] for c in caps] + [q["question"] for q in split.questions[:300]]
    assert all(unk not in tok.encode(t).ids for t in texts)


def test_zoo_list_json_matches_manifest() -> None:
    from typer.testing import CliRunner

    from argus_eval.cli import app
    from argus_eval.zoo.catalog import read_manifest

    res = CliRunner().invoke(app, ["zoo", "list", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    assert [r["name"] for r in rows] == sorted(read_manifest().get("models", {}))
    assert all(r["present"] for r in rows)


def test_lxmert_curriculum_pools_hold_only_their_questions() -> None:
    from argus_eval.zoo.training.qa_mix import curriculum_pool

    qs = load_split("studio", "train", 40).questions
    colour = curriculum_pool(qs, "query_color")
    attrs = curriculum_pool(qs, "query")
    assert colour and set(colour) < set(attrs) < set(range(len(qs)))
    assert all(is_zero_hop(qs[i]) and qs[i]["qtype"] == "query_color" for i in colour)
    assert all(is_zero_hop(qs[i]) and qs[i]["qtype"].startswith("query_") for i in attrs)
    assert curriculum_pool(qs, "all") == list(range(len(qs)))
    assert curriculum_pool(qs, "natural") == list(range(len(qs)))


def test_lxmert_training_is_deterministic_and_reloads_with_its_region_provider(tmp_path: Path) -> None:
    from argus_eval.models.region_segments import SegmentRegionFeatures
    from argus_eval.models.regions import CONFIG_KEY, provider_from_config
    from argus_eval.zoo.training.train_lxmert import train

    for tag in ("a", "b"):
        train(tmp_path / tag, 5, None, _quiet, steps=3, n_images=12)
    wa, wb = _weights(tmp_path / "a"), _weights(tmp_path / "b")
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    stored = json.loads((tmp_path / "a" / "config.json").read_text())[CONFIG_KEY]
    assert isinstance(provider_from_config(stored), SegmentRegionFeatures)


def test_contrastive_loss_rewards_alignment_and_masks_other_pairs_of_the_same_image() -> None:
    from argus_eval.zoo.training.chat_vlm import contrastive_loss

    v = torch.eye(4)
    scale = torch.tensor(3.0)
    aligned = contrastive_loss(v, v, [0, 1, 2, 3], scale)
    shuffled = contrastive_loss(v, v[[1, 0, 3, 2]], [0, 1, 2, 3], scale)
    assert float(aligned) < 0.01 < float(shuffled)
    # Rows 0 and 1 show the same image: their captions are not negatives for each other.
    dup = torch.stack([v[0], v[0], v[2], v[3]])
    masked = contrastive_loss(dup, dup, [0, 0, 2, 3], scale)
    assert float(masked) < 0.01
    assert float(contrastive_loss(dup, dup, [0, 1, 2, 3], scale)) > 0.3


@pytest.mark.parametrize("family", ["train_gemma3", "train_qwen"])
def test_chat_training_runs_every_phase_with_both_auxiliary_terms(family: str, tmp_path: Path) -> None:
    import importlib
    from dataclasses import replace

    from argus_eval.zoo.training.chat_vlm import prompt_words, train_chat
    from argus_eval.zoo.training.vocab import shapesworld_words

    mod = importlib.import_module(f"argus_eval.zoo.training.{family}")
    s = Schedule(steps=2, lr=1e-3, warmup=1)
    recipe = replace(
        mod.RECIPE_DATA,
        domains=("studio",),
        images_per_domain=40,
        caption_phase=s,
        grounding_phase=s,
        mixed_phase=s,
        batch=8,  # 2 captions in mixed batches, so the contrastive term is not trivially 0 there
        contrastive_throughout=True,
        object_token_weight=1.0,
    )
    trained = train_chat(mod.FAMILY, recipe, tmp_path, 3, None, _quiet, shapesworld_words(prompt_words()))
    assert [p["steps"] for p in trained.config["phases"]] == [2, 2, 2]
    assert trained.config["object_token_weight"] == 1.0
    assert all(np.isfinite(trained.losses))
    assert (tmp_path / "model.safetensors").is_file()
