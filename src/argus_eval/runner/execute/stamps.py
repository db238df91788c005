"""Input stamps: what a record was computed from, beyond its cell key, so a stale record is recomputed.

The cell key names model, task, dataset annotations and condition. A record also depends on its image
file (and a swap partner's) and, for seeded conditions, on the run seed; a stamp digests those, and a
record whose stamp differs from the current one is recomputed (and counted) instead of served.

An image enters its stamp by its content's digest, never its path or modification time, so a run folder
and its data copied elsewhere (new absolute paths, new times) rerun with no model call. Each file is
read for it once per process (memoised on path, size and mtime; models/fingerprint.file_digest).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from argus_eval.data.types import Sample, fingerprint_of
from argus_eval.models.fingerprint import sha256_file
from argus_eval.runner.plan.plan import Cell
from argus_eval.runner.store import Store

# (path, size, mtime) -> content digest: a stat per distinct file and cell, and a read per file
_digests: dict[tuple[str, int, int], str] = {}
# Files hashed at once: reading and sha256 release the GIL, and COCO's 5,000 images are 250 MB to read.
_HASH_THREADS = min(4, os.cpu_count() or 1)


def _hashed(path: Path) -> str | None:
    try:
        return sha256_file(path)
    except OSError:
        return None


def _file_stamps(paths: set[Path]) -> dict[Path, str | None]:
    """Each file's content digest (None when it is missing or unreadable: prepare() names it, and a
    later fix changes the stamp); files not seen before in this process are hashed on a few threads."""
    out: dict[Path, str | None] = {}
    todo: dict[Path, tuple[str, int, int]] = {}
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            out[path] = None
            continue
        key = (str(path), st.st_size, st.st_mtime_ns)
        hit = _digests.get(key)
        if hit is None:
            todo[path] = key
        else:
            out[path] = hit
    if todo:
        with ThreadPoolExecutor(_HASH_THREADS, thread_name_prefix="argus-stamps") as pool:
            for path, digest in zip(todo, pool.map(_hashed, todo), strict=True):
                out[path] = digest
                if digest is not None:
                    _digests[todo[path]] = digest
    return out


def input_stamps(cell: Cell, run_seed: int, partners: Mapping[str, Sample]) -> dict[str, str]:
    """sample id -> digest of its image file's content, its swap partner's, and the run seed when the
    condition uses it."""
    seed = run_seed if cell.condition.uses_seed else None

    def path_of(s: Sample | None) -> Path | None:
        return None if s is None or s.image is None else cell.dataset.image_path(s)

    own = {s.sample_id: path_of(s) for s in cell.samples}
    other = {s.sample_id: path_of(partners.get(s.sample_id)) for s in cell.samples}
    found = _file_stamps({p for p in (*own.values(), *other.values()) if p is not None})

    def stamp(path: Path | None) -> str | None:
        return None if path is None else found[path]

    return {sid: fingerprint_of(stamp(own[sid]), stamp(other[sid]), seed) for sid in own}


@dataclass
class Pending:
    """The sample positions of a cell still to compute, and why."""

    positions: list[int] = field(default_factory=list)
    stale: int = 0  # records whose inputs changed since they were computed
    retried: int = 0  # failed records computed again


def pending(cell: Cell, store: Store, stamps: Mapping[str, str], retry_failed: bool) -> Pending:
    """Positions of samples with no record, a stale record, or (when retrying) a failed one."""
    states = store.states(cell.key)
    out = Pending()
    for i, s in enumerate(cell.samples):
        state = states.get(s.sample_id)
        if state is None:
            out.positions.append(i)
        elif state[0] != stamps[s.sample_id]:
            out.positions.append(i)
            out.stale += 1
        elif state[1] and retry_failed:
            out.positions.append(i)
            out.retried += 1
    return out
