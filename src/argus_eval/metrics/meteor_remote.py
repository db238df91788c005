"""Which METEOR scores a corpus: a running `argus meteor-server` when one is named and proves itself,
otherwise the process's own JVMs (meteor.shared_meteor).

A server is named by ARGUS_METEOR_SERVER (HOST:PORT, or the path of a server's state file) or, when that
is unset, by the default state file if it exists; set and empty, it names none. What is trusted, and why:

- The address must be loopback (127.0.0.0/8, ::1, or localhost resolving only to those): every caption
  of a run is sent to it, and the server listens on 127.0.0.1 only, so anything else is not ours.
- The state file must belong to this user and be readable by nobody else (the server writes it 0600):
  it holds the server's token, and whoever can read or write it can impersonate the server.
- The handshake is a challenge over a fresh nonce (meteor_server.py): a process that answers the public
  version string but lacks the token fails it. HOST:PORT in the environment gets the token of the default
  state file when that names the same address, and is refused otherwise.
- Every score must be a finite number in [0, 1], and a few segments of every reply, at random positions
  the server cannot predict, are scored again by the local JVM (when Java is installed; it starts in the
  background while the models run) and must agree within SPOT_TOLERANCE: a server holding the token
  could still run another jar or forge numbers. The corpus aggregate cannot be checked this way.
- The handshake, each score request (in proportion to its segments) and each reply line are bounded
  (Limits), so a server that trickles, stalls or floods costs a run seconds, not minutes or memory.

A server failing any of these is refused for the rest of the process with one MeteorServerWarning naming
it and why, and the local JVM scores everything instead: the scores are the same, only slower. Each
refusal and each corpus scored locally because of one is counted (meteor_events).
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
import os
import random
import secrets
import shutil
import socket
import stat
import threading
import time
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from argus_eval.errors import MetricError
from argus_eval.metrics._java import pycocoevalcap_file
from argus_eval.metrics.meteor import shared_meteor, warm_jit
from argus_eval.metrics.meteor_server import (
    DEFAULT_STATE,
    SERVER_ENV,
    meteor_version,
    proof,
    read_line_json,
)

SPOT_SEGMENTS = 4  # segments of each reply scored again locally
SPOT_TOLERANCE = 1e-9  # the same jar gives the same double; this only forgives a last-digit rounding


@dataclass(frozen=True)
class Limits:
    """Bounds on a server's answers: a deadline for the whole handshake (not per receive), one for a
    score request growing with its segments, and the longest reply line read."""

    handshake_s: float = 2.0  # a loopback server answers its hello in milliseconds
    score_base_s: float = 30.0
    score_per_segment_s: float = 0.01  # one JVM scores 40,000 segments in under a minute (1.5 ms each)
    handshake_bytes: int = 64 << 10
    reply_base_bytes: int = 1 << 20
    reply_bytes_per_segment: int = 64  # a score is at most 25 characters as JSON

    def score_s(self, n_segments: int) -> float:
        return self.score_base_s + self.score_per_segment_s * n_segments

    def reply_bytes(self, n_segments: int) -> int:
        return self.reply_base_bytes + self.reply_bytes_per_segment * n_segments


LIMITS = Limits()


class MeteorServerError(MetricError):
    """A METEOR server that cannot be used; reason says which check it failed (meteor_events keys)."""

    def __init__(self, message: str, reason: str = "handshake") -> None:
        super().__init__(message)
        self.reason = reason


class MeteorServerWarning(UserWarning):
    """A named METEOR server was refused; the local JVM scores instead."""


class MeteorScorer(Protocol):
    def score(
        self, candidates: Sequence[str], references: Sequence[Sequence[str]]
    ) -> tuple[float, NDArray[np.float64]]: ...


@dataclass(frozen=True)
class NamedServer:
    """A server named by the environment or a state file, and its token when a state file gave one."""

    address: str
    token: str | None


def named_server(env: str | None = None, default_state: Path = DEFAULT_STATE) -> NamedServer | None:
    """The named server (see the module doc), or None when none is named; MeteorServerError when the
    state file is unsafe or unreadable or the address is not loopback."""
    value = os.environ.get(SERVER_ENV) if env is None else env
    if value is None:
        named = read_state(default_state) if default_state.is_file() else None
    elif not value:
        return None  # set and empty: no server, whatever state file there is
    elif Path(value).expanduser().is_file() or value.endswith(".json"):
        named = read_state(Path(value).expanduser())
    else:
        # HOST:PORT: the token only of the default state file, and only when it names this address
        theirs = read_state(default_state) if default_state.is_file() else None
        named = NamedServer(value, theirs.token if theirs and theirs.address == value else None)
    if named is not None:
        loopback_endpoint(named.address)
    return named


def server_address(env: str | None = None, default_state: Path = DEFAULT_STATE) -> str | None:
    """The HOST:PORT of the named server (see the module doc), or None when none is named."""
    named = named_server(env, default_state)
    return None if named is None else named.address


def read_state(path: Path) -> NamedServer:
    """A server's state file, refused unless this user owns it and nobody else may read or write it."""
    hint = f"restart `argus meteor-server` or unset {SERVER_ENV}"
    try:
        with open(path, "rb") as f:
            info = os.fstat(f.fileno())  # the file opened, not whatever the name points at later
            if info.st_uid != os.getuid():
                raise MeteorServerError(
                    f"METEOR server state file {path} belongs to uid {info.st_uid}, not this user; {hint}",
                    "state_file",
                )
            if info.st_mode & 0o077:
                raise MeteorServerError(
                    f"METEOR server state file {path} has mode {stat.S_IMODE(info.st_mode):04o}, readable "
                    f"or writable by others (it holds the server's token); chmod 600 it or {hint}",
                    "state_file",
                )
            body = json.loads(f.read(1 << 16))
        address, token = body["address"], body.get("token")
        if not isinstance(address, str) or not (token is None or isinstance(token, str)):
            raise TypeError("address or token is not a string")
    except MeteorServerError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise MeteorServerError(
            f"METEOR server state file {path} is unreadable ({exc}); {hint}", "state_file"
        ) from exc
    return NamedServer(address, token)


