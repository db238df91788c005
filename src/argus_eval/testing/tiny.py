"""Tiny random models of every family, built from transformers configs and saved like real checkpoints.

Used by tests, benchmarks and the default run before the zoo exists. Each builder writes a complete
Hugging Face directory (config, safetensors weights, tokenizer, processor) that loads through the same
``from_pretrained`` path a hub checkpoint takes. Weights are random (seeded): outputs are garbage, but
deterministic.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import torch

from argus_eval.models.hf_common import hf_module
from argus_eval.models.processor_files import save_processor
from argus_eval.registry import CALLABLE, Registry

Builder = Callable[[Path], None]

TINY_BUILDERS: Registry[Builder] = Registry("tiny model family", base=CALLABLE)

# A small closed vocabulary: enough to tokenise test prompts, captions and answers word by word.
# fmt: off
WORDS: tuple[str, ...] = (
    "a", "an", "the", "is", "are", "there", "of", "to", "in", "on", "and", "or", "what", "which", "how",
    "many", "color", "colour", "shape", "size", "material", "red", "green", "blue", "yellow", "gray",
    "grey", "brown", "purple", "cyan", "small", "large", "big", "tiny", "cube", "sphere", "cylinder",
    "ball", "block", "metal", "rubber", "shiny", "matte", "left", "right", "behind", "front", "same",
    "as", "than", "more", "fewer", "object", "objects", "thing", "things", "image", "picture", "photo",
    "describe", "answer", "question", "yes", "no", "zero", "one", "two", "three", "four", "five", "six",
    "seven", "it", "this", "that", "with", "other", "any", "does", "do", "has", "have", "cat", "dog",
    *".,?!:;()'\"-",
    *"0123456789",
)
# fmt: on

CLIP_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789.,?!'()-:;\""


def build_tiny(family: str, out_dir: Path, seed: int = 0) -> Path:
    """Build the tiny random model of a family into out_dir (created) and return out_dir.

    Families: ``names()`` of TINY_BUILDERS (clip, siglip, blip-itm, blip-caption, blip-vqa, lxmert-vqa,
    lxmert-pretraining, gemma3, qwen2_5_vl). The same seed gives bit-identical weights.
    """
    builder = TINY_BUILDERS.get(family)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    builder(out_dir)
    return out_dir


def word_tokenizer_object(specials: list[str], template: tuple[str, str] | None = None) -> object:
    """A `tokenizers` WordLevel tokenizer over WORDS plus specials (lowercased, split on punctuation)."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers
    from tokenizers.models import WordLevel
    from tokenizers.processors import TemplateProcessing

    vocab = {t: i for i, t in enumerate([*specials, *dict.fromkeys(WORDS)])}
    unk = "[UNK]" if "[UNK]" in vocab else "<unk>"
    tok = Tokenizer(WordLevel(vocab=vocab, unk_token=unk))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()]
    )
    # Specials must match before pre-tokenisation splits them at their punctuation.
    tok.add_special_tokens(specials)
    if template is not None:
        single, pair = template
        used = {s for s in specials if s in single or s in pair}
        tok.post_processor = TemplateProcessing(
            single=single, pair=pair, special_tokens=[(s, vocab[s]) for s in sorted(used)]
        )
    return tok


def _clip_tokenizer(out_dir: Path) -> object:
    """A character-level CLIP BPE (no merges): every word is spelled out; enough for plumbing."""
    from transformers import CLIPTokenizer

    vocab: dict[str, int] = {}
    for c in CLIP_CHARS:
        vocab[c] = len(vocab)
    for c in CLIP_CHARS:
        vocab[c + "</w>"] = len(vocab)
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    tmp = out_dir / "_bpe"
    tmp.mkdir(exist_ok=True)
    (tmp / "vocab.json").write_text(json.dumps(vocab))
    (tmp / "merges.txt").write_text("#version: 0.2\n")
    # Positional paths: CLIPTokenizer ignores vocab_file=/merges_file= keywords (and then tokenise to garbage
    # ids).
    tok = CLIPTokenizer(str(tmp / "vocab.json"), str(tmp / "merges.txt"), model_max_length=32)
    (tmp / "vocab.json").unlink()
    (tmp / "merges.txt").unlink()
    tmp.rmdir()
    return tok


