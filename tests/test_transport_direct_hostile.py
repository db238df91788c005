"""The served transport's direct path (an httpx.Request sent straight to its HTTPTransport) against the
client path it replaced (httpx.Client.stream), on the same loopback servers: the bytes each server
receives, and what the caller gets back (status, headers, body, the exception, its type, message and
request), must be the same on both."""

from __future__ import annotations

import gzip
import socket
import ssl
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from argus_eval.models.api_transport import Transport

OK = b'{"choices":[{"message":{"content":"hi"}}]}'
BODY: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "caf\u00e9 \u4e2d"}]}
HEADERS = {"Authorization": "Bearer k-123"}

# A self-signed certificate for 127.0.0.1 and localhost (EC P-256, valid until 2126), made for these tests.
CERT = """-----BEGIN CERTIFICATE-----
MIIBnjCCAUOgAwIBAgIUKGVzl6wuEKNpZA1Zp0/mEim/nv0wCgYIKoZIzj0EAwIw
FTETMBEGA1UEAwwKYXJndXMtdGVzdDAgFw0yNjEyMDcwMzQzNTZaGA8yMTI2MTEx
MzAzNDM1NlowFTETMBEGA1UEAwwKYXJndXMtdGVzdDBZMBMGByqGSM49AgEGCCqG
SM49AwEHA0IABNZhd+hrHrtSnLRmjg53A2lJ74BnPVaPPwcmuDuBbiDOsgav6b2Q
8XvjxNiVm6RDTBHf3p4UgSOi1HftWZMNlC6jbzBtMB0GA1UdDgQWBBQzg8rcJBMk
Hx/+ySNABpJWpafvbDAfBgNVHSMEGDAWgBQzg8rcJBMkHx/+ySNABpJWpafvbDAP
BgNVHRMBAf8EBTADAQH/MBoGA1UdEQQTMBGHBH8AAAGCCWxvY2FsaG9zdDAKBggq
hkjOPQQDAgNJADBGAiEA3UzXTlZnUnLV+uf0iEzRFksAUbc2AdesnjGYNz8Tl4oC
IQDoovjQYjXFd+WvPSB4Iw+09mzAou70z26cza/qXMqp6w==
-----END CERTIFICATE-----
"""
KEY = """-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgJkpLjvGE4R+FNSad
U3jupZ9MvtraOH6UWB0U2NznV12hRANCAATWYXfoax67Upy0Zo4OdwNpSe+AZz1W
jz8HJrg7gW4gzrIGr+m9kPF748TYlZukQ0wR396eFIEjotR37VmTDZQu
-----END PRIVATE KEY-----
"""

Respond = Callable[[socket.socket, bytes], bool]  # writes the answer to one request; True: close


def _read_request(conn: socket.socket, buf: bytes, read_body: bool) -> tuple[bytes, bytes, int] | None:
    """(one request as received, what followed it, how much of its body is still unread), or None when
    the peer closed first."""
    while b"\r\n\r\n" not in buf:
        data = conn.recv(65536)
        if not data:
            return None
        buf += data
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    if not read_body:  # answer on the head alone; the body is read after the answer
        return head + b"\r\n\r\n", b"", length - len(rest)
    while len(rest) < length:
        data = conn.recv(65536)
        if not data:
            break
        rest += data
    return head + b"\r\n\r\n" + rest[:length], rest[length:], 0


class _Seen(list[bytes]):
    """Every request's bytes as received, and how many of them the server has finished answering
    (its close included): the client waits for that before its next request. Otherwise a close that the
    server thread had not yet made when the client reused the connection raced it, and the second request
    was sent on a connection about to close (RemoteProtocolError) or on a fresh one, as the threads ran."""

    def __init__(self) -> None:
        super().__init__()
        self._done = 0
        self._changed = threading.Condition()

    def answered(self) -> None:
        with self._changed:
            self._done += 1
            self._changed.notify_all()

    def settle(self, timeout_s: float = 5.0) -> None:
        """Until every request received so far is answered (or timeout_s: a server still trickling)."""
        with self._changed:
            self._changed.wait_for(lambda: self._done >= len(self), timeout_s)

    def clear(self) -> None:
        with self._changed:
            super().clear()
            self._done = 0


