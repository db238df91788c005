"""`transformers serve` of one local checkpoint on 127.0.0.1, for the tests of served models.

Needs the `serve` extra (transformers[serving]: fastapi, uvicorn, openai). The server serves exactly the
directory it was started with, and a request's `model` must be that path. It is stock: transformers' own
CLI module, in an environment without PYTHONPATH, so nothing of this project runs in the server. Stock
transformers builds a Qwen2.5-VL processor only with torchvision installed (its video processor needs it):
such a server runs in the torchvision environment (scripts/torchvision_env.sh) that ARGUS_TV_PYTHON names.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

SERVE_MODULES = ("fastapi", "uvicorn", "openai")


def serve_command(python: str, checkpoint: Path, port: int) -> list[str]:
    """Stock `transformers serve` of one checkpoint on 127.0.0.1, on CPU."""
    module = "transformers.cli.transformers"
    return [
        python,
        "-m",
        module,
        "serve",
        str(checkpoint),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--device",
        "cpu",
    ]


def torchvision_python() -> str | None:
    """A Python whose transformers sees torchvision: this one where torchvision is installed, else the
    torchvision environment's that ARGUS_TV_PYTHON names (.ci/run sets it), else None."""
    if importlib.util.find_spec("torchvision") is not None:
        return sys.executable
    return os.environ.get("ARGUS_TV_PYTHON") or None


def missing_serve_modules() -> list[str]:
    """The modules of the serve extra that are not installed."""
    return [m for m in SERVE_MODULES if importlib.util.find_spec(m) is None]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Server:
    """A started server: its process, URL, the model path a request must name, and its log."""

    process: subprocess.Popen[bytes]
    base_url: str
    model_path: str
    log: Path
    command: list[str]
    env: dict[str, str]

    def spec(self, model_name: str | None = None) -> str:
        """The api: spec of this server's model (or of another name, which it refuses)."""
        return f"api:{self.base_url}#{model_name or self.model_path}"

    def wait_ready(self, deadline_s: float = 180.0) -> None:
        """Block until GET /health answers 200; fail with the log's tail when the server exits or the
        deadline passes."""
        end = time.monotonic() + deadline_s
        root = self.base_url.removesuffix("/v1")
        while time.monotonic() < end:
            if self.process.poll() is not None:
                raise RuntimeError(f"transformers serve exited ({self.process.returncode}): {self._tail()}")
            try:
                if httpx.get(f"{root}/health", timeout=2.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"transformers serve not ready after {deadline_s:g} s: {self._tail()}")

    def _tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)


@contextmanager
def serving(checkpoints: dict[str, tuple[Path, str]], log_dir: Path) -> Iterator[dict[str, Server]]:
    """Start one server per (checkpoint directory, python) at once (they load in parallel), stop them all
    at exit. Readiness is each Server's wait_ready, so that work can overlap their start."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    servers: dict[str, Server] = {}
    try:
        for name, (path, python) in checkpoints.items():
            port = free_port()
            log = log_dir / f"serve-{name}.log"
            cmd = serve_command(python, path, port)
            with log.open("wb") as fh:
                proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env)
            servers[name] = Server(proc, f"http://127.0.0.1:{port}/v1", str(path), log, cmd, env)
        yield servers
    finally:
        for server in servers.values():
            server.stop()
