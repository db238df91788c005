"""Sizing a model from its config alone: the architecture built on the meta device (no weights, nothing
downloaded) and one reference sample per capability, run so that its FLOPs and weight reads can be
counted.

A reference sample is what one sample of a task sends the model, at sizes a person can state: an image at
the model's own resolution, a text of `text_tokens` tokens (a caption or question, padded to the dual
encoders' 16-token bucket), a chat prompt of `prompt_tokens` tokens around the image tokens, LXMERT's
`regions` region features, and for a generation its new tokens (the task's max_new_tokens). The same
workloads run on a real device too (benchmarks/bench_real_size.py times them), and a workload on meta
counts exactly what the same call counts with weights (tests/test_sizing.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from argus_eval.errors import ModelLoadError, UnknownNameError
from argus_eval.models.hf_common import hf_module
from argus_eval.models.loading import DUAL_ENCODER_TYPES, _split, detect_family
from argus_eval.models.schemes import SCHEMES
from argus_eval.models.size_bounds import bounded_build, check_params, check_sizes
from argus_eval.registry import CALLABLE, Registry


@dataclass(frozen=True)
class Reference:
    """The sizes of a reference sample (see the module docstring); image_size None: the model's own."""

    text_tokens: int = 16
    prompt_tokens: int = 32
    regions: int = 36
    image_size: int | None = None


@dataclass(frozen=True)
class Workload:
    """One sample of a capability: what it sends (in words) and run(new_tokens), which sends it
    (new_tokens matters only where generates is true). affine_until: up to how many new tokens each
    decode step costs a fixed amount more than the one before (one more cached position; None: any
    number), so that a count of the first steps extends exactly to the rest."""

    capability: str
    inputs: str
    run: Callable[[int], None]
    generates: bool = False
    affine_until: int | None = None


@dataclass(frozen=True)
class Family:
    """What a family's sizer gives: the capabilities its adapter declares and a workload for each
    capability it has a reference sample for."""

    capabilities: frozenset[str]
    workloads: dict[str, Workload]


@dataclass(frozen=True)
class Build:
    """What a sizer gets: the module, its transformers config, the reference sizes, where tensors go."""

    model: Any
    config: Any
    ref: Reference
    device: torch.device
    dtype: torch.dtype

    @property
    def data_device(self) -> torch.device:
        """Where token ids and grid sizes go: the CPU on meta (their values are read), else the device."""
        return torch.device("cpu") if self.device.type == "meta" else self.device

    def ids(self, n: int, fill: int = 1) -> torch.Tensor:
        return torch.full((1, n), fill, dtype=torch.long, device=self.data_device)

    def zeros(self, *shape: int) -> torch.Tensor:
        return torch.zeros(*shape, dtype=self.dtype, device=self.device)


Sizer = Callable[[Build], Family]
# Keyed like HF_FAMILIES (config.json model_type); sizing_families.py registers the paper's families.
SIZERS: Registry[Sizer] = Registry("sizing family", base=CALLABLE)
for _t in DUAL_ENCODER_TYPES:
    SIZERS.register(_t, "argus_eval.models.sizing_families:dual_encoder")
SIZERS.register("blip", "argus_eval.models.sizing_families:blip")
SIZERS.register("lxmert", "argus_eval.models.sizing_families:lxmert")
SIZERS.register("gemma3", "argus_eval.models.sizing_families:gemma3")
SIZERS.register("qwen2_5_vl", "argus_eval.models.sizing_families:qwen2_5_vl")


@dataclass(frozen=True)
class Sized:
    """A model built from its config: the module, its family and architecture, dtype, and workloads."""

    model: Any
    family: str
    architecture: str
    dtype: str
    capabilities: frozenset[str]
    workloads: dict[str, Workload]

    @property
    def params(self) -> int:
        return int(sum(p.numel() for p in self.model.parameters()))


def config_dtype(hf_config: dict[str, Any]) -> str:
    """The dtype a checkpoint's weights ship in (config.json torch_dtype or dtype), else float32."""
    dt = hf_config.get("dtype") or hf_config.get("torch_dtype") or "float32"
    return str(dt) if str(dt) in _DTYPES else "float32"


