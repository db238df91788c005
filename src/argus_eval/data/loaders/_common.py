"""Shared loader plumbing: reading JSON with errors that name the file, required fields, skip records."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from argus_eval.data.text import MAX_LINE_BYTES, repair_text, text_problem
from argus_eval.data.types import Sample, SkippedRecord
from argus_eval.errors import DataNotFoundError, DatasetError


class _NonStandardConstant(ValueError):
    """NaN, Infinity or -Infinity in a JSON file (Python's json accepts them; the JSON standard does not)."""


def _reject_constant(name: str) -> Any:
    raise _NonStandardConstant(f"non-standard JSON constant {name} (ids and values must be finite)")


def parse_json(text: str | bytes) -> Any:
    """json.loads that refuses NaN and Infinity (an Infinity id would otherwise slip through)."""
    return json.loads(text, parse_constant=_reject_constant)


def read_json(path: Path, what: str) -> Any:
    """Parse a JSON file; DatasetError naming the file when it is missing, unreadable or malformed."""
    try:
        with open(path, "rb") as fh:
            return parse_json(fh.read())
    except FileNotFoundError:
        raise DataNotFoundError(f"{what} file {path} not found", path=path) from None
    except IsADirectoryError:
        raise DatasetError(f"{what} file {path} is a directory, expected a JSON file") from None
    except PermissionError:
        raise DatasetError(
            f"{what} file {path} is not readable (permission denied); fix its permissions"
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError, _NonStandardConstant) as e:
        raise DatasetError(f"{what} file {path} is not valid JSON ({e})") from None
    except RecursionError:
        raise DatasetError(f"{what} file {path} is nested too deeply to be an annotation file") from None


def iter_jsonl(path: Path, what: str, skips: Skips | None = None) -> Iterator[tuple[int, Any]]:
    """Yield (line number, parsed object) of a JSON-lines file, streaming; blank lines are ignored.

    A line over MAX_LINE_BYTES is never held whole: it is a skip naming its line (with skips), else a
    DatasetError."""
    if not path.is_file():
        raise DataNotFoundError(f"{what} file {path} not found", path=path)
    for lineno, raw in enumerate(_binary_lines(path, what), start=1):
        if raw is None:
            reason = f"line has over {MAX_LINE_BYTES:,} bytes, the cap on one line (MAX_LINE_BYTES)"
            if skips is None:
                raise DatasetError(f"{what} file {path}: line {lineno}: {reason}")
            skips.add(path, f"line {lineno}", reason)
            continue
        try:
            line = raw.decode("utf-8")  # per line, so an encoding error names its line
        except UnicodeDecodeError as e:
            raise DatasetError(
                f"{what} file {path}: line {lineno} is not UTF-8 (byte {raw[e.start]:#04x}); "
                "re-save the file as UTF-8"
            ) from None
        if not line.strip():
            continue
        try:
            obj = parse_json(line)
        except (json.JSONDecodeError, _NonStandardConstant) as e:
            raise DatasetError(f"{what} file {path}: line {lineno} is not valid JSON ({e})") from None
        except RecursionError:
            raise DatasetError(f"{what} file {path}: line {lineno} is nested too deeply") from None
        yield lineno, obj


def _binary_lines(path: Path, what: str) -> Iterator[bytes | None]:
    """Each line's bytes, or None for a line over MAX_LINE_BYTES (read past in bounded pieces)."""
    try:
        with open(path, "rb") as fh:
            while line := fh.readline(MAX_LINE_BYTES + 1):
                if len(line) <= MAX_LINE_BYTES or line.endswith(b"\n"):
                    yield line
                    continue
                while line and not line.endswith(b"\n"):  # the rest of the long line, never held whole
                    line = fh.readline(MAX_LINE_BYTES)
                yield None
    except PermissionError:
        raise DatasetError(
            f"{what} file {path} is not readable (permission denied); fix its permissions"
        ) from None


def expect(obj: Any, kind: type | tuple[type, ...], path: Path, where: str) -> Any:
    """Check the type of a top-level value or a section; DatasetError naming file and place."""
    if not isinstance(obj, kind):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise DatasetError(
            f"{path}: {where} must be a JSON {_json_name(names)}, got {_json_name(type(obj).__name__)}"
        )
    return obj


def _json_name(py: str) -> str:
    return {"dict": "object", "list": "array", "str": "string", "NoneType": "null"}.get(py, py)


def section(top: Mapping[str, Any], key: str, path: Path) -> list[Any]:
    """A required top-level array, e.g. COCO's "images"."""
    if key not in top:
        raise DatasetError(f"{path}: missing top-level field {key!r}")
    value: list[Any] = expect(top[key], list, path, f"top-level field {key!r}")
    return value


def need(record: Any, key: str, kind: type | tuple[type, ...], path: Path, label: str) -> Any:
    """A required field of a record; DatasetError naming file, record and field."""
    if not isinstance(record, Mapping):
        raise DatasetError(f"{path}: {label} must be a JSON object, got {_json_name(type(record).__name__)}")
    if key not in record:
        raise DatasetError(f"{path}: {label}: missing field {key!r}")
    value = record[key]
    # bool is an int subclass; an id of true/false is a data error.
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _tuple(kind)):
        raise DatasetError(
            f"{path}: {label}: field {key!r} has type {_json_name(type(value).__name__)}, "
            f"expected {' or '.join(_json_name(k.__name__) for k in _tuple(kind))}"
        )
    return value


