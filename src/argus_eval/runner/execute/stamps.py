"""Input stamps: what a record was computed from, beyond its cell key, so a stale record is recomputed.

The cell key names model, task, dataset annotations and condition. A record also depends on its image
file (and a swap partner's), for seeded conditions on the run seed, and for a perturbation a user
registered on its code or version (the condition's identity: perturb/kinds.py); a stamp digests those,
and a record whose stamp differs from the current one is recomputed (and counted) instead of served. A
built-in condition has no identity, so its stamps are what they always were.

An image enters its stamp by its content's digest, never its path or modification time, so a run folder
and its data copied elsewhere (new absolute paths, new times) rerun with no model call. Each file is
read for it once per process (memoised on path, size and mtime: runner/inputs/digests.py), and a file
the image cache decodes is digested from the bytes it read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from argus_eval.data.types import Sample, fingerprint_of
from argus_eval.runner.inputs.digests import digest, digest_all
from argus_eval.runner.plan.plan import Cell
from argus_eval.runner.store import Store


class CellStamps(Mapping[str, str]):
    """A cell's input stamps (sample id -> digest of its image file's content, its swap partner's, and
    the run seed when the condition uses it), each made when first asked for.

    Why lazy: a cell the store holds nothing of needs no stamp to know it is all to do, so its files
    are digested by the input threads that read them to decode anyway (warm), ahead of the model, and
    not all at once before its first batch. A rerun, which compares stamps, makes them all first
    (fill), on a few threads."""

    def __init__(self, cell: Cell, run_seed: int, partners: Mapping[str, Sample]) -> None:
        self._seed = run_seed if cell.condition.uses_seed else None
        identity = cell.condition.identity
        self._identity = () if identity is None else (identity,)  # none: a built-in's stamps unchanged

        def path_of(s: Sample | None) -> Path | None:
            return None if s is None or s.image is None else cell.dataset.image_path(s)

        self._own = {s.sample_id: path_of(s) for s in cell.samples}
        self._other = {s.sample_id: path_of(partners.get(s.sample_id)) for s in cell.samples}
        self._made: dict[str, str] = {}
        # path -> digest, once per file and cell (a CLEVR image serves ten questions: one stat, not ten)
        self._files: dict[Path, str | None] = {}

    def __getitem__(self, sample_id: str) -> str:
        hit = self._made.get(sample_id)
        if hit is None:
            own, other = self._own[sample_id], self._other[sample_id]
            hit = fingerprint_of(self._digest(own), self._digest(other), self._seed, *self._identity)
            self._made[sample_id] = hit  # the same value whichever thread stores it
        return hit

    def _digest(self, path: Path | None) -> str | None:
        if path is None:
            return None
        if path not in self._files:
            self._files[path] = digest(path)
        return self._files[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._own)

    def __len__(self) -> int:
        return len(self._own)

    def warm(self, sample_ids: Iterable[str]) -> None:
        """Make these samples' stamps now (an input thread, after decoding their files)."""
        for sid in sample_ids:
            self[sid]

    def fill(self) -> CellStamps:
        """Make every stamp, reading the files not digested yet on a few threads."""
        paths = {p for p in (*self._own.values(), *self._other.values()) if p is not None}
        self._files.update(digest_all(p for p in paths if p not in self._files))
        for sid in self._own:
            self[sid]
        return self


def input_stamps(cell: Cell, run_seed: int, partners: Mapping[str, Sample]) -> CellStamps:
    """Every stamp of the cell, made now (CellStamps(...).fill())."""
    return CellStamps(cell, run_seed, partners).fill()


@dataclass
class Pending:
    """The sample positions of a cell still to compute, and why."""

    positions: list[int] = field(default_factory=list)
    stale: int = 0  # records whose inputs changed since they were computed
    retried: int = 0  # failed records computed again


def pending(cell: Cell, store: Store, stamps: Mapping[str, str], retry_failed: bool) -> Pending:
    """Positions of samples with no record, a stale record, or (when retrying) a failed one."""
    states = store.states(cell.key)
    if states and isinstance(stamps, CellStamps):
        stamps.fill()  # compared below: made together, on threads, rather than one by one
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
