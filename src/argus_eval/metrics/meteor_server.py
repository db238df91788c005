"""`argus meteor-server`: METEOR JVMs kept alive across runs, served on a loopback port.

The JVM's start (the paraphrase table load) is most of METEOR's cost, so a server started once serves
every later run at the cost of its scoring alone. Wire format: one JSON object per line each way.
  {"op": "hello", "nonce": N}                         -> {"version": V, "nonce": M, "proof": P}
  {"op": "score", "proof": Q, "candidates": [...], "references": [[...], ...]}
                                                      -> {"corpus": x, "per": [...]} or {"error": "..."}
The server draws a random token when it starts and writes it, with its address, version and pid, to a
state file only its user may read (mode 0600). The token never travels: the server proves it knows it
with P = HMAC(token, "server", N, V) over the client's fresh nonce N, and a client proves it with
Q = HMAC(token, "client", M) over the server's nonce M, so a process that knows the (public) version
string, or replays an old exchange, fails the handshake (meteor_remote.py checks P; _answer checks Q).

Floats travel as JSON numbers (Python writes the shortest repr, which reads back to the same double), so
a server's scores equal the local JVM's bit for bit.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import hmac
import json
import os
import secrets
import socketserver
from collections.abc import Callable
from pathlib import Path
from typing import Any

from argus_eval.errors import MetricError
from argus_eval.metrics._java import pycocoevalcap_file
from argus_eval.metrics.meteor import MeteorPool, warm_jit

PROTOCOL = 2
# where `argus meteor-server` writes its address and clients look for it (ARGUS_METEOR_SERVER overrides)
DEFAULT_STATE = Path.home() / ".cache" / "argus-eval" / "meteor-server.json"
SERVER_ENV = "ARGUS_METEOR_SERVER"
# a request line the server reads at most (40,000 segments with 5 references each are about 12 MB)
REQUEST_LIMIT_BYTES = 512 << 20


@functools.cache
def meteor_version() -> str:
    """What a server must match: wire protocol, the jar's content digest and the jar's options."""
    digest = hashlib.sha256(pycocoevalcap_file("meteor/meteor-1.5.jar").read_bytes()).hexdigest()[:16]
    return f"argus-meteor/{PROTOCOL} meteor-1.5 jar-sha256:{digest} -l en -norm"


def proof(token: str, *parts: str) -> str:
    """HMAC-SHA256 of the parts under the server's token: what each side shows to prove it holds it."""
    return hmac.new(token.encode(), "\n".join(parts).encode(), hashlib.sha256).hexdigest()


def read_line_json(raw: bytes, source: str) -> dict[str, Any]:
    """One wire line as a JSON object, or MetricError naming where it came from."""
    try:
        obj = json.loads(raw)
    except ValueError as exc:
        raise MetricError(f"METEOR server {source} sent a line that is not JSON ({exc})") from exc
    if not isinstance(obj, dict):
        raise MetricError(f"METEOR server {source} sent {type(obj).__name__}, not a JSON object")
    return obj


class _Session:
    """One client connection: the nonce this server gave it in the handshake."""

    def __init__(self) -> None:
        self.nonce: str | None = None


def _answer(
    pool: MeteorPool, request: dict[str, Any], version: str, token: str, session: _Session
) -> dict[str, Any]:
    op = request.get("op")
    if op == "hello":
        nonce = request.get("nonce")
        if not isinstance(nonce, str) or not nonce:
            return {"error": "hello needs a 'nonce' string"}
        session.nonce = secrets.token_hex(16)
        return {"version": version, "nonce": session.nonce, "proof": proof(token, "server", nonce, version)}
    if op != "score":
        return {"error": f"unknown op {op!r}; use 'hello' or 'score'"}
    theirs = request.get("proof")
    if session.nonce is None or not isinstance(theirs, str):
        return {"error": "score needs the handshake first ('hello') and its 'proof'"}
    if not hmac.compare_digest(theirs, proof(token, "client", session.nonce)):
        return {"error": "wrong proof: the client does not hold this server's token (its state file)"}
    cands, refs = request.get("candidates"), request.get("references")
    if not isinstance(cands, list) or not isinstance(refs, list) or len(cands) != len(refs):
        return {"error": "score needs 'candidates' and 'references', two lists of the same length"}
    corpus, per = pool.score(cands, refs)
    return {"corpus": corpus, "per": per.tolist()}


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        session = _Session()
        while raw := self.rfile.readline(REQUEST_LIMIT_BYTES):
            if not raw.endswith(b"\n"):
                return  # a line over the limit (or cut off): the stream is out of step, drop it
            try:
                request = read_line_json(raw, "client")
                reply = _answer(self.server.pool, request, self.server.version, self.server.token, session)
            except MetricError as exc:
                reply = {"error": str(exc)}
            self.wfile.write((json.dumps(reply) + "\n").encode())
            self.wfile.flush()


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port: int, pool: MeteorPool) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.pool = pool
        self.version = meteor_version()
        self.token = secrets.token_hex(32)


def _listen(port: int, pool: MeteorPool) -> _Server:
    try:
        return _Server(port, pool)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise MetricError(
                f"port {port} on 127.0.0.1 is in use: stop what holds it or pick another with --port "
                "(0 picks a free one)"
            ) from exc
        raise MetricError(f"cannot listen on 127.0.0.1:{port} ({exc}); pick another --port") from exc


def write_state(state: Path, body: dict[str, Any]) -> None:
    """Write the state file readable by its owner only (mode 0600 from its creation), atomically."""
    state.parent.mkdir(parents=True, exist_ok=True)
    tmp = state.with_name(f"{state.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(json.dumps(body) + "\n")
    tmp.replace(state)  # a client never reads half a file


def serve(port: int, state: Path, workers: int, ready: Callable[[str], None] | None = None) -> None:
    """Listen on 127.0.0.1:port (0: any free port; one in use is a MetricError before any JVM starts),
    start `workers` METEOR JVMs and warm them, then write the state file and serve until interrupted;
    the state file is removed on the way out."""
    pool = MeteorPool()
    server = _listen(port, pool)
    address = f"127.0.0.1:{server.server_address[1]}"
    try:
        pool.ensure(max(1, workers))
        # the state file names a server only once its JVMs are loaded and compiled: a client's score
        # deadline (meteor_remote.Limits) then measures scoring, not a cold JVM's start under load
        warm_jit(pool).join()
        body = {"address": address, "version": server.version, "pid": os.getpid(), "token": server.token}
        write_state(state, body)
        if ready is not None:
            ready(address)
        server.serve_forever()  # until KeyboardInterrupt (the command turns SIGTERM into one)
    finally:
        server.server_close()
        for w in pool.workers:
            w.close()
        if state.is_file() and _names_us(state, address):
            state.unlink()


def _names_us(state: Path, address: str) -> bool:
    # another server may have taken the state file over since: leave its file alone
    try:
        return bool(json.loads(state.read_text(encoding="utf-8")).get("address") == address)
    except (OSError, ValueError, AttributeError):
        return False
