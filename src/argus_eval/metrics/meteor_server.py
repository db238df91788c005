"""`argus meteor-server`: METEOR JVMs kept alive across runs, served on a loopback port.

The JVM's start (the paraphrase table load) is most of METEOR's cost, so a server started once serves
every later run at the cost of its scoring alone. Wire format: one JSON object per line each way.
  {"op": "version"}                                   -> {"version": "..."}
  {"op": "score", "candidates": [...], "references": [[...], ...]}
                                                      -> {"corpus": x, "per": [...]} or {"error": "..."}
Floats travel as JSON numbers (Python writes the shortest repr, which reads back to the same double), so
a server's scores equal the local JVM's bit for bit. The server writes a state file (address, version,
pid) that clients find by path; a client refuses a server whose version differs from its own.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import socketserver
from collections.abc import Callable
from pathlib import Path
from typing import Any

from argus_eval.errors import MetricError
from argus_eval.metrics._java import pycocoevalcap_file
from argus_eval.metrics.meteor import MeteorPool, warm_jit

PROTOCOL = 1
# where `argus meteor-server` writes its address and clients look for it (ARGUS_METEOR_SERVER overrides)
DEFAULT_STATE = Path.home() / ".cache" / "argus-eval" / "meteor-server.json"
SERVER_ENV = "ARGUS_METEOR_SERVER"


@functools.cache
def meteor_version() -> str:
    """What a server must match: wire protocol, the jar's content digest and the jar's options."""
    digest = hashlib.sha256(pycocoevalcap_file("meteor/meteor-1.5.jar").read_bytes()).hexdigest()[:16]
    return f"argus-meteor/{PROTOCOL} meteor-1.5 jar-sha256:{digest} -l en -norm"


def read_line_json(raw: bytes, source: str) -> dict[str, Any]:
    """One wire line as a JSON object, or MetricError naming where it came from."""
    try:
        obj = json.loads(raw)
    except ValueError as exc:
        raise MetricError(f"METEOR server {source} sent a line that is not JSON ({exc})") from exc
    if not isinstance(obj, dict):
        raise MetricError(f"METEOR server {source} sent {type(obj).__name__}, not a JSON object")
    return obj


def _answer(pool: MeteorPool, request: dict[str, Any], version: str) -> dict[str, Any]:
    op = request.get("op")
    if op == "version":
        return {"version": version}
    if op != "score":
        return {"error": f"unknown op {op!r}; use 'version' or 'score'"}
    cands, refs = request.get("candidates"), request.get("references")
    if not isinstance(cands, list) or not isinstance(refs, list) or len(cands) != len(refs):
        return {"error": "score needs 'candidates' and 'references', two lists of the same length"}
    corpus, per = pool.score(cands, refs)
    return {"corpus": corpus, "per": per.tolist()}


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        for raw in self.rfile:
            try:
                reply = _answer(self.server.pool, read_line_json(raw, "client"), self.server.version)
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


def serve(port: int, state: Path, workers: int, ready: Callable[[str], None] | None = None) -> None:
    """Start `workers` METEOR JVMs, listen on 127.0.0.1:port (0: any free port), write the state file,
    and serve until interrupted; the state file is removed on the way out."""
    pool = MeteorPool()
    pool.ensure(max(1, workers))  # the JVMs load while the first clients connect
    warm_jit(pool)
    server = _Server(port, pool)
    address = f"127.0.0.1:{server.server_address[1]}"
    try:
        state.parent.mkdir(parents=True, exist_ok=True)
        body = {"address": address, "version": server.version, "pid": os.getpid()}
        tmp = state.with_name(state.name + ".tmp")
        tmp.write_text(json.dumps(body) + "\n", encoding="utf-8")
        tmp.replace(state)  # a client never reads half a file
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
