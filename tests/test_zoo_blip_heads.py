"""Zoo BLIP head recipes (retrieval, VQA): determinism, start points, ITM negatives, adapters, shipped ITM."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _weights(d: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(d / "model.safetensors"))


def _quiet(_: str) -> None:
    pass


def test_itm_negatives_are_never_true_pairs_and_follow_the_weights() -> None:
    from argus_eval.zoo.training.train_blip_itm import draw_false

    # 3 texts x 3 images; text 0 is true of images 0 and 1 (a generic caption), text 1 of image 1 only,
    # text 2 of image 2 only. Text 1 looks more like image 0 (similarity 4) than like image 2 (3).
    pos = torch.tensor([[1, 1, 0], [0, 1, 0], [0, 0, 1]], dtype=torch.float32)
    sim = torch.tensor([[5.0, 5.0, 0.0], [4.0, 5.0, 3.0], [0.0, 0.0, 5.0]])
    g = torch.Generator().manual_seed(0)
    hard = torch.stack([draw_false(sim, pos, g) for _ in range(400)])  # (draws, texts): a false image each
    flat = torch.stack([draw_false(torch.zeros_like(sim), pos, g) for _ in range(400)])
    for draws in (hard, flat):
        assert all(pos[t, int(i)] == 0 for t in range(3) for i in draws[:, t])
    assert set(hard[:, 0].tolist()) == {2}  # text 0's only false image
    # Text 1's false images are 0 and 2: softmax odds e^4 : e^3 when hard, 1 : 1 when the weights are flat.
    assert float((hard[:, 1] == 0).float().mean()) == pytest.approx(math.e / (1 + math.e), abs=0.07)
    assert float((flat[:, 1] == 0).float().mean()) == pytest.approx(0.5, abs=0.07)


def test_start_from_captioner_copies_the_shipped_towers() -> None:
    from argus_eval.models.hf_common import hf_module
    from argus_eval.models.zoo_store import CHECKPOINTS
    from argus_eval.zoo.training import train_blip as blip

    tok = blip.build_tokenizer()
    model = hf_module().BlipForImageTextRetrieval(blip.blip_config(tok))
    start = blip.start_from_captioner(model, tok, text_encoder=True)
    shipped = _weights(CHECKPOINTS / "blip")
    got = model.state_dict()
    for key in (
        "vision_model.embeddings.patch_embedding.weight",
        "vision_model.encoder.layers.1.mlp.fc2.bias",
    ):
        assert torch.equal(got[key], shipped[key])
    layer = "encoder.layer.1.crossattention.self.query.weight"
    assert torch.equal(got[f"text_encoder.{layer}"], shipped[f"text_decoder.bert.{layer}"])
    assert start["parts"] == ["text_decoder.bert", "vision_model"]
    assert len(start["sha256"]) == 64


@pytest.mark.parametrize("module", ["train_blip_itm", "train_blip_vqa"])
def test_blip_head_training_is_deterministic_from_seed(module: str, tmp_path: Path) -> None:
    import importlib

    train = importlib.import_module(f"argus_eval.zoo.training.{module}").train
    for tag, seed in (("a", 7), ("b", 7), ("c", 8)):
        trained = train(tmp_path / tag, seed, None, _quiet, steps=3, n_images=12)
        assert trained.steps >= 1 and all(torch.isfinite(torch.tensor(trained.losses)))
    wa, wb, wc = (_weights(tmp_path / t) for t in "abc")
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert not all(torch.equal(wa[k], wc[k]) for k in wa)


def test_blip_itm_reloads_through_its_adapter(tmp_path: Path) -> None:
    import numpy as np

    from argus_eval.models.loading import load_model
    from argus_eval.models.protocols import EMBED, SCORE_PAIRS
    from argus_eval.models.spec import ModelConfig
    from argus_eval.zoo.training.data import load_split
    from argus_eval.zoo.training.train_blip_itm import train

    train(tmp_path, 1, None, _quiet, steps=1, n_images=12)
    split = load_split("studio", "train", 12)
    itm = load_model(ModelConfig(name="itm", spec=f"hf:{tmp_path}", device="cpu"))
    try:
        assert itm.info.capabilities == frozenset({EMBED, SCORE_PAIRS})
        pairs = [split.captions[0][0], split.captions[1][0]]
        p = itm.score_pairs(list(split.images[:2]), pairs)  # type: ignore[attr-defined]
        assert p.shape == (2,) and np.all((p >= 0) & (p <= 1))
        assert itm.embed_texts(["a red cube ."]).shape == (1, 128)  # type: ignore[attr-defined]
    finally:
        itm.close()


def test_shipped_blip_itm_prefers_each_images_own_caption() -> None:
    """The ITM head of the shipped zoo:blip_itm, on held-out scenes: an image's own caption scores above
    the same-slot caption of the next image (when that one is false of it) in most pairs; chance is half."""
    import numpy as np

    from argus_eval.models.loading import load_model
    from argus_eval.models.spec import ModelConfig
    from argus_eval.zoo.training.data import load_split

    split = load_split("studio", "test", 40)
    truth = split.positives()  # (image-major captions, images)
    n, n_caps = len(split.images), len(split.captions[0])
    pairs = [
        (i, split.captions[i][c], split.captions[(i + 1) % n][c])
        for i in range(n)
        for c in range(n_caps)
        if not truth[((i + 1) % n) * n_caps + c, i]
    ]
    model = load_model(ModelConfig(name="blip_itm", spec="zoo:blip_itm", device="cpu"))
    try:
        images = [split.images[i] for i, _, _ in pairs]
        own = model.score_pairs(images, [t for _, t, _ in pairs])  # type: ignore[attr-defined]
        other = model.score_pairs(images, [t for _, _, t in pairs])  # type: ignore[attr-defined]
    finally:
        model.close()
    assert len(pairs) > 100
    assert float(np.mean(own > other)) > 0.6


def test_blip_vqa_starts_from_the_shipped_heads_word_by_word() -> None:
    """The VQA head's towers are the retrieval head's, its decoder the captioner's; the VQA vocabulary
    adds the prompt's words, so vocabulary-sized rows are copied by word, and a new word keeps its own."""
    from argus_eval.models.hf_common import hf_module
    from argus_eval.models.zoo_store import CHECKPOINTS
    from argus_eval.zoo.training import train_blip as blip
    from argus_eval.zoo.training.chat_vlm import prompt_words
    from argus_eval.zoo.training.train_blip_vqa import START
    from argus_eval.zoo.training.vocab import words_of

    tok = blip.build_tokenizer(prompt_words())
    model = hf_module().BlipForQuestionAnswering(blip.blip_config(tok))
    fresh = {k: v.clone() for k, v in model.state_dict().items()}
    record = blip.start_parts(model, tok, START)
    got, itm, cap = model.state_dict(), _weights(CHECKPOINTS / "blip_itm"), _weights(CHECKPOINTS / "blip")
    key = "encoder.layers.1.mlp.fc2.bias"
    assert torch.equal(got[f"vision_model.{key}"], itm[f"vision_model.{key}"])
    layer = "encoder.layer.0.crossattention.self.key.weight"
    assert torch.equal(got[f"text_encoder.{layer}"], itm[f"text_encoder.{layer}"])
    assert torch.equal(got[f"text_decoder.bert.{layer}"], cap[f"text_decoder.bert.{layer}"])
    old = blip.build_tokenizer()
    emb = "text_encoder.embeddings.word_embeddings.weight"
    for word in ("cube", "[SEP]"):
        own, theirs = tok.convert_tokens_to_ids(word), old.convert_tokens_to_ids(word)
        assert torch.equal(got[emb][own], itm[emb][theirs])
    new = next(w for w in sorted(words_of(prompt_words())) if w not in old.get_vocab())
    row = tok.convert_tokens_to_ids(new)
    assert torch.equal(got[emb][row], fresh[emb][row])
    assert [r["from"] for r in record] == ["zoo:blip_itm", "zoo:blip_itm", "zoo:blip"]


