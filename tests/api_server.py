"""A loopback OpenAI-compatible server that can be down, rate-limit, fail every n-th request, echo secrets
and answer at length."""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class ServerState:
    """What the server does next: up or down (HTTP 503), a 429 with Retry-After first, echo and length."""

    up: bool = True
    retry_after: str | None = None  # answer the next request of each prompt with 429 + this header
    answer_chars: int = 0  # pad answers to at least this many characters
    fail_prompt: str | None = None  # always HTTP 500 for this prompt
    fail_every: int = 0  # HTTP 500 for every n-th request (0: never); deterministic with one client thread
    throttle_share: float = 0.0  # answer this share of requests (seeded by request number) with 429
    throttle_wait: str = "0.05"  # the Retry-After of those 429s
    usage: bool = False  # report token usage (words of the prompt and of the answer) with each answer
    delay_s: float = 0.0  # answer after this long (so that requests overlap)
    answer: Callable[[str], str] | None = None  # the reply text for a prompt (e.g. a judge's verdict)
    requests: int = 0
    hits: dict[str, list[float]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    tokens_sent: dict[str, int] = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0})
    limit_fields: set[str] = field(default_factory=set)  # which token-cap field the requests carried
    active: int = 0
    max_active: int = 0
    keep_alive: bool = False  # HTTP/1.1 with persistent connections, as real servers (else one per request)

    def reply(self, body: dict[str, Any], auth: str) -> tuple[int, dict[str, str], bytes]:
        content = body["messages"][0]["content"]
        prompt = next(c["text"] for c in content if c["type"] == "text")
        with self.lock:
            seen = self.hits.setdefault(prompt, [])
            seen.append(time.monotonic())
            first = len(seen) == 1
            self.requests += 1
            nth = self.fail_every > 0 and self.requests % self.fail_every == 0
            throttle = random.Random(self.requests).random() < self.throttle_share
            self.limit_fields |= {k for k in ("max_tokens", "max_completion_tokens") if k in body}
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            if self.delay_s:
                time.sleep(self.delay_s)
            return self._reply(body, auth, prompt, first, nth, throttle)
        finally:
            with self.lock:
                self.active -= 1

    def _reply(
        self, body: dict[str, Any], auth: str, prompt: str, first: bool, nth: bool, throttle: bool
    ) -> tuple[int, dict[str, str], bytes]:
        if not self.up:
            return 503, {}, b'{"error": "down for maintenance"}'
        if prompt == self.fail_prompt:
            return 500, {}, b'{"error": "this prompt always fails"}'
        if nth:
            return 500, {}, b'{"error": "overloaded, try again"}'
        if self.retry_after is not None and first:
            return 429, {"Retry-After": self.retry_after}, b'{"error": "slow down"}'
        if throttle:
            return 429, {"Retry-After": self.throttle_wait}, b'{"error": "rate limited"}'
        if self.answer is not None:
            text = self.answer(prompt)
        else:  # a careless server: the answer echoes the request's Authorization header
            cap = body.get("max_tokens", body.get("max_completion_tokens"))
            text = f"a shape seen by {auth} in {cap} tokens"
            text += " and" * max(0, (self.answer_chars - len(text)) // 4)
        payload: dict[str, Any] = {"choices": [{"message": {"role": "assistant", "content": text}}]}
        if self.usage:
            used = {"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split())}
            payload["usage"] = {**used, "total_tokens": sum(used.values())}
            with self.lock:
                for k, v in used.items():
                    self.tokens_sent[k] += v
        return 200, {}, json.dumps(payload).encode()


@contextmanager
def serve(state: ServerState) -> Iterator[str]:
    """Run the server on a free loopback port; yields its base URL (http://127.0.0.1:PORT/v1)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1" if state.keep_alive else "HTTP/1.0"

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            status, headers, payload = state.reply(body, self.headers.get("Authorization", ""))
            self.send_response(status)
            for k, v in {"Content-Type": "application/json", **headers}.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    class Server(ThreadingHTTPServer):
        # listen() runs in the constructor, so the backlog is a class attribute: set on the instance it
        # stayed at socketserver's 5, and under load 32 clients connecting at once overflowed it and
        # were reset (ECONNRESET), which the client rightly retried
        request_queue_size = 256
        daemon_threads = True  # kept-alive connections must not hold shutdown

    httpd = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


# --- raw responses: faults no real server shows on purpose ---------------------------------------------


@dataclass
class Raw:
    """One response as bytes on the wire: head (status line and headers, CRLF-joined, without the blank
    line), then body pieces each written after its delay; close_early drops the connection before the
    last piece."""

    head: bytes
    pieces: list[tuple[float, bytes]]
    close_early: bool = False


@dataclass
class RawState:
    """What the raw server sends next (the test sets it before each request) and how often it was asked."""

    next: Raw | None = None
    served: int = 0


@contextmanager
def serve_raw(state: RawState) -> Iterator[str]:
    """A loopback server that reads each request whole, then writes state.next byte for byte (no HTTP
    library between the test and the wire); yields its base URL."""
    import socket
    import socketserver

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            length = 0
            while (line := self.rfile.readline()) not in (b"\r\n", b"\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            self.rfile.read(length)
            raw = state.next
            state.served += 1
            if raw is None:
                return
            try:
                if raw.head:  # an empty head: the pieces carry the whole response (a late head, say)
                    self.wfile.write(raw.head + b"\r\n\r\n")
                pieces = raw.pieces[:-1] if raw.close_early else raw.pieces
                for delay, data in pieces:
                    if delay:
                        time.sleep(delay)
                    self.wfile.write(data)
                    self.wfile.flush()
            except OSError:  # the client gave up (its deadline): nothing more to send
                return
            if raw.close_early:
                self.connection.shutdown(socket.SHUT_RDWR)

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True
        allow_reuse_address = True

    httpd = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def raw_json(status: int, body: bytes, headers: dict[str, str] | None = None) -> Raw:
    """A complete response with a Content-Length."""
    lines = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in (headers or {"Content-Type": "application/json"}).items()]
    return Raw("\r\n".join(lines).encode("latin-1"), [(0.0, body)])