def loopback_endpoint(address: str) -> tuple[str, int]:
    """The loopback IP and port to connect to for HOST:PORT, or MeteorServerError: only addresses of
    this machine's loopback (127.0.0.0/8, ::1, localhost resolving to them) are ever sent captions."""
    host, _, port_text = address.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    try:
        port = int(port_text)
        if not 0 < port < 65536:
            raise ValueError(f"port {port} out of range")
    except ValueError as exc:
        raise MeteorServerError(
            f"METEOR server address {address!r} is not HOST:PORT ({exc}); set {SERVER_ENV} to "
            "127.0.0.1:PORT or a server's state file",
            "address",
        ) from exc
    if host.lower() == "localhost":
        try:
            ips = {str(a[4][0]) for a in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)}
        except OSError:
            ips = set()
    else:
        ips = {host}  # any other name is refused unresolved: a DNS answer can change under us
    try:
        if ips and all(ipaddress.ip_address(ip).is_loopback for ip in ips):
            return sorted(ips)[0], port
    except ValueError:
        pass
    raise MeteorServerError(
        f"METEOR server address {address!r} is not a loopback address (127.0.0.0/8, ::1, localhost): "
        f"captions are only sent to this machine's own server; set {SERVER_ENV} to 127.0.0.1:PORT",
        "address",
    )


