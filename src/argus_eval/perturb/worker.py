"""A corruption worker process (perturb/processes.py's CorruptionProcesses starts it) and the pipe protocol.

Started as `python -m argus_eval.perturb.worker JOBS REPLIES`, never by multiprocessing, so it never
imports the caller's `__main__` (a script without an `if __name__ == "__main__":` guard works as it is).
JOBS and REPLIES are the numbers of two pipes the parent passed it, not its stdin and stdout: what writes
to stdout before this module runs (a site hook, a .pth file) or while a kind runs (a print, a C library)
never lands in a frame. It reads jobs from JOBS and writes one reply per job to REPLIES, one at a time,
and exits at the end of JOBS: when the parent closes it, or dies.

A frame is a header (the pickle's length, the number of out-of-band buffers, each buffer's length),
the pickle (protocol 5) and the buffers: an image travels as its own bytes, without a copy into the
pickle. A worker first writes HELLO and the frame ("ready", pid). A job is (kind, condition, image,
seed); its reply is ("ok", image or None when the kind returned the image it was given), ("raised",
(pickled exception or None, traceback text)), or ("local", why) when the job cannot be loaded or its
image sent back here (the parent then applies that kind in its own thread).

This module imports only the standard library at import time, so that a worker starts fast: the job's
pickle imports the kind's module (and numpy) when it first arrives.
"""

from __future__ import annotations

import io
import os
import pickle
import signal
import struct
import sys
import traceback
from typing import IO, Any

HELLO = b"argus-cw"  # a worker's first bytes: anything else on its reply pipe means it did not start as one
HELLO_BYTES = 2**12  # the most the frame after HELLO may take: ("ready", pid)
_HEAD = struct.Struct("<QI")  # the pickle's length, the number of out-of-band buffers
_LENGTH = struct.Struct("<Q")  # one buffer's length

Frame = list[bytes | memoryview]  # what write_frame writes: the header and pickle, then each buffer


def encode(obj: object) -> Frame:
    """obj as one frame: its pickle (protocol 5) with the large buffers (an image's pixels) out of band."""
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    views = [b.raw() for b in buffers]
    lengths = b"".join(_LENGTH.pack(v.nbytes) for v in views)
    return [_HEAD.pack(len(data), len(views)) + lengths + data, *views]


def write_frame(stream: IO[bytes], frame: Frame) -> None:
    """Write a frame made by encode, then flush; OSError (BrokenPipeError) when the reader is gone."""
    for part in frame:
        stream.write(part)
    stream.flush()


class FrameTooLong(ValueError):
    """A frame's header claims more bytes than its reader accepts (the writer is out of step, or broken)."""


def read_frame(stream: io.BufferedReader, limit: int | None = None) -> tuple[bytearray, list[bytearray]]:
    """The next frame's pickle and buffers; EOFError when the stream ends, at or within a frame;
    FrameTooLong, before anything is allocated, when its header claims more than limit bytes in all."""
    size, count = _HEAD.unpack(_read_exact(stream, _HEAD.size))
    _check_length(size + _LENGTH.size * count, limit)
    lengths = struct.unpack(f"<{count}Q", _read_exact(stream, _LENGTH.size * count)) if count else ()
    _check_length(size + _LENGTH.size * count + sum(lengths), limit)
    data = _read_exact(stream, size)
    return data, [_read_exact(stream, n) for n in lengths]


def _check_length(claimed: int, limit: int | None) -> None:
    if limit is not None and claimed > limit:
        raise FrameTooLong(f"a frame whose header claims {claimed:,} bytes, over the {limit:,} accepted")


def say_hello(stream: IO[bytes]) -> None:
    """A worker's first words: HELLO, then ("ready", its pid)."""
    stream.write(HELLO)
    write_frame(stream, encode(("ready", os.getpid())))


def read_hello(stream: io.BufferedReader) -> int:
    """The worker's pid from its first words; EOFError when it ended or wrote anything else first
    (FrameTooLong when that is a frame over HELLO_BYTES)."""
    first = stream.read(len(HELLO))
    if first != HELLO:
        raise EOFError(f"it wrote {bytes(first)!r} instead of its hello" if first else "it ended")
    said = decode(*read_frame(stream, HELLO_BYTES))
    if not (isinstance(said, tuple) and len(said) == 2 and said[0] == "ready"):
        raise EOFError(f"it said {said!r} instead of that it was ready")
    return int(said[1])


def decode(data: bytearray, buffers: list[bytearray]) -> Any:
    """The object a frame holds (arrays come back writable, on their own buffers)."""
    return pickle.loads(data, buffers=buffers)


def _read_exact(stream: io.BufferedReader, n: int) -> bytearray:
    out = bytearray(n)
    view = memoryview(out)
    done = 0
    while done < n:
        got = stream.readinto(view[done:])
        if not got:
            raise EOFError(f"the stream ended {n - done} bytes before the end of a frame")
        done += got
    return out


def _exception(e: BaseException) -> tuple[bytes | None, str]:
    """e pickled, or None when it does not come back from its pickle (its __init__ takes other
    arguments than its args), with its traceback as text."""
    text = "".join(traceback.format_exception(e))
    try:
        blob = pickle.dumps(e, protocol=5)
        pickle.loads(blob)
    except Exception:  # any failure of the round trip: the parent then applies the kind itself
        return None, text
    return blob, text


