"""Input stamps: what a record was computed from, beyond its cell key, so a stale record is recomputed.

The cell key names model, task, dataset annotations and condition. A record also depends on its image
file (and a swap partner's) and, for seeded conditions, on the run seed; a stamp digests those, and a
record whose stamp differs from the current one is recomputed (and counted) instead of served.

An image enters its stamp by its content's digest, never its path or modification time, so a run folder
and its data copied elsewhere (new absolute paths, new times) rerun with no model call. Each file is
read for it once per process (memoised on path, size and mtime; models/fingerprint.file_digest).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from argus_eval.data.types import Sample, fingerprint_of
from argus_eval.models.fingerprint import file_digest
from argus_eval.runner.plan.plan import Cell
from argus_eval.runner.store import Store

# (path, size, mtime) -> content digest: a stat per sample and cell, as before, and a read per file
_digests: dict[tuple[str, int, int], str] = {}


def _file_stamp(path: Path) -> str | None:
    try:
        st = path.stat()
        key = (str(path), st.st_size, st.st_mtime_ns)
        hit = _digests.get(key)
        if hit is None:
            hit = _digests[key] = file_digest(path)
    except OSError:
        return None  # missing or unreadable: prepare() names it; a later fix changes the stamp
    return hit


def input_stamps(cell: Cell, run_seed: int, partners: Mapping[str, Sample]) -> dict[str, str]:
    """sample id -> digest of its image file's content, its swap partner's, and the run seed when the
    condition uses it."""
    seed = run_seed if cell.condition.uses_seed else None
    out: dict[str, str] = {}
    for s in cell.samples:
        own = None if s.image is None else _file_stamp(cell.dataset.image_path(s))
        partner = partners.get(s.sample_id)
        other = (
            None
            if partner is None or partner.image is None
            else _file_stamp(cell.dataset.image_path(partner))
        )
        out[s.sample_id] = fingerprint_of(own, other, seed)
    return out


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
