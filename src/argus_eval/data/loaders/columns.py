"""Column paths of the `hf_datasets` column map: a column, then nested fields, then an optional converter.

    answers[].answer         the `answer` field of every element of the list column `answers`
    meta.source              the `source` field of the struct column `meta`
    question_id|file_number  the integer in a file name ("000000179765.jpg" -> 179765)

A list of structs may arrive as a list of dicts or, from a `Sequence` feature, as a dict of lists; `[]`
reads both. A path that does not fit a row raises ColumnShapeError, which the loader turns into one line
naming the file, row and column.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from argus_eval.errors import DatasetError
from argus_eval.registry import CALLABLE, Registry

LIST = "[]"
_PATH = re.compile(r"^([^.\[\]|]+)((?:\[\]|\.[^.\[\]|]+)*)$")
_STEP = re.compile(r"\[\]|\.([^.\[\]|]+)")


class ColumnShapeError(ValueError):
    """A row's value does not have the shape its column path reads."""


def _file_number(value: Any) -> int:
    """The integer of a file name's stem: COCO's "000000179765.jpg" -> 179765."""
    digits = re.findall(r"\d+", PurePosixPath(str(value)).stem)
    if not digits:
        raise ColumnShapeError(f"{value!r} holds no number to read as an id")
    return int(digits[-1])


CONVERTERS: Registry[Callable[[Any], Any]] = Registry("column converter", base=CALLABLE)
CONVERTERS.register("file_number", _file_number)


@dataclass(frozen=True)
class ColumnPath:
    """A parsed column path: the top-level column, the steps into it, and the converter's name."""

    text: str
    column: str
    steps: tuple[str, ...]
    convert: str | None

    def pick(self, row: Mapping[str, Any]) -> Any:
        """This path's value in one row (a list where it passes a `[]`)."""
        value = _walk(row[self.column], self.steps, self.column)
        if self.convert is None or value is None:
            return value
        fn = CONVERTERS.get(self.convert)
        return [fn(v) for v in value] if isinstance(value, list) else fn(value)


def parse_path(text: str, key: str) -> ColumnPath:
    """Parse one column map value; DatasetError naming the key when it is not a column path."""
    spec, _, convert = text.partition("|")
    match = _PATH.match(spec.strip())
    if match is None:
        raise DatasetError(
            f"columns.{key}: {text!r} is not a column path (column, then .field or [] steps, e.g. "
            "answers[].answer, then optionally |file_number)"
        )
    if convert:
        CONVERTERS.get(convert.strip())  # an unknown converter is an error now, naming the valid ones
    steps = tuple(m.group(1) or LIST for m in _STEP.finditer(match.group(2)))
    return ColumnPath(text, match.group(1), steps, convert.strip() or None)


def _walk(value: Any, steps: tuple[str, ...], where: str) -> Any:
    if not steps or value is None:
        return value
    step, rest = steps[0], steps[1:]
    if step == LIST:
        if isinstance(value, Mapping):  # a Sequence of structs: a dict of equally long lists
            value = _rows_of(value, where)
        if not isinstance(value, list | tuple):
            raise ColumnShapeError(f"{where} is {type(value).__name__}, not a list")
        return [_walk(v, rest, f"{where}[]") for v in value]
    if not isinstance(value, Mapping):
        raise ColumnShapeError(f"{where} is {type(value).__name__}, not a struct with field {step!r}")
    if step not in value:
        raise ColumnShapeError(f"{where} has no field {step!r} (its fields: {sorted(value)})")
    return _walk(value[step], rest, f"{where}.{step}")


def _rows_of(struct: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    """A dict of lists (how `datasets` yields a Sequence of structs) as a list of dicts."""
    lists = list(struct.values())
    if not all(isinstance(v, list) for v in lists) or len({len(v) for v in lists}) > 1:
        raise ColumnShapeError(f"{where} is a struct, not a list of structs")
    n = len(lists[0]) if lists else 0
    return [{k: struct[k][i] for k in struct} for i in range(n)]