def meaning(behaviour: Any, condition: Any) -> str | None:
    """What condition's name stands for in this process, compared between a parent and its worker: an
    image corruption's function (module, qualified name, closure constants), family and stochasticity,
    and for one a user registered its identity (perturb/image.py's identity: its version or code
    fingerprint, the one its records' stamps carry); "listed" for a name its kind lists; None for a name
    unknown here. A name registered at run time by the caller's script or module is unknown in a worker,
    and one replaced at run time means another function there: that condition is then applied in the
    parent."""
    image = sys.modules.get("argus_eval.perturb.image")  # loaded wherever an ImageKind was unpickled
    if image is not None and isinstance(behaviour, image.ImageKind):
        try:
            corruption = image.IMAGE_PERTURBATIONS.get(condition.name)
        except Exception:  # unknown here (UnknownNameError), or a plugin that cannot load
            return None
        fn = corruption.fn
        constants = [_constant(c) for c in getattr(fn, "__closure__", None) or ()]  # _reference's name
        where = f"{getattr(fn, '__module__', None)}:{getattr(fn, '__qualname__', type(fn).__qualname__)}"
        said = f"{where} {constants} {corruption.family} {corruption.stochastic}"
        identity = image.identity(condition.name)  # None for a built-in one: its meaning is as it was
        return said if identity is None else f"{said} {identity}"
    return "listed" if condition.name in behaviour.names() else None


def registered(behaviour: Any, condition: Any) -> object:
    """The registered object that meaning() reads for condition here: an image corruption's
    ImagePerturbation (None for a name unknown here), else its kind. A memo of meaning() kept with it
    sees a name registered again (replace=True) as the other object it then is."""
    image = sys.modules.get("argus_eval.perturb.image")
    if image is not None and isinstance(behaviour, image.ImageKind):
        try:
            return image.IMAGE_PERTURBATIONS.get(condition.name)
        except Exception:  # as in meaning: unknown here, or a plugin that cannot load
            return None
    return behaviour


def _constant(cell: Any) -> object:
    """A closure cell's value when it is a plain constant (a string, a number), else None."""
    try:
        value = cell.cell_contents
    except ValueError:  # an empty cell
        return None
    return value if isinstance(value, str | int | float) else None


def serve(
    data: bytearray, buffers: list[bytearray], checked: set[tuple[str, str, str | None]]
) -> tuple[str, object]:
    """One job's reply. checked: the (kind, name, meaning) this worker found meaning the same here."""
    try:
        behaviour, condition, image, seed, there = decode(data, buffers)
    except Exception as e:  # a kind defined in the caller's __main__ or a function: not importable here
        return "local", f"its job cannot be loaded in a worker ({type(e).__name__}: {e})"
    try:
        key = (condition.kind, condition.name, there)
        if key not in checked:
            from argus_eval.perturb.kinds import CONDITION_KINDS, register_kind

            if condition.kind not in CONDITION_KINDS.names():
                register_kind(behaviour)  # registered at run time in the parent, not by an import or plugin
            try:
                here = meaning(behaviour, condition)
            except Exception as e:  # the kind's names() fails here: the parent applies it
                here = f"{type(e).__name__}: {e}"
            if here != there:
                return "unknown", f"{condition.id} is {here or 'unknown'} in a worker, {there} in its parent"
            checked.add(key)
        out = behaviour.apply_image(condition, image, seed)
    except (Exception, SystemExit) as e:  # the kind's own failure: the parent raises it as the serial path
        # would (a SystemExit by applying the kind itself), instead of this worker exiting as if killed
        return "raised", _exception(e)
    return "ok", None if out is image else out


def _protocol_streams(args: list[str]) -> tuple[io.BufferedReader, io.BufferedWriter]:
    """The pipes to the parent, from their fd numbers (JOBS REPLIES); ValueError when args are not two
    open fds. Not inherited by a kind's own subprocesses: one that outlived this worker would hold the
    reply pipe open, and the parent would wait for a dead worker's reply."""
    if len(args) != 2 or not all(a.isdigit() for a in args):
        raise ValueError(f"expected the numbers of its two pipes (JOBS REPLIES), got {args!r}")
    jobs, replies = (int(a) for a in args)
    for fd in (jobs, replies):
        try:
            os.set_inheritable(fd, False)
        except OSError as e:
            raise ValueError(f"its pipe {fd} is not open ({e.strerror})") from None
    return open(jobs, "rb"), open(replies, "wb")


def main(args: list[str]) -> int:
    """Serve jobs from the pipe args names until it ends; 0 then, or when the parent stops reading; 2
    when args do not name its pipes (it is started by perturb/worker_process.py, not by hand)."""
    # Ctrl+C in a terminal reaches the whole process group: the parent handles it and closes the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        jobs, replies = _protocol_streams(args)
    except ValueError as e:
        print(
            f"argus_eval.perturb.worker: {e}; perturb/processes.py starts it, not a person", file=sys.stderr
        )
        return 2
    try:
        say_hello(replies)
        checked: set[tuple[str, str, str | None]] = set()
        while True:
            try:
                data, buffers = read_frame(jobs)
            except EOFError:
                return 0  # the parent closed the pipe, or died
            reply = serve(data, buffers, checked)
            try:
                frame = encode(reply)
            except Exception as e:  # the kind returned something that cannot be pickled
                frame = encode(("local", f"its image cannot be sent back ({type(e).__name__}: {e})"))
            write_frame(replies, frame)
    except OSError:  # BrokenPipeError: the parent is gone
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