class RemoteMeteor:
    """A connection to `argus meteor-server`, checked when opened: its version, then its proof that it
    holds the token (none given: refused after the version check). identity names it (meteor_identity)."""

    def __init__(self, address: str, token: str | None = None, limits: Limits | None = None) -> None:
        self.address, self.limits = address, limits or LIMITS
        self._buf = bytearray()
        host, port = loopback_endpoint(address)
        deadline = time.monotonic() + self.limits.handshake_s
        try:
            self._sock = socket.create_connection((host, port), timeout=self.limits.handshake_s)
        except OSError as exc:
            raise MeteorServerError(f"METEOR server at {address} does not answer ({exc})") from exc
        try:
            self.version, self.identity, self._nonce = self._handshake(token, deadline)
        except BaseException:
            self.close()
            raise

    def _handshake(self, token: str | None, deadline: float) -> tuple[str, str, str]:
        ours = secrets.token_hex(16)
        reply = self._call({"op": "hello", "nonce": ours}, deadline, self.limits.handshake_bytes)
        theirs = reply.get("version")
        if theirs != meteor_version():
            raise MeteorServerError(
                f"METEOR server at {self.address} runs version {theirs!r}, not ours ({meteor_version()!r}); "
                "restart it from this install with `argus meteor-server`"
            )
        if token is None:
            raise MeteorServerError(
                f"METEOR server at {self.address} cannot be checked: no state file gives its token; set "
                f"{SERVER_ENV} to the state file `argus meteor-server` wrote"
            )
        nonce, shown = reply.get("nonce"), reply.get("proof")
        if not isinstance(nonce, str) or not isinstance(shown, str):
            raise MeteorServerError(f"METEOR server at {self.address} sent no proof in its handshake")
        if not hmac.compare_digest(shown, proof(token, "server", ours, theirs)):
            raise MeteorServerError(
                f"METEOR server at {self.address} does not hold the token of its state file (wrong proof): "
                "another process is on its port; restart `argus meteor-server`"
            )
        return theirs, f"server {theirs} token:{proof(token, 'identity')[:16]}", proof(token, "client", nonce)

    def _call(self, request: dict[str, object], deadline: float, limit: int) -> dict[str, Any]:
        try:
            self._sock.settimeout(max(1e-3, deadline - time.monotonic()))
            self._sock.sendall((json.dumps(request) + "\n").encode())
        except OSError as exc:
            raise MeteorServerError(f"METEOR server at {self.address} does not answer ({exc})") from exc
        try:
            reply = read_line_json(self._read_line(deadline, limit), f"at {self.address}")
        except MeteorServerError:
            raise
        except MetricError as exc:
            raise MeteorServerError(str(exc), "scores") from exc
        if "error" in reply:
            raise MeteorServerError(f"METEOR server at {self.address} failed: {reply['error']}")
        return reply

    def _read_line(self, deadline: float, limit: int) -> bytes:
        """One reply line by the deadline (for the whole line, however slowly it trickles), at most
        limit bytes."""
        while (end := self._buf.find(b"\n")) < 0:
            if len(self._buf) > limit:
                raise MeteorServerError(
                    f"METEOR server at {self.address} sent a reply line over {limit} bytes", "reply_too_long"
                )
            left = deadline - time.monotonic()
            if left <= 0:
                raise MeteorServerError(f"METEOR server at {self.address} does not answer in time", "timeout")
            self._sock.settimeout(left)
            try:
                chunk = self._sock.recv(min(1 << 20, limit + 1 - len(self._buf)))
            except TimeoutError as exc:
                raise MeteorServerError(
                    f"METEOR server at {self.address} does not answer in time", "timeout"
                ) from exc
            except OSError as exc:
                raise MeteorServerError(f"METEOR server at {self.address} does not answer ({exc})") from exc
            if not chunk:
                raise MeteorServerError(f"METEOR server at {self.address} closed the connection")
            self._buf += chunk
        if end > limit:
            raise MeteorServerError(
                f"METEOR server at {self.address} sent a reply line over {limit} bytes", "reply_too_long"
            )
        line = bytes(self._buf[:end])
        del self._buf[: end + 1]
        return line

    def score(
        self, candidates: Sequence[str], references: Sequence[Sequence[str]]
    ) -> tuple[float, NDArray[np.float64]]:
        """Corpus METEOR and per-segment scores, as the local MeteorPool gives them, each checked to be
        a finite number in [0, 1]; the reply is due within limits.score_s of its segments."""
        n = len(candidates)
        request: dict[str, object] = {
            "op": "score",
            "proof": self._nonce,
            "candidates": list(candidates),
            "references": [list(r) for r in references],
        }
        reply = self._call(request, time.monotonic() + self.limits.score_s(n), self.limits.reply_bytes(n))
        return checked_scores(reply, n, self.address)

    def close(self) -> None:
        with contextlib.suppress(OSError, AttributeError):
            self._sock.close()


def checked_scores(reply: dict[str, Any], n: int, address: str) -> tuple[float, NDArray[np.float64]]:
    """The corpus and per-segment scores of a reply, or MeteorServerError("scores") naming the first
    one that is missing, not a number, not finite or outside [0, 1]."""
    corpus, per = reply.get("corpus"), reply.get("per")
    if not isinstance(per, list) or len(per) != n:
        got = f"{len(per)} scores" if isinstance(per, list) else f"{type(per).__name__} for 'per'"
        raise MeteorServerError(f"METEOR server at {address} sent {got} for {n} segments", "scores")
    values = [corpus, *per]
    for i, v in enumerate(values):
        what = "the corpus" if i == 0 else f"segment {i - 1}"
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise MeteorServerError(
                f"METEOR server at {address} sent {v!r} for {what}, not a number", "scores"
            )
        if not 0.0 <= v <= 1.0:  # NaN fails this too
            raise MeteorServerError(
                f"METEOR server at {address} sent {v!r} for {what}, not a score in [0, 1]", "scores"
            )
    return float(corpus), np.array(per, dtype=np.float64)  # type: ignore[arg-type]


_REFUSED: set[str] = set()
_COUNTS: Counter[str] = Counter()
_IDENTITY: dict[str, str] = {}  # address -> identity of a server whose handshake passed
_LOCK = threading.Lock()


def _refuse(key: str, exc: MeteorServerError) -> None:
    with _LOCK:
        if key in _REFUSED:
            return
        _REFUSED.add(key)
        _COUNTS[f"refused_{exc.reason}"] += 1
        _IDENTITY.pop(key, None)
    warnings.warn(f"{exc}; scoring METEOR with the local JVM", MeteorServerWarning, stacklevel=3)


def _count(event: str, n: int = 1) -> None:
    with _LOCK:
        _COUNTS[event] += n


