"""Seals for what a run keeps in its store beyond model records (scored parts, region features): the
value with a header and a content digest, checked on read, so that an edited or truncated value is found
and made again instead of used. A digest catches damage, not a forger who recomputes it: the store is
trusted as far as the folder that holds it."""

from __future__ import annotations

import hashlib
import zipfile

import numpy as np

from argus_eval.runner.array_blob import unpack

_SEAL = b"argus-sealed/1\0"
_DIGEST = 16


class DamagedPartError(ValueError):
    """A kept value that fails its seal, does not decode or holds a non-finite number (internal: the
    caller makes the value again and counts the reason; never shown as an error)."""


def seal(blob: bytes) -> bytes:
    """The value with a header and a digest of its content, as kept in the store."""
    return _SEAL + hashlib.blake2b(blob, digest_size=_DIGEST).digest() + blob


def unseal(sealed: bytes) -> bytes:
    """The value a seal holds; DamagedPartError when the header or the digest does not match."""
    head = len(_SEAL) + _DIGEST
    if len(sealed) < head or not sealed.startswith(_SEAL):
        raise DamagedPartError("no seal (truncated, or written by another version)")
    digest, blob = sealed[len(_SEAL) : head], sealed[head:]
    if hashlib.blake2b(blob, digest_size=_DIGEST).digest() != digest:
        raise DamagedPartError("content does not match its digest (edited or truncated)")
    return blob


def require_finite(a: np.ndarray, what: str) -> np.ndarray:
    """a itself; DamagedPartError naming what when a float array holds NaN or infinity."""
    if a.dtype.kind in "fc" and not np.isfinite(a).all():
        raise DamagedPartError(f"{what} holds a non-finite number")
    return a


def finite_arrays(blob: bytes, what: str) -> dict[str, np.ndarray]:
    """The arrays of an array blob (runner/array_blob.py; no pickles), each checked finite;
    DamagedPartError naming `what` when the bytes do not decode (an older npz blob fails np.load in
    these several ways on bad bytes) or hold NaN or infinity."""
    try:
        arrays = unpack(blob)
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as e:
        raise DamagedPartError(f"{what} do not decode ({type(e).__name__})") from None
    for name, a in arrays.items():
        require_finite(a, f"{what} {name!r}")
    return arrays
