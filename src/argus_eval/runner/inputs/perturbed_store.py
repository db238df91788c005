"""Perturbed images kept on disk beside the store, keyed by content, so no corruption is computed twice.

The plan is model-major, and the in-memory image cache (runner/inputs/images.py) is bounded: at COCO size
every model after the first would corrupt every image again. Kept here, a perturbed image is computed once
per (source file content, condition, seed, corruption library, and the code of a perturbation a
user registered): a second model, a rerun or a run that adds a model reads it back. Entries are raw
uint8 arrays, since a compressor costs more per image than a corruption at small sizes and reading raw
bytes is a fraction of a millisecond.

Nothing read here is trusted: an entry carries a digest of its pixels, checked on read, and an entry
that is short, damaged or of another shape is recomputed and counted, never used. A disk that is full
or read-only turns the store off for the rest of the run with one warning; the run loses nothing.
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading
import warnings
from dataclasses import dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

from argus_eval.data.atomic import atomic_write_bytes
from argus_eval.data.images import ImageArray

_MAGIC = b"ARGPI1\n\0"
_HEADER = struct.Struct("<8sIII16s")  # magic, height, width, channels, blake2b-128 of the pixels
FORMAT_VERSION = 1
# What one run may write: raw pixels are large (0.9 MB for a 640x480 image), and a paper-size run's
# seeded corruptions would fill a disk. Past the budget, later models compute them again.
DEFAULT_MAX_BYTES = 16 * 2**30


class InputCacheWarning(UserWarning):
    """The perturbed-image store could not be written; the run goes on computing without it."""


@cache
def _library_versions() -> str:
    """The corruption library's version: a new release may compute other pixels for the same seed."""
    try:
        return version("imagecorruptions-imaug")
    except PackageNotFoundError:
        return "none"


def _digest(data: bytes | memoryview) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


@dataclass
class PerturbedCounts:
    """What the store did this run (run_log.json): entries read back, written, found damaged."""

    read: int = 0
    written: int = 0
    corrupt: int = 0  # entries that failed their check: recomputed, counted, never used
    write_failed: int = 0  # entries not written (disk full, read-only): the run went on without them
    over_budget: int = 0  # entries not written because this run had written max_bytes already


class PerturbedStore:
    """A folder of perturbed images named by the hash of what made them."""

    def __init__(self, root: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.counts = PerturbedCounts()
        self._writable = True
        self._written_bytes = 0
        # prefetch threads read and write entries at once (runner/execute/local.py): counts and the byte
        # budget are updated under this lock, the files themselves are written outside it
        self._lock = threading.Lock()

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self.counts, name, getattr(self.counts, name) + 1)

    @staticmethod
    def key(source_digest: str, condition_id: str, seed: int, identity: str | None = None) -> str:
        """The entry name of source_digest's image under condition_id with seed; identity: what a user's
        perturbation stands for beyond its id (its code's fingerprint), None for a built-in one."""
        parts = [FORMAT_VERSION, source_digest, condition_id, seed, _library_versions()]
        if identity is not None:  # appended only when there is one: a built-in's entries keep their names
            parts.append(identity)
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / key

    def get(self, key: str) -> ImageArray | None:
        """The kept image of key, or None when absent or damaged (damaged entries are removed)."""
        path = self._path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        image = _decode(data)
        if image is None:
            self._count("corrupt")
            path.unlink(missing_ok=True)
            return None
        self._count("read")
        return image

    def put(self, key: str, image: ImageArray) -> None:
        """Keep image under key: written whole to a temporary file, then renamed into place, so a
        killed run leaves no partial entry under a real name."""
        if not self._writable:
            return
        pixels = np.ascontiguousarray(image, dtype=np.uint8)
        h, w, c = pixels.shape
        body = pixels.tobytes()
        with self._lock:
            if self._written_bytes + len(body) > self.max_bytes:
                self.counts.over_budget += 1  # computed again by a later model: slower, never wrong
                return
            self._written_bytes += len(body)  # reserved now, so threads writing at once keep the budget
        data = _HEADER.pack(_MAGIC, h, w, c, _digest(body)) + body
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, data)
            self._count("written")
        except OSError as e:
            with self._lock:
                first, self._writable = self._writable, False
                self.counts.write_failed += 1
                self._written_bytes -= len(body)
            if not first:
                return
            note = (
                f"perturbed images are no longer kept in {self.root} ({e.strerror or e}); "
                "the run goes on computing them, and a rerun computes them again"
            )
            warnings.warn(note, InputCacheWarning, stacklevel=2)


def _decode(data: bytes) -> ImageArray | None:
    """The image an entry holds, or None when its header, length or digest does not check."""
    if len(data) < _HEADER.size:
        return None
    magic, h, w, c, digest = _HEADER.unpack_from(data)
    body = memoryview(data)[_HEADER.size :]
    if magic != _MAGIC or c != 3 or h * w * c != len(body) or _digest(body) != digest:
        return None
    image: ImageArray = np.frombuffer(body, dtype=np.uint8).reshape(h, w, c)
    return image
