"""The building blocks of the results.json contract: frozen, strict blocks and the number types.

A block is frozen (a reader cannot change what the run wrote), strict (a string where a number belongs is
an error, never converted) and closed (an unknown key is an error naming it), unless a block says
otherwise. A field that a run leaves out stays out when the block is written again: blocks are dumped
with exclude_unset, so an optional key that one kind of entry has and another lacks (a clean cell has
no severity) round-trips exactly, and a field added later never appears in files that did not set it.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, Strict
from pydantic_core import PydanticCustomError


def _number(value: Any) -> float | int:
    # bool is an int to Python but never a figure; an int stays an int so that the file round-trips
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PydanticCustomError("number", "Input should be a valid number")
    if isinstance(value, float) and not math.isfinite(value):
        raise PydanticCustomError("finite_number", "Input should be a finite number")
    return value


Number = Annotated[float | int, PlainValidator(_number)]
"""A finite JSON number, kept as written (an int stays an int); missing values are null, never NaN."""


def _within(low: float, high: float, what: str) -> PlainValidator:
    def check(value: Any) -> float | int:
        x = _number(value)
        if not low <= x <= high:
            raise PydanticCustomError(
                "out_of_range",
                "Input should be in [{low}, {high}] ({what}), got {x}",
                {"low": f"{low:g}", "high": f"{high:g}", "what": what, "x": repr(x)},
            )
        return x

    return PlainValidator(check)


Score = Annotated[float | int, _within(0.0, 1.0, "a score, share or probability")]
"""A number in [0, 1]: a cell's primary score, an axis value, a chance level, a share P(A beats B), a
retention ratio. A results.json holding 5.0 or 1e300 there was edited or broken, and loading says so."""

Signed = Annotated[float | int, _within(-1.0, 1.0, "a difference of scores or a rank correlation")]
"""A number in [-1, 1]: Kendall's tau, a reliance (clean minus control score)."""

Measured = Annotated[float | int, _within(0.0, math.inf, "a measured amount")]
"""A number >= 0: a latency, a throughput, a memory size, a weight."""

Count = Annotated[int, Strict(), Field(ge=0)]
"""A whole number >= 0 (samples, resamples)."""


def _json(value: Any) -> Any:
    # free-form parts (a task's breakdown, an axis's detail, the config echo): any JSON value, no NaN
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, (int, float)):
        return _number(value)
    # a plain string (most items: references, texts) is taken as it is, without a call per item
    if isinstance(value, (list, tuple)):
        return [v if type(v) is str else _json(v) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise PydanticCustomError("json_key", "Object keys should be strings")
        return {k: v if type(v) is str else _json(v) for k, v in value.items()}
    kind = {"kind": type(value).__name__}
    raise PydanticCustomError("json", "Input should be a JSON value, got {kind}", kind)


Json = Annotated[Any, PlainValidator(_json)]
"""A free-form JSON value (what a task or an axis reports beside its figures); tuples become lists."""

Interval = Annotated[tuple[Number, Number], Strict(False)] | None
"""A bootstrap percentile interval [low, high], or null without resamples (JSON lists become tuples)."""

ScoreInterval = Annotated[tuple[Score, Score], Strict(False)] | None
"""An Interval of a Score: both ends in [0, 1]."""

SignedInterval = Annotated[tuple[Signed, Signed], Strict(False)] | None
"""An Interval of a Signed number: both ends in [-1, 1]."""

ModelPair = Annotated[tuple[str, str], Strict(False)]
"""Two model names (a JSON list of two)."""


class Block(BaseModel):
    """Base of every results.json block: frozen, strict, closed."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")
