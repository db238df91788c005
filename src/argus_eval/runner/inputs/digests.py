"""Content digests of a run's input files, memoised per process by (path, size, modification time).

One memo for every reader of an input file's digest: the input stamps (runner/execute/stamps.py) and the
image cache, which digests the bytes it has just read to decode a file (runner/inputs/images.py), so
that a file is read once for both. A file that changed on disk has another size or time, so another key.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from argus_eval.models.fingerprint import sha256_file

# (path, size, mtime) -> sha256 of the content: a stat per lookup, a read per file and process
_digests: dict[tuple[str, int, int], str] = {}
# Files hashed at once: reading and sha256 release the GIL, and COCO's 5,000 images are 250 MB to read.
_HASH_THREADS = min(4, os.cpu_count() or 1)


def note(path: Path, size: int, mtime_ns: int, data: bytes) -> None:
    """Keep the digest of data, the content of path as it was at (size, mtime_ns)."""
    _digests[(str(path), size, mtime_ns)] = hashlib.sha256(data).hexdigest()


def digest(path: Path) -> str | None:
    """sha256 of path's content, read only when not known yet; None when it is missing or unreadable."""
    try:
        st = path.stat()
    except OSError:
        return None
    key = (str(path), st.st_size, st.st_mtime_ns)
    hit = _digests.get(key)
    if hit is not None:
        return hit
    try:
        found = sha256_file(path)
    except OSError:
        return None
    _digests[key] = found  # one dict store: safe beside other threads doing the same
    return found


def digest_all(paths: Iterable[Path]) -> dict[Path, str | None]:
    """digest() of each path; the files not seen yet in this process are read on a few threads."""
    todo = list(dict.fromkeys(paths))
    if len(todo) < 2:
        return {p: digest(p) for p in todo}
    with ThreadPoolExecutor(_HASH_THREADS, thread_name_prefix="argus-stamps") as pool:
        return dict(zip(todo, pool.map(digest, todo), strict=True))
