"""Any VLM served behind an OpenAI-compatible chat-completions API (vLLM, TGI, llama.cpp, hosted APIs).

Spec: ``api:http://host:port/v1#model-name``. GENERATE only: the task writes the prompt (including
any lettered-choice wording); the adapter sends it with the image as a base64 PNG data URL, greedy
(temperature 0). Options: concurrency (8: requests in flight at the start), adaptive (true: halved when
the server throttles, grown back while p95 latency holds; models/api_concurrency.py), max_concurrency
(the ceiling of that growth; default concurrency), timeout_s (60: the bound on each request as a whole,
see models/api_transport.py), max_retries (1: of a failed request), throttle_retries (8: of a throttled
one, 429 or 503 with Retry-After), backoff_s (0.5), max_wait_s (60: the longest wait before a retry,
Retry-After or backoff), api_key_env ("OPENAI_API_KEY"), extra_body (dict merged into every request,
e.g. vLLM sampling fields), max_answer_chars (4000: longer answers are cut and counted),
token_limit_field ("max_tokens", or
"max_completion_tokens" for APIs that refuse the former). The token usage each answer reports is kept per
request (`last_usage`, in request order) and summed (`usage_total`).

The API key is read from the environment at each request, never stored, logged or shown;
an answer that echoes it, or a credential of the URL, has it masked.

Retries happen once, at the request level (honouring Retry-After): when a batch fails and the runner
asks again sample by sample, a request that already failed is not sent again, and an answer already
received is reused.
"""

from __future__ import annotations

import datetime
import email.utils
import hashlib
import json
import os
import ssl
import threading
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from argus_eval.data.images import ImageArray
from argus_eval.errors import ModelCallError, ModelLoadError
from argus_eval.models.api_concurrency import AdaptiveLimit
from argus_eval.models.api_images import DataUrls
from argus_eval.models.api_refusal import refusal
from argus_eval.models.api_transport import BodyError, Transport
from argus_eval.models.options import ApiOptions, check_options
from argus_eval.models.protocols import GENERATE, TOKEN_FIELDS, ModelInfo
from argus_eval.models.secrets import redact_text, redact_url, url_secrets
from argus_eval.models.spec import ModelConfig

RETRY_STATUS = frozenset({408, 409, 425, 429}) | frozenset(range(500, 600))