@contextmanager
def _server(
    respond: Respond,
    family: socket.AddressFamily = socket.AF_INET,
    host: str = "127.0.0.1",
    read_body: bool = True,
    tls: ssl.SSLContext | None = None,
) -> Iterator[tuple[int, _Seen]]:
    """A raw loopback server with keep-alive: yields (its port, every request's bytes as received)."""
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.bind((host, 0))
    listener.listen(16)
    seen = _Seen()

    def serve(conn: socket.socket) -> None:
        buf = b""
        try:
            if tls is not None:
                conn = tls.wrap_socket(conn, server_side=True)
            while (got := _read_request(conn, buf, read_body)) is not None:
                request, buf, unread = got
                seen.append(request)
                try:
                    if respond(conn, request):
                        conn.shutdown(socket.SHUT_RDWR)
                        return
                finally:
                    seen.answered()
                while unread > 0 and (data := conn.recv(min(unread, 2**20))):
                    unread -= len(data)  # a body answered early, drained before the next request
        except OSError:  # the client gave up, or refused our certificate
            return
        finally:
            conn.close()

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield listener.getsockname()[1], seen
    finally:
        listener.close()


def _response(status: int = 200, headers: list[tuple[str, str]] | None = None, body: bytes = OK) -> bytes:
    head = [
        f"HTTP/1.1 {status} X",
        *(f"{k}: {v}" for k, v in headers or [("Content-Type", "application/json")]),
    ]
    if not any(k.lower() in ("content-length", "transfer-encoding") for k, _ in headers or []):
        head.append(f"Content-Length: {len(body)}")
    return "\r\n".join(head).encode("latin-1") + b"\r\n\r\n" + body


def _sends(*parts: bytes, close: bool = False, delay: float = 0.0) -> Respond:
    def respond(conn: socket.socket, request: bytes) -> bool:
        for part in parts:
            if delay:
                time.sleep(delay)
            conn.sendall(part)
        return close

    return respond


def _outcome(t: Transport, url: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[Any, ...]:
    try:
        r = t.post(url, body, headers)
    except Exception as e:
        try:
            request = str(e.request.url) if isinstance(e, httpx.RequestError) else None
        except RuntimeError:  # httpx: "The .request property has not been set."
            request = "(not set)"
        return ("raised", type(e), str(e), request)
    sent = r.request.headers.raw
    return ("answered", r.status_code, r.headers.raw, r.content, sent, str(r.request.url))


def _compare(
    url: str,
    seen: _Seen,
    body: dict[str, Any] = BODY,
    headers: dict[str, str] = HEADERS,
    requests: int = 2,
    **options: Any,
) -> tuple[list[tuple[Any, ...]], list[bytes]]:
    """The outcomes and received requests of `requests` posts on the client path, asserted equal to the
    direct path's; returned for further checks."""
    runs = []
    timeout_s = options.pop("timeout_s", 2.0)
    for direct in (False, True):
        seen.clear()
        t = Transport(url, timeout_s, **options)
        assert t._direct is not None
        if not direct:
            t._direct = None  # the client path: httpx.Client.stream, as before the direct path
        try:
            outcomes = []
            for _ in range(requests):
                outcomes.append(_outcome(t, url, body, headers))
                seen.settle()
        finally:
            t.close()
        runs.append((outcomes, list(seen)))
    (old, old_seen), (new, new_seen) = runs
    assert new == old
    assert new_seen == old_seen
    return old, old_seen


def _url(port: int, path: str = "/v1/chat/completions", host: str = "127.0.0.1") -> str:
    return f"http://{host}:{port}{path}"


# --- what the server receives -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "path"),
    [
        ("127.0.0.1", "/v1/chat/completions"),
        ("localhost", "/v1/chat/completions?api-version=2024-06-01&x=a%20b"),
        ("127.0.0.1", "/pre%2Ffix/v1/chat/compl%C3%A9tions"),
        ("127.0.0.1", "/v1/ch at/\u00e9"),
    ],
)
def test_the_same_request_bytes_in_the_same_header_order(host: str, path: str) -> None:
    """Method, target, every header in its order and case, Host with its port, the body: byte for byte
    (the direct path had put Content-Type fourth, before Accept-Encoding; the client puts it last)."""
    with _server(_sends(_response())) as (port, seen):
        outcomes, received = _compare(_url(port, path, host), seen)
    assert [o[1] for o in outcomes] == [200, 200]
    head = received[0].split(b"\r\n\r\n")[0].split(b"\r\n")
    assert [line.split(b":")[0] for line in head[1:]] == [
        b"Host", b"Accept", b"Connection", b"User-Agent", b"Accept-Encoding", b"Authorization",
        b"Content-Length", b"Content-Type",
    ]  # fmt: skip
    assert head[1] == f"Host: {host}:{port}".encode()


