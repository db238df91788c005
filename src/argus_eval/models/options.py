"""The options each model scheme reads, typed: a config's unknown option is an error listing the valid ones,
never a value silently carried into results (an api_key put under options by mistake, say), and a value
of the wrong type (`concurrency: true`, `max_answer_chars: 2.5`) is an error naming the option.

Each scheme's options model also says which of its options are call-only (how a model is called, never
what it answers): those stay out of the model fingerprint (models/fingerprint.py), every other one is in it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    ValidationError,
    model_validator,
)

from argus_eval.errors import ConfigError
from argus_eval.registry import Registry


class SchemeOptions(BaseModel):
    """Options one model scheme reads (a model entry's `options`); strict, closed, frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # Options that change how a model is called (timeouts, waits, concurrency, retries, where its key is
    # read from), never what it answers: changing one recomputes nothing.
    call_only: ClassVar[frozenset[str]] = frozenset()
    # said after the valid options when a config names an unknown one
    unknown_hint: ClassVar[str] = ""


class ApiOptions(SchemeOptions):
    """Read by the OpenAI-compatible adapter (models/api.py); the defaults are its own."""

    concurrency: StrictInt = Field(default=8, ge=1, description="Requests in flight at once.")
    timeout_s: StrictFloat = Field(default=60.0, gt=0, description="Seconds one request may take.")
    max_retries: StrictInt = Field(default=1, ge=0, description="Retries of a failed request.")
    backoff_s: StrictFloat = Field(default=0.5, ge=0, description="First wait between retries.")
    max_wait_s: StrictFloat = Field(
        default=60.0, ge=0, description="Longest wait before a retry (Retry-After or backoff)."
    )
    api_key_env: str = Field(default="OPENAI_API_KEY", description="Environment variable of the API key.")
    extra_body: dict[str, Any] = Field(default_factory=dict, description="Sent with every request.")
    max_answer_chars: StrictInt = Field(default=4000, ge=1, description="Longer answers are cut.")
    token_limit_field: Literal["max_tokens", "max_completion_tokens"] = Field(
        default="max_tokens",
        description="The request field of the answer's token cap (o-series APIs take max_completion_tokens).",
    )
    adaptive: StrictBool = Field(
        default=True, description="Halve concurrency when throttled (429, 503), grow it back while p95 holds."
    )
    max_concurrency: StrictInt | None = Field(
        default=None, ge=1, description="Highest concurrency adaptive growth reaches (default: concurrency)."
    )
    throttle_retries: StrictInt = Field(
        default=8, ge=0, description="Retries of a throttled request (429, or 503 with Retry-After)."
    )

    unknown_hint = " (an API key belongs in the environment variable named by api_key_env)"
    call_only = frozenset(
        {
            "concurrency",
            "timeout_s",
            "max_retries",
            "backoff_s",
            "max_wait_s",
            "api_key_env",
            "adaptive",
            "max_concurrency",
            "throttle_retries",
        }
    )

    @model_validator(mode="after")
    def _ceiling_above_start(self) -> ApiOptions:
        if self.max_concurrency is not None and self.max_concurrency < self.concurrency:
            raise ValueError(
                f"max_concurrency ({self.max_concurrency}) is below concurrency ({self.concurrency}); "
                "set it to at least concurrency"
            )
        return self


class LocalOptions(SchemeOptions):
    """Read by the local adapters (LXMERT's region features); hf and zoo checkpoints share the loaders."""

    region_features: str | dict[str, Any] | None = Field(
        default=None,
        description="A region-feature file (npz/h5/tsv), 'grid', 'segments', or a provider's settings "
        "such as {kind: frcnn-vg, detector: DIR} (LXMERT).",
    )


class NullOptions(SchemeOptions):
    """Read by the null model (models/null.py), a harness benchmark's stand-in for a real one."""

    sleep_ms: StrictFloat = Field(
        default=0.0, ge=0, description="Milliseconds each forward call waits (a stand-in for a busy GPU)."
    )

    call_only = frozenset({"sleep_ms"})  # it changes how long a call takes, never what it answers


class ObjectOptions(SchemeOptions):
    """Written by argus_eval.evaluate into an object model's entry (models/objects.py): all are in the
    model fingerprint, so a rerun of the same object resumes and another class, set of capabilities or
    fingerprint recomputes."""

    object_class: str | None = Field(default=None, description="The object's module and class.")
    capabilities: list[str] | None = Field(default=None, description="The capabilities the object offers.")
    fingerprint: str | None = Field(
        default=None,
        description="What identifies the object's answers (a version; a path is hashed by content). "
        "Change it when the model changes under the same name.",
    )


# scheme -> its options model; a plugin scheme that registers none validates its own options.
SCHEME_OPTIONS: Registry[type[SchemeOptions]] = Registry("scheme options", base=SchemeOptions)
SCHEME_OPTIONS.register("api", ApiOptions)
SCHEME_OPTIONS.register("hf", LocalOptions)
SCHEME_OPTIONS.register("zoo", LocalOptions)
SCHEME_OPTIONS.register("null", NullOptions)
SCHEME_OPTIONS.register("object", ObjectOptions)


def register_options(scheme: str, options: type[SchemeOptions]) -> None:
    """Declare the options model of a (plugin) scheme, so that other options are rejected."""
    SCHEME_OPTIONS.register(scheme, options)


def _options_of(scheme: str | None) -> type[SchemeOptions] | None:
    return SCHEME_OPTIONS.get(scheme) if scheme is not None and scheme in SCHEME_OPTIONS else None


def scheme_of(spec: str) -> str | None:
    """The scheme a spec (or the preset it names) loads through; None for a spec that names nothing.

    A preset is read from the preset table as the preset scheme reads it (models/loading.py), not through
    the scheme registry: every scheme takes a ModelConfig, whose validation calls this."""
    from argus_eval.models.presets import preset_named  # lazy: presets import the model wing

    preset = preset_named(spec)
    if preset is not None:
        return scheme_of(preset.spec)
    scheme, sep, _ = spec.partition(":")
    return scheme if sep and scheme.isidentifier() else None


def call_only_options(spec: str) -> frozenset[str]:
    """The options of spec's scheme that stay out of its fingerprint (none for an unknown scheme)."""
    model = _options_of(scheme_of(spec))
    return model.call_only if model is not None else frozenset()


def check_options(name: str, spec: str, options: dict[str, Any]) -> None:
    """ConfigError naming the model and its unknown option keys (with the valid ones), or the option whose
    value has the wrong type or range."""
    scheme = scheme_of(spec)
    model = _options_of(scheme)
    if model is None:
        return
    allowed = sorted(model.model_fields)
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ConfigError(
            f"model {name!r}: unknown option(s) {', '.join(unknown)} for {scheme}: models; "
            f"valid options: {', '.join(allowed) or 'none'}{model.unknown_hint}",
            key=f"options.{unknown[0]}",
        )
    try:
        model.model_validate(options)
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        key = ".".join(["options", *(str(p) for p in err["loc"])])  # a check across options has no loc
        raise ConfigError(f"model {name!r}: {key}: {err['msg']}", key=key) from None
