"""One exception type per failure kind. Every message names the file, key or sample and the fix.

The CLI turns any ArgusError into one line on stderr and exit status 2. `did_you_mean` is the hint an
unknown name's line carries.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path


def did_you_mean(name: str, choices: Iterable[str], prefix: str = "") -> str:
    """ " (did you mean 'X'?)" for the choice closest to a mistyped name (X with prefix, e.g. "zoo:"),
    or "" when none is close: the hint every unknown-name line carries."""
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean {prefix + close[0]!r}?)" if close else ""


class ArgusError(Exception):
    """Base of every error ARGUS-EVAL raises on purpose (user-facing, one line).

    key: the config key the error is about, relative to the model entry it came from ("device",
    "options.concurrency"), when one setting caused it; whoever knows where the entry sits in the config
    (models[0].tasks.reasoning) puts the two together in the message."""

    def __init__(self, message: str = "", *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class ConfigError(ArgusError):
    """A run config is missing, unreadable, or fails validation (unknown key, bad value)."""


class UnknownNameError(ArgusError):
    """A registry lookup for a name that is not registered (model, dataset, task, format, perturbation)."""


class RegistryError(ArgusError):
    """A registered object (built in, a plugin's entry point) is not of its registry's type, or a frozen
    registry is changed."""


class PluginError(RegistryError):
    """An installed plugin (an entry point) that a run names cannot be used: its module fails to import,
    it names an object of the wrong type, or it claims a built-in's name. One line naming the
    distribution, the entry-point group and the entry point; runs that do not name it never see it."""


class DatasetError(ArgusError):
    """An annotation file is missing, malformed, or inconsistent (names file, record and field)."""


class DataNotFoundError(DatasetError):
    """A data file or folder a dataset entry names does not exist. path: the first one looked for, so
    that the runner can say which --data-root would find it."""

    def __init__(self, message: str, *, path: Path) -> None:
        super().__init__(message)
        self.path = path


class SampleError(ArgusError):
    """One sample cannot be used (e.g. its image fails to decode). Counted, fatal only with --strict."""


class ModelLoadError(ArgusError):
    """A model spec names nothing loadable, or its checkpoint is incomplete."""


class CheckpointError(ArgusError):
    """A shipped checkpoint file is missing or its hash does not match the manifest."""


class ModelCallError(ArgusError):
    """A model call failed for a batch or a sample (processor rejected an image, API error)."""


class CapabilityError(ArgusError):
    """A task needs a protocol that a model does not offer and no substitute exists."""


class PerturbationError(ArgusError):
    """Unknown perturbation name, severity outside 1..5, or an image that cannot be perturbed."""


class MetricError(ArgusError):
    """Metric inputs are inconsistent (ids missing, NaN in a similarity matrix, ...)."""


class StoreError(ArgusError):
    """The record store is unreadable or from an incompatible schema version."""


class ResultsError(ArgusError):
    """A results.json is broken or from an incompatible version (names the field)."""


class StrictModeError(ArgusError):
    """A sample was skipped or failed while --strict was set."""


class ExecutorError(ArgusError):
    """An executor cannot run the plan: cluster unreachable, too small, or on other versions; workers lost."""


class OutputError(ArgusError):
    """An output cannot be written: disk full, read-only or unwritable folder, name too long, --out a file."""


class ModelObjectError(ArgusError):
    """A Python object given to ``argus_eval.evaluate(models=...)`` offers no capability (or lacks a
    method of one it declares): names the model, the object's type and the missing methods."""
