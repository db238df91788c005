"""OpenAI-compatible API adapter against a real HTTP server on loopback, answering from canned rules."""

from __future__ import annotations

import base64
import io
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest
from PIL import Image

from argus_eval.errors import ModelCallError, ModelLoadError
from argus_eval.models.api import OpenAICompatibleModel, retry_wait
from argus_eval.models.loading import load_model
from argus_eval.models.protocols import GENERATE, Generator
from argus_eval.models.spec import ModelConfig
from model_fixtures import tiny_images

KEY = "sk-argus-test-SECRET-123"


class Canned:
    """Server state: per-prompt hit counts, auth headers seen, concurrency high-water mark."""

    def __init__(self) -> None:
        self.hits: dict[str, int] = {}
        self.auth: set[str] = set()
        self.active = 0
        self.max_active = 0
        self.lock = threading.Lock()

    def answer(self, body: dict[str, Any], auth: str) -> tuple[int, bytes]:
        content = body["messages"][0]["content"]
        prompt = next(c["text"] for c in content if c["type"] == "text")
        url = next(c["image_url"]["url"] for c in content if c["type"] == "image_url")
        png = base64.b64decode(url.split(",", 1)[1])
        w, h = Image.open(io.BytesIO(png)).size
        with self.lock:
            self.hits[prompt] = self.hits.get(prompt, 0) + 1
            n = self.hits[prompt]
            self.auth.add(auth)
        if prompt == "slow":
            time.sleep(0.5)
        if prompt == "flaky" and n == 1:
            return 500, b'{"error": "overloaded"}'
        if prompt == "busy":
            return 429, b"{}"
        if prompt == "garbage":
            return 200, b"<html>not json"
        if prompt == "nochoices":
            return 200, b'{"id": "x", "choices": []}'
        if prompt == "forbidden":
            return 403, f'{{"error": "bad key {KEY}"}}'.encode()
        time.sleep(0.02)
        reply = {
            "choices": [
                {"message": {"role": "assistant", "content": f" {prompt} {h}x{w} max={body['max_tokens']}"}}
            ],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
        }
        return 200, json.dumps(reply).encode()


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Canned]]:
    canned = Canned()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            assert self.path == "/v1/chat/completions"
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with canned.lock:
                canned.active += 1
                canned.max_active = max(canned.max_active, canned.active)
            try:
                status, payload = canned.answer(body, self.headers.get("Authorization", ""))
            finally:
                with canned.lock:
                    canned.active -= 1
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", canned
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def model(server: tuple[str, Canned], monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("ARGUS_TEST_KEY", KEY)
    opts = {
        "api_key_env": "ARGUS_TEST_KEY",
        "timeout_s": 0.25,
        "max_retries": 2,
        "backoff_s": 0.01,
        "concurrency": 3,
    }
    m = load_model(ModelConfig(name="served", spec=f"api:{server[0]}#tiny-vlm", options=opts))
    yield m
    m.close()


def test_success_in_order_with_usage(model: OpenAICompatibleModel, server: tuple[str, Canned]) -> None:
    assert isinstance(model, Generator) and model.info.capabilities == frozenset({GENERATE})
    ims = tiny_images(7)
    prompts = [f"q{i}" for i in range(7)]
    out = model.generate(ims, prompts, 5)
    assert out == [f"q{i} {im.shape[0]}x{im.shape[1]} max=5" for i, im in enumerate(ims)]
    assert model.forward_calls == 7
    assert len(model.last_usage) == 7 and all(u["completion_tokens"] == 3 for u in model.last_usage)
    assert all(u["latency_s"] > 0 and u["attempts"] == 1 for u in model.last_usage)
    assert 1 < server[1].max_active <= 3
    assert server[1].auth == {f"Bearer {KEY}"}


def test_retry_after_500(model: Any) -> None:
    assert model.generate(tiny_images(1), ["flaky"], 4) == ["flaky 24x28 max=4"]
    assert model.last_usage[0]["attempts"] == 2


@pytest.mark.parametrize(
    ("prompt", "cause"),
    [
        ("slow", "timed out"),
        ("busy", "HTTP 429"),
        ("garbage", "malformed JSON"),
        ("nochoices", "no choices"),
        ("forbidden", "HTTP 403"),
    ],
)
def test_failures_name_model_and_hide_key(model: Any, prompt: str, cause: str) -> None:
    with pytest.raises(ModelCallError) as e:
        model.generate(tiny_images(1), [prompt], 4)
    msg = str(e.value)
    assert cause in msg and "served" in msg and "tiny-vlm" in msg
    assert KEY not in msg and KEY not in repr(e.value)
    assert KEY not in repr(model) and KEY not in str(vars(model))


def test_bad_api_spec() -> None:
    with pytest.raises(ModelLoadError, match="api:"):
        load_model(ModelConfig(name="x", spec="api:127.0.0.1:9/v1"))


def test_png_roundtrip_is_lossless() -> None:
    from argus_eval.models.api_images import png_data_url

    im = tiny_images(1)[0]
    png = base64.b64decode(png_data_url(im).split(",", 1)[1])
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(png))), im)


