"""Runner overhead: `argus run` (retrieval, clean) against a bare batched forward loop over the same
CLIP model and the same ShapesWorld images and captions, measured in the same process.

    python benchmarks/bench_runner.py [--images 120] [--hidden 256] [--layers 4] [--repeats 3]

Prints the inference time of each and their ratio (target: runner overhead under 5 percent), plus the
whole run (planning, store, scoring) for context.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch
from PIL import Image
from transformers import AutoProcessor, CLIPConfig, CLIPModel, CLIPTextConfig, CLIPVisionConfig

from argus_eval.data.formats import FORMATS, LoadContext
from argus_eval.data.types import Sample
from argus_eval.runner.config import parse_config
from argus_eval.runner.execute.local import execute
from argus_eval.runner.execute.pool import ModelPool
from argus_eval.runner.plan.planning import plan_run
from argus_eval.runner.store import Store
from argus_eval.testing.tiny import build_tiny


def build_clip(root: Path, hidden: int, layers: int) -> Path:
    """A random CLIP of the given width and depth, with the tiny builder's tokenizer and processor."""
    tiny = build_tiny("clip", root / "tiny", seed=0)
    cfg = CLIPConfig.from_pretrained(tiny)
    for sub in (cfg.text_config, cfg.vision_config):
        assert isinstance(sub, (CLIPTextConfig, CLIPVisionConfig))  # built from the tiny model's dicts
        sub.hidden_size, sub.intermediate_size, sub.num_hidden_layers = hidden, 4 * hidden, layers
        sub.num_attention_heads = max(1, hidden // 64)
    cfg.projection_dim = hidden
    torch.manual_seed(0)
    out = root / "clip"
    shutil.copytree(tiny, out)
    CLIPModel(cfg).save_pretrained(out)
    return out


def _image_path(image_root: Path, sample: Sample) -> Path:
    assert sample.image is not None  # a captioned ShapesWorld sample shows its image
    return image_root / sample.image


def bare_loop(model_dir: Path, samples: list[Sample], image_root: Path, batch: int) -> float:
    """Decode images, run processor and get_*_features in batches: no runner, no store."""
    # transformers leaves PreTrainedModel.eval and AutoProcessor.from_pretrained unannotated
    model = CLIPModel.from_pretrained(model_dir).eval()  # type: ignore[no-untyped-call]
    proc = AutoProcessor.from_pretrained(model_dir)  # type: ignore[no-untyped-call]
    t0 = time.perf_counter()
    with torch.inference_mode():
        for i in range(0, len(samples), batch):
            chunk = samples[i : i + batch]
            ims = [np.asarray(Image.open(_image_path(image_root, s)).convert("RGB")) for s in chunk]
            texts = [t for s in chunk for t in s.texts]
            px = proc(images=ims, return_tensors="pt")
            tx = proc.tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
            model.get_image_features(**px)
            model.get_text_features(**tx)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=120)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)  # the machine is shared: one thread gives stable, comparable timings
    root = Path(tempfile.mkdtemp(prefix="argus-bench-runner-"))
    try:
        model_dir = build_clip(root, args.hidden, args.layers)
        data = {"name": "studio", "format": "shapesworld", "domain": "studio", "split": "test",
                "n_images": args.images, "questions_per_image": 0}  # fmt: skip
        cfg_dict = {
            "name": "bench", "cache_dir": str(root / "cache"),
            "models": [
                {"name": "clip", "spec": f"hf:{model_dir}", "device": "cpu", "batch_size": args.batch}
            ],
            "datasets": [data], "tasks": ["retrieval"], "scoring": {"resamples": 0},
            "efficiency": {"enabled": False},
        }  # fmt: skip
        cfg = parse_config(cfg_dict, "bench")
        import argus_eval.data.loaders  # noqa: F401

        ds = FORMATS.get("shapesworld").load(cfg.datasets[0], LoadContext(cache_dir=root / "cache"))
        samples = [s for s in ds.samples if s.texts]
        from argus_eval.models.loading import load_model

        bare, runner = [], []
        for r in range(args.repeats):
            bare.append(bare_loop(model_dir, samples, ds.image_root, args.batch))
            with Store(root / f"store{r}.sqlite") as store:
                pool = ModelPool(load_model)
                plan = plan_run(cfg, store, pool)  # loads the model once to learn its capabilities
                t0 = time.perf_counter()
                execute(plan, store, pool, 0, strict=False, quiet=True)
                runner.append(time.perf_counter() - t0)
                pool.close()
        b, rn = min(bare), min(runner)
        print(
            f"samples: {len(samples)} images, {sum(len(s.texts) for s in samples)} captions; "
            f"CLIP hidden {args.hidden} x {args.layers} layers; batch {args.batch}; best of {args.repeats}"
        )
        print(f"bare batched loop : {b:.3f} s")
        print(f"runner (execute)  : {rn:.3f} s")
        print(f"overhead ratio    : {rn / b:.3f}  ({100 * (rn / b - 1):+.1f} %; target < +5 %)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
