"""Dataset validation behind `argus datasets --check CONFIG`: load each entry, verify every referenced image
exists and decodes, and report counts (samples by kind, skipped records, families, missing/corrupt images).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from argus_eval.data.formats import LoadContext, format_spec, load_dataset
from argus_eval.data.images import load_image, readable_file
from argus_eval.data.paths import image_inside_root
from argus_eval.data.types import Dataset, SkippedRecord
from argus_eval.errors import ConfigError, SampleError

# Skipped records named in the summary (all of them are in --json).
SHOWN_SKIPS = 10


@dataclass
class CheckReport:
    """What check_dataset found."""

    name: str
    counts: dict[str, int]
    images: int = 0
    missing: list[str] = field(default_factory=list)
    corrupt: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)  # links out of the image root, refused
    skipped: int = 0
    skipped_records: list[SkippedRecord] = field(default_factory=list)  # each named: file, record, reason
    families: dict[str, int] = field(default_factory=dict)
    unscorable: int = 0

    @property
    def ok(self) -> bool:
        return not self.missing and not self.corrupt and not self.outside

    def summary(self) -> str:
        """One line per finding, first line the verdict."""
        head = "ok" if self.ok else "PROBLEMS"
        lines = [
            f"{self.name}: {head}: {self.counts.get('images', 0)} image samples, "
            f"{self.counts.get('questions', 0)} questions ({self.unscorable} unscorable), "
            f"{self.images} image files checked, {len(self.missing)} missing, {len(self.corrupt)} corrupt, "
            f"{self.skipped} records skipped"
            + (f", {len(self.outside)} links out of the image root" if self.outside else "")
        ]
        if self.families:
            lines.append("  families: " + ", ".join(f"{k} {v}" for k, v in sorted(self.families.items())))
        lines += [f"  missing: {m}" for m in self.missing[:10]]
        lines += [f"  corrupt: {c}" for c in self.corrupt[:10]]
        lines += [f"  refused: {c}" for c in self.outside[:10]]
        lines += [f"  skipped: {s.line()}" for s in self.skipped_records[:SHOWN_SKIPS]]
        if len(self.skipped_records) > SHOWN_SKIPS:
            lines.append(f"  skipped: ... and {len(self.skipped_records) - SHOWN_SKIPS} more (all in --json)")
        return "\n".join(lines)


def check_dataset(ds: Dataset, decode: bool = True) -> CheckReport:
    """Verify that each distinct image of ds exists (and decodes, when decode) and count what it holds."""
    q = sum(1 for s in ds.samples if s.question is not None)
    report = CheckReport(
        name=ds.name,
        counts={"images": len(ds.samples) - q, "questions": q},
        skipped=len(ds.skipped),
        skipped_records=list(ds.skipped),
        families=dict(Counter(str(s.metadata["family"]) for s in ds.samples if "family" in s.metadata)),
        unscorable=sum(1 for s in ds.samples if s.metadata.get("unscorable")),
    )
    seen: set[str] = set()
    for s in ds.samples:
        if s.image is None or s.image in seen:
            continue
        seen.add(s.image)
        path = ds.image_path(s)
        if not readable_file(path):
            report.missing.append(f"{s.sample_id}: {path}")
            continue
        try:
            image_inside_root(ds, s)
        except SampleError as e:
            report.outside.append(str(e))
            continue
        if decode:
            try:
                load_image(path, s.sample_id)
            except SampleError as e:
                report.corrupt.append(str(e))
    report.images = len(seen)
    return report


def load_entry(entry: Mapping[str, Any], ctx: LoadContext) -> Dataset:
    """Validate one config dataset entry against its format's options and load it."""
    fmt = entry.get("format")
    if not isinstance(fmt, str):
        raise ConfigError(f"dataset entry {dict(entry)!r}: missing 'format'")
    spec = format_spec(fmt)
    try:
        options = spec.options.model_validate(dict(entry))
    except ValidationError as e:
        raise ConfigError(f"dataset {entry.get('name', '?')!r} ({fmt}): {e}") from None
    return load_dataset(options, ctx)


def check_entries(
    entries: Sequence[Mapping[str, Any]], ctx: LoadContext, decode: bool = True
) -> list[CheckReport]:
    """Load and check every dataset entry of a config."""
    return [check_dataset(load_entry(e, ctx), decode=decode) for e in entries]
