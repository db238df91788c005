"""Finding a detector checkpoint and loading its state dict strictly.

A detector is a directory holding ``config.yaml`` and its weights (``pytorch_model.bin``, as published,
or ``model.safetensors``), named by its path or ``hf:ID_OR_DIR`` (a hub id is fetched only when the
hub is allowed, HF_HUB_OFFLINE=0). Loading is strict: every tensor of the architecture must be in the
file with its shape, and the file may hold nothing else, except BatchNorm's ``num_batches_tracked``
counters (meaningless at inference) and the cell anchors (computed from the config when absent).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from argus_eval.errors import ModelLoadError
from argus_eval.models.frcnn.config import FrcnnConfig, read_config
from argus_eval.models.frcnn.model import FasterRCNN

CONFIG_NAME = "config.yaml"
WEIGHT_NAMES = ("model.safetensors", "pytorch_model.bin")
ANCHORS = "proposal_generator.anchor_generator.cell_anchors.0"
_IGNORED_SUFFIX = ".num_batches_tracked"


def resolve_detector(spec: str) -> Path:
    """The local directory of a detector spec (a path, or hf:ID_OR_DIR); ModelLoadError naming it."""
    target = spec.removeprefix("hf:")
    local = Path(target).expanduser()
    if local.is_dir():
        return local.resolve()
    if target.startswith(("/", ".", "~")) or target.count("/") != 1:
        raise ModelLoadError(f"detector {spec!r}: directory {local} does not exist")
    try:
        from huggingface_hub import snapshot_download

        path = snapshot_download(target, allow_patterns=[CONFIG_NAME, *WEIGHT_NAMES])
    except Exception as e:  # offline, unknown or gated repo: all mean "cannot load"
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ModelLoadError(
            f"detector {spec!r} is neither a local directory nor a reachable hub repo ({first}); "
            "allow the hub (HF_HUB_OFFLINE=0) or point options.region_features.detector at a local copy"
        ) from None
    return Path(path)


def _read_weights(directory: Path) -> dict[str, torch.Tensor]:
    for name in WEIGHT_NAMES:
        path = directory / name
        if not path.is_file():
            continue
        try:
            if path.suffix == ".safetensors":
                from safetensors.torch import load_file

                return dict(load_file(str(path)))
            data = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as e:  # truncated file, not a state dict, a pickle of something else
            raise ModelLoadError(
                f"detector weights {path} are unreadable ({type(e).__name__}: {e})"
            ) from None
        if isinstance(data, Mapping) and isinstance(data.get("model"), Mapping):
            data = data["model"]  # a detectron2-style {"model": state_dict}
        if not isinstance(data, Mapping) or not all(isinstance(v, torch.Tensor) for v in data.values()):
            raise ModelLoadError(f"detector weights {path} are not a state dict of tensors")
        return {str(k): v for k, v in data.items()}
    raise ModelLoadError(f"detector {directory} has no weights ({' or '.join(WEIGHT_NAMES)})")


def _legacy_name(key: str) -> str:
    """Old checkpoints name batch-norm affines gamma and beta."""
    if key.endswith(".gamma"):
        return key[: -len("gamma")] + "weight"
    if key.endswith(".beta"):
        return key[: -len("beta")] + "bias"
    return key


def check_state_dict(
    state: Mapping[str, torch.Tensor], expected: Mapping[str, torch.Size], source: str
) -> dict[str, torch.Tensor]:
    """state renamed and filtered to exactly the expected tensors; ModelLoadError naming the first
    missing, unexpected or misshapen tensor (and how many there are of each kind)."""
    placed: dict[str, torch.Tensor] = {}
    extra: list[str] = []
    for key, value in state.items():
        name = _legacy_name(key)
        if name.endswith(_IGNORED_SUFFIX):
            continue
        if name in expected:
            placed[name] = value
        else:
            extra.append(key)
    missing = [k for k in expected if k not in placed and k != ANCHORS]
    if missing:
        raise ModelLoadError(
            f"detector {source}: tensor {missing[0]} is missing from the checkpoint ({len(missing)} "
            "missing in all); the file is incomplete or of another architecture"
        )
    if extra:
        raise ModelLoadError(
            f"detector {source}: unexpected tensor {extra[0]} in the checkpoint ({len(extra)} unexpected "
            "in all); the file is of another architecture or config.yaml does not match it"
        )
    for key, value in placed.items():
        if tuple(value.shape) != tuple(expected[key]):
            raise ModelLoadError(
                f"detector {source}: tensor {key} has shape {tuple(value.shape)}, the architecture in "
                f"config.yaml expects {tuple(expected[key])}"
            )
        # the architecture is float throughout: an integer tensor (anchors included) would be
        # truncated or cast silently, so it is refused rather than converted
        if not value.is_floating_point():
            raise ModelLoadError(
                f"detector {source}: tensor {key} has dtype {value.dtype}; the architecture expects "
                "floating point"
            )
        # NaN or inf weights give NaN features that still score and pad like real ones
        if not value.is_meta and value.numel() and not bool(torch.isfinite(value).all()):
            raise ModelLoadError(
                f"detector {source}: tensor {key} holds NaN or infinite values; the checkpoint is corrupt"
            )
    return placed


def build_detector(cfg: FrcnnConfig, state: Mapping[str, torch.Tensor], source: str) -> FasterRCNN:
    """The detector of cfg with exactly the tensors of state (strictly checked), in eval mode."""
    with torch.device("meta"):
        model = FasterRCNN(cfg)
    expected = {k: v.shape for k, v in model.state_dict().items()}
    placed = check_state_dict(state, expected, source)
    if ANCHORS not in placed:
        from argus_eval.models.frcnn.rpn import cell_anchors

        placed[ANCHORS] = cell_anchors(cfg.anchor_sizes, cfg.aspect_ratios)
    model.load_state_dict({k: v.float() for k, v in placed.items()}, strict=True, assign=True)
    model.proposal_generator.anchor_generator.cell_anchors[0].requires_grad_(False)
    return model.eval()


def detector_config(directory: Path, overrides: Mapping[str, Any]) -> FrcnnConfig:
    """The config.yaml of a detector directory with the run's overrides (OVERRIDABLE settings)."""
    cfg_path = directory / CONFIG_NAME
    if not cfg_path.is_file():
        raise ModelLoadError(f"detector {directory} has no {CONFIG_NAME}")
    return replace(read_config(cfg_path), **overrides).check(str(directory))


def load_detector(directory: Path, cfg: FrcnnConfig) -> FasterRCNN:
    """The detector stored in a directory, its weights under cfg's architecture."""
    return build_detector(cfg, _read_weights(directory), str(directory))
