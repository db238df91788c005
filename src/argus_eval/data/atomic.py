"""Output files written whole or not at all: a temporary file beside the target, renamed over it.

Every file a run or a report writes into its folder goes through here, so that a symlink planted where
an output goes is replaced, never followed (the file it points to stays as it was), and a write that
fails half-way (an exception while streaming samples.jsonl, a full disk) leaves the previous file intact
and no temporary file behind. It lives in the lowest wing because the runner and the report share it.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO, TextIO

# a temporary file's name: hidden, the target's name (cut so that the whole stays under NAME_MAX), random
_TMP_PREFIX = "."
_TMP_SUFFIX = ".tmp"
_NAME_KEEP = 200


def temp_name(path: Path) -> Path:
    """A fresh temporary name in path's folder (recognisable: .<name>.<random>.tmp)."""
    return path.with_name(f"{_TMP_PREFIX}{path.name[:_NAME_KEEP]}.{secrets.token_hex(6)}{_TMP_SUFFIX}")


def _create(path: Path) -> tuple[int, Path]:
    # O_EXCL: never opens an existing file or follows a link there; 0o666 so the umask decides the mode
    # as it does for open(..., "w") (mkstemp would make every output 0600)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    while True:
        tmp = temp_name(path)
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:  # a name taken by chance (or planted): draw another
            continue


def _about(e: OSError, path: Path) -> OSError:
    # the error names the output, not its temporary file (the one-line message names what is written)
    return OSError(e.errno, e.strerror, str(path))


@contextmanager
def _replacing(path: Path) -> Iterator[int]:
    # the caller wraps the descriptor in a file and closes it before the rename (Windows needs that)
    try:
        fd, tmp = _create(path)
    except OSError as e:
        raise _about(e, path) from e
    try:
        yield fd
        os.replace(tmp, path)
    except BaseException as e:
        with suppress(OSError):
            tmp.unlink()
        if isinstance(e, OSError) and e.filename == str(tmp):
            raise _about(e, path) from e
        raise


@contextmanager
def atomic_text(path: Path, encoding: str = "utf-8") -> Iterator[TextIO]:
    """A text file opened beside path; when the block ends normally it replaces path (os.replace: a
    symlink at path is replaced, not followed), when it raises it is removed and path is left as it was."""
    with _replacing(path) as fd, os.fdopen(fd, "w", encoding=encoding) as fh:
        yield fh


@contextmanager
def atomic_binary(path: Path) -> Iterator[BinaryIO]:
    """atomic_text for bytes."""
    with _replacing(path) as fd, os.fdopen(fd, "wb") as fh:
        yield fh


def atomic_write_text(path: Path, text: str, encoding: str = "utf-8") -> None:
    """path's content becomes text, written whole through a temporary file (see atomic_text)."""
    with atomic_text(path, encoding) as fh:
        fh.write(text)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """path's content becomes data, written whole through a temporary file (see atomic_text)."""
    with atomic_binary(path) as fh:
        fh.write(data)
