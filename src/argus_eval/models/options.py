"""The options each model scheme reads: a config's unknown option is an error listing the valid ones,
never a value silently carried into results (an api_key put under options by mistake, say).
"""

from __future__ import annotations

from collections.abc import Iterable

from argus_eval.errors import ConfigError

# Read by the OpenAI-compatible adapter (models/api.py).
API_OPTIONS = frozenset(
    {"concurrency", "timeout_s", "max_retries", "backoff_s", "max_wait_s", "api_key_env", "extra_body",
     "max_answer_chars"}
)  # fmt: skip
# Read by the local adapters (LXMERT's region features); hf and zoo checkpoints share the loaders.
LOCAL_OPTIONS = frozenset({"region_features"})

# scheme -> option names; a plugin scheme that registers nothing validates its own options.
OPTIONS_BY_SCHEME: dict[str, frozenset[str]] = {"api": API_OPTIONS, "hf": LOCAL_OPTIONS, "zoo": LOCAL_OPTIONS}


def register_options(scheme: str, names: Iterable[str]) -> None:
    """Declare the options a (plugin) scheme reads, so that others are rejected."""
    OPTIONS_BY_SCHEME[scheme] = frozenset(names)


def _scheme(spec: str) -> str | None:
    scheme, sep, _ = spec.partition(":")
    if sep and scheme.isidentifier():
        return scheme
    from argus_eval.errors import UnknownNameError
    from argus_eval.models.presets import PRESETS  # lazy: presets import the model wing

    try:
        return _scheme(PRESETS.get(spec).spec)
    except UnknownNameError:
        return None  # not a preset: loading names the bad spec


def check_options(name: str, spec: str, options: Iterable[str]) -> None:
    """ConfigError naming the model, its unknown option keys and the valid ones."""
    scheme = _scheme(spec)
    allowed = OPTIONS_BY_SCHEME.get(scheme) if scheme is not None else None
    if allowed is None:
        return
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ConfigError(
            f"model {name!r}: unknown option(s) {', '.join(unknown)} for {scheme}: models; "
            f"valid options: {', '.join(sorted(allowed)) or 'none'}"
            + (" (an API key belongs in the environment variable named by api_key_env)"
               if scheme == "api" else "")
        )  # fmt: skip
