"""Safe joining of paths read from annotation files onto a configured root.

A path inside an annotation file is data, not trusted: "../" components, absolute paths, drive letters and
NUL bytes are rejected so that a crafted file cannot make the runner read outside the image root.
"""

from __future__ import annotations

import posixpath
import threading
from pathlib import Path

from argus_eval.data.types import Dataset, Sample
from argus_eval.errors import DatasetError, SampleError

# Where generated data (ShapesWorld) and caches go when a config names no cache_dir.
DEFAULT_CACHE = Path.home() / ".cache" / "argus-eval"


def safe_relpath(rel: object, *, source: str | Path, record: str, field: str) -> str:
    """Validate a relative path from an annotation file and return it normalised (posix separators).

    Raises DatasetError naming the file, record and field when the path is empty, absolute or escapes
    its root.
    """
    where = f"{source}: record {record}, field {field!r}"
    if not isinstance(rel, str) or not rel.strip():
        raise DatasetError(f"{where}: expected a non-empty relative path, got {rel!r}")
    if "\x00" in rel:
        raise DatasetError(f"{where}: path contains a NUL byte")
    text = rel.replace("\\", "/")
    # A Windows drive ("C:/x") or UNC share is as absolute as "/x".
    if text.startswith("/") or (len(text) > 1 and text[1] == ":"):
        raise DatasetError(
            f"{where}: absolute path {rel!r} is not allowed; paths must be relative to the root"
        )
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise DatasetError(f"{where}: path {rel!r} escapes the image root ('..' is not allowed)")
    if not parts:
        raise DatasetError(f"{where}: path {rel!r} names no file")
    return posixpath.join(*parts)


def image_inside_root(dataset: Dataset, sample: Sample) -> Path:
    """The sample's image path, refused (SampleError) when it resolves outside the image root through a
    symbolic link, unless the dataset allows links; a linked root folder itself is fine."""
    path = dataset.image_path(sample)
    if not dataset.allow_symlinks:
        _refuse_outside(dataset, sample, path, dataset.image_root.resolve())
    return path


def _refuse_outside(dataset: Dataset, sample: Sample, path: Path, root: Path) -> None:
    _refuse_target(dataset, sample, path, path.resolve(), root)


def _refuse_target(dataset: Dataset, sample: Sample, path: Path, target: Path, root: Path) -> None:
    if not target.is_relative_to(root):
        raise SampleError(
            f"sample {sample.sample_id}: image {path} is a link to {target}, outside the image root "
            f"{root}; set allow_symlinks: true on dataset {dataset.name!r} to follow such links"
        )


class InsideRoot:
    """image_inside_root for one run, each root and each image folder resolved once and each image path
    checked once: every question of an image shares the check, and a realpath walk per file (about
    100 us: one lstat per component) was a sixth of decoding a COCO image. A file is then checked with
    one lstat: a link is resolved whole, anything else lies where its resolved folder says. A link
    changed during the run is not seen again; the file is opened right after the first check, so a
    later check would not close that window."""

    def __init__(self) -> None:
        self._roots: dict[Path, Path] = {}
        self._folders: dict[Path, Path] = {}  # image folder -> its resolved path
        self._checked: set[Path] = set()
        self._lock = threading.Lock()

    def __call__(self, dataset: Dataset, sample: Sample) -> Path:
        """The sample's image path, refused as image_inside_root refuses it."""
        path = dataset.image_path(sample)
        if dataset.allow_symlinks or path in self._checked:
            return path
        with self._lock:
            root = self._roots.get(dataset.image_root)
            if root is None:
                root = self._roots[dataset.image_root] = dataset.image_root.resolve()
            folder = self._folders.get(path.parent)
            if folder is None:
                folder = self._folders[path.parent] = path.parent.resolve()
        target = path.resolve() if path.is_symlink() else folder / path.name
        _refuse_target(dataset, sample, path, target, root)
        with self._lock:
            self._checked.add(path)
        return path