class OpenAICompatibleModel:
    """GENERATE through POST {url}/chat/completions, bounded concurrency, retries with backoff."""

    def __init__(self, cfg: ModelConfig, target: str, fingerprint: str) -> None:
        url, sep, model_name = target.partition("#")
        if not sep or not model_name or not url.startswith(("http://", "https://")):
            raise ModelLoadError(
                f"model {redact_text(cfg.spec)!r}: an api spec is api:http(s)://HOST[:PORT]/v1#MODEL_NAME",
                key="spec",
            )
        check_options(cfg.name, cfg.spec, cfg.options)  # as the config did (a copied config skips it)
        opts = ApiOptions.model_validate(cfg.options)
        self.base_url = url.rstrip("/")
        self.endpoint = f"{self.base_url}/chat/completions"
        self.model_name = model_name
        self.concurrency = opts.concurrency
        self.limit = AdaptiveLimit(opts.concurrency, opts.max_concurrency or opts.concurrency, opts.adaptive)
        self.throttle_retries = opts.throttle_retries
        self.token_limit_field = opts.token_limit_field
        self.timeout_s = opts.timeout_s
        self.max_retries = opts.max_retries
        self.backoff_s = opts.backoff_s
        self.max_wait_s = opts.max_wait_s
        self._key_env = opts.api_key_env
        self.extra_body: dict[str, Any] = dict(opts.extra_body)
        self.max_answer_chars = opts.max_answer_chars
        self.answers_cut = 0  # answers longer than max_answer_chars, cut to it
        self.max_new_tokens_cap = cfg.max_new_tokens
        self._url_secrets = url_secrets(self.base_url, with_basic_auth=True)
        # Batches may be sent from several threads at once (the runner keeps the next batches in flight
        # behind this one), so what belongs to one batch is kept per thread: the outcomes of its latest
        # failed batch (request digest -> answer or failure; see the module docstring) and its usage.
        self._local = threading.local()
        self._lock = threading.Lock()  # the counters below
        # One connection pool per sender thread, of one connection: httpcore's shared pool scans every
        # connection and queued request under one lock for each request (9 ms of CPU per request at 128
        # in flight, against 2.4 ms for a client per thread), and a shared pool with requests queued
        # could close a kept connection it had just handed to one of them (EBADF, retried unseen).
        self._transports: list[Transport] = []
        self._ssl: ssl.SSLContext | None = None
        self._senders: ThreadPoolExecutor | None = None  # one pool for the model's life, not per batch
        self._urls = DataUrls()
        self.forward_calls = 0
        self.usage_total: dict[str, int] = {"prompt_tokens": 0, "completion_tokens": 0, "requests": 0}
        self.retries: Counter[str] = Counter()  # every retry, by its reason (run_log.json)
        self.info = ModelInfo(
            name=cfg.name,
            spec=redact_text(cfg.spec),
            fingerprint=fingerprint,
            capabilities=frozenset({GENERATE}),
            family="openai-compatible-api",
            dtype="remote",
            device="remote",
            extra={"url": redact_url(self.base_url), "model": model_name},
        )

    @property
    def max_in_flight(self) -> int:
        """How many requests this model may have in flight at once, across batches sent together."""
        return self.limit.ceiling

    @property
    def last_usage(self) -> list[dict[str, Any]]:
        """Per request of this thread's latest generate(), in request order: tokens, latency, attempts."""
        usage: list[dict[str, Any]] = getattr(self._local, "usage", [])
        return usage

    def _transport(self) -> Transport:
        """This thread's connection (made on its first request)."""
        transport: Transport | None = getattr(self._local, "transport", None)
        if transport is None:
            with self._lock:
                if self._ssl is None:
                    self._ssl = httpx.create_ssl_context()  # once: it reads the CA bundle
                transport = Transport(self.endpoint, self.timeout_s, connections=1, ssl_context=self._ssl)
                self._transports.append(transport)
            self._local.transport = transport
        return transport

    def _settled(self) -> dict[str, tuple[str, dict[str, Any]] | ModelCallError]:
        settled: dict[str, tuple[str, dict[str, Any]] | ModelCallError] = getattr(self._local, "settled", {})
        return settled

    def __repr__(self) -> str:
        name, url, model = self.info.name, redact_url(self.base_url), self.model_name
        return f"OpenAICompatibleModel(name={name!r}, url={url!r}, model={model!r})"

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(self._key_env)
        if not key:
            return {}
        key = key.strip()  # a key read from a file often ends in a newline; no key holds whitespace
        if not key.isascii() or not key.isprintable():
            # never sent, never shown: httpx's own error would quote the header value, key and all
            raise self._fail(
                f"the API key in ${self._key_env} holds a character an HTTP header cannot carry (a control "
                "or non-ASCII character); set it to the key alone"
            )
        return {"Authorization": f"Bearer {key}"}

    def _redact(self, text: str) -> str:
        """text with the API key (and so the Authorization value) and URL credentials masked."""
        key = os.environ.get(self._key_env)
        keys = [key, key.strip()] if key else []  # as set, and as sent
        return redact_text(text, [*self._url_secrets, *keys])

    def _fail(self, cause: str) -> ModelCallError:
        return ModelCallError(
            self._redact(f"model {self.info.name!r} ({self.model_name} at {self.base_url}): {cause}")
        )

    def _answer(self, content: str) -> str:
        """The stored form of an answer: secrets masked, cut to max_answer_chars (and counted)."""
        text = self._redact(content.strip())
        if len(text) > self.max_answer_chars:
            with self._lock:
                self.answers_cut += 1
            text = text[: self.max_answer_chars]
        return text

    def _request(self, image: ImageArray, prompt: str, max_new_tokens: int) -> tuple[str, dict[str, Any]]:
        """(the request's digest, its body). The digest is taken over the body with the image's pixel
        digest in place of its data URL: the same request, without hashing a megabyte of base64."""
        pixels, url = self._urls.get(image)
        key = _digest(self._body(f"pixels:{pixels}", prompt, max_new_tokens))
        return key, self._body(url, prompt, max_new_tokens)

    def _body(self, url: str, prompt: str, max_new_tokens: int) -> dict[str, Any]:
        content = [
            {"type": "image_url", "image_url": {"url": url}},
            {"type": "text", "text": prompt},
        ]
        return {
            "model": self.model_name,
            "messages": [{"role": "user", "content": content}],
            self.token_limit_field: max_new_tokens,
            "temperature": 0.0,
            **self.extra_body,
        }

    def _parse(self, response: httpx.Response) -> tuple[str, dict[str, int]]:
        try:
            data = response.json()
        except (ValueError, RecursionError):  # RecursionError: nested deeper than Python's stack
            raise self._fail(
                f"malformed JSON body (HTTP {response.status_code}): {response.text[:120]!r}"
            ) from None
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise self._fail(f"response has no choices[0].message.content: {str(data)[:120]!r}") from None
        if isinstance(content, list):  # some servers return content parts
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        if not isinstance(content, str):
            raise self._fail(f"message content is {type(content).__name__}, not text")
        return self._answer(content), _tokens(data.get("usage"))

    def _post(self, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        cause = reason = "no attempt made"
        failures = throttles = 0
        wait = 0.0
        while failures <= self.max_retries and throttles <= self.throttle_retries:
            if failures or throttles:
                with self._lock:
                    self.retries[reason] += 1
                time.sleep(retry_wait(failures + throttles, wait, self.backoff_s, self.max_wait_s))
            wait = 0.0
            with self.limit.slot():
                start = time.perf_counter()
                try:
                    r = self._transport().post(self.endpoint, body, self._headers())
                except BodyError as e:  # not one JSON body within the cap: asking again gives the same
                    raise self._fail(str(e)) from None
                except httpx.TimeoutException:
                    cause, failures = f"timed out after {self.timeout_s:g} s", failures + 1
                    reason = "timed out"
                    continue
                except httpx.TransportError as e:
                    cause, failures = f"connection failed ({type(e).__name__}: {e})", failures + 1
                    reason = f"connection failed ({type(e).__name__}: {e})"
                    continue
                latency = time.perf_counter() - start
            header = r.headers.get("Retry-After")
            if r.status_code == 429 or (r.status_code == 503 and header is not None):
                # the server is up and asks us to slow down: fewer in flight, and wait as long as it says
                self.limit.on_throttle()
                cause, throttles = f"HTTP {r.status_code}: {r.text[:120]!r}", throttles + 1
                reason = f"throttled (HTTP {r.status_code})"
                wait = min(retry_after(header), self.max_wait_s)
                continue
            if r.status_code in RETRY_STATUS:
                cause, failures = f"HTTP {r.status_code}: {r.text[:120]!r}", failures + 1
                reason = f"HTTP {r.status_code}"
                wait = min(retry_after(header), self.max_wait_s)
                continue
            if r.status_code >= 400:
                raise self._fail(refusal(r.status_code, r.text, self.model_name, self.base_url))
            text, usage = self._parse(r)
            self.limit.on_success(latency)
            attempts = failures + throttles + 1
            return text, {**usage, "latency_s": latency, "attempts": attempts}
        raise self._fail(f"{cause} ({failures + throttles} attempts)")

    def generate(
        self, images: Sequence[ImageArray], prompts: Sequence[str], max_new_tokens: int
    ) -> list[str]:
        """One chat completion per (image, prompt), at most `concurrency` in flight; order preserved."""
        if len(images) != len(prompts):
            raise ModelCallError(
                f"batched inputs differ in length: {len(images)} images, {len(prompts)} prompts"
            )
        if self.max_new_tokens_cap is not None:
            max_new_tokens = min(max_new_tokens, self.max_new_tokens_cap)
        self._local.usage = []
        requests = [self._request(im, p, max_new_tokens) for im, p in zip(images, prompts, strict=True)]
        if not requests:
            return []
        keys = [k for k, _ in requests]
        settled = self._settled()
        fresh = [i for i, k in enumerate(keys) if k not in settled]
        outcomes: dict[str, tuple[str, dict[str, Any]] | ModelCallError] = {
            k: settled[k] for k in keys if k in settled
        }
        if fresh:
            # the ceiling's worth of sender threads; the adaptive limit decides how many send at once
            if self._senders is None:
                with self._lock:
                    if self._senders is None:
                        self._senders = ThreadPoolExecutor(self.limit.ceiling, thread_name_prefix="argus-api")
            sent = list(self._senders.map(self._try_post, [requests[i][1] for i in fresh]))
            with self._lock:
                self.forward_calls += len(fresh)
            outcomes.update({keys[i]: o for i, o in zip(fresh, sent, strict=True)})
        failed = [o for o in (outcomes[k] for k in keys) if isinstance(o, ModelCallError)]
        if fresh:  # a new batch: keep its outcomes only if it failed (the runner then asks per sample)
            self._local.settled = outcomes if failed else {}
        if failed:
            raise failed[0]
        results = [o for o in (outcomes[k] for k in keys) if not isinstance(o, ModelCallError)]
        self._local.usage = usage = [u for _, u in results]
        with self._lock:
            for u in usage:
                self.usage_total["requests"] += 1
                for k in TOKEN_FIELDS:
                    self.usage_total[k] += u.get(k, 0)
        return [t for t, _ in results]

    @property
    def call_log(self) -> dict[str, Any]:
        """How the calls went (run_log.json): the concurrency timeline and requests in flight, every
        retry by its reason, the images encoded and reused, the tokens the server reported."""
        with self._lock:
            retries = {"total": sum(self.retries.values()), "by_reason": dict(sorted(self.retries.items()))}
        images = {"encoded": self._urls.encoded, "reused": self._urls.reused}
        return {
            "concurrency": self.limit.report(),
            "retries": retries,
            "images": images,
            "usage": dict(self.usage_total),
        }

    def _try_post(self, body: dict[str, Any]) -> tuple[str, dict[str, Any]] | ModelCallError:
        try:
            return self._post(body)
        except ModelCallError as e:
            return e

    def close(self) -> None:
        """Stop the sender threads and close the HTTP connection pool."""
        if self._senders is not None:
            self._senders.shutdown(wait=True)
        with self._lock:
            transports, self._transports = self._transports, []
        for t in transports:
            t.close()


def _tokens(usage: object) -> dict[str, int]:
    """The token counts of a response's `usage` (absent, or not a whole number >= 0: left out)."""
    if not isinstance(usage, dict):
        return {}
    out = {}
    for k in TOKEN_FIELDS:
        v = usage.get(k)
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            out[k] = v
    return out


def _digest(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def retry_wait(attempt: int, asked_s: float, backoff_s: float, max_wait_s: float) -> float:
    """Seconds to sleep before retry number `attempt` (1-based): what the server asked (Retry-After) or
    the exponential backoff `backoff_s * 2**(attempt-1)`, whichever is longer, never above max_wait_s.
    Uncapped, a server answering 429 without Retry-After held each request 127 s at 8 retries."""
    exponent = min(max(attempt - 1, 0), 60)  # 2**60 s already exceeds any cap; no float overflow
    return min(max(asked_s, backoff_s * 2.0**exponent), max_wait_s)


def retry_after(value: str | None) -> float:
    """Seconds a Retry-After header asks to wait (delta-seconds or an HTTP date); 0 when absent or bad."""
    if not value:
        return 0.0
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return 0.0
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, (when - datetime.datetime.now(datetime.UTC)).total_seconds())
