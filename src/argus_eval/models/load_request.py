"""What a family loader is handed (models/loading.py), in a module without torch: choosing and naming a
model must not import torch, so that a run of served models only never loads it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from argus_eval.models.spec import ModelConfig


@dataclass(frozen=True)
class LoadRequest:
    """Everything a family loader needs: the user's config, where the weights are, and their identity."""

    cfg: ModelConfig
    source: str  # a local directory or a hub id
    hf_config: dict[str, Any]  # config.json as a dict
    fingerprint: str
    family: str
    extra: dict[str, Any] = field(default_factory=dict)

    def pretrained_kwargs(self) -> dict[str, Any]:
        """Keyword arguments shared by every from_pretrained call (revision, remote code)."""
        kw: dict[str, Any] = {"trust_remote_code": self.cfg.trust_remote_code}
        if self.cfg.revision is not None:
            kw["revision"] = self.cfg.revision
        return kw