def test_an_ipv6_literal_host() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        server = _server(_sends(_response()), family=socket.AF_INET6, host="::1")
        port, seen = server.__enter__()
    except OSError:
        pytest.skip("no ::1")
    try:
        _, received = _compare(_url(port, host="[::1]"), seen)
    finally:
        server.__exit__(None, None, None)
    assert f"\r\nHost: [::1]:{port}\r\n".encode() in received[0]


def test_a_cookie_the_server_sets_is_sent_back_as_the_client_did() -> None:
    """httpx.Client keeps a server's cookies (a load balancer's sticky session, say) and sends them with
    the next request; the direct path must too."""
    respond = _sends(_response(headers=[("Set-Cookie", "lb=node-7; Path=/"), ("Content-Type", "x")]))
    with _server(respond) as (port, seen):
        _, received = _compare(_url(port), seen, requests=3)
    assert b"\r\nCookie: lb=node-7\r\n" not in received[0]
    assert all(b"\r\nCookie: lb=node-7\r\n" in r for r in received[1:])


def test_request_bodies_that_json_or_utf8_refuse_fail_the_same() -> None:
    """Non-ASCII text is sent as UTF-8 (not escaped); a lone surrogate is UnicodeEncodeError, NaN and
    infinity ValueError (allow_nan=False), an object TypeError, before anything is sent; a 10 MB body
    arrives whole."""
    with _server(_sends(_response())) as (port, seen):
        url = _url(port)
        _, received = _compare(url, seen, body={"t": "caf\u00e9 \U0001f600"}, requests=1)
        assert received[0].endswith('{"t":"caf\u00e9 \U0001f600"}'.encode())
        refused: list[tuple[dict[str, Any], type[Exception]]] = [
            ({"t": "a\ud800b"}, UnicodeEncodeError),
            ({"x": float("nan")}, ValueError),
            ({"x": float("-inf")}, ValueError),
            ({"x": object()}, TypeError),
        ]
        for body, error in refused:
            outcomes, received = _compare(url, seen, body=body, requests=1)
            assert outcomes[0][:2] == ("raised", error) and not received
        big = {"image_url": "data:image/png;base64," + "A" * (10 * 2**20)}
        _, received = _compare(url, seen, body=big, requests=1)
        assert len(received[0].split(b"\r\n\r\n", 1)[1]) > 10 * 2**20


@pytest.mark.parametrize(
    "key", ["k\u2019", "k\u00e9", "k\r\nX-Evil: 1", "k\x00"], ids=["quote", "latin1", "crlf", "nul"]
)
def test_an_api_key_no_header_can_carry_fails_the_same(key: str) -> None:
    """A key with a non-ASCII character: UnicodeEncodeError; with CR LF or NUL: httpx.LocalProtocolError
    naming its request. Nothing reaches the server."""
    with _server(_sends(_response())) as (port, seen):
        outcomes, received = _compare(_url(port), seen, headers={"Authorization": f"Bearer {key}"})
    assert outcomes[0][0] == "raised" and not received


# --- what the caller gets -----------------------------------------------------------------------------


def _chunked(body: bytes, size: int = 5) -> bytes:
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def _deflate(body: bytes) -> bytes:
    z = zlib.compressobj(wbits=zlib.MAX_WBITS)
    return z.compress(body) + z.flush()


