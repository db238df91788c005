"""The dataset-format registry: a format name maps to an options model and a loader.

A run config's dataset entry is validated against its format's options model (unknown keys rejected),
then the loader turns it into a Dataset. No behaviour anywhere is keyed on a dataset's name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from argus_eval.data.types import Dataset
from argus_eval.errors import ConfigError, DatasetError
from argus_eval.registry import Registry


class DatasetOptions(BaseModel):
    """Options every dataset entry accepts; formats subclass this with their own fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Label of this dataset in results (free text; never changes behaviour).")
    format: str = Field(description="Registered format name, e.g. coco, karpathy, clevr, vcr, shapesworld.")
    limit: int | None = Field(default=None, ge=1, description="Keep the first N samples of each kind.")
    strict: bool = Field(default=False, description="Make any skipped record fatal.")
    allow_symlinks: bool = Field(
        default=False,
        description="Follow symbolic links that lead out of the image folder (refused by default: a link "
        "to /etc or a home folder would otherwise be read as an image).",
    )


class LoadContext(BaseModel):
    """What a loader may use besides its options: where to cache generated data, the run seed."""

    model_config = ConfigDict(frozen=True)

    cache_dir: Path
    seed: int = 0


@dataclass(frozen=True)
class FormatSpec:
    """How to read one format: its options model, loader, and a one-line description."""

    options: type[DatasetOptions]
    load: Callable[[DatasetOptions, LoadContext], Dataset]
    description: str


def _admit(name: str, spec: object) -> FormatSpec:
    """A format as the registry holds it: a FormatSpec (ConfigError otherwise)."""
    if not isinstance(spec, FormatSpec):
        raise ConfigError(
            f"dataset format {name!r} is registered as {type(spec).__name__}, not a FormatSpec; "
            "register a FormatSpec(options, load, description)"
        )
    return spec


FORMATS: Registry[FormatSpec] = Registry(
    "dataset format", entry_point_group="argus_eval.formats", base=FormatSpec, admit=_admit
)
# The built-in formats, defined and filled here: lazy "module:SPEC" entries, so a loader module (and what
# it imports) loads on first use and importing the registry imports no loader. A plugin names its
# FormatSpec in the entry-point group argus_eval.formats, or registers it with FORMATS.register.
for _name, _module in {
    "coco": "coco",
    "karpathy": "karpathy",
    "clevr": "clevr",
    "vcr": "vcr",
    "visual_genome": "visual_genome",
    "vqa": "vqa",
    "easy_vqa": "easy_vqa",
    "hf_datasets": "hf_datasets",
    "shapesworld": "shapesworld",
    "vlmevalkit-tsv": "vlmevalkit",
}.items():
    FORMATS.register(_name, f"argus_eval.data.loaders.{_module}:SPEC")


def format_spec(name: str) -> FormatSpec:
    """The registered format (the registry checks that it is a FormatSpec when it loads)."""
    return FORMATS.get(name)


def load_dataset(options: DatasetOptions, ctx: LoadContext) -> Dataset:
    """Load one dataset entry through its format's loader, with the entry's name and link policy.

    A dataset without a single usable sample is one DatasetError naming its files (and the first skip):
    it would otherwise pass as a dataset that no task applies to."""
    ds = format_spec(options.format).load(options, ctx)
    ds.name = options.name
    ds.allow_symlinks = options.allow_symlinks
    if not ds.samples:
        files = [str(v) for v in options.model_dump().values() if isinstance(v, Path)]
        why = (
            f"all {len(ds.skipped)} of its records were skipped, the first: {ds.skipped[0].source}: "
            f"{ds.skipped[0].record}: {ds.skipped[0].reason}"
            if ds.skipped
            else "its files hold no record"
        )
        raise DatasetError(
            f"dataset {options.name!r} ({', '.join(files) or options.format}): no usable sample: {why}"
        )
    return ds
