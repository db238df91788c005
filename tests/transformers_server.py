"""`transformers serve` of one local checkpoint on 127.0.0.1, for the tests of served models.

Needs the `serve` extra (transformers[serving]: fastapi, uvicorn, openai). The server serves exactly the
directory it was started with, and a request's `model` must be that path. It is started through the
transformers CLI entry point after the project's Qwen2.5-VL processor workaround (models/compat.py: a
no-op when torchvision is installed; transformers_serve_launch.py says why it is a file), so that it loads
the checkpoints the in-process adapter loads.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
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
_LAUNCH = Path(__file__).resolve().with_name("transformers_serve_launch.py")
SRC = Path(__file__).resolve().parents[1] / "src"


def missing_serve_modules() -> list[str]:
    """The modules of the serve extra that are not installed."""
    return [m for m in SERVE_MODULES if importlib.util.find_spec(m) is None]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def with_video_processor_config(checkpoint: Path, into: Path) -> Path:
    """A copy of a Qwen2.5-VL checkpoint that has video_preprocessor_config.json.

    transformers' Qwen2.5-VL processor (with torchvision installed) loads a video processor too, from that
    file; a checkpoint saved without one cannot be served. The video processor gets the image processor's
    settings, as transformers' own Qwen2.5-VL checkpoints ship them."""
    shutil.copytree(checkpoint, into)
    target = into / "video_preprocessor_config.json"
    if not target.is_file():
        image = json.loads((into / "processor_config.json").read_text())["image_processor"]
        video = {**image, "video_processor_type": "Qwen2VLVideoProcessor"}
        video.pop("image_processor_type", None)
        target.write_text(json.dumps(video, indent=2) + "\n")
    return into


@dataclass
class Server:
    """A started server: its process, URL, the model path a request must name, and its log."""

    process: subprocess.Popen[bytes]
    base_url: str
    model_path: str
    log: Path

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
def serving(checkpoints: dict[str, Path], log_dir: Path) -> Iterator[dict[str, Server]]:
    """Start one server per checkpoint directory at once (they load in parallel), stop them all at exit.
    Readiness is each Server's wait_ready, so that work can overlap their start."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    servers: dict[str, Server] = {}
    try:
        for name, path in checkpoints.items():
            port = free_port()
            log = log_dir / f"serve-{name}.log"
            cmd = [sys.executable, str(_LAUNCH), "serve", str(path)]
            cmd += ["--host", "127.0.0.1", "--port", str(port), "--device", "cpu"]
            with log.open("wb") as fh:
                proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env)
            servers[name] = Server(proc, f"http://127.0.0.1:{port}/v1", str(path), log)
        yield servers
    finally:
        for server in servers.values():
            server.stop()
