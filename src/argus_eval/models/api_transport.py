"""How a served model's request travels: one deadline for the whole request, a capped and bounded body.

Three bounds, none of which httpx gives by itself:
- timeout_s bounds each request as a whole (connect, send, wait, and every byte of the body), not each
  read: a server trickling a valid body one byte at a time fails the request at timeout_s. Every socket
  operation waits at most until the request's deadline (a network backend under httpx's connection
  pool); when the environment routes the endpoint through a proxy, httpx's own transport is used and
  the deadline is checked between the body's chunks instead.
- The body is read only up to MAX_BODY_BYTES, after content decoding: gzip and deflate are decoded here
  in bounded steps (zlib's max_length), so a 300 KB gzip bomb never expands past the cap in memory.
- Anything but one JSON body (a redirect, an event stream, an encoding other than gzip or deflate, a
  body over the cap) is one BodyError naming it. Parsing, and what a parsed body must hold, is the
  adapter's (models/api.py).
"""

from __future__ import annotations

import ssl
import threading
import time
import urllib.request
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx

from argus_eval.models.secrets import redact_url

# A chat completion of one answer is a few KB; logprobs asked through extra_body reach a few MB.
MAX_BODY_BYTES = 16 * 2**20
ACCEPT_ENCODING = "gzip, deflate"  # the encodings decoded here (never br or zstd: not bounded here)
# Headers that describe the body as sent, not as decoded here.
_WIRE_HEADERS = frozenset({b"content-encoding", b"content-length", b"transfer-encoding"})


class BodyError(Exception):
    """A response that is not one JSON body within the cap (the message says what it was)."""


