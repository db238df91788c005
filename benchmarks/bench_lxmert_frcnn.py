"""LXMERT as the paper ran it, at its real size, with random weights: a run on bottom-up regions.

Builds a random-weight LxmertForQuestionAnswering with the published unc-nlp/lxmert-base-uncased
shapes (hidden 768, 9 language / 5 cross / 5 vision layers, visual_feat_dim 2048, visual_pos_dim 4,
3129 VQA answers) and a random-weight frcnn-vg detector of the published shapes (ResNet-101 C4,
1600 classes, 400 attributes), times the detector on one ShapesWorld image, then runs
``argus run`` over a handful of ShapesWorld questions, clean, image-corrupted, blank and swapped.
Minutes per image on a CPU (the detector's res5 runs on 300 regions of 14 x 14); not part of the tests.

    python benchmarks/bench_lxmert_frcnn.py [--work DIR] [--questions 8] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch
import yaml

from argus_eval.data.images import load_image
from argus_eval.data.paths import image_inside_root
from argus_eval.models.frcnn.config import FrcnnConfig
from argus_eval.models.frcnn.preprocess import prepare
from argus_eval.models.frcnn.provider import FrcnnRegionFeatures
from argus_eval.models.frcnn.select import best_class_boxes, keep_indices
from argus_eval.models.hf_common import hf_module
from argus_eval.runner.config import parse_config
from argus_eval.runner.plan.datasets import load_datasets
from argus_eval.testing.tiny import BLIP_SPECIALS, LXMERT_ANSWERS, word_tokenizer_object
from argus_eval.testing.tiny_frcnn import build_detector_dir

VQA_LABELS = 3129


def build_lxmert(out_dir: Path) -> Path:
    """Random LxmertForQuestionAnswering of the published base shapes, with a small word tokenizer."""
    tf = hf_module()
    raw = word_tokenizer_object(BLIP_SPECIALS[:5], ("[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1"))
    tok = tf.PreTrainedTokenizerFast(
        tokenizer_object=raw, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]",
        mask_token="[MASK]", model_max_length=20,
    )  # fmt: skip
    labels = [*LXMERT_ANSWERS, *(f"answer {i}" for i in range(VQA_LABELS - len(LXMERT_ANSWERS)))]
    cfg = tf.LxmertConfig(
        vocab_size=30522, hidden_size=768, num_attention_heads=12, intermediate_size=3072,
        l_layers=9, x_layers=5, r_layers=5, visual_feat_dim=2048, visual_pos_dim=4,
        num_qa_labels=VQA_LABELS, id2label=dict(enumerate(labels)),
        label2id={a: i for i, a in enumerate(labels)}, pad_token_id=tok.pad_token_id,
    )  # fmt: skip
    torch.manual_seed(0)
    tf.LxmertForQuestionAnswering(cfg).save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    return out_dir


@torch.inference_mode()
def _staged(provider: FrcnnRegionFeatures, image: np.ndarray) -> tuple[float, float]:
    """Seconds of (backbone and proposals, RoI heads and box selection) for one image."""
    model = provider.model
    t0 = time.perf_counter()
    x = prepare(image, model.cfg, model.device)
    res4 = model.backbone(x.pixels)
    proposals = model.proposal_generator(res4, x.height, x.width)
    t1 = time.perf_counter()
    pooled = model.roi_heads(res4, proposals)
    logits, deltas = model.roi_heads.box_predictor(pooled)
    boxes, scores, _ = best_class_boxes(logits, deltas, proposals, model.cfg, (x.height, x.width))
    keep_indices(boxes, scores, model.cfg)
    return t1 - t0, time.perf_counter() - t1


def run_config(work: Path, lxmert: Path, detector: Path, questions: int) -> dict[str, Any]:
    return {
        "name": "lxmert-frcnn-real-size",
        "seed": 0,
        "cache_dir": str(work / "cache"),
        "models": [
            {"name": "LXMERT", "spec": f"hf:{lxmert}", "device": "cpu", "batch_size": 8,
             "options": {"region_features": {"kind": "frcnn-vg", "detector": str(detector), "boxes": 36}}},
        ],
        "datasets": [
            {"name": "studio", "format": "shapesworld", "domain": "studio", "split": "test",
             "n_images": 2, "train_images": 4, "questions_per_image": max(1, questions // 2)},
        ],
        "tasks": ["reasoning"],
        # a deterministic corruption: the questions on an image share its corrupted pixels, so the run
        # detects 2 clean, 2 blurred and 1 blank image (a swap shows a clean one)
        "perturbations": [{"image": "defocus_blur", "severity": 3}, {"control": ["blank", "swap"]}],
        "scoring": {"resamples": 100},
        "efficiency": {"enabled": False},
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=None, help="where the checkpoints and the run go")
    ap.add_argument("--questions", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=1, help="timed detections of one image")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="argus-lxmert-frcnn-"))
    t0 = time.perf_counter()
    lxmert = work / "lxmert"
    if not (lxmert / "config.json").is_file():
        build_lxmert(lxmert)
    detector = work / "frcnn-vg"
    if not (detector / "pytorch_model.bin").is_file():
        build_detector_dir(detector, FrcnnConfig(), seed=0)
    print(f"built LXMERT and frcnn-vg (random, published shapes) in {time.perf_counter() - t0:.0f} s")

    cfg = run_config(work, lxmert, detector, args.questions)
    [data] = load_datasets(parse_config(cfg, "bench"))
    sample = next(s for s in data.samples if s.image is not None)
    image = load_image(image_inside_root(data, sample))
    provider = FrcnnRegionFeatures(str(detector))
    stages = []
    for _ in range(args.repeats):
        stages.append(_staged(provider, image))
    backbone, heads = (float(np.median([st[k] for st in stages])) for k in (0, 1))
    reg = provider.regions([image])
    assert reg.features.shape == (1, 36, 2048) and reg.found is not None and int(reg.found[0]) == 36
    print(
        f"frcnn-vg: {backbone + heads:.1f} s per {image.shape[1]}x{image.shape[0]} image, resized to 800x600 "
        f"(backbone and RPN {backbone:.1f} s, RoI heads on 300 proposals {heads:.1f} s; median of "
        f"{args.repeats}; {torch.get_num_threads()} torch threads, load {os.getloadavg()[0]:.1f})"
    )

    path = work / "run.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    out = work / "out"
    t = time.perf_counter()
    argv = [sys.executable, "-m", "argus_eval.cli", "run", "-c", str(path), "--out", str(out)]
    subprocess.run(argv, check=True)
    wall = time.perf_counter() - t
    results = json.loads((out / "results.json").read_text())
    for c in results["cells"]:
        print(f"  {c['condition']:<24} samples {c['samples']}  scored {c['scored']}  failed {c['failed']}")
    log = json.loads((out / "run_log.json").read_text())
    print(f"argus run: {wall:.0f} s wall, cells {log['phase_seconds']['execute']:.0f} s; run in {out}")


if __name__ == "__main__":
    main()
