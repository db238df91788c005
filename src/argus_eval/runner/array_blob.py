"""Named arrays as one blob in the store: a short header and the raw bytes, no pickles.

A record's arrays (a retrieval record's image and text embeddings) were kept as .npz: writing and
reading one costs about 0.15 ms in zipfile and the .npy header parser, as much as the rest of a record's
path through the store, once per record at 5,000 to 150,000 records. This blob is the magic, a JSON
header [[name, dtype, shape], ...] and each array's bytes in order, so packing is a join and unpacking a
few frombuffer calls. Only fixed-size kinds are accepted (booleans, numbers, fixed-width strings), so a
blob can never hold a pickle. Blobs written before (npz, starting "PK") still read.
"""

from __future__ import annotations

import io
import json
import math
import struct
from collections.abc import Mapping

import numpy as np

MAGIC = b"ARGA1\n"
_LENGTH = struct.Struct("<I")
_KINDS = frozenset("biufcSU")  # fixed-size dtypes: what np.load(allow_pickle=False) reads too


def pack(arrays: Mapping[str, np.ndarray]) -> bytes | None:
    """The blob of arrays (None for none); ValueError for an array of objects or another variable kind."""
    if not arrays:
        return None
    head: list[list[object]] = []
    parts: list[bytes] = []
    for name, value in arrays.items():
        a = np.ascontiguousarray(value)
        if a.dtype.kind not in _KINDS or a.dtype.fields is not None:
            raise ValueError(f"array {name!r} has dtype {a.dtype}: the store keeps no pickled array")
        head.append([str(name), a.dtype.str, list(a.shape)])
        parts.append(a.tobytes())
    text = json.dumps(head, separators=(",", ":")).encode()
    return b"".join((MAGIC, _LENGTH.pack(len(text)), text, *parts))


def unpack(blob: bytes | None) -> dict[str, np.ndarray]:
    """The arrays of a blob (pack's, or an older npz); ValueError (or zipfile.BadZipFile, for a damaged
    npz) when the bytes are not such a blob."""
    if blob is None:
        return {}
    if not blob.startswith(MAGIC):
        with np.load(io.BytesIO(blob), allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    start = len(MAGIC) + _LENGTH.size
    if len(blob) < start:
        raise ValueError("array blob is truncated in its header")
    (n,) = _LENGTH.unpack_from(blob, len(MAGIC))
    try:
        head = json.loads(blob[start : start + n])
    except RecursionError:  # a crafted header nested deeper than the parser goes
        raise ValueError("array blob header nests too deep to be [name, dtype, shape] entries") from None
    offset = start + n
    out: dict[str, np.ndarray] = {}
    for name, dtype, shape in _entries(head):
        count = math.prod(shape)
        end = offset + count * dtype.itemsize
        if end > len(blob):
            raise ValueError(f"array blob is truncated in array {name!r}")
        out[name] = np.frombuffer(blob, dtype=dtype, count=count, offset=offset).reshape(shape).copy()
        offset = end
    if offset != len(blob):
        raise ValueError(f"array blob has {len(blob) - offset} bytes after its last array")
    return out


def _entries(head: object) -> list[tuple[str, np.dtype[np.generic], tuple[int, ...]]]:
    """The header's (name, dtype, shape) triples, checked: ValueError for anything else."""
    if not isinstance(head, list):
        raise ValueError("array blob header is not a list")
    out = []
    for entry in head:
        if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)):
            raise ValueError(f"array blob header entry {entry!r} is not [name, dtype, shape]")
        name, dtype_text, shape = entry
        if not isinstance(dtype_text, str) or not isinstance(shape, list):
            raise ValueError(f"array blob header entry {entry!r} is not [name, dtype, shape]")
        if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise ValueError(f"array {name!r} has shape {shape!r}, not a list of sizes")
        try:
            dtype = np.dtype(dtype_text)
        except TypeError:
            raise ValueError(f"array {name!r} has dtype {dtype_text!r}, which numpy does not know") from None
        if dtype.kind not in _KINDS or dtype.fields is not None:
            raise ValueError(f"array {name!r} has dtype {dtype_text!r}, which a store never keeps")
        out.append((name, dtype, tuple(shape)))
    return out
