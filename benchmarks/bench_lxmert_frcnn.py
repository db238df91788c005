"""LXMERT as the paper ran it, at its real size, with random weights: a run on bottom-up regions.

Builds a random-weight LxmertForQuestionAnswering with the published unc-nlp/lxmert-base-uncased
shapes (hidden 768, 9 language / 5 cross / 5 vision layers, visual_feat_dim 2048, visual_pos_dim 4,
3129 VQA answers) and a random-weight frcnn-vg detector of the published shapes (ResNet-101 C4,
1600 classes, 400 attributes), times the detector on one ShapesWorld image, then runs
``argus run`` over a handful of ShapesWorld questions, clean, image-corrupted, blank and swapped.
Minutes on a CPU (the detector's res5 runs on 300 regions of 14 x 14 per image); not part of the tests.

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
from argus_eval.models.frcnn.provider import FrcnnRegionFeatures
from argus_eval.models.hf_common import hf_module
from argus_eval.runner.config import parse_config
from argus_eval.runner.datasets import load_datasets
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
        num_qa_labels=VQA_LABELS, id2label=dict(enumerate(labels)), label2id={a: i for i, a in enumerate(labels)},
        pad_token_id=tok.pad_token_id,
    )  # fmt: skip
    torch.manual_seed(0)
    tf.LxmertForQuestionAnswering(cfg).save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    return out_dir


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
             "n_images": max(2, questions // 2), "train_images": 4, "questions_per_image": 2},
        ],
        "tasks": ["reasoning"],
        "perturbations": [{"image": "gaussian_noise", "severity": 3}, {"control": ["blank", "swap"]}],
        "scoring": {"resamples": 100},
        "efficiency": {"enabled": False},
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=None, help="where the checkpoints and the run go")
    ap.add_argument("--questions", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=2, help="timed detections of one image")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="argus-lxmert-frcnn-"))
    t0 = time.perf_counter()
    lxmert = build_lxmert(work / "lxmert") if not (work / "lxmert" / "config.json").is_file() else work / "lxmert"
    detector = work / "frcnn-vg"
    if not (detector / "pytorch_model.bin").is_file():
        build_detector_dir(detector, FrcnnConfig(), seed=0)
    print(f"built LXMERT and frcnn-vg (random, published shapes) in {time.perf_counter() - t0:.0f} s")

    cfg = run_config(work, lxmert, detector, args.questions)
    [data] = load_datasets(parse_config(cfg, "bench"))
    sample = next(s for s in data.samples if s.image is not None)
    image = load_image(image_inside_root(data, sample))
    provider = FrcnnRegionFeatures(str(detector))
    provider.regions([image])  # warm-up
    times = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        reg = provider.regions([image])
        times.append(time.perf_counter() - t)
    assert reg.features.shape == (1, 36, 2048)
    print(
        f"frcnn-vg: {np.median(times):.1f} s per {image.shape[1]}x{image.shape[0]} image (median of "
        f"{args.repeats}; resized to 800x600; {torch.get_num_threads()} torch threads, load "
        f"{os.getloadavg()[0]:.1f})"
    )

    path = work / "run.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    out = work / "out"
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "argus_eval.cli", "run", "-c", str(path), "--out", str(out)], check=True)
    wall = time.perf_counter() - t
    results = json.loads((out / "results.json").read_text())
    for c in results["cells"]:
        print(f"  {c['condition']:<24} samples {c['samples']}  scored {c['scored']}  failed {c['failed']}")
    log = json.loads((out / "run_log.json").read_text())
    print(f"argus run: {wall:.0f} s wall, cells {log['phase_seconds']['execute']:.0f} s; run in {out}")


if __name__ == "__main__":
    main()
