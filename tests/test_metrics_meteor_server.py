"""`argus meteor-server`: a real server process scores exactly as the local JVM; a server of another
version, one that does not answer and an unreadable state file are refused with a warning naming them,
and the local JVM scores instead."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from argus_eval.metrics import meteor_remote
from argus_eval.metrics.meteor import MeteorProcess, close_shared_meteor, shared_meteor
from argus_eval.metrics.meteor_remote import (
    MeteorServerError,
    MeteorServerWarning,
    RemoteMeteor,
    meteor_scorer,
    server_address,
)
from argus_eval.metrics.meteor_server import SERVER_ENV, meteor_version

needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="java not on PATH (METEOR jar)")


def _corpus(n: int, seed: int = 5) -> tuple[list[str], list[list[str]]]:
    rng = random.Random(seed)
    words = ["a", "man", "dog", "sits", "on", "the", "red", "table", "two", "cats", "running", "near"]

    def sent() -> str:
        return " ".join(rng.choices(words, k=rng.randint(3, 9)))

    return [sent() for _ in range(n)], [[sent() for _ in range(rng.randint(1, 5))] for _ in range(n)]


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(meteor_remote, "_REFUSED", set())
    monkeypatch.setattr(meteor_remote, "_COUNTS", Counter())
    monkeypatch.setattr(meteor_remote, "_IDENTITY", {})
    monkeypatch.setenv(SERVER_ENV, "")  # whatever state file this machine has, unless a test names one


def _child_env() -> dict[str, str]:
    src = str(Path(meteor_remote.__file__).parents[2])  # this checkout's src/, for the child process
    return {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}


def _wait_for(path: Path, proc: subprocess.Popen[bytes], seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while not path.is_file():
        assert proc.poll() is None, "the server process ended before writing its state file"
        assert time.monotonic() < deadline, f"no state file {path} after {seconds} s"
        time.sleep(0.05)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[bytes]]]:
    state = tmp_path / "meteor-server.json"
    cmd = [sys.executable, "-m", "argus_eval.cli", "meteor-server", "--state", str(state)]
    proc = subprocess.Popen(cmd, env=_child_env(), stdout=subprocess.PIPE)
    try:
        _wait_for(state, proc)
        yield state, proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def _speaker(version: str) -> str:
    """A second process that speaks the wire protocol but is another version of the server."""
    return textwrap.dedent(f"""
        import json, socket
        s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); print(s.getsockname()[1], flush=True)
        while True:
            c, _ = s.accept(); f = c.makefile("rwb")
            for line in f:
                f.write((json.dumps({{"version": {version!r}}}) + "\\n").encode()); f.flush()
            c.close()
    """)


@pytest.fixture
def process_on_port(request: pytest.FixtureRequest) -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, "-c", request.param], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield f"127.0.0.1:{int(proc.stdout.readline())}"
    finally:
        proc.kill()
        proc.wait()


@needs_java
def test_served_scores_equal_the_local_jvm(
    server: tuple[Path, subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    state, proc = server
    body = json.loads(state.read_text(encoding="utf-8"))
    assert body["version"] == meteor_version() and body["pid"] == proc.pid
    assert state.stat().st_mode & 0o777 == 0o600 and len(body["token"]) == 64
    cands, refs = _corpus(40)
    monkeypatch.setenv(SERVER_ENV, str(state))
    with warnings.catch_warnings():
        warnings.simplefilter("error", MeteorServerWarning)  # a refused server would fail the test
        scorer = meteor_scorer(len(cands))
        assert not isinstance(scorer, type(shared_meteor()))
        corpus, per = scorer.score(cands, refs)
        corpus2, per2 = scorer.score(cands[:9], refs[:9])  # a second corpus on the same server
        assert meteor_remote.meteor_identity().startswith(f"server {meteor_version()} token:")
    assert meteor_remote.meteor_events()["spot_checked_segments"] == 8  # 4 of each reply
    local, local_per = shared_meteor().score(cands, refs)
    assert corpus == local
    np.testing.assert_array_equal(per, local_per)
    assert corpus2 == shared_meteor().score(cands[:9], refs[:9])[0]
    np.testing.assert_array_equal(per2, local_per[:9])
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    assert not state.exists()  # it removes its own state file on the way out


_OTHER = _speaker("argus-meteor/0 meteor-1.4")


@needs_java
@pytest.mark.parametrize("process_on_port", [_OTHER], indirect=True, ids=["v0"])
def test_a_server_of_another_version_is_refused(
    process_on_port: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(MeteorServerError, match=r"runs version 'argus-meteor/0 meteor-1\.4'"):
        RemoteMeteor(process_on_port)
    monkeypatch.setenv(SERVER_ENV, process_on_port)
    cands, refs = _corpus(12)
    with pytest.warns(MeteorServerWarning, match=rf"{process_on_port} runs version 'argus-meteor/0"):
        got = meteor_scorer(len(cands)).score(cands, refs)
    assert got[0] == shared_meteor().score(cands, refs)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", MeteorServerWarning)  # refused once per process, not per corpus
        meteor_scorer(len(cands)).score(cands, refs)


_SILENT = "import socket, time\ns = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
_SILENT += "print(s.getsockname()[1], flush=True); time.sleep(600)"


@needs_java
@pytest.mark.parametrize("process_on_port", [_SILENT], indirect=True, ids=["silent"])
def test_a_server_that_does_not_answer_is_refused(
    process_on_port: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(meteor_remote, "LIMITS", meteor_remote.Limits(handshake_s=0.5))
    monkeypatch.setenv(SERVER_ENV, process_on_port)
    cands, refs = _corpus(7)
    t0 = time.perf_counter()
    with pytest.warns(MeteorServerWarning, match=rf"at {process_on_port} does not answer"):
        got = meteor_scorer(len(cands)).score(cands, refs)
    assert got[0] == shared_meteor().score(cands, refs)[0]
    assert time.perf_counter() - t0 < 60


def test_a_closed_port_is_refused_naming_the_address() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"
    with pytest.raises(MeteorServerError, match=rf"METEOR server at {address} does not answer"):
        RemoteMeteor(address)


def test_where_the_server_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "s.json"
    monkeypatch.delenv(SERVER_ENV)
    assert server_address(default_state=state) is None  # none named, no default state file
    assert server_address("127.0.0.1:9", default_state=state) == "127.0.0.1:9"
    state.write_text(json.dumps({"address": "127.0.0.1:77"}), encoding="utf-8")
    state.chmod(0o600)  # the state file holds the token: readable by its owner only
    assert server_address(default_state=state) == "127.0.0.1:77"  # unset: the default state file
    assert server_address("", default_state=state) is None  # set and empty: no server
    assert server_address(str(state), default_state=tmp_path / "none.json") == "127.0.0.1:77"
    state.write_text("{not json", encoding="utf-8")
    with pytest.raises(MeteorServerError, match=rf"state file {state} is unreadable"):
        server_address(str(state))


@needs_java
def test_the_captioning_task_warms_the_local_jvm_before_scoring() -> None:
    from argus_eval.tasks.captioning import CaptioningTask

    close_shared_meteor()
    CaptioningTask().warm_up()  # what a run calls before its models run; returns at once
    pool = shared_meteor()
    live = [w for w in pool.workers if w.alive()]
    assert len(live) == 1 and live[0].warmed
    first = live[0]
    cands, refs = _corpus(30, seed=9)
    got = meteor_scorer(len(cands)).score(cands, refs)  # the warm JVM, not a second cold one
    assert shared_meteor().workers == [first]
    one = MeteorProcess().score(cands, refs)  # a fresh JVM: the warm-up corpus left no trace
    assert got[0] == one[0]
    np.testing.assert_array_equal(got[1], one[1])