class _Deadlines:
    """The deadline of the request the current thread is sending (None: no request in flight)."""

    def __init__(self) -> None:
        self._local = threading.local()

    @contextmanager
    def until(self, deadline: float) -> Iterator[None]:
        self._local.until = deadline
        try:
            yield
        finally:
            self._local.until = None

    def clamp(self, timeout: float | None, expired: type[Exception]) -> float | None:
        """timeout, shortened to the time left before the deadline; `expired` raised when none is left."""
        until: float | None = getattr(self._local, "until", None)
        if until is None:
            return timeout
        left = until - time.monotonic()
        if left <= 0:
            raise expired("the request's deadline (timeout_s) passed")
        return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read and write waits at most until its request's deadline."""

    def __init__(self, inner: httpcore.NetworkStream, deadlines: _Deadlines) -> None:
        self._inner, self._deadlines = inner, deadlines

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._deadlines.clamp(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._deadlines.clamp(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, *args: Any, **kwargs: Any) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.start_tls(*args, **kwargs), self._deadlines)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's socket backend, its connections bounded by the current request's deadline."""

    def __init__(self, deadlines: _Deadlines) -> None:
        self._inner, self._deadlines = httpcore.SyncBackend(), deadlines

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        wait = self._deadlines.clamp(timeout, httpcore.ConnectTimeout)
        stream = self._inner.connect_tcp(host, port, wait, local_address, socket_options)
        return _DeadlineStream(stream, self._deadlines)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _proxied(url: str) -> bool:
    """Whether the environment routes url through a proxy (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY)."""
    host = httpx.URL(url).host
    proxies = urllib.request.getproxies()
    wanted = proxies.get(httpx.URL(url).scheme) or proxies.get("all")
    return bool(wanted) and not urllib.request.proxy_bypass(host)


class Transport:
    """POSTs JSON to one endpoint within timeout_s per request and returns the whole decoded body.
    Transports to one endpoint may share an ssl_context: making one reads the CA bundle (milliseconds)."""

    def __init__(
        self,
        endpoint: str,
        timeout_s: float,
        connections: int = 10,
        max_body_bytes: int = MAX_BODY_BYTES,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.timeout_s, self.max_body_bytes = timeout_s, max_body_bytes
        self._deadlines = _Deadlines()
        # One connection per request that may be in flight: httpx and httpcore default to 10, which held
        # every served model to 10 requests in flight whatever its concurrency said.
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        tls = ssl_context or httpx.create_ssl_context()
        transport = None
        self._timeout = httpx.Timeout(timeout_s).as_dict()
        self._urls: dict[str, httpx.URL] = {}
        if not _proxied(endpoint):
            transport = httpx.HTTPTransport(verify=tls, limits=limits)
            # httpx takes no network backend of its own: the pool it built is replaced by the same pool
            # over the deadline backend (TLS verified as httpx does by default).
            transport._pool = httpcore.ConnectionPool(
                ssl_context=tls,
                max_connections=connections,
                max_keepalive_connections=connections,
                network_backend=_DeadlineBackend(self._deadlines),
            )
        # Sent straight to the transport when it is ours: httpx.Client's request building (URL merging,
        # cookies, auth and redirect hooks) cost ~0.5 ms of CPU per request, a fifth of the client's. A
        # proxied endpoint, or one with a user:password (Basic auth), goes through the client.
        self._direct = transport
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout_s), transport=transport, limits=limits, verify=tls
        )

    def post(self, url: str, body: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
        """The response, its body read whole (decoded, at most max_body_bytes). httpx.TimeoutException
        when the request outlasts timeout_s, httpx.TransportError when the connection fails, BodyError
        for anything but one body within the cap."""
        deadline = time.monotonic() + self.timeout_s
        sent = {"Accept-Encoding": ACCEPT_ENCODING, **headers}
        with self._deadlines.until(deadline), self._stream(url, body, sent) as r:
            _refuse_non_body(r)
            content = self._read(r, deadline)
        # as bytes: a value decoded from UTF-8 or Latin-1 could not be encoded again (httpx encodes str
        # header values as ASCII), and one non-ASCII header of the server's was an UnicodeEncodeError
        kept = [(k.lower(), v) for k, v in r.headers.raw if k.lower() not in _WIRE_HEADERS]
        return httpx.Response(r.status_code, headers=kept, content=content, request=r.request)

    @contextmanager
    def _stream(self, url: str, body: dict[str, Any], headers: dict[str, str]) -> Iterator[httpx.Response]:
        """The response to POSTing body as JSON, its body not read yet; closed on leaving."""
        target = self._url(url)
        # A user:password in the URL (the client's Basic auth), or a cookie a server set (the client's jar
        # sends it back, as a load balancer's sticky session expects): the client's own way.
        if self._direct is None or target.userinfo or self._client.cookies:
            with self._client.stream("POST", url, json=body, headers=headers) as r:
                yield r
            return
        # The request httpx.Client builds: its default headers, then these (each replacing a default and
        # moving to the end, as Headers.update does), then json=body's Content-Length and Content-Type.
        sent = httpx.Headers(self._client.headers)
        sent.update(headers)
        request = httpx.Request(
            "POST", target, headers=sent, json=body, extensions={"timeout": self._timeout}
        )
        if self._client.is_closed:  # the client's refusal: the pool would open a new connection
            raise RuntimeError("Cannot send a request, as the client has been closed.")
        try:
            r = self._direct.handle_request(request)
        except httpx.RequestError as e:
            e.request = request  # the client names the failed request on its exceptions
            raise
        r.request = request
        try:
            if "set-cookie" in r.headers:  # kept as the client keeps them (its next request sends them)
                self._client.cookies.extract_cookies(r)
            yield r
        finally:
            r.close()

    def _url(self, url: str) -> httpx.URL:
        """url parsed once (the endpoint is the same for every request)."""
        parsed = self._urls.get(url)
        if parsed is None:
            parsed = self._urls[url] = httpx.URL(url)
        return parsed

    def _read(self, r: httpx.Response, deadline: float) -> bytes:
        decode = _decoder(r.headers.get("content-encoding", "identity"))
        out = bytearray()
        for chunk in r.iter_raw():
            out += decode(chunk, self.max_body_bytes - len(out) + 1)
            if len(out) > self.max_body_bytes:
                out.clear()  # the error's traceback keeps this frame: it must not keep the body too
                raise BodyError(
                    f"response body is over {self.max_body_bytes:,} bytes (decoded), the cap on one answer's "
                    "body (MAX_BODY_BYTES); ask the server for less (max_tokens, no logprobs)"
                )
            if time.monotonic() > deadline:  # the proxied path's bound (the backend's is exact)
                raise httpx.ReadTimeout("the request's deadline (timeout_s) passed", request=r.request)
        return bytes(out)

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()


def _refuse_non_body(r: httpx.Response) -> None:
    """BodyError for a response that cannot be one JSON answer: a redirect or an event stream."""
    if 300 <= r.status_code < 400:
        where = redact_url(r.headers.get("location", "?"))
        raise BodyError(
            f"redirected (HTTP {r.status_code} to {where}); give the final URL in the spec (redirects "
            "are not followed, so a request and its key never go elsewhere)"
        )
    if r.headers.get("content-type", "").lower().startswith("text/event-stream"):
        raise BodyError(
            "answered with an event stream (text/event-stream), not one JSON body; this adapter does not "
            "stream: remove 'stream' from extra_body"
        )


def _decoder(encoding: str) -> Callable[[bytes, int], bytes]:
    """decode(chunk, room) -> at most `room` more decoded bytes, for the body's content-encoding."""
    name = encoding.strip().lower()
    if name in ("", "identity"):
        return lambda chunk, room: chunk[:room]
    if name not in ("gzip", "x-gzip", "deflate"):
        raise BodyError(f"response body has content-encoding {encoding!r}; only {ACCEPT_ENCODING} are read")
    z = zlib.decompressobj(16 + zlib.MAX_WBITS if "gzip" in name else zlib.MAX_WBITS)

    def decode(chunk: bytes, room: int) -> bytes:
        try:
            # max_length bounds the output; output that fills `room` already puts the body over the cap
            # (the caller stops), so what stays compressed is never needed.
            return z.decompress(chunk, room)
        except zlib.error as e:
            raise BodyError(f"response body is not valid {name} ({e})") from None

    return decode