RESPONSES: dict[str, tuple[Respond, str]] = {
    # name: (what the server does, what the caller must get: "answered" or the exception's type name)
    "chunked": (_sends(_response(headers=[("Transfer-Encoding", "chunked")], body=_chunked(OK))), "200"),
    "gzip": (_sends(_response(headers=[("Content-Encoding", "gzip")], body=gzip.compress(OK))), "200"),
    "deflate": (_sends(_response(headers=[("Content-Encoding", "deflate")], body=_deflate(OK))), "200"),
    "identity": (_sends(_response(headers=[("Content-Encoding", "identity")])), "200"),
    "br": (_sends(_response(headers=[("Content-Encoding", "br")])), "BodyError"),
    "broken gzip": (_sends(_response(headers=[("Content-Encoding", "gzip")], body=b"junk")), "BodyError"),
    "over the cap": (_sends(_response(body=b" " * 5000)), "BodyError"),
    "gzip over the cap": (
        _sends(_response(headers=[("Content-Encoding", "gzip")], body=gzip.compress(b" " * 5000))),
        "BodyError",
    ),
    "HTTP/1.0, no length": (_sends(b"HTTP/1.0 200 OK\r\n\r\n" + OK, close=True), "200"),
    "HTTP/1.0": (_sends(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(OK), OK)), "200"),
    "closes each connection": (_sends(_response(headers=[("Connection", "close")]), close=True), "200"),
    "closes a kept connection": (_sends(_response(), close=True), "200"),
    "100-continue first": (_sends(b"HTTP/1.1 100 Continue\r\n\r\n", _response()), "200"),
    "301": (_sends(_response(301, [("Location", "http://else.example/v1?sig=S")], b"")), "BodyError"),
    "307 relative": (_sends(_response(307, [("Location", "/v2/chat")], b"")), "BodyError"),
    "302 without location": (_sends(_response(302, [], b"")), "BodyError"),
    "301 to a malformed URL": (_sends(_response(301, [("Location", "http://[bad")], b"")), "BodyError"),
    "event stream": (
        _sends(_response(headers=[("Content-Type", "text/event-stream")], body=b"data: x\n\n")),
        "BodyError",
    ),
    "500": (_sends(_response(500, body=b'{"error":"x"}')), "500"),
    "429": (_sends(_response(429, [("Retry-After", "1")], b'{"error":"x"}')), "429"),
    "reset mid-body": (_sends(_response()[:-10], close=True), "RemoteProtocolError"),
    "chunked cut short": (
        _sends(_response(headers=[("Transfer-Encoding", "chunked")], body=_chunked(OK)[:-8]), close=True),
        "RemoteProtocolError",
    ),
    "not HTTP": (_sends(b"NOT HTTP\r\n\r\n", close=True), "RemoteProtocolError"),
    "closed without answering": (_sends(close=True), "RemoteProtocolError"),
    "two lengths": (
        _sends(b"HTTP/1.1 200 OK\r\nContent-Length: 42\r\nContent-Length: 43\r\n\r\n" + OK),
        "RemoteProtocolError",
    ),
    # a byte every 0.15 s: the deadline (0.5 s) passes mid-body
    "trickle": (_sends(_response()[:60], *[b" "] * 10, delay=0.15), "ReadTimeout"),
    # a response header in UTF-8 (not ASCII): kept as its bytes, not an UnicodeEncodeError
    "non-ASCII header": (_sends(_response(headers=[("X-Note", "caf\u00c3\u00a9")])), "200"),
}


@pytest.mark.parametrize("name", list(RESPONSES))
def test_each_response_is_met_the_same_on_both_paths(name: str) -> None:
    """Status, headers, decoded body, or the exception (type, message, and its request set as the
    client set it): the same on both paths, twice on one kept connection."""
    respond, expected = RESPONSES[name]
    with _server(respond) as (port, seen):
        outcomes, _ = _compare(_url(port), seen, timeout_s=0.5, max_body_bytes=4096)
    for outcome in outcomes:
        got = str(outcome[1]) if outcome[0] == "answered" else outcome[1].__name__
        assert got == expected, outcome
        if outcome[0] == "raised" and expected != "BodyError":
            assert outcome[3] == _url(port), outcome  # e.request: the request that failed


