"""Region features for LXMERT-style models, which read (boxes, features) instead of pixels.

Providers (``REGION_PROVIDERS``): ``frcnn-vg``, the bottom-up-attention detector LXMERT was trained
on (models/frcnn/), ``segments`` (models/region_segments.py), and these two:
* ``GridRegionFeatures``: an approximation with no detector. The image is resized to a square and cut
  into a grid of patches; each raw patch (scaled to [-1, 1]) is a "region" whose box is its grid cell.
  The model's own visual projection then acts as the patch embedding. A checkpoint trained this way
  stores the grid parameters in config.json (``argus_region_features``) so it reloads identically.
* ``PrecomputedRegionFeatures``: detector features from an npz, h5 or tsv file, looked up by the
  image's content key (``image_key``). A perturbed image has a different key and is refused, rather
  than silently answered with its clean features.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from argus_eval.data.images import ImageArray
from argus_eval.errors import ModelCallError, ModelLoadError
from argus_eval.registry import CALLABLE, Registry

CONFIG_KEY = "argus_region_features"


@dataclass(frozen=True)
class RegionBatch:
    """(n, R, F) float32 features and (n, R, 4) float32 boxes, normalised (x1, y1, x2, y2) in [0, 1].

    found: (n,) how many of an image's R rows are real regions (the rest are zero padding, which the
    model must not attend to); None when every row is real."""

    features: NDArray[np.float32]
    boxes: NDArray[np.float32]
    found: NDArray[np.int32] | None = None


class RegionFeatureProvider(Protocol):
    """Turns images into a fixed number of region features of a fixed dimension."""

    feature_dim: int
    costly: bool  # whether an image's regions are worth keeping in the run's store

    def regions(self, images: Sequence[ImageArray]) -> RegionBatch:
        """Features and boxes for each image (same R for every image)."""
        ...

    def describe(self) -> dict[str, Any]:
        """JSON-able parameters: stored in checkpoint configs and shown in ModelInfo.extra."""
        ...


def image_key(image: ImageArray) -> str:
    """Content key of an image: sha256 over its shape and uint8 bytes."""
    a = np.ascontiguousarray(image, dtype=np.uint8)
    h = hashlib.sha256(str(a.shape).encode())
    h.update(a.tobytes())
    return h.hexdigest()


@runtime_checkable
class PlacedProvider(Protocol):
    """A provider with weights of its own, placed on the device of the model that reads it."""

    def place(self, device: Any) -> None: ...


class GridRegionFeatures:
    """Raw pixel patches of the image resized to image_size x image_size, grid x grid of them."""

    costly = False

    def __init__(self, image_size: int = 96, grid: int = 8) -> None:
        if image_size % grid:
            raise ModelLoadError(
                f"grid region features: image_size {image_size} is not a multiple of grid {grid}"
            )
        self.image_size = image_size
        self.grid = grid
        self.cell = image_size // grid
        self.feature_dim = self.cell * self.cell * 3
        g = np.arange(grid, dtype=np.float32) / grid
        x1, y1 = np.meshgrid(g, g)  # row-major over (row, col), matching the patch order below
        step = 1.0 / grid
        self._boxes = np.stack([x1, y1, x1 + step, y1 + step], axis=-1).reshape(grid * grid, 4)

    def regions(self, images: Sequence[ImageArray]) -> RegionBatch:
        """Patches as (n, grid*grid, cell*cell*3) features in [-1, 1] and their grid-cell boxes."""
        n, g, c = len(images), self.grid, self.cell
        feats = np.empty((n, g * g, self.feature_dim), dtype=np.float32)
        for i, im in enumerate(images):
            a = np.asarray(
                Image.fromarray(np.asarray(im, dtype=np.uint8)).resize(
                    (self.image_size, self.image_size), Image.Resampling.BICUBIC
                ),
                dtype=np.float32,
            )
            patches = a.reshape(g, c, g, c, 3).transpose(0, 2, 1, 3, 4).reshape(g * g, -1)
            feats[i] = patches / 127.5 - 1.0
        boxes = np.broadcast_to(self._boxes, (n, g * g, 4)).astype(np.float32)
        return RegionBatch(feats, boxes)

    def describe(self) -> dict[str, Any]:
        return {"kind": "grid", "image_size": self.image_size, "grid": self.grid}


class PrecomputedRegionFeatures:
    """Detector features read from a file, keyed by image_key(image) (or any key the file uses).

    found: per key, how many rows are real regions (npz files written with it); others are all real."""

    costly = False  # already computed: a lookup

    def __init__(
        self,
        path: Path,
        records: dict[str, tuple[NDArray[np.float32], NDArray[np.float32]]],
        found: dict[str, int] | None = None,
    ) -> None:
        if not records:
            raise ModelLoadError(f"region features file {path} holds no images")
        self.path = path
        self._records = records
        self._found = found or {}
        first = next(iter(records.values()))[0]
        self.n_regions, self.feature_dim = int(first.shape[0]), int(first.shape[1])

    def regions(self, images: Sequence[ImageArray]) -> RegionBatch:
        """Look each image up by content key; ModelCallError naming the file when one is missing."""
        feats, boxes, found = [], [], []
        for im in images:
            key = image_key(im)
            rec = self._records.get(key)
            if rec is None:
                raise ModelCallError(
                    f"region features file {self.path} has no entry for image key {key[:16]}… "
                    "(a perturbed or unlisted image); precompute features for it or use the grid provider"
                )
            feats.append(rec[0])
            boxes.append(rec[1])
            found.append(self._found.get(key, len(rec[0])))
        return RegionBatch(
            np.stack(feats).astype(np.float32),
            np.stack(boxes).astype(np.float32),
            np.array(found, dtype=np.int32) if self._found else None,
        )

    def describe(self) -> dict[str, Any]:
        return {"kind": "file", "path": str(self.path), "n_regions": self.n_regions}


def _norm_boxes(boxes: NDArray[Any], size_hw: Sequence[float]) -> NDArray[np.float32]:
    h, w = float(size_hw[0]), float(size_hw[1])
    b = np.asarray(boxes, dtype=np.float32).copy()
    if b.size and b.max() > 1.0 + 1e-6:  # pixel coordinates: normalise by the image size
        b[:, [0, 2]] /= w
        b[:, [1, 3]] /= h
    return np.clip(b, 0.0, 1.0)


def _read_npz(path: Path) -> dict[str, tuple[NDArray[np.float32], NDArray[np.float32]]]:
    """npz with arrays keys (n,), features (n, R, F), boxes (n, R, 4), image_sizes (n, 2) as (h, w)
    (and optionally found (n,), read by _npz_found)."""
    with np.load(path, allow_pickle=False) as z:
        keys, feats, boxes, sizes = z["keys"], z["features"], z["boxes"], z["image_sizes"]
    return {
        str(k): (feats[i].astype(np.float32), _norm_boxes(boxes[i], sizes[i])) for i, k in enumerate(keys)
    }


def _read_h5(path: Path) -> dict[str, tuple[NDArray[np.float32], NDArray[np.float32]]]:
    """h5 with one group per key holding datasets features, boxes and image_size (h, w)."""
    try:
        import h5py
    except ImportError:
        raise ModelLoadError(f"reading {path} needs h5py (pip install h5py), or convert it to npz") from None
    out = {}
    with h5py.File(path, "r") as f:
        for key in f:
            g = f[key]
            out[str(key)] = (
                np.asarray(g["features"], dtype=np.float32),
                _norm_boxes(g["boxes"][()], g["image_size"][()]),
            )
    return out


def _read_tsv(path: Path) -> dict[str, tuple[NDArray[np.float32], NDArray[np.float32]]]:
    """The bottom-up-attention tsv (img_id, img_h, img_w, num_boxes, boxes, features; base64 float32)."""
    csv.field_size_limit(sys.maxsize)
    out = {}
    with path.open(newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            n = int(row["num_boxes"])
            boxes = np.frombuffer(base64.b64decode(row["boxes"]), dtype=np.float32).reshape(n, 4)
            feats = np.frombuffer(base64.b64decode(row["features"]), dtype=np.float32).reshape(n, -1)
            out[row["img_id"]] = (
                feats.copy(),
                _norm_boxes(boxes, (float(row["img_h"]), float(row["img_w"]))),
            )
    return out


def _npz_found(path: Path) -> dict[str, int]:
    """key -> real regions, when an npz says (save_npz with found=); {} otherwise."""
    with np.load(path, allow_pickle=False) as z:
        if "found" not in z.files:
            return {}
        return {str(k): int(n) for k, n in zip(z["keys"], z["found"], strict=True)}


FILE_READERS: dict[str, Callable[[Path], dict[str, tuple[NDArray[np.float32], NDArray[np.float32]]]]] = {
    ".npz": _read_npz,
    ".h5": _read_h5,
    ".hdf5": _read_h5,
    ".tsv": _read_tsv,
}


def load_precomputed(path: Path) -> PrecomputedRegionFeatures:
    """Read a features file (npz, h5 or tsv by suffix); ModelLoadError naming the file when unreadable."""
    reader = FILE_READERS.get(path.suffix.lower())
    if reader is None:
        raise ModelLoadError(
            f"region features file {path}: unsupported suffix; use one of {sorted(FILE_READERS)}"
        )
    if not path.is_file():
        raise ModelLoadError(f"region features file {path} does not exist")
    try:
        records = reader(path)
        found = _npz_found(path) if reader is _read_npz else {}
    except ModelLoadError:
        raise
    except Exception as e:  # malformed file: missing field, wrong shapes, bad base64
        raise ModelLoadError(f"region features file {path} is malformed ({type(e).__name__}: {e})") from None
    return PrecomputedRegionFeatures(path, records, found)


def save_npz(
    path: Path,
    images: Sequence[ImageArray],
    features: NDArray[Any],
    boxes: NDArray[Any],
    found: NDArray[Any] | None = None,
) -> None:
    """Write precomputed features for images in the npz layout _read_npz reads (keys = image_key);
    found (n,) keeps a provider's count of real regions (RegionBatch.found)."""
    sizes = np.array([np.asarray(im).shape[:2] for im in images], dtype=np.float32)
    keys = np.array([image_key(im) for im in images])
    arrays: dict[str, NDArray[Any]] = {
        "keys": keys,
        "features": np.asarray(features, np.float32),
        "boxes": np.asarray(boxes, np.float32),
        "image_sizes": sizes,
    }
    if found is not None:
        arrays["found"] = np.asarray(found, np.int32)
    np.savez(path, **arrays)  # type: ignore[arg-type]


REGION_PROVIDERS: Registry[Callable[..., RegionFeatureProvider]] = Registry(
    "region feature provider", base=CALLABLE
)
REGION_PROVIDERS.register("grid", GridRegionFeatures)


def provider_from_config(params: dict[str, Any]) -> RegionFeatureProvider:
    """Rebuild a provider from its describe() dict (as stored in a checkpoint config)."""
    kw = {k: v for k, v in params.items() if k != "kind"}
    return REGION_PROVIDERS.get(str(params.get("kind", "")))(**kw)


REGION_PROVIDERS.register("segments", "argus_eval.models.region_segments:SegmentRegionFeatures")
REGION_PROVIDERS.register("frcnn-vg", "argus_eval.models.frcnn.provider:FrcnnRegionFeatures")


def declared_regions(options: dict[str, Any]) -> str | None:
    """Which region features a model's options name, without building them: a provider's kind (and
    its detector), or the file; None when the options name none."""
    opt = options.get("region_features")
    if isinstance(opt, dict):
        kind = str(opt.get("kind", "?"))
        return f"{kind} ({opt['detector']})" if opt.get("detector") else kind
    if isinstance(opt, str) and opt:
        return opt if opt in REGION_PROVIDERS else f"file {opt}"
    return None
