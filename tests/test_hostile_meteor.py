"""A METEOR server must prove itself (issue 39): fake servers on loopback that know the public version
string but not the token, hold the token but forge scores, trickle, stall, flood, or send scores that are
not scores, and addresses or state files that are not ours, are each refused with one warning line
naming why, counted, and the local JVM scores instead; `argus meteor-server` on a port in use says so in
one line (exit 2) before starting any JVM. Time bounds are set small through Limits, never slept out."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from argus_eval.errors import MetricError
from argus_eval.metrics import meteor_remote, meteor_server
from argus_eval.metrics.meteor import MeteorPool, shared_meteor
from argus_eval.metrics.meteor_remote import (
    Limits,
    MeteorServerError,
    MeteorServerWarning,
    RemoteMeteor,
    loopback_endpoint,
    meteor_events,
    meteor_identity,
    meteor_scorer,
    named_server,
)
from argus_eval.metrics.meteor_server import SERVER_ENV, meteor_version, proof, write_state

needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="java not on PATH (METEOR jar)")

TOKEN = "7e" * 32
FAST = Limits(handshake_s=0.3, score_base_s=0.3, score_per_segment_s=0.001)


def _corpus(n: int, seed: int = 3) -> tuple[list[str], list[list[str]]]:
    """Captions close to their references (every segment scores strictly between 0 and 1)."""
    rng = random.Random(seed)
    words = ["a", "man", "dog", "sits", "on", "the", "red", "table", "two", "cats", "running", "near"]
    refs = [[" ".join(rng.choices(words, k=rng.randint(4, 9))) for _ in range(3)] for _ in range(n)]
    cands = [" ".join([*r[0].split()[:-1], "bicycle"]) for r in refs]
    return cands, refs


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(meteor_remote, "_REFUSED", set())
    monkeypatch.setattr(meteor_remote, "_COUNTS", Counter())
    monkeypatch.setattr(meteor_remote, "_IDENTITY", {})
    monkeypatch.setattr(meteor_remote, "LIMITS", FAST)
    monkeypatch.setattr(meteor_remote, "DEFAULT_STATE", tmp_path / "no-default.json")
    monkeypatch.setenv(SERVER_ENV, "")


Respond = Callable[[socket.socket, dict[str, Any], dict[str, str]], None]


class FakeServer:
    """A process-local server on 127.0.0.1 whose every answer is respond(connection, request, session)."""

    def __init__(self, respond: Respond) -> None:
        self.respond, self.stop = respond, threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        session: dict[str, str] = {}
        conn.settimeout(None)
        with contextlib.suppress(OSError, ValueError), conn, conn.makefile("rb") as lines:
            for line in lines:
                self.respond(conn, json.loads(line), session)

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


@pytest.fixture
def fake() -> Iterator[Callable[[Respond], FakeServer]]:
    made: list[FakeServer] = []

    def make(respond: Respond) -> FakeServer:
        made.append(FakeServer(respond))
        return made[-1]

    yield make
    for server in made:
        server.close()


def _send(conn: socket.socket, obj: object) -> None:
    conn.sendall((json.dumps(obj) + "\n").encode())


def _hello(conn: socket.socket, req: dict[str, Any], session: dict[str, str]) -> None:
    """The real server's half of the handshake, with TOKEN."""
    session["nonce"] = "5a" * 16
    version = meteor_version()
    _send(
        conn,
        {
            "version": version,
            "nonce": session["nonce"],
            "proof": proof(TOKEN, "server", req["nonce"], version),
        },
    )


def with_token(score: Callable[[socket.socket, dict[str, Any]], None]) -> Respond:
    """A server holding TOKEN (a true handshake) that answers score requests with score()."""

    def respond(conn: socket.socket, req: dict[str, Any], session: dict[str, str]) -> None:
        if req["op"] == "hello":
            _hello(conn, req, session)
        else:
            assert req["proof"] == proof(TOKEN, "client", session["nonce"])  # the client proves it too
            score(conn, req)

    return respond


def _state_for(tmp_path: Path, server: FakeServer) -> Path:
    state = tmp_path / "meteor-server.json"
    write_state(state, {"address": server.address, "version": meteor_version(), "pid": 1, "token": TOKEN})
    return state


