"""Secrets never reach an output file: credentials in URLs, values under secret-looking keys, and any
known secret value inside text (an API key a server echoes back in its answer).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

MASK = "***"

# A key is secret when its last words are one of these (max_tokens is not; access_token is);
# "api_key_env" names an environment variable, not a secret, and is kept.
_SECRET_TAILS = (
    ("api", "key"), ("apikey",), ("access", "key"), ("secret", "key"), ("private", "key"), ("key",),
    ("token",), ("secret",), ("password",), ("passwd",), ("authorization",), ("auth",),
    ("credential",), ("credentials",), ("bearer",),
)  # fmt: skip
_URL = re.compile(r"[a-z][a-z0-9+.-]*://[^\s\"'#]+", re.I)
# Query parameters of signed URLs (S3/GCS presigned, Azure SAS, HMAC-signed links) beyond what
# secret_key catches: a signature grants access as a password does. Every X-Amz-* / X-Goog-* parameter
# is masked (the harmless date and expiry go with the credential and signature).
_SIGNED_QUERY = frozenset({"sig", "signature", "hmac", "code", "sas", "policy", "key_pair_id"})
_SIGNED_PREFIXES = ("x_amz_", "x_goog_", "x_ms_")
# user:password@ (or user@) in anything that looks like a URL authority, for text urlsplit cannot parse
_USERINFO = re.compile(r"(//)[^/@\s\"']*@")


def secret_key(name: str) -> bool:
    """Whether a mapping key names a credential (api_key, access_token, password, Authorization ...)."""
    words = tuple(w for w in re.split(r"[^a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()) if w)
    if len(words) == 1 and words[0] == "key":
        return True
    return any(words[-len(t) :] == t for t in _SECRET_TAILS if t != ("key",))


def secret_query(name: str) -> bool:
    """Whether a URL query parameter carries a credential: a secret-looking key (api_key, token) or a
    signed URL's signature (sig, signature, X-Amz-*, X-Goog-*, ...)."""
    low = name.lower().replace("-", "_")
    return secret_key(name) or low in _SIGNED_QUERY or low.startswith(_SIGNED_PREFIXES)


def redact_url(url: str) -> str:
    """The URL without user:password and with credential query values masked (secret_query); a URL
    urlsplit cannot parse still loses anything between // and @, and its query."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError on a malformed port, as an invalid spec may have)
    except ValueError:
        head, _, query = _USERINFO.sub(rf"\g<1>{MASK}@", url).partition("?")
        return f"{head}?{MASK}" if query else head
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, MASK if secret_query(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def url_secrets(url: str, with_basic_auth: bool = False) -> list[str]:
    """The credential values a URL carries (password, user, secret-looking query values); with
    with_basic_auth also the Basic credentials an HTTP client derives from user:password."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found = [v for v in (parts.password, parts.username) if v]
    if with_basic_auth and parts.username:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        found.append(base64.b64encode(pair.encode()).decode("ascii"))
    found += [v for k, v in parse_qsl(parts.query, keep_blank_values=True) if v and secret_query(k)]
    return found


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """text with every known secret value masked and every URL in it redacted."""
    for s in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(s, MASK)
    return _URL.sub(lambda m: redact_url(m.group(0)), text)


def redact(value: Any, secrets: Iterable[str] = ()) -> Any:
    """A JSON-able value with secret-looking keys masked and URLs and known secrets redacted in strings."""
    known = tuple(secrets)
    if isinstance(value, dict):
        return {
            k: MASK if isinstance(k, str) and secret_key(k) and v not in (None, "") else redact(v, known)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(v, known) for v in value]
    if isinstance(value, str):
        return redact_text(value, known)
    return value
