"""The frcnn-vg detector's time on one image at the published size, on torchvision's NMS and RoI pooling
and on the plain-torch ones (models/frcnn/ops.py), with the same random weights of the published shapes.

Run it where torchvision imports (scripts/torchvision_env.sh's python, or a CUDA machine): it times one
detection per kernel set (``--warmup N`` untimed ones first; the first timed set, torchvision's,
otherwise carries the first call's allocations), the seconds spent inside NMS and RoI pooling, and
checks the two give the same regions.
Minutes on a CPU; not part of the tests.

    PYTHONPATH=src python benchmarks/bench_frcnn_kernels.py [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict
from collections.abc import Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch

from argus_eval.models.frcnn import ops
from argus_eval.models.frcnn.config import FrcnnConfig
from argus_eval.models.frcnn.model import FasterRCNN
from argus_eval.testing.tiny_frcnn import random_detector


def _timed(kernels: ops.Kernels, spent: dict[str, float], sync: Callable[[], None]) -> ops.Kernels:
    """kernels, adding the seconds each call takes to spent."""

    def nms(
        boxes: torch.Tensor, scores: torch.Tensor, threshold: float, limit: int | None = None
    ) -> torch.Tensor:
        t = time.perf_counter()
        out = kernels.nms(boxes, scores, threshold, limit)
        sync()
        spent["nms"] += time.perf_counter() - t
        return out

    def roi_pool(features: torch.Tensor, boxes: torch.Tensor, scale: float, size: int) -> torch.Tensor:
        t = time.perf_counter()
        out = kernels.roi_pool(features, boxes, scale, size)
        sync()
        spent["roi_pool"] += time.perf_counter() - t
        return out

    return ops.Kernels(kernels.name, nms, roi_pool)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--warmup", type=int, default=0, help="untimed detections before each timed one")
    args = ap.parse_args()
    if ops.KERNELS.name != "torchvision":
        raise SystemExit(
            "torchvision does not import here: run this with scripts/torchvision_env.sh's python"
        )
    device = torch.device(args.device)
    sync: Callable[[], None] = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    cfg = FrcnnConfig()
    weights = random_detector(cfg).state_dict()
    image = np.random.default_rng(0).integers(0, 256, (480, 640, 3), dtype=np.uint8)  # resized to 600 x 800
    results = {}
    for kernels in (ops.KERNELS, ops.PURE):
        spent: dict[str, float] = defaultdict(float)
        model = FasterRCNN(cfg, _timed(kernels, spent, sync))
        model.load_state_dict(weights)
        model.eval().to(device)
        for _ in range(args.warmup):  # first-call allocations and convolution algorithm choice
            model.detect(image)
        spent.clear()
        t = time.perf_counter()
        results[kernels.name] = model.detect(image)
        sync()
        total = time.perf_counter() - t
        print(
            f"{kernels.name:>11}: {total:.2f} s per 640x480 image resized to 800x600 on {device} "
            f"(NMS {spent['nms']:.2f} s, RoI pooling {spent['roi_pool']:.2f} s; {torch.get_num_threads()} "
            f"torch threads, load {os.getloadavg()[0]:.1f})",
            flush=True,
        )
    a, b = results["torchvision"], results["torch"]
    same = a.found == b.found and np.allclose(a.features, b.features, rtol=0, atol=1e-5)
    print(f"same regions within 1e-5: {same and np.allclose(a.boxes, b.boxes, rtol=0, atol=1e-5)}")


if __name__ == "__main__":
    main()