@TINY_BUILDERS.register("clip")
def _build_clip(out_dir: Path) -> None:
    tf = hf_module()
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    tok = _clip_tokenizer(out_dir)
    ids = tok.convert_tokens_to_ids(["<|startoftext|>", "<|endoftext|>"])  # type: ignore[attr-defined]
    text = {
        "vocab_size": len(tok),  # type: ignore[arg-type]
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "max_position_embeddings": 32,
        "bos_token_id": ids[0],
        "eos_token_id": ids[1],
        "pad_token_id": ids[1],
    }
    vision = {
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "image_size": 32,
        "patch_size": 8,
    }
    model = tf.CLIPModel(tf.CLIPConfig(text_config=text, vision_config=vision, projection_dim=16))
    improc = CLIPImageProcessorPil(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    model.save_pretrained(out_dir)
    save_processor(tf.CLIPProcessor(image_processor=improc, tokenizer=tok), out_dir)


BLIP_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[DEC]"]


def _blip_parts() -> tuple[object, object, dict[str, object]]:
    """Tokenizer, processor and config kwargs shared by the three BLIP heads."""
    tf = hf_module()
    from transformers.models.blip.image_processing_pil_blip import BlipImageProcessorPil

    raw = word_tokenizer_object(BLIP_SPECIALS, ("[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1"))
    tok = tf.PreTrainedTokenizerFast(
        tokenizer_object=raw,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        bos_token="[DEC]",
        model_max_length=40,
    )
    ids = {s: tok.convert_tokens_to_ids(s) for s in BLIP_SPECIALS}
    improc = BlipImageProcessorPil(size={"height": 32, "width": 32})
    processor = tf.BlipProcessor(image_processor=improc, tokenizer=tok)
    text = {
        "vocab_size": len(tok),
        "hidden_size": 32,
        "encoder_hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "max_position_embeddings": 40,
        "pad_token_id": ids["[PAD]"],
        "bos_token_id": ids["[DEC]"],
        "eos_token_id": ids["[SEP]"],
        "sep_token_id": ids["[SEP]"],
        "label_smoothing": 0.0,
    }
    vision = {
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "image_size": 32,
        "patch_size": 8,
    }
    return tok, processor, {"text_config": text, "vision_config": vision, "image_text_hidden_size": 16}


def _blip_builder(class_name: str) -> Builder:
    def build(out_dir: Path) -> None:
        tf = hf_module()
        _, processor, cfg_kw = _blip_parts()
        model = getattr(tf, class_name)(tf.BlipConfig(**cfg_kw))
        model.save_pretrained(out_dir)
        save_processor(processor, out_dir)

    return build


TINY_BUILDERS.register("blip-itm", _blip_builder("BlipForImageTextRetrieval"))
TINY_BUILDERS.register("blip-caption", _blip_builder("BlipForConditionalGeneration"))
TINY_BUILDERS.register("blip-vqa", _blip_builder("BlipForQuestionAnswering"))

TINY_BUILDERS.register("gemma3", "argus_eval.testing.tiny_vlm:build_gemma3")
TINY_BUILDERS.register("qwen2_5_vl", "argus_eval.testing.tiny_vlm:build_qwen2_5_vl")

LXMERT_ANSWERS = ("yes", "no", "0", "1", "2", "3", "red", "blue", "green", "cube", "sphere", "cylinder")


def _lxmert_builder(class_name: str, feature_dim: int | None = None) -> Builder:
    """LXMERT on a 4x4 grid of 8x8 pixel patches of a 32x32 image (feature dim 192); given feature_dim,
    on regions of that dimension that its options name (no provider stored in the config)."""

    def build(out_dir: Path) -> None:
        from argus_eval.models.regions import CONFIG_KEY, GridRegionFeatures

        tf = hf_module()
        grid = GridRegionFeatures(image_size=32, grid=4)
        raw = word_tokenizer_object(BLIP_SPECIALS[:5], ("[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1"))
        tok = tf.PreTrainedTokenizerFast(
            tokenizer_object=raw,
            pad_token="[PAD]",
            unk_token="[UNK]",
            cls_token="[CLS]",
            sep_token="[SEP]",
            mask_token="[MASK]",
            model_max_length=32,
        )
        cfg = tf.LxmertConfig(
            vocab_size=len(tok),
            hidden_size=32,
            num_attention_heads=2,
            intermediate_size=64,
            l_layers=1,
            x_layers=1,
            r_layers=1,
            max_position_embeddings=32,
            visual_feat_dim=feature_dim or grid.feature_dim,
            visual_pos_dim=4,
            num_qa_labels=len(LXMERT_ANSWERS),
            id2label=dict(enumerate(LXMERT_ANSWERS)),
            label2id={a: i for i, a in enumerate(LXMERT_ANSWERS)},
            task_obj_predict=False,
            task_qa=True,
            pad_token_id=tok.pad_token_id,
        )
        if feature_dim is None:
            setattr(cfg, CONFIG_KEY, grid.describe())  # reloads with the same features
        getattr(tf, class_name)(cfg).save_pretrained(out_dir)
        tok.save_pretrained(out_dir)

    return build


TINY_BUILDERS.register("lxmert-vqa", _lxmert_builder("LxmertForQuestionAnswering"))
TINY_BUILDERS.register("lxmert-pretraining", _lxmert_builder("LxmertForPreTraining"))


def _lxmert_for_detector(out_dir: Path) -> None:
    """LXMERT's QA head reading the tiny frcnn-vg detector's regions (testing/tiny_frcnn.py)."""
    from argus_eval.models.regions import CONFIG_KEY
    from argus_eval.testing.tiny_frcnn import TINY_DETECTOR, build_detector_dir

    _lxmert_builder("LxmertForQuestionAnswering", TINY_DETECTOR.feature_dim)(out_dir)
    # the checkpoint carries its detector, so it runs without options (as the grid checkpoints do); a
    # run's options.region_features still overrides it
    detector = build_detector_dir(Path(out_dir) / "detector")
    cfg_file = Path(out_dir) / "config.json"
    data = json.loads(cfg_file.read_text())
    data[CONFIG_KEY] = {"kind": "frcnn-vg", "detector": str(detector)}
    cfg_file.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


TINY_BUILDERS.register("lxmert-vqa-frcnn", _lxmert_for_detector)