def test_blip_vqa_reloads_through_its_adapter_and_answers(tmp_path: Path) -> None:
    from argus_eval.models.loading import load_model
    from argus_eval.models.protocols import GENERATE
    from argus_eval.models.spec import ModelConfig
    from argus_eval.zoo.training.data import load_split
    from argus_eval.zoo.training.train_blip_vqa import train

    train(tmp_path, 1, None, _quiet, steps=3, n_images=12)
    split = load_split("studio", "train", 12)
    vqa = load_model(ModelConfig(name="vqa", spec=f"hf:{tmp_path}", device="cpu"))
    try:
        assert GENERATE in vqa.info.capabilities
        out = vqa.generate(list(split.images[:2]), [q["question"] for q in split.questions[:2]], 3)  # type: ignore[attr-defined]
        assert len(out) == 2 and all(isinstance(a, str) for a in out)
    finally:
        vqa.close()


def test_shipped_blip_vqa_reads_colours_off_the_image() -> None:
    """The shipped zoo:blip_vqa on held-out scenes: "what colour" questions (8 colours, chance 1/8) are
    answered well above chance with their own image and fall towards chance with another scene's."""
    from argus_eval.models.loading import load_model
    from argus_eval.models.spec import ModelConfig
    from argus_eval.tasks.reasoning import ReasoningOptions
    from argus_eval.zoo.training.data import load_split

    split = load_split("studio", "test", 100)
    qs = [q for q in split.questions if q["qtype"] == "query_color"]
    prompts = [ReasoningOptions().prompt.format(question=q["question"]) for q in qs]
    own = [split.images[q["image_index"]] for q in qs]
    other = [split.images[(q["image_index"] + 50) % 100] for q in qs]  # another scene, never its own
    model = load_model(ModelConfig(name="blip_vqa", spec="zoo:blip_vqa", device="cpu", batch_size=64))
    try:
        answers = {"own": model.generate(own, prompts, 3), "other": model.generate(other, prompts, 3)}  # type: ignore[attr-defined]
    finally:
        model.close()
    acc = {k: sum(a == q["answer"] for a, q in zip(v, qs, strict=True)) / len(qs) for k, v in answers.items()}
    assert len(qs) > 80
    assert acc["own"] > 0.25 and acc["own"] > acc["other"] + 0.1, acc