def _refused_once(monkeypatch: pytest.MonkeyPatch, name: str, match: str, n: int = 9) -> None:
    """ARGUS_METEOR_SERVER=name is refused with exactly one one-line warning matching `match`, and the
    local JVM's scores come back, for two corpora."""
    monkeypatch.setenv(SERVER_ENV, name)
    cands, refs = _corpus(n)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = meteor_scorer(n).score(cands, refs)
        second = meteor_scorer(n).score(cands[:4], refs[:4])
    texts = [str(w.message) for w in caught if issubclass(w.category, MeteorServerWarning)]
    assert len(texts) == 1, texts
    assert "\n" not in texts[0] and texts[0].endswith("scoring METEOR with the local JVM")
    assert match in texts[0], texts[0]
    local = shared_meteor().score(cands, refs)
    assert first[0] == local[0]
    np.testing.assert_array_equal(first[1], local[1])
    np.testing.assert_array_equal(second[1], local[1][:4])
    assert meteor_events()["local_fallback_corpora"] == 2


# --- a process that knows the version string but not the token -----------------------------------------


def _version_only(conn: socket.socket, req: dict[str, Any], session: dict[str, str]) -> None:
    _send(
        conn, {"version": meteor_version(), "corpus": 0.999, "per": [0.999] * len(req.get("candidates", []))}
    )


def _guessed_proof(conn: socket.socket, req: dict[str, Any], session: dict[str, str]) -> None:
    _send(conn, {"version": meteor_version(), "nonce": "00", "proof": proof("", "server", req["nonce"])})


def _echoed_nonce(conn: socket.socket, req: dict[str, Any], session: dict[str, str]) -> None:
    _send(conn, {"version": meteor_version(), "nonce": req["nonce"], "proof": req["nonce"]})


def _replayed(conn: socket.socket, req: dict[str, Any], session: dict[str, str]) -> None:
    # a proof the true server gave another client for another nonce, seen on the wire
    version = meteor_version()
    _send(conn, {"version": version, "nonce": "11", "proof": proof(TOKEN, "server", "ab" * 16, version)})


