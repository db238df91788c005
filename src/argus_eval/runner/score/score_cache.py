"""Scored parts kept in the store by content, so that a rerun rescores only what changed.

A cell's record hash covers what its finalize reads: the cell key (model fingerprint, task, dataset
fingerprint, condition, request hash, helpers), every record as stored, and this code's version. Under
"cell:<hash>" the store keeps the finalized cell (everything of its CellResult but the finish functions);
under "rows:<hash>" the rows its finish returned, by the content of the summed components they were
computed from (bootstrap counts @ components: the same draws over the same records give the same sums).
A rerun with nothing changed reads both and calls no finish; a changed record changes its cell's hash,
so exactly that cell is finalized and resampled again. A finish is still there when asked for sums it has
not seen (a new pair restriction, say): it finalizes the cell from its records then, once.

Each kept value is sealed with a digest of its content (seal/unseal) and checked on read, with its numbers
checked finite: an edited, truncated or undecodable part is never used; the cell is finalized from its
records again and the rejection counted (run_log.json "scored_parts_rejected"). The digest catches
damage, not a forger who recomputes it: the store is as trusted as the folder that holds it.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable
from typing import Any

import numpy as np

from argus_eval.runner.seal import DamagedPartError, finite_arrays, require_finite, seal
from argus_eval.tasks.answers import AnswerFormat
from argus_eval.tasks.base import CellResult, Finish
from argus_eval.version import __version__

# Bump when finalize or a finish changes what it returns for the same records.
CACHE_VERSION = "2"

RawRow = tuple[str, str | None, bytes | None, str | None, float]


def record_hash(cell_key: str, rows: list[RawRow]) -> str:
    """Hash of everything a cell's scores are computed from (timings left out: no score reads them)."""
    h = hashlib.sha256(f"{CACHE_VERSION}/{__version__}\0{cell_key}\0".encode())
    for sid, output, arrays, error, _seconds in rows:
        for part in (sid, output, error):
            h.update(b"\1" if part is None else b"\2" + part.encode("utf-8", "surrogatepass"))
        h.update(b"\1" if arrays is None else b"\2" + len(arrays).to_bytes(8, "little") + arrays)
    return h.hexdigest()


def _sums_key(sums: np.ndarray) -> str:
    a = np.ascontiguousarray(sums, dtype=np.float64)
    return hashlib.blake2b(a.tobytes() + repr(a.shape).encode(), digest_size=16).hexdigest()


class CachedFinish:
    """A finish memoised by the content of the sums it is given (rows: sums key -> result, shared with
    the store); compute gives the cell's real finish, called only for sums not seen before."""

    def __init__(self, compute: Callable[[], Finish], rows: dict[str, np.ndarray], prefix: str) -> None:
        self._compute = compute
        self._rows = rows
        self._prefix = prefix
        self.added = False

    def __call__(self, sums: np.ndarray) -> np.ndarray:
        key = self._prefix + _sums_key(sums)
        hit = self._rows.get(key)
        if hit is None:
            hit = np.asarray(self._compute()(sums), dtype=np.float64)
            self._rows[key] = hit
            self.added = True
        return hit.copy()


def pack_rows(rows: dict[str, np.ndarray]) -> bytes:
    """A cell's finish rows, sealed."""
    buf = io.BytesIO()
    np.savez(buf, **{k: rows[k] for k in sorted(rows)})  # type: ignore[arg-type]
    return seal(buf.getvalue())


def unpack_rows(blob: bytes) -> dict[str, np.ndarray]:
    """Finish rows from the content of their seal (runner/score/score.py unseals every kept part once);
    DamagedPartError when they do not decode or hold a non-finite number."""
    return finite_arrays(blob, "finish rows")


def pack_result(r: CellResult) -> bytes:
    """The cell result without its finish functions: JSON head, then the components as .npy."""
    head = {
        "sample_ids": r.sample_ids,
        "predictions": r.predictions,
        "scores": r.scores,
        "references": r.references,
        "metrics": r.metrics,
        "breakdown": r.breakdown,
        "extras": sorted(r.extras),
        "chance": r.chance,
        "chance_basis": r.chance_basis,
        "answer_format": None
        if r.answer_format is None
        else {"parsed": r.answer_format.parsed, "cleaned": r.answer_format.cleaned},
    }
    text = json.dumps(head, ensure_ascii=False).encode("utf-8", "surrogatepass")
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(r.components), allow_pickle=False)
    return seal(len(text).to_bytes(8, "little") + text + buf.getvalue())


def unpack_result(
    blob: bytes, finish: Finish, extra: Callable[[str], Finish]
) -> tuple[CellResult, list[str]]:
    """A packed cell result, from the content of its seal, with the given finish and extras (extra(name)
    gives each); its extras' names. DamagedPartError when it does not decode or holds a non-finite
    number."""
    try:
        head, components = _decode_result(blob)
        form = head["answer_format"]
        names: list[str] = head["extras"]
    except (OSError, ValueError, EOFError, KeyError, TypeError) as e:  # bad bytes, as json and np.load fail
        raise DamagedPartError(f"cell result does not decode ({type(e).__name__})") from None
    require_finite(components, "components")
    result = CellResult(
        sample_ids=head["sample_ids"],
        predictions=head["predictions"],
        scores=head["scores"],
        references=head["references"],
        components=components,
        finish=finish,
        metrics=head["metrics"],
        breakdown=head["breakdown"],
        extras={name: extra(name) for name in names},
        chance=head["chance"],
        chance_basis=head["chance_basis"],
        answer_format=None if form is None else AnswerFormat(form["parsed"], form["cleaned"]),
    )
    return result, names


def _decode_result(blob: bytes) -> tuple[dict[str, Any], np.ndarray]:
    n = int.from_bytes(blob[:8], "little")
    head: dict[str, Any] = json.loads(blob[8 : 8 + n].decode("utf-8", "surrogatepass"))
    return head, np.load(io.BytesIO(blob[8 + n :]), allow_pickle=False)


class CellCache:
    """One cell's scored parts: its record hash, its finish rows (from the store, plus any new ones) and
    the packed result when it was finalized afresh."""

    def __init__(
        self, digest: str, rows: dict[str, np.ndarray], packed: bytes | None, rows_damaged: bool = False
    ) -> None:
        self.digest = digest
        self.rows = rows
        self.packed = packed
        self.finishes: list[CachedFinish] = []
        self.rows_damaged = rows_damaged  # the kept rows were rejected: rewrite them even if none is added

    def wrap(self, compute: Callable[[], Finish], prefix: str = "") -> CachedFinish:
        f = CachedFinish(compute, self.rows, prefix)
        self.finishes.append(f)
        return f

    def to_store(self) -> dict[str, bytes]:
        """What the store lacks of this cell: its result if new, its rows if any were added."""
        out = {} if self.packed is None else {f"cell:{self.digest}": self.packed}
        if self.rows_damaged or any(f.added for f in self.finishes):
            out[f"rows:{self.digest}"] = pack_rows(self.rows)
        return out
