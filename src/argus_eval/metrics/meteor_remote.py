"""Which METEOR scores a corpus: a running `argus meteor-server` when one is named and answers with our
version, otherwise the process's own JVMs (meteor.shared_meteor).

A server is named by ARGUS_METEOR_SERVER (HOST:PORT, or the path of a server's state file) or, when that
is unset, by the default state file if it exists; set and empty, it names none. A server of another
version, or one that does not answer, is refused with a MeteorServerWarning naming its version or
address, once per process, and the local JVM is used instead: the scores are the same, only slower.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from argus_eval.errors import MetricError
from argus_eval.metrics.meteor import shared_meteor, warm_jit
from argus_eval.metrics.meteor_server import DEFAULT_STATE, SERVER_ENV, meteor_version, read_line_json

CONNECT_TIMEOUT_S = 2.0  # a loopback server answers its version in milliseconds
SCORE_TIMEOUT_S = 600.0  # a corpus of 40,000 segments takes under a minute on one JVM


class MeteorServerError(MetricError):
    """A METEOR server that cannot be used: not answering, another version, or a broken reply."""


class MeteorServerWarning(UserWarning):
    """A named METEOR server was refused; the local JVM scores instead."""


class MeteorScorer(Protocol):
    def score(
        self, candidates: Sequence[str], references: Sequence[Sequence[str]]
    ) -> tuple[float, NDArray[np.float64]]: ...


def server_address(env: str | None = None, default_state: Path = DEFAULT_STATE) -> str | None:
    """The HOST:PORT of the named server (see the module doc), or None when none is named."""
    value = os.environ.get(SERVER_ENV) if env is None else env
    if value is None:
        return _state_address(default_state) if default_state.is_file() else None
    if not value:
        return None  # set and empty: no server, whatever state file there is
    path = Path(value).expanduser()
    if path.is_file() or value.endswith(".json"):
        return _state_address(path)
    return value


def _state_address(path: Path) -> str:
    try:
        address = json.loads(path.read_text(encoding="utf-8"))["address"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise MeteorServerError(
            f"METEOR server state file {path} is unreadable ({exc}); restart `argus meteor-server` "
            f"or unset {SERVER_ENV}"
        ) from exc
    return str(address)


class RemoteMeteor:
    """A connection to `argus meteor-server`, checked for its version when opened."""

    def __init__(self, address: str) -> None:
        self.address = address
        host, _, port = address.rpartition(":")
        try:
            self._sock = socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S)
        except (OSError, ValueError) as exc:
            raise MeteorServerError(f"METEOR server at {address} does not answer ({exc})") from exc
        self._file = self._sock.makefile("rwb")
        try:
            theirs = self._call({"op": "version"}).get("version")
        except MeteorServerError:
            self.close()
            raise
        if theirs != meteor_version():
            self.close()
            raise MeteorServerError(
                f"METEOR server at {address} runs version {theirs!r}, not ours ({meteor_version()!r}); "
                "restart it from this install with `argus meteor-server`"
            )
        self._sock.settimeout(SCORE_TIMEOUT_S)

    def _call(self, request: dict[str, object]) -> dict[str, object]:
        try:
            self._file.write((json.dumps(request) + "\n").encode())
            self._file.flush()
            raw = self._file.readline()
        except OSError as exc:
            raise MeteorServerError(f"METEOR server at {self.address} does not answer ({exc})") from exc
        if not raw:
            raise MeteorServerError(f"METEOR server at {self.address} closed the connection")
        try:
            reply = read_line_json(raw, f"at {self.address}")
        except MetricError as exc:
            raise MeteorServerError(str(exc)) from exc
        if "error" in reply:
            raise MeteorServerError(f"METEOR server at {self.address} failed: {reply['error']}")
        return reply

    def score(
        self, candidates: Sequence[str], references: Sequence[Sequence[str]]
    ) -> tuple[float, NDArray[np.float64]]:
        """Corpus METEOR and per-segment scores, as the local MeteorPool gives them."""
        reply = self._call(
            {"op": "score", "candidates": list(candidates), "references": [list(r) for r in references]}
        )
        try:
            corpus = float(reply["corpus"])  # type: ignore[arg-type]
            per = np.asarray(reply["per"], dtype=np.float64)
        except (KeyError, TypeError, ValueError) as exc:
            raise MeteorServerError(f"METEOR server at {self.address} sent a malformed score") from exc
        if per.shape != (len(candidates),):
            raise MeteorServerError(
                f"METEOR server at {self.address} sent {per.size} scores for {len(candidates)} segments"
            )
        return corpus, per

    def close(self) -> None:
        for part in (self._file, self._sock):
            with contextlib.suppress(OSError):
                part.close()


_REFUSED: set[str] = set()
_REFUSED_LOCK = threading.Lock()


def _refuse(key: str, exc: MetricError) -> None:
    with _REFUSED_LOCK:
        if key in _REFUSED:
            return
        _REFUSED.add(key)
    warnings.warn(f"{exc}; scoring METEOR with the local JVM", MeteorServerWarning, stacklevel=3)


class _ServerOrLocal:
    """The named server, falling back to the local JVMs when it is refused (before or during a score)."""

    def __init__(self, address: str, n_segments: int) -> None:
        self.address, self.n_segments = address, n_segments

    def score(
        self, candidates: Sequence[str], references: Sequence[Sequence[str]]
    ) -> tuple[float, NDArray[np.float64]]:
        if self.address not in _REFUSED:
            try:
                remote = RemoteMeteor(self.address)
                try:
                    return remote.score(candidates, references)
                finally:
                    remote.close()
            except MeteorServerError as exc:
                _refuse(self.address, exc)
        return shared_meteor(self.n_segments).score(candidates, references)


def meteor_scorer(n_segments: int = 0) -> MeteorScorer:
    """The METEOR scorer for a corpus of n_segments: the named server if any, else the local JVMs
    (started now, so that they load while the caller tokenises)."""
    try:
        address = server_address()
    except MeteorServerError as exc:
        _refuse("state file", exc)
        address = None
    if address is None or address in _REFUSED:
        return shared_meteor(n_segments)
    return _ServerOrLocal(address, n_segments)


def warm_meteor() -> None:
    """Make METEOR ready before it is needed (a run calls this before its models run, so the JVM's
    start overlaps their work): check the named server, or else start the local JVM now and let it
    compile its scoring paths on a synthetic corpus in the background."""
    scorer = meteor_scorer(0)
    if isinstance(scorer, _ServerOrLocal):
        try:
            RemoteMeteor(scorer.address).close()
            return
        except MeteorServerError as exc:
            _refuse(scorer.address, exc)
    warm_jit(shared_meteor(0))
