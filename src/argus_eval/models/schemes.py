"""Spec schemes: what the text before ``:`` in a model spec chooses (``hf:``, ``zoo:``, ``api:``, plugins).

A scheme is one object that owns everything the loader asks about its specs, so no code tests a scheme's
name: how to load one, how to check one without loading weights, what identifies its answers (its part
of the model fingerprint), where its config.json lies for sizing on the meta device, and whether a spec
of it is a short name for another spec (a preset: a bare name is one, through the ``preset`` scheme).
The built-in schemes live in ``models/loading.py``; a plugin registers a ``Scheme`` through the
``argus_eval.models`` entry-point group (or ``SCHEMES.register``), and a registered object of any other
type is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from argus_eval.models.protocols import Model, ModelInfo
from argus_eval.models.spec import ModelConfig
from argus_eval.registry import Registry


class Scheme:
    """Base of every spec scheme: ``load`` is required, the rest has a default a plugin may keep."""

    # a served model: its dtype and remote code are the server's, so they stay out of its fingerprint
    served = False

    def load(self, cfg: ModelConfig, target: str) -> Model:
        """The adapter for ``scheme:target`` (ModelLoadError naming the spec when impossible)."""
        raise NotImplementedError

    def check(self, cfg: ModelConfig, target: str) -> None:
        """ModelLoadError when target names nothing loadable, found without loading weights."""
        del cfg, target  # a plugin scheme that checks nothing finds its errors when loading

    def identity(self, cfg: ModelConfig, target: str) -> dict[str, Any]:
        """What identifies the answers of ``scheme:target`` besides the shared settings (fingerprint
        parts): by default the target string, all that is known without loading."""
        del cfg
        return {"target": target}

    def config_dir(self, target: str) -> Path | None:
        """The local directory holding the checkpoint's config.json, or None when it has none here."""
        del target
        return None

    def config_file(self, target: str) -> tuple[Path, str] | None:
        """The config.json that sizes target on the meta device and, in words, where it came from; None
        when there is none here. By default the one in ``config_dir``."""
        d = self.config_dir(target)
        if d is None:
            return None
        path = d / "config.json"
        return path, str(path)

    def declared(self, cfg: ModelConfig, target: str) -> ModelInfo | None:
        """What the model offers, known without loading it (``argus run --dry-run`` plans with it); None
        (the default) when only loading it tells."""
        del cfg, target
        return None

    def stands_for(self, target: str) -> str | None:
        """The spec target is a short name for (a preset's checkpoint), which the loader then loads,
        checks and fingerprints in its place; None (the default) when this scheme loads target itself.
        ModelLoadError naming target when it is a short name for nothing."""
        del target
        return None


class LoaderScheme(Scheme):
    """A scheme made from a bare loading function (``load(cfg, target) -> Model``), for plugins that
    need nothing else."""

    def __init__(self, loader: Callable[[ModelConfig, str], Model]) -> None:
        self._loader = loader

    def load(self, cfg: ModelConfig, target: str) -> Model:
        return self._loader(cfg, target)


SCHEMES: Registry[Scheme] = Registry("model scheme", entry_point_group="argus_eval.models", base=Scheme)
