"""The one description of a model a run config gives: what to load, where, and how."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from argus_eval.errors import ConfigError
from argus_eval.models.options import check_options

Device = Literal["cpu", "cuda", "auto"]
DType = Literal["float32", "bfloat16", "float16", "auto"]


class ModelConfig(BaseModel):
    """A model entry of a run config.

    ``spec`` is ``hf:ID_OR_DIR``, ``api:URL#MODEL``, ``zoo:NAME`` or a preset name (``argus models``).
    ``options`` holds adapter-specific settings (e.g. ``region_features`` for LXMERT,
    ``concurrency``/``timeout_s``/``max_retries``/``api_key_env`` for the API adapter).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    spec: str
    device: Device = "auto"
    dtype: DType = "float32"
    batch_size: int = Field(default=32, ge=1)
    trust_remote_code: bool = False
    revision: str | None = None
    max_new_tokens: int | None = Field(default=None, ge=1)
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known_options(self) -> ModelConfig:
        try:
            check_options(self.name, self.spec, self.options)
        except ConfigError as e:  # as a validation error, so the config loader names file and key
            raise PydanticCustomError("unknown_option", str(e)) from None
        return self