def test_one_at_a_time_equals_batched(model: Any) -> None:
    ims, prompts = tiny_images(5, seed=9), [f"p{i}" for i in range(5)]
    assert [model.generate([im], [p], 3)[0] for im, p in zip(ims, prompts, strict=True)] == model.generate(
        ims, prompts, 3
    )


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        # transformers serve (FastAPI's detail), vLLM (a top-level message), OpenAI (an error object)
        (400, json.dumps({"detail": "Server is pinned to '/m/x'; requested 'qwen'."}), "Server is pinned"),
        (404, '{"object": "error", "message": "The model `qwen` does not exist."}', "The model `qwen` does"),
        (404, '{"error": {"message": "The model `qwen` does not exist", "type": "x"}}', "The model `qwen`"),
    ],
)
def test_a_refused_model_name_gives_the_servers_message_and_the_fix(
    status: int, body: str, message: str
) -> None:
    from argus_eval.models.api_refusal import refusal

    line = refusal(status, body, "qwen", "http://h:1/v1")
    assert line.startswith(f"HTTP {status}: {message}")
    assert "'qwen': the name after '#' in the spec must be one it serves" in line
    assert "GET http://h:1/v1/models lists them" in line


def test_another_refusal_keeps_the_servers_message_without_a_model_hint() -> None:
    from argus_eval.models.api_refusal import refusal

    assert refusal(403, '{"detail": "forbidden"}', "qwen", "u") == "HTTP 403: forbidden"
    assert refusal(400, "<html>bad</html>", "qwen", "u") == "HTTP 400: <html>bad</html>"


def test_retry_wait_is_capped_by_max_wait() -> None:
    # backoff 0.5 s doubles per retry; Retry-After wins when longer; neither passes max_wait_s
    assert [retry_wait(n, 0.0, 0.5, 60.0) for n in range(1, 9)] == [0.5, 1, 2, 4, 8, 16, 32, 60]
    assert retry_wait(1, 3.0, 0.5, 60.0) == 3.0
    assert retry_wait(3, 100.0, 0.5, 60.0) == 60.0
    assert retry_wait(10_000, 0.0, 0.5, 2.0) == 2.0  # no overflow at any retry count
    assert retry_wait(4, 0.0, 0.5, 0.0) == 0.0


def test_throttle_without_retry_after_waits_within_max_wait(
    server: tuple[str, Canned], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server answering 429 with no Retry-After, 8 throttle retries at backoff 0.5 s: uncapped that is
    0.5 * (1 + 2 + ... + 128) = 127.5 s of sleep; under max_wait_s 0.05 it is at most 8 * 0.05 s."""
    monkeypatch.setenv("ARGUS_TEST_KEY", KEY)
    opts = {"api_key_env": "ARGUS_TEST_KEY", "backoff_s": 0.5, "max_wait_s": 0.05, "throttle_retries": 8}
    m = load_model(ModelConfig(name="served", spec=f"api:{server[0]}#tiny-vlm", options=opts))
    assert isinstance(m, Generator)
    before = server[1].hits.get("busy", 0)  # the server is shared by this module's tests
    slept: list[float] = []
    real_sleep = time.sleep

    def sleep(s: float) -> None:
        slept.append(s)
        real_sleep(s)

    monkeypatch.setattr(time, "sleep", sleep)
    try:
        with pytest.raises(ModelCallError, match="HTTP 429"):
            m.generate(tiny_images(1), ["busy"], 4)
    finally:
        m.close()
    assert server[1].hits["busy"] - before == 9  # the first try and 8 retries
    assert len(slept) == 8 and max(slept) == 0.05
