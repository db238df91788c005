"""What a served model's server said when it refused a request, as one line a person can act on.

The server's own message is taken from the error body (FastAPI's ``detail``, the OpenAI error object's
``error.message``, a top-level ``message``), else the start of the body. When the message quotes the
requested model name (``transformers serve``: "Server is pinned to '/models/x'; requested 'y'."; vLLM and
OpenAI: "The model `y` does not exist"), the line says that the name after ``#`` in the spec is the fix.
"""

from __future__ import annotations

import json
from typing import Any

_MAX_CHARS = 300


def server_message(body: str) -> str:
    """The server's message in an error body, or the body's start when it has no recognised one."""
    try:
        data: Any = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        return body[:_MAX_CHARS]
    found: Any = None
    if isinstance(data, dict):
        error = data.get("error")
        found = data.get("detail") or (error.get("message") if isinstance(error, dict) else error)
        found = found or data.get("message")
    if isinstance(found, str) and found:
        return found[:_MAX_CHARS]
    return body[:_MAX_CHARS]


def refusal(status: int, body: str, model_name: str, base_url: str) -> str:
    """The line for an HTTP error the server answered (no retry helps): status, the server's message and,
    when the message names the requested model, which spec part to change."""
    message = " ".join(server_message(body).split()) or "(no message)"  # one line, whatever it held
    line = f"HTTP {status}: {message}"
    if any(f"{q}{model_name}{q}" in message for q in ("'", '"', "`")):
        line += (
            f" (the server does not serve a model named {model_name!r}: the name after '#' in the spec "
            f"must be one it serves; GET {base_url}/models lists them)"
        )
    return line
