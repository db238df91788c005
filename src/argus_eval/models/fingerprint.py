"""Model identity for the result cache, computed without loading the model."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

# Files that decide a checkpoint's outputs: weights, configs, tokenizer and processor files, templates.
_HASHED_SUFFIXES = frozenset(
    {".safetensors", ".bin", ".pt", ".pth", ".json", ".txt", ".model", ".jinja", ".py", ".tiktoken", ".npz"}
    | {".yaml"}  # a detector's config.yaml (LXMERT's frcnn-vg regions)
)

_file_cache: dict[tuple[str, int, int], str] = {}
_lock = threading.Lock()


def file_digest(path: Path) -> str:
    """sha256 of one file, memoised by (path, size, mtime) so an unchanged checkpoint is hashed once."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    with _lock:
        hit = _file_cache.get(key)
    if hit is not None:
        return hit
    digest = sha256_file(path)
    with _lock:
        _file_cache[key] = digest
    return digest


def sha256_file(path: Path) -> str:
    """sha256 of one file's content, read in 1 MiB blocks (no memo: file_digest keeps one)."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def dir_digest(root: Path) -> str:
    """sha256 over (relative path, file digest) of every output-relevant file below root."""
    h = hashlib.sha256()
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in _HASHED_SUFFIXES)
    for p in files:
        if any(part.startswith(".") for part in p.relative_to(root).parts):
            continue  # .cache/, .git/: not part of the checkpoint
        h.update(p.relative_to(root).as_posix().encode())
        h.update(file_digest(p).encode())
    return h.hexdigest()


def _content(value: Any) -> Any:
    """value with each path to a file or directory (also inside a mapping, e.g. region_features'
    detector) replaced by the hash of what it holds."""
    if isinstance(value, dict):
        return {k: _content(v) for k, v in sorted(value.items())}
    if isinstance(value, str) and value:
        p = Path(value.removeprefix("hf:")).expanduser()
        if p.is_file():
            return {"file_sha256": file_digest(p)}
        if p.is_dir():
            return {"dir_sha256": dir_digest(p)}
    return value


def output_options(options: dict[str, Any], call_only: frozenset[str]) -> dict[str, Any]:
    """The options that can change a model's answers (all but its scheme's call-only ones), with each
    path to a file or directory (also inside a mapping, e.g. region_features' detector) replaced by the
    hash of what it holds."""
    return {k: _content(v) for k, v in sorted(options.items()) if k not in call_only}


def combine(parts: dict[str, Any]) -> str:
    """A short stable digest of a JSON-able description."""
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:24]
