"""Writing a run's output files: a file-system failure becomes one OutputError naming the file and the fix.

An OSError raised while writing (ENOSPC in the middle of a write, say) often carries no file name, so the
writer wraps each output it produces.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from argus_eval.errors import OutputError

_FULL = "free some space or give another --out; the store keeps every finished batch, rerun to resume"
# errno -> what to do about it
FIXES = {
    errno.ENOSPC: _FULL,
    errno.EDQUOT: _FULL,
    errno.EACCES: "check the folder's permissions or give another --out",
    errno.EPERM: "check the folder's permissions or give another --out",
    errno.EROFS: "the file system is read-only: give another --out (the existing run folder is kept intact)",
    errno.ENAMETOOLONG: "shorten the name",
    errno.EEXIST: "--out must be a folder, not a file",
    errno.ENOTDIR: "a path component is a file, not a folder: --out must be a folder",
}


def os_error_line(e: OSError, path: Path | str | None = None) -> str:
    """One line for a file-system error: the file, the reason and the fix."""
    where = e.filename if e.filename is not None else path if path is not None else "a file"
    fix = FIXES.get(e.errno or 0, "check the path")
    return f"cannot write {where}: {e.strerror or e}; {fix}"


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """Turn an OSError while producing path into an OutputError naming it."""
    try:
        yield
    except OSError as e:
        raise OutputError(os_error_line(e, path)) from None


def prepare_out_dir(out_dir: Path) -> Path:
    """Create the run folder and return it; OutputError when it is a file, unwritable or its name too
    long. A symlinked folder is resolved here, once: every file of the run goes to the folder it named
    when the run began, even if the link is changed while the run goes on."""
    if out_dir.is_symlink():
        try:
            out_dir = out_dir.resolve()
        except (OSError, RuntimeError) as e:  # a loop of links (RuntimeError before Python 3.13)
            raise OutputError(
                f"--out {out_dir} is a symlink that cannot be resolved ({e}); give a folder"
            ) from None
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputError(f"--out {out_dir} is a file; give a folder (it is created when missing)")
    with writing(out_dir):
        out_dir.mkdir(parents=True, exist_ok=True)
    return out_dir
