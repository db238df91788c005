"""Reading and writing results.json through the Results model: loading is validation.

A file that does not fit fails with a ResultsError naming the file and the JSON path of the field
(e.g. "runs/x/results.json: models.CLIP.P: Input should be a valid number"); the CLI prints that line
and exits 2. A file of schema version 1 is read by upgrading it: version 2 only renamed the version.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from argus_eval.errors import ResultsError
from argus_eval.results_model.document import SCHEMA, Results

# Versions the loader upgrades to SCHEMA, and how (each differs from the next only as described).
_UPGRADES = {"argus-eval/results/1": "version 2 renamed only the schema string"}
_FAMILY = "argus-eval/results/"


def results_json(results: Results) -> dict[str, Any]:
    """The file's content as plain JSON data (what json.load of results.json gives)."""
    return results.model_dump(mode="json", by_alias=True, exclude_unset=True)


def results_text(results: Results) -> str:
    """The file's text: sorted keys, one-space indent, UTF-8 as is, and no NaN (missing values are null)."""
    data = results_json(results)
    return json.dumps(data, sort_keys=True, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def _no_constant(name: str) -> Any:
    # results.json is written with allow_nan=False: a NaN or Infinity means the file was edited or broken
    raise ValueError(f"it holds {name}, which results.json never does (every number is finite or null)")


def key_path(loc: Sequence[int | str]) -> str:
    """A validation error's location as a key path: ("models", 0, "P") -> "models[0].P"."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def field_error(e: ValidationError) -> str:
    """The first error of a validation as "json.path[0].field: what is wrong" (and how many more)."""
    errors = e.errors(include_url=False)
    first = errors[0]
    where = key_path(first["loc"])
    head = f"{where}: {first['msg']}" if where else str(first["msg"])
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return head + more


def _upgraded(data: dict[str, Any], source: str) -> tuple[dict[str, Any], str | None]:
    schema = data.get("schema")
    if schema == SCHEMA:
        return data, None
    if not isinstance(schema, str) or not schema.startswith(_FAMILY):
        raise ResultsError(f"{source}: schema: {schema!r} is not an ARGUS-EVAL results schema ({SCHEMA!r})")
    if schema not in _UPGRADES:
        raise ResultsError(
            f"{source}: schema: {schema!r} is not one this ARGUS-EVAL reads ({SCHEMA!r} or "
            f"{', '.join(map(repr, _UPGRADES))}): use the ARGUS-EVAL version that wrote it, or regenerate it "
            "with `argus run --out <its run directory>` (resumes from the store)"
        )
    return {**data, "schema": SCHEMA}, schema


def results_from_data(data: Any, source: str = "results.json") -> Results:
    """Validate parsed results.json data (upgrading an older version it can read); ResultsError names the
    source and the field."""
    if not isinstance(data, dict):
        raise ResultsError(f"{source}: the top level must be an object, got {type(data).__name__}")
    data, old = _upgraded(data, source)
    try:
        return Results.model_validate(data, by_alias=True)
    except ValidationError as e:
        hint = ""
        if old is not None:
            hint = (
                f"; it was written by an older ARGUS-EVAL (schema {old!r}): regenerate it with "
                "`argus run --out <its run directory>` (resumes from the store, no model is called again)"
            )
        raise ResultsError(f"{source}: {field_error(e)}{hint}") from None


def load_results(path: str | os.PathLike[str]) -> Results:
    """The results.json at path (a str or any os.PathLike), validated; ResultsError (naming the file and
    field) when it is missing, unreadable, not JSON, or does not fit the Results model."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except FileNotFoundError:
        raise ResultsError(f"{path} not found; run `argus run --out {path.parent}` to produce it") from None
    except (OSError, ValueError, RecursionError) as e:
        raise ResultsError(f"{path} is not readable JSON ({e})") from None
    return results_from_data(data, str(path))