def test_a_server_answering_before_it_reads_a_10_mb_body() -> None:
    """A 413 on the head alone, the body read after it (a server that closed on an unread body would
    reset the connection, and the client would see the answer or the reset by chance)."""
    big = {"image_url": "A" * (10 * 2**20)}
    for close in (True, False):
        respond = _sends(_response(413, [("Connection", "close")] if close else [], b"{}"))
        with _server(respond, read_body=False) as (port, seen):
            outcomes, _ = _compare(_url(port), seen, body=big)
        assert [o[1] for o in outcomes] == [413, 413]


def test_connection_refused_names_its_request() -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    outcomes, _ = _compare(_url(port), _Seen())
    assert outcomes[0][:2] == ("raised", httpx.ConnectError) and outcomes[0][3] == _url(port)


def test_a_closed_transport_refuses_to_send() -> None:
    """After close(), a post is RuntimeError on both paths (the direct path had opened a new connection
    on the closed pool and answered)."""
    with _server(_sends(_response())) as (port, seen):
        for direct in (False, True):
            t = Transport(_url(port), 2.0)
            if not direct:
                t._direct = None
            t.post(_url(port), BODY, HEADERS)
            t.close()
            seen.clear()
            with pytest.raises(RuntimeError, match="client has been closed"):
                t.post(_url(port), BODY, HEADERS)
            assert not seen


def test_https_with_a_self_signed_certificate() -> None:
    """Verified by default: CERTIFICATE_VERIFY_FAILED (httpx.ConnectError) on both paths; answered when
    the transport's TLS context trusts the certificate."""
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory() as d:
        pem = Path(d) / "server.pem"
        pem.write_text(CERT + KEY)
        server_tls.load_cert_chain(pem)
    trusted = ssl.create_default_context(cadata=CERT)
    trusted.verify_flags &= ~ssl.VERIFY_X509_STRICT  # a self-signed leaf is its own CA
    with _server(_sends(_response()), tls=server_tls) as (port, seen):
        url = f"https://127.0.0.1:{port}/v1/chat/completions"
        refused, _ = _compare(url, seen, requests=1)
        assert refused[0][:2] == ("raised", httpx.ConnectError)
        assert "CERTIFICATE_VERIFY_FAILED" in refused[0][2]
        answered, _ = _compare(url, seen, requests=1, ssl_context=trusted)
    assert answered[0][:2] == ("answered", 200)


def test_the_direct_path_is_taken_until_a_server_sets_a_cookie() -> None:
    """Without cookies or a user:password, no request goes through httpx.Client (its request building is
    the CPU the direct path saves); once a server sets a cookie, every request does, as before."""
    cookie = _response(headers=[("Set-Cookie", "lb=1"), ("Content-Type", "application/json")])
    answers = iter([_response(), _response(), cookie, _response(), _response()])

    def respond(conn: socket.socket, request: bytes) -> bool:
        conn.sendall(next(answers))
        return False

    with _server(respond) as (port, seen):
        t = Transport(_url(port), 2.0)
        client_stream = t._client.stream
        through_client = []

        def stream(*args: Any, **kwargs: Any) -> Any:
            through_client.append(args)
            return client_stream(*args, **kwargs)

        t._client.stream = stream  # type: ignore[method-assign]
        statuses = [t.post(_url(port), BODY, HEADERS).status_code for _ in range(5)]
        t.close()
    assert statuses == [200] * 5
    assert len(through_client) == 2  # the two after the cookie
    assert [b"\r\nCookie: lb=1\r\n" in r for r in seen] == [False, False, False, True, True]


def test_a_user_and_password_in_the_url_is_basic_auth_on_both() -> None:
    with _server(_sends(_response())) as (port, seen):
        url = f"http://us%40er:p%3Aw@127.0.0.1:{port}/v1/chat/completions"
        _, received = _compare(url, seen, headers={})
    assert all(b"\r\nAuthorization: Basic dXNAZXI6cDp3\r\n" in r for r in received)  # us@er:p:w
