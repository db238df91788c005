"""The store's array blob (runner/array_blob.py): every fixed-size array comes back equal in dtype,
shape and bytes; npz blobs written before still read; damaged bytes and pickled kinds are refused."""

from __future__ import annotations

import io

import numpy as np
import pytest

from argus_eval.runner.array_blob import MAGIC, pack, unpack


def _arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "image": rng.standard_normal(32).astype(np.float32),
        "texts": rng.standard_normal((5, 32)).astype(np.float32),
        "scalar": np.array(3.5),
        "empty": np.zeros((0, 7), dtype=np.int64),
        "big_endian": np.arange(6, dtype=">i4").reshape(2, 3),
        "flags": np.array([True, False, True]),
        "words": np.array(["a", "bcd"]),
        "strided": np.arange(20, dtype=np.uint16)[::3],  # not contiguous
        "complex": np.array([1 + 2j], dtype=np.complex64),
    }


def test_every_array_round_trips_in_dtype_shape_and_bytes() -> None:
    arrays = _arrays()
    blob = pack(arrays)
    assert blob is not None and blob.startswith(MAGIC)
    back = unpack(blob)
    assert list(back) == list(arrays)
    for name, value in arrays.items():
        a = np.ascontiguousarray(value)  # as the npz store kept them: a 0-d array as one element
        assert back[name].dtype == a.dtype and back[name].shape == a.shape, name
        assert back[name].tobytes() == a.tobytes(), name
        assert back[name].flags.writeable  # as np.load gave them
    assert pack({}) is None and unpack(None) == {}


def test_an_npz_blob_from_an_older_store_reads_the_same() -> None:
    arrays = _arrays()
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    back = unpack(buf.getvalue())
    assert {k: (v.dtype, v.shape, v.tobytes()) for k, v in back.items()} == {
        k: (v.dtype, v.shape, np.ascontiguousarray(v).tobytes()) for k, v in arrays.items()
    }


def test_arrays_that_need_a_pickle_are_refused() -> None:
    with pytest.raises(ValueError, match=r"'o'.*no pickled array"):
        pack({"o": np.array([{"a": 1}], dtype=object)})
    with pytest.raises(ValueError, match="'r'"):
        pack({"r": np.zeros(2, dtype=[("x", "<f4"), ("y", "<i4")])})


def test_every_truncation_and_trailing_byte_is_refused() -> None:
    blob = pack(_arrays())
    assert blob is not None
    for cut in range(len(blob)):
        with pytest.raises(ValueError):
            unpack(blob[:cut] if cut >= len(MAGIC) else MAGIC[:0] + MAGIC + blob[len(MAGIC) : cut])
    with pytest.raises(ValueError, match="bytes after its last array"):
        unpack(blob + b"\0")


@pytest.mark.parametrize(
    ("header", "match"),
    [
        (b'{"a": 1}', "not a list"),
        (b'[["x", "<f4"]]', "not \\[name, dtype, shape\\]"),
        (b'[["x", "|O", [1]]]', "never keeps"),
        (b'[["x", "no-such-type", [1]]]', "does not know"),
        (b'[["x", "<f4", [-1]]]', "not a list of sizes"),
        (b'[["x", "<f4", [true]]]', "not a list of sizes"),
        (b"\xff\xfe", "."),  # not JSON at all: json's own ValueError
        (b"[" * 100_000, "nests too deep"),  # json's RecursionError, as one ValueError
    ],
)
def test_a_damaged_header_is_one_value_error(header: bytes, match: str) -> None:
    blob = MAGIC + len(header).to_bytes(4, "little") + header
    with pytest.raises(ValueError, match=match):
        unpack(blob)