def meteor_events() -> dict[str, int]:
    """What METEOR's server choice did in this process: refusals by reason (refused_address,
    refused_state_file, refused_handshake, refused_timeout, refused_reply_too_long, refused_scores,
    refused_spot_check), corpora the local JVM scored because a named server was refused
    (local_fallback_corpora), segments spot-checked, and replies not spot-checked for want of Java."""
    with _LOCK:
        return dict(_COUNTS)


def local_jvm_available() -> bool:
    """Java on PATH and the METEOR jar installed: what a spot check (and the fallback) needs."""
    try:
        pycocoevalcap_file("meteor/meteor-1.5.jar")
    except MetricError:
        return False
    return shutil.which("java") is not None


def spot_check(
    candidates: Sequence[str], references: Sequence[Sequence[str]], per: NDArray[np.float64], address: str
) -> None:
    """Score SPOT_SEGMENTS segments at random positions again on the local JVM; MeteorServerError
    ("spot_check") naming the first that differs from the server's by more than SPOT_TOLERANCE."""
    if not local_jvm_available():
        _count("not_spot_checked_replies")
        return
    picks = sorted(random.SystemRandom().sample(range(len(per)), min(SPOT_SEGMENTS, len(per))))
    if not picks:
        return
    _, local = shared_meteor(0).score([candidates[i] for i in picks], [references[i] for i in picks])
    _count("spot_checked_segments", len(picks))
    for i, mine in zip(picks, local, strict=True):
        if abs(per[i] - mine) > SPOT_TOLERANCE:
            raise MeteorServerError(
                f"METEOR server at {address} scored segment {i} {per[i]!r} where the local JVM gives "
                f"{mine!r}: its scores are not this jar's",
                "spot_check",
            )


class _ServerOrLocal:
    """The named server, falling back to the local JVMs when it is refused (before or during a score)."""

    def __init__(self, server: NamedServer, n_segments: int) -> None:
        self.server, self.n_segments = server, n_segments

    def score(
        self, candidates: Sequence[str], references: Sequence[Sequence[str]]
    ) -> tuple[float, NDArray[np.float64]]:
        if self.server.address not in _REFUSED:
            try:
                remote = RemoteMeteor(self.server.address, self.server.token)
                try:
                    corpus, per = remote.score(candidates, references)
                finally:
                    remote.close()
                spot_check(candidates, references, per, self.server.address)
                return corpus, per
            except MeteorServerError as exc:
                _refuse(self.server.address, exc)
        _count("local_fallback_corpora")
        return shared_meteor(self.n_segments).score(candidates, references)


def _named_or_refused() -> tuple[NamedServer | None, bool]:
    """The named server still usable, and whether one was named but refused (now or before)."""
    try:
        named = named_server()
    except MeteorServerError as exc:
        _refuse(os.environ.get(SERVER_ENV) or str(DEFAULT_STATE), exc)
        return None, True
    if named is not None and named.address in _REFUSED:
        return None, True
    return named, False


def meteor_scorer(n_segments: int = 0) -> MeteorScorer:
    """The METEOR scorer for a corpus of n_segments: the named server if any, else the local JVMs
    (started now, so that they load while the caller tokenises)."""
    named, refused = _named_or_refused()
    if named is None:
        if refused:
            _count("local_fallback_corpora")
        return shared_meteor(n_segments)
    return _ServerOrLocal(named, n_segments)


def meteor_identity() -> str:
    """Who scores METEOR in this process from now on, as a stable string to key kept scores by:
    "local argus-meteor/<protocol> meteor-1.5 jar-sha256:<digest> -l en -norm" for the local JVMs, or
    "server <the same version> token:<16 hex>" for a named server whose handshake passes (the token
    part is an HMAC of its token: the same for the server's lifetime, another for a restarted one). A
    server that fails its handshake is refused here, as by a score, and the local identity returned;
    one refused later in the run (a timeout, a failed spot check) changes the answer from then on."""
    local = f"local {meteor_version()}"
    named, _ = _named_or_refused()
    if named is None:
        return local
    with _LOCK:
        known = _IDENTITY.get(named.address)
    if known is not None:
        return known
    try:
        remote = RemoteMeteor(named.address, named.token)
    except MeteorServerError as exc:
        _refuse(named.address, exc)
        return local
    remote.close()
    with _LOCK:
        _IDENTITY[named.address] = remote.identity
    return remote.identity


def warm_meteor() -> None:
    """Make METEOR ready before it is needed (a run calls this before its models run, so the JVM's
    start overlaps their work): check the named server, and start the local JVM now, compiling its
    scoring paths on a synthetic corpus in the background; with a server, it spot-checks its scores."""
    meteor_identity()
    if local_jvm_available():
        warm_jit(shared_meteor(0))