@needs_java
@pytest.mark.parametrize(
    ("respond", "match"),
    [
        (_version_only, "sent no proof"),
        (_guessed_proof, "wrong proof"),
        (_echoed_nonce, "wrong proof"),
        (_replayed, "wrong proof"),
    ],
    ids=["version-only", "guessed", "echoed-nonce", "replayed"],
)
def test_a_server_without_the_token_is_refused(
    respond: Respond,
    match: str,
    fake: Callable[[Respond], FakeServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = fake(respond)
    _refused_once(monkeypatch, str(_state_for(tmp_path, server)), f"METEOR server at {server.address}")
    assert meteor_events()["refused_handshake"] >= 1
    with pytest.raises(MeteorServerError, match=match):
        RemoteMeteor(server.address, TOKEN)
    assert meteor_identity() == f"local {meteor_version()}"


def test_host_port_alone_gives_no_token(fake: Callable[[Respond], FakeServer]) -> None:
    server = fake(_version_only)
    assert named_server(server.address) == meteor_remote.NamedServer(server.address, None)
    with pytest.raises(MeteorServerError, match="no state file gives its token"):
        RemoteMeteor(server.address, None)


# --- a server holding the token that forges scores --------------------------------------------------------


def _forging(change: Callable[[np.ndarray], np.ndarray]) -> Respond:
    def score(conn: socket.socket, req: dict[str, Any]) -> None:
        corpus, per = shared_meteor().score(req["candidates"], req["references"])
        _send(conn, {"corpus": corpus, "per": change(per).tolist()})

    return with_token(score)


@needs_java
@pytest.mark.parametrize(
    "change",
    [
        lambda per: np.full_like(per, 0.999),
        lambda per: np.where(per < 0.5, per + 1e-3, per - 1e-3),
        lambda per: per / 2,
    ],
    ids=["all-0.999", "nudged-1e-3", "halved"],
)
def test_forged_scores_are_caught_by_the_spot_check(
    change: Callable[[np.ndarray], np.ndarray],
    fake: Callable[[Respond], FakeServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert (shared_meteor().score(*_corpus(9))[1] > 0).all()  # so that halving changes every segment
    server = fake(_forging(change))
    state = _state_for(tmp_path, server)
    monkeypatch.setenv(SERVER_ENV, str(state))
    assert meteor_identity().startswith(f"server {meteor_version()} token:")  # its handshake is true
    _refused_once(monkeypatch, str(state), "where the local JVM gives")
    assert meteor_events()["refused_spot_check"] == 1
    assert meteor_identity() == f"local {meteor_version()}"  # refused for the rest of the run


@needs_java
def test_an_honest_fake_passes_and_is_spot_checked(
    fake: Callable[[Respond], FakeServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = fake(_forging(lambda per: per))
    monkeypatch.setenv(SERVER_ENV, str(_state_for(tmp_path, server)))
    cands, refs = _corpus(9)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MeteorServerWarning)
        got = meteor_scorer(9).score(cands, refs)
    np.testing.assert_array_equal(got[1], shared_meteor().score(cands, refs)[1])
    assert meteor_events() == {"spot_checked_segments": meteor_remote.SPOT_SEGMENTS}


# --- a handshake that trickles, a score request never answered, a reply line without end -----------------


def _trickle(data: bytes, stop: threading.Event) -> Callable[[socket.socket], None]:
    def send(conn: socket.socket) -> None:
        for i in range(len(data)):
            if stop.is_set():
                return
            conn.sendall(data[i : i + 1])
            time.sleep(0.02)

    return send


def _trickling(kind: str, stop: threading.Event) -> Respond:
    def respond(conn: socket.socket, req: dict[str, Any], session: dict[str, str]) -> None:
        version = meteor_version()
        line = json.dumps(
            {"version": version, "nonce": "5a", "proof": proof(TOKEN, "server", req["nonce"], version)}
        )
        body = {
            "valid-line": line.encode() + b"\n",
            "spaces": b" " * 10_000,
            "half-then-stall": line[:40].encode(),
        }
        _trickle(body[kind], stop)(conn)
        stop.wait(30)  # hold the connection open, silent, until the test ends

    return respond


@pytest.mark.parametrize("kind", ["valid-line", "spaces", "half-then-stall"])
def test_a_trickling_handshake_is_bounded_by_one_deadline(
    kind: str, fake: Callable[[Respond], FakeServer]
) -> None:
    stop = threading.Event()
    server = fake(_trickling(kind, stop))
    t0 = time.monotonic()
    try:
        with pytest.raises(MeteorServerError, match="does not answer in time") as caught:
            RemoteMeteor(server.address, TOKEN, Limits(handshake_s=0.3))
    finally:
        stop.set()
    assert time.monotonic() - t0 < 1.5  # 0.3 s deadline however often bytes arrive (a 5 s bound, with room)
    assert caught.value.reason == "timeout"


def _stalling(kind: str, stop: threading.Event) -> Respond:
    def score(conn: socket.socket, req: dict[str, Any]) -> None:
        if kind == "partial":
            conn.sendall(b'{"corpus": 0.5, "per": [')
        elif kind == "trickle":
            _trickle(b'{"corpus": 0.5, "per": [' + b"0.5, " * 1000, stop)(conn)
        stop.wait(30)

    return with_token(score)


@needs_java
@pytest.mark.parametrize("kind", ["silent", "partial", "trickle"])
def test_a_score_request_never_answered_is_bounded(
    kind: str, fake: Callable[[Respond], FakeServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stop = threading.Event()
    server = fake(_stalling(kind, stop))
    cands, refs = _corpus(9)
    try:
        remote = RemoteMeteor(server.address, TOKEN, FAST)
        t0 = time.monotonic()
        with pytest.raises(MeteorServerError, match="does not answer in time"):
            remote.score(cands, refs)
        assert time.monotonic() - t0 < FAST.score_s(9) + 1.0
        remote.close()
        _refused_once(monkeypatch, str(_state_for(tmp_path, server)), "does not answer in time")
        assert meteor_events()["refused_timeout"] == 1
    finally:
        stop.set()


def _flooding(where: str, stop: threading.Event) -> Respond:
    def flood(conn: socket.socket, end: bytes) -> None:
        chunk = b"7" * (1 << 16)
        for _ in range(6400):  # 400 MB, unless the client hangs up first
            if stop.is_set():
                return
            conn.sendall(chunk)
        conn.sendall(end)

    def respond(conn: socket.socket, req: dict[str, Any], session: dict[str, str]) -> None:
        if req["op"] == "hello" and where != "handshake":
            _hello(conn, req, session)
        else:
            flood(conn, b"\n" if where == "score-with-end" else b"")

    return respond


@pytest.mark.parametrize("where", ["handshake", "score", "score-with-end"])
def test_a_huge_reply_line_is_capped(where: str, fake: Callable[[Respond], FakeServer]) -> None:
    stop = threading.Event()
    server = fake(_flooding(where, stop))
    limits = Limits(handshake_s=5.0, score_base_s=5.0, handshake_bytes=4096, reply_base_bytes=100_000)
    cands, refs = _corpus(9)
    t0 = time.monotonic()
    try:
        with pytest.raises(MeteorServerError, match="sent a reply line over") as caught:
            RemoteMeteor(server.address, TOKEN, limits).score(cands, refs)
    finally:
        stop.set()
    assert caught.value.reason == "reply_too_long"
    cap = limits.handshake_bytes if where == "handshake" else limits.reply_bytes(9)
    assert str(cap) in str(caught.value)
    assert time.monotonic() - t0 < 3.0  # it stopped reading at the cap, long before 400 MB


# --- scores that are not scores -------------------------------------------------------------------------


def _scoring(reply: Callable[[int], dict[str, Any]]) -> Respond:
    def score(conn: socket.socket, req: dict[str, Any]) -> None:
        # allow_nan (json's default) writes NaN / Infinity, as a careless or hostile server would
        _send(conn, reply(len(req["candidates"])))

    return with_token(score)


BAD_SCORES: dict[str, Callable[[int], dict[str, Any]]] = {
    "nan": lambda n: {"corpus": 0.3, "per": [0.2] * (n - 1) + [float("nan")]},
    "1.5": lambda n: {"corpus": 0.3, "per": [1.5] + [0.2] * (n - 1)},
    "negative": lambda n: {"corpus": 0.3, "per": [0.2, -0.01] + [0.2] * (n - 2)},
    "corpus-inf": lambda n: {"corpus": float("inf"), "per": [0.2] * n},
    "string": lambda n: {"corpus": 0.3, "per": ["0.2"] * n},
    "bool": lambda n: {"corpus": 0.3, "per": [True] * n},
    "too-few": lambda n: {"corpus": 0.3, "per": [0.2] * (n - 1)},
    "no-corpus": lambda n: {"per": [0.2] * n},
}
MATCHES = {"too-few": "8 scores for 9 segments", "no-corpus": "sent None for the corpus"}


@needs_java
@pytest.mark.parametrize("kind", sorted(BAD_SCORES))
def test_scores_that_are_not_scores_are_refused(
    kind: str, fake: Callable[[Respond], FakeServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = fake(_scoring(BAD_SCORES[kind]))
    with pytest.raises(MeteorServerError, match=MATCHES.get(kind, "not a")) as caught:
        RemoteMeteor(server.address, TOKEN, FAST).score(*_corpus(9))
    assert caught.value.reason == "scores"
    _refused_once(monkeypatch, str(_state_for(tmp_path, server)), f"METEOR server at {server.address} sent")
    assert meteor_events()["refused_scores"] == 1


# --- addresses and state files that are not ours ---------------------------------------------------------


@needs_java
@pytest.mark.parametrize(
    "address",
    [
        "10.0.0.1:5000",
        "192.168.1.20:8080",
        "8.8.8.8:53",
        "0.0.0.0:4000",
        "[2001:db8::1]:80",
        "example.com:80",
    ],
)
def test_a_non_loopback_address_is_refused_unconnected(address: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_connection(*args: object, **kwargs: object) -> socket.socket:
        raise AssertionError(f"connected to {args}")

    monkeypatch.setattr(socket, "create_connection", no_connection)
    _refused_once(monkeypatch, address, "is not a loopback address")
    assert meteor_events()["refused_address"] == 1
    with pytest.raises(MeteorServerError, match="not a loopback address"):
        RemoteMeteor(address, TOKEN)


@pytest.mark.parametrize(
    ("address", "ip"),
    [("127.0.0.1:7", "127.0.0.1"), ("127.8.9.10:7", "127.8.9.10"), ("[::1]:7", "::1"), ("::1:7", "::1")],
)
def test_loopback_addresses_are_accepted(address: str, ip: str) -> None:
    assert loopback_endpoint(address) == (ip, 7)


def test_localhost_is_accepted_only_resolving_to_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    host, port = loopback_endpoint("localhost:7")
    assert port == 7 and host in {"127.0.0.1", "::1"}
    answer = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.1.2.3", 7))]
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: answer)
    with pytest.raises(MeteorServerError, match="not a loopback address"):
        loopback_endpoint("localhost:7")


@needs_java
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o602])
def test_a_state_file_others_may_read_or_write_is_refused(
    mode: int, fake: Callable[[Respond], FakeServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = fake(_forging(lambda per: per))  # an honest server: only the file is wrong
    state = _state_for(tmp_path, server)
    assert state.stat().st_mode & 0o777 == 0o600  # as write_state makes it
    state.chmod(mode)
    _refused_once(monkeypatch, str(state), f"has mode {mode:04o}")
    assert meteor_events()["refused_state_file"] == 1


@needs_java
@pytest.mark.skipif(os.getuid() != 0, reason="only root can give a file to another user")
def test_a_state_file_of_another_user_is_refused(
    fake: Callable[[Respond], FakeServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = _state_for(tmp_path, fake(_forging(lambda per: per)))
    os.chown(state, 65534, 65534)
    _refused_once(monkeypatch, str(state), "belongs to uid 65534, not this user")


def test_the_default_state_file_is_checked_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "default.json"
    write_state(state, {"address": "127.0.0.1:9", "token": TOKEN})
    assert named_server("127.0.0.1:9", state) == meteor_remote.NamedServer("127.0.0.1:9", TOKEN)
    monkeypatch.delenv(SERVER_ENV)
    assert named_server(default_state=state) == meteor_remote.NamedServer("127.0.0.1:9", TOKEN)
    state.chmod(0o644)
    with pytest.raises(MeteorServerError, match="has mode 0644") as caught:
        named_server(default_state=state)
    assert caught.value.reason == "state_file"


# --- `argus meteor-server` on a port in use ----------------------------------------------------------------


@contextlib.contextmanager
def _holding(kind: str) -> Iterator[int]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("0.0.0.0" if kind == "wildcard" else "127.0.0.1", 0))
        if kind != "bound":
            sock.listen()
        yield sock.getsockname()[1]
    finally:
        sock.close()


@pytest.mark.parametrize("kind", ["listening", "bound", "wildcard"])
def test_serve_on_a_port_in_use_starts_no_jvm(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[int] = []
    monkeypatch.setattr(MeteorPool, "ensure", lambda self, n: started.append(n))
    with _holding(kind) as port, pytest.raises(MetricError, match=f"port {port} on 127.0.0.1 is in use"):
        meteor_server.serve(port, tmp_path / "s.json", 1)
    assert started == [] and not (tmp_path / "s.json").exists()


@pytest.mark.parametrize("kind", ["listening", "bound", "wildcard"])
def test_the_command_on_a_port_in_use_is_one_line_exit_2(kind: str, tmp_path: Path) -> None:
    src = str(Path(meteor_remote.__file__).parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    with _holding(kind) as port:
        cmd = [
            sys.executable,
            "-m",
            "argus_eval.cli",
            "meteor-server",
            "--port",
            str(port),
            "--state",
            str(tmp_path / "s.json"),
        ]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"port {port} on 127.0.0.1 is in use" in lines[0], done.stderr
    assert "Traceback" not in done.stderr + done.stdout and done.stdout == ""