def _tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


class Skips:
    """Collects skipped records; in strict mode the first skip raises DatasetError."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.records: list[SkippedRecord] = []

    def add(self, source: Path | str, record: str, reason: str) -> None:
        if self.strict:
            raise DatasetError(f"{source}: {record}: {reason} (strict mode makes skipped records fatal)")
        # A record's label can quote its data (an id with a lone surrogate): made printable here.
        self.records.append(SkippedRecord(repair_text(str(source)), repair_text(record), repair_text(reason)))


class Ids:
    """Detects duplicate ids within one file; 100 and "100" are the same id (both name sample img/100)."""

    def __init__(self, path: Path, what: str) -> None:
        self.path, self.what = path, what
        self.seen: dict[Any, str] = {}  # id as written -> where
        self._spelled: dict[str, Any] = {}  # id as it reads in a sample id -> as written

    def add(self, value: Any, label: str) -> None:
        check_id(value, self.path, label, self.what)
        first = self._spelled.get(str(value))
        if first is not None:
            spelled = "" if first == value else f" as {first!r}"
            raise DatasetError(
                f"{self.path}: {label}: duplicate {self.what} {value!r} "
                f"(first seen at {self.seen[first]}{spelled})"
            )
        self.seen[value] = label
        self._spelled[str(value)] = value


def check_id(value: Any, path: Path, label: str, what: str) -> Any:
    """An id must be an integer or a non-empty string: a float, list or object cannot name a sample."""
    ok = (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, str) and value.strip()
    )
    if not ok:
        raise DatasetError(
            f"{path}: {label}: {what} {value!r} is a {_json_name(type(value).__name__)}; "
            "ids must be integers or non-empty strings"
        )
    return value


def clean_text(value: str, skips: Skips, path: Path, label: str, what: str) -> str | None:
    """A stripped text field, or None (skipped and counted) when it cannot reach a tokenizer: empty, not
    valid Unicode (a lone surrogate decodes from JSON but breaks every tokenizer) or over MAX_TEXT_CHARS."""
    text = value.strip()
    problem = text_problem(text, what)
    if problem is not None:
        skips.add(path, label, problem)
        return None
    return text


def nonempty_section(top: Mapping[str, Any], key: str, path: Path, fix: str) -> list[Any]:
    """A required top-level array that must hold at least one record; DatasetError naming the file."""
    value = section(top, key, path)
    if not value:
        raise DatasetError(f"{path}: top-level field {key!r} is an empty list; {fix}")
    return value


def limit_each_kind(samples: Sequence[Sample], limit: int | None) -> list[Sample]:
    """Keep the first `limit` image-level samples and the first `limit` question samples."""
    if limit is None:
        return list(samples)
    counts = {True: 0, False: 0}
    out = []
    for s in samples:
        kind = s.question is None
        if counts[kind] < limit:
            counts[kind] += 1
            out.append(s)
    return out


def counts(samples: Sequence[Sample]) -> dict[str, int]:
    """Number of image-level and question samples."""
    q = sum(1 for s in samples if s.question is not None)
    return {"images": len(samples) - q, "questions": q}
