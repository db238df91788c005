"""The manifest block of results.json: what ran, on what, with which versions and seeds."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from argus_eval.results_model.base import Block, Json


class Seeds(Block):
    """The run seed (perturbations, sampling) and the bootstrap seed."""

    run: int
    bootstrap: int


class GitInfo(Block):
    """The source revision (None outside a git checkout) and whether it had local edits."""

    revision: str | None
    dirty: bool | None


class Checkpoint(Block):
    """A checkpoint that served cells: its (redacted) spec and fingerprint."""

    spec: str
    fingerprint: str


class ManifestModel(Block):
    """A model of the run: its checkpoint (spec, fingerprint), or for a composite model the checkpoint
    serving each task (tasks); further keys a model kind records are kept as written."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, Json] = Field(init=False)

    spec: str | None = None
    fingerprint: str | None = None
    tasks: dict[str, Checkpoint] | None = None


class ManifestDataset(Block):
    """A dataset of the run: its fingerprint and how many annotation records the loader skipped."""

    fingerprint: str
    skipped_records: int


class LeftOutPair(Block):
    """A (model, task) or (model, task, dataset) the plan left out, and why."""

    model: str
    task: str
    dataset: str | None = None
    reason: str


class NotApplicable(Block):
    """A (task, dataset) whose dataset carries nothing for the task: expected, not a failure."""

    task: str
    dataset: str


class OutDir(Block):
    """Where a run whose --out was a symlink wrote: the path given and the folder it resolved to once."""

    given: str
    resolved: str


class Manifest(Block):
    """The run's config (redacted), seeds, package versions, git revision, hardware, and its plan."""

    config: dict[str, Json]
    seeds: Seeds
    versions: dict[str, str]
    git: GitInfo
    hardware: dict[str, Json]
    models: dict[str, ManifestModel]
    datasets: dict[str, ManifestDataset]
    protocols: list[str]
    skipped: list[LeftOutPair]
    not_applicable: list[NotApplicable]
    out_dir: OutDir | None = None  # only when --out was a symlink

    @property
    def run_name(self) -> str:
        """The config's name ("run" when it has none)."""
        name = self.config.get("name")
        return name if isinstance(name, str) else "run"
