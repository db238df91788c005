"""A three-image Karpathy dataset on disk and a run config over it, for the hardening tests."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from model_fixtures import tiny_dir


def write_image(path: Path, seed: int, size: int = 32) -> None:
    """A random RGB PNG (seeded), so a replaced file has different pixels."""
    rng = np.random.default_rng(seed)
    Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)).save(path)


def karpathy_dataset(root: Path, n: int = 3) -> Path:
    """dataset_coco.json with n test images of two captions each, images under root/images."""
    images = root / "images"
    images.mkdir(parents=True, exist_ok=True)
    entries = []
    for i in range(n):
        write_image(images / f"im{i}.png", seed=i)
        entries.append(
            {
                "filename": f"im{i}.png",
                "imgid": i,
                "split": "test",
                "sentences": [
                    {"raw": f"picture number {i}", "sentid": 2 * i},
                    {"raw": f"a photo {i}", "sentid": 2 * i + 1},
                ],
            }
        )
    ann = root / "dataset_coco.json"
    ann.write_text(json.dumps({"images": entries}), encoding="utf-8")
    return ann


def karpathy_config(
    root: Path, *, seed: int = 0, models: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Tiny CLIP retrieval on the Karpathy dataset, clean and one seeded image perturbation."""
    ann = root / "dataset_coco.json"
    if not ann.exists():
        karpathy_dataset(root)
    return {
        "name": "hardening",
        "seed": seed,
        "cache_dir": str(root / "cache"),
        "models": models
        or [{"name": "clip", "spec": f"hf:{tiny_dir('clip')}", "device": "cpu", "batch_size": 2}],
        "datasets": [
            {"name": "k3", "format": "karpathy", "annotations": str(ann), "images": str(root / "images")}
        ],
        "tasks": ["retrieval"],
        "perturbations": [{"image": "gaussian_noise", "severity": 3}],
        "scoring": {"resamples": 0},
        "efficiency": {"enabled": False},
    }


def stored_records(out: Path) -> dict[tuple[str, str], tuple[Any, dict[str, np.ndarray]]]:
    """(cell key, sample id) -> (output, arrays) of every record in a run folder's store."""
    from argus_eval.runner.store import Store

    with Store(out / "store.sqlite") as st:
        return {
            (cell, sid): (r.output, r.arrays)
            for cell, _ in st.iter_cells()
            for sid, r in st.read(cell).items()
        }


def assert_same_as_fresh(reused: Path, fresh: Path) -> None:
    """Every record of the fresh run is in the reused run's store, byte for byte."""
    a, b = stored_records(reused), stored_records(fresh)
    assert set(b) <= set(a)
    for key, (output, arrays) in b.items():
        assert a[key][0] == output, key
        assert set(a[key][1]) == set(arrays)
        for name, arr in arrays.items():
            np.testing.assert_array_equal(a[key][1][name], arr)


def png_header(width: int, height: int) -> bytes:
    """A PNG whose header claims width x height (a decompression bomb to any decoder that believes it)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\0" * 64))
        + chunk(b"IEND", b"")
    )