_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype of a config spelling; UnknownNameError listing the valid ones."""
    if name not in _DTYPES:
        raise UnknownNameError(f"unknown dtype {name!r}; valid: {', '.join(sorted(_DTYPES))}")
    return _DTYPES[name]


@contextmanager
def _default_dtype(dtype: torch.dtype) -> Iterator[None]:
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


def build(
    hf_config: dict[str, Any],
    device: str = "meta",
    dtype: str = "float32",
    source: str = "",
    ref: Reference | None = None,
) -> Sized:
    """The architecture of a config.json (its `architectures` class, else AutoModel) on `device` with
    random (meta: no) weights in dtype, and its workloads at the reference sizes `ref` (default
    Reference()). ModelLoadError naming `source` when transformers cannot build it."""
    tf = hf_module()
    family = detect_family(hf_config)
    arch = str((hf_config.get("architectures") or ["AutoModel"])[0])
    dt = torch_dtype(dtype)
    where = source or "config"
    check_sizes(hf_config, where)
    cls = _model_class(tf, arch, source)
    dev = torch.device(device)

    def make() -> Any:
        config = tf.AutoConfig.for_model(**hf_config)
        with torch.device(dev), _default_dtype(dt):
            return config, cls(config) if cls is not None else tf.AutoModel.from_config(config)

    config, model = bounded_build(make, where, arch)
    check_params(sum(p.numel() for p in model.parameters()), where)
    model = model.to(dt).eval()
    sizes = ref or Reference()
    fam = SIZERS.get(family)(Build(model, config, sizes, dev, dt)) if family in SIZERS else None
    caps = fam.capabilities if fam else frozenset()
    return Sized(model, family, arch, dtype, caps, dict(fam.workloads) if fam else {})


def _model_class(tf: Any, arch: str, source: str) -> Any:
    """The transformers model class config.json's `architectures` names, or None (AutoModel by
    model_type) when transformers has no such name. A name that is some other attribute of the library
    (`pipeline`, `AutoConfig`, a function) is refused: a config file is data, and must not pick what
    gets called."""
    if arch == "AutoModel" or not arch.isidentifier() or arch.startswith("_"):
        return None
    cls = getattr(tf, arch, None)
    if cls is None:
        return None
    # The abstract base is a PreTrainedModel subclass of itself, but builds nothing sizable.
    concrete = isinstance(cls, type) and issubclass(cls, tf.PreTrainedModel) and cls is not tf.PreTrainedModel
    if not concrete:
        raise ModelLoadError(
            f"{source or 'config'}: architectures[0] {arch!r} is not a transformers model class; sizing "
            "builds only model classes (drop `architectures` to build AutoModel from model_type)"
        )
    return cls


def read_config(spec: str) -> tuple[dict[str, Any], str]:
    """The config.json a spec names, without weights, and where it came from: a preset's published
    config (models/published), a local directory's config.json (hf:DIR; weights not needed), or a zoo
    checkpoint's. ModelLoadError with the fix for anything else."""
    scheme, target = _split(spec)
    handler = SCHEMES.get(scheme)
    found = handler.config_file(target)  # a preset's: its published config (models/published)
    stands_for = handler.stands_for(target) if found is None else None
    if stands_for is not None:  # a short name with no config of its own: the spec it stands for
        return read_config(stands_for)
    if found is None:
        raise ModelLoadError(
            f"model {spec!r}: sizing reads a local config.json (hf:DIR), a zoo model or a preset; "
            "put the checkpoint's config.json alone in a directory and pass hf:DIR"
        )
    path, where = found
    return _load_json(path, spec), where


def _load_json(path: Path, spec: str) -> dict[str, Any]:
    if not path.is_file():
        raise ModelLoadError(f"model {spec!r}: {path} does not exist; a Hugging Face config.json is needed")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ModelLoadError(f"model {spec!r}: {path} is not readable JSON ({e})") from None
    if not isinstance(data, dict):
        raise ModelLoadError(f"model {spec!r}: {path} holds no JSON object")
    return data
