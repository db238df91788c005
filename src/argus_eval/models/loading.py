"""From a ModelConfig to a loaded adapter: scheme dispatch, family detection, fingerprints, presets.

Schemes ("hf", "api", "zoo", "null", "object", "preset", plus plugins from the entry-point group
``argus_eval.models``) are ``Scheme`` objects (``models/schemes.py``) in ``SCHEMES``: each maps the text
after ``scheme:`` to an adapter, checks it without loading and says what identifies its answers. A spec
with no scheme is a preset name, and a preset stands for another spec (``route``): loading, checking,
fingerprints and served-ness follow it to the scheme of that spec. Hugging Face checkpoints are
dispatched on config.json's ``model_type`` (then ``architectures``) through the family registry below.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argus_eval.errors import ModelLoadError, RegistryError, UnknownNameError
from argus_eval.models import fingerprint as fp
from argus_eval.models.load_request import LoadRequest
from argus_eval.models.objects import OBJECT_SCHEME, ObjectScheme
from argus_eval.models.options import call_only_options
from argus_eval.models.presets import PRESET_SCHEME, PRESETS, PUBLISHED, Preset
from argus_eval.models.protocols import Model, ModelInfo
from argus_eval.models.regions import declared_regions
from argus_eval.models.schemes import SCHEMES, Scheme
from argus_eval.models.spec import ModelConfig
from argus_eval.models.zoo_store import zoo_dir
from argus_eval.registry import CALLABLE, Registry

FamilyLoader = Callable[[LoadRequest], Model]

# Keyed by config.json model_type; values are lazy "module:function" loaders taking a LoadRequest.


def _admit_family(name: str, loader: object) -> FamilyLoader:
    """A family as the registry holds it: a function taking a LoadRequest (RegistryError otherwise)."""
    if not callable(loader):
        raise RegistryError(
            f"model family {name!r} is registered as {type(loader).__name__}, not callable; "
            "register a function taking a LoadRequest and returning the adapter (models/loading.py)"
        )
    return loader  # type: ignore[no-any-return]


HF_FAMILIES: Registry[FamilyLoader] = Registry(
    "model family", entry_point_group="argus_eval.model_families", base=CALLABLE, admit=_admit_family
)
# config.json model types of the dual encoders (one adapter loads them; models/sizing.py sizes them)
DUAL_ENCODER_TYPES = ("clip", "siglip", "siglip2", "chinese_clip", "altclip", "align")
for _t in DUAL_ENCODER_TYPES:
    HF_FAMILIES.register(_t, "argus_eval.models.hf_dual:load_dual_encoder")
HF_FAMILIES.register("blip", "argus_eval.models.hf_blip:load_blip")
HF_FAMILIES.register("lxmert", "argus_eval.models.hf_lxmert:load_lxmert")
HF_FAMILIES.register("gemma3", "argus_eval.models.hf_vlm:load_vlm")
HF_FAMILIES.register("qwen2_5_vl", "argus_eval.models.hf_vlm:load_qwen2_5_vl")
HF_FAMILIES.register("image-text-to-text", "argus_eval.models.hf_vlm:load_vlm")
GENERIC_FAMILY = "image-text-to-text"

WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.safetensors.index.json", "*.pt")


# A spec whose text before ":" names no scheme is a preset name (`argus models`): "clip-vit-b32".
BARE_SCHEME = PRESET_SCHEME


def _split(spec: str) -> tuple[str, str]:
    """('hf', 'openai/clip...') for schemed specs; (BARE_SCHEME, spec) for a bare name."""
    scheme, sep, target = spec.partition(":")
    if sep and scheme in SCHEMES:
        return scheme, target
    return BARE_SCHEME, spec


@dataclass(frozen=True)
class Route:
    """Where a spec loads: the spec itself once every short name (a preset) is replaced by the spec it
    stands for, its scheme's name and object, and the text after ``scheme:``."""

    spec: str
    scheme: str
    handler: Scheme
    target: str

    def config(self, cfg: ModelConfig) -> ModelConfig:
        """cfg naming this route's spec (cfg itself when it names it already)."""
        return cfg if cfg.spec == self.spec else cfg.model_copy(update={"spec": self.spec})


def route(spec: str) -> Route:
    """The scheme that loads spec, through the specs its scheme says it stands for (a preset's);
    ModelLoadError naming the spec when it names nothing loadable (an unknown preset, or short names
    that stand for each other)."""
    seen = [spec]
    while True:
        name, target = _split(seen[-1])
        handler = SCHEMES.get(name)
        stands_for = handler.stands_for(target)
        if stands_for is None:
            return Route(seen[-1], name, handler, target)
        if stands_for in seen:
            raise ModelLoadError(
                f"model {spec!r} names nothing loadable: {' -> '.join([*seen, stands_for])} stand for each "
                "other; name a spec with a scheme (hf:ID_OR_DIR, api:URL#MODEL or zoo:NAME)",
                key="spec",
            )
        seen.append(stands_for)


def _looks_like_path(target: str) -> bool:
    return target.startswith(("/", ".", "~")) or Path(target).exists() or target.count("/") > 1


def _read_local_config(cfg: ModelConfig, d: Path) -> dict[str, Any]:
    cfg_file = d / "config.json"
    if not cfg_file.is_file():
        raise ModelLoadError(
            f"model {cfg.spec!r}: {d} has no config.json; not a Hugging Face checkpoint", key="spec"
        )
    if not any(next(d.glob(p), None) for p in WEIGHT_PATTERNS):
        raise ModelLoadError(
            f"model {cfg.spec!r}: {d} has no weight files ({', '.join(WEIGHT_PATTERNS)}); "
            "the checkpoint is incomplete (its config.json alone sizes it: "
            f"argus profile --size-only -m hf:{d})",
            key="spec",
        )
    try:
        data: dict[str, Any] = json.loads(cfg_file.read_text())
    except (OSError, ValueError) as e:
        raise ModelLoadError(
            f"model {cfg.spec!r}: {cfg_file} is not readable JSON ({e})", key="spec"
        ) from None
    return data


def _read_hub_config(cfg: ModelConfig, repo_id: str) -> dict[str, Any]:
    try:
        from huggingface_hub import hf_hub_download

        path = hf_hub_download(repo_id, "config.json", revision=cfg.revision)
        data: dict[str, Any] = json.loads(Path(path).read_text())
    except Exception as e:  # offline, unknown repo, gated repo: all mean "cannot load"
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ModelLoadError(
            f"model {cfg.spec!r}: {repo_id!r} is neither a local directory nor a reachable hub repo "
            f"({first})",
            key="spec",
        ) from None
    return data


def detect_family(hf_config: dict[str, Any]) -> str:
    """Family key of a checkpoint: its model_type when registered, else the generic image-text-to-text."""
    model_type = str(hf_config.get("model_type", ""))
    if model_type in HF_FAMILIES:
        return model_type
    return GENERIC_FAMILY


def _hf_target(cfg: ModelConfig, target: str) -> tuple[str, bool]:
    """(source, is_local) for an hf target; a path-like target that is not a directory is an error."""
    p = Path(target).expanduser()
    if p.is_dir():
        return str(p.resolve()), True
    if _looks_like_path(target):
        raise ModelLoadError(f"model {cfg.spec!r}: directory {p} does not exist", key="spec")
    return target, False


def load_hf(cfg: ModelConfig, target: str) -> Model:
    """Load a Hugging Face checkpoint (local directory or hub id) through its family adapter."""
    source, local = _hf_target(cfg, target)
    hf_config = _read_local_config(cfg, Path(source)) if local else _read_hub_config(cfg, source)
    family = detect_family(hf_config)
    req = LoadRequest(
        cfg=cfg, source=source, hf_config=hf_config, fingerprint=model_fingerprint(cfg), family=family
    )
    model: Model = HF_FAMILIES.get(family)(req)
    return model


class HfScheme(Scheme):
    """``hf:ID_OR_DIR``: a local checkpoint directory (its files fingerprint it) or a hub id (with its
    revision)."""

    def load(self, cfg: ModelConfig, target: str) -> Model:
        return load_hf(cfg, target)

    def check(self, cfg: ModelConfig, target: str) -> None:
        source, local = _hf_target(cfg, target)
        if local:
            _read_local_config(cfg, Path(source))

    def identity(self, cfg: ModelConfig, target: str) -> dict[str, Any]:
        source, local = _hf_target(cfg, target)
        if local:
            return {"files": fp.dir_digest(Path(source))}
        return {"hub": {"id": source, "revision": cfg.revision or "main"}}

    def config_dir(self, target: str) -> Path | None:
        d = Path(target).expanduser()
        return d if d.is_dir() else None


class ZooScheme(Scheme):
    """``zoo:NAME``: a built-in checkpoint shipped in the package, checked against its manifest."""

    def load(self, cfg: ModelConfig, target: str) -> Model:
        return load_hf(cfg, str(zoo_dir(target)))

    def check(self, cfg: ModelConfig, target: str) -> None:
        zoo_dir(target)

    def identity(self, cfg: ModelConfig, target: str) -> dict[str, Any]:
        return {"files": fp.dir_digest(zoo_dir(target))}

    def config_dir(self, target: str) -> Path | None:
        return zoo_dir(target)


class ApiScheme(Scheme):
    """``api:URL#MODEL``: an OpenAI-compatible chat-completions endpoint."""

    served = True

    def load(self, cfg: ModelConfig, target: str) -> Model:
        from argus_eval.models.api import OpenAICompatibleModel

        return OpenAICompatibleModel(cfg, target, model_fingerprint(cfg))

    def check(self, cfg: ModelConfig, target: str) -> None:
        self.load(cfg, target).close()  # parses the spec; no request is sent

    def identity(self, cfg: ModelConfig, target: str) -> dict[str, Any]:
        url, _, name = target.partition("#")
        return {"api": {"url": url.rstrip("/"), "model": name}}


class NullScheme(Scheme):
    """``null:NAME``: a model whose forward costs nothing (models/null.py), for harness benchmarks."""

    def load(self, cfg: ModelConfig, target: str) -> Model:
        from argus_eval.models.null import NullModel  # lazy: only benchmarks and tests load it

        return NullModel(cfg, target, model_fingerprint(cfg))


class PresetScheme(Scheme):
    """A preset name (``clip-vit-b32``, or ``preset:clip-vit-b32``): a short name for the spec of a paper
    checkpoint (models/presets.py). It stands for that spec, which the loader loads, checks and
    fingerprints through its own scheme; sizing reads the checkpoint's published config.json."""

    def stands_for(self, target: str) -> str:
        return _preset(target).spec

    def load(self, cfg: ModelConfig, target: str) -> Model:
        return load_model(cfg.model_copy(update={"spec": self.stands_for(target)}))

    def declared(self, cfg: ModelConfig, target: str) -> ModelInfo | None:
        """The preset table's family and capabilities (None for a name that is no preset: loading says
        why); its regions are the ones the options declare."""
        if target not in PRESETS:
            return None
        preset = PRESETS.get(target)
        regions = declared_regions(cfg.options)
        return ModelInfo(
            name=cfg.name,
            spec=preset.spec,
            fingerprint="(not loaded)",
            capabilities=frozenset(preset.capabilities),
            family=preset.family,
            extra={"regions": regions} if regions else {},
        )

    def config_file(self, target: str) -> tuple[Path, str]:
        try:
            preset = PRESETS.get(target)
        except UnknownNameError as e:
            raise ModelLoadError(f"model {target!r} names no preset and no scheme. {e}") from None
        if not preset.config:
            raise ModelLoadError(
                f"preset {target!r} ships no published config; put its config.json in a directory and "
                "size that (hf:DIR)"
            )
        path = PUBLISHED / preset.config
        return path, f"{path} (published config of {preset.spec})"


def _preset(name: str) -> Preset:
    try:
        return PRESETS.get(name)
    except UnknownNameError as e:
        raise ModelLoadError(
            f"model {name!r} names nothing loadable: not a preset and no scheme "
            f"(use hf:ID_OR_DIR, api:URL#MODEL or zoo:NAME). {e}",
            key="spec",
        ) from None


SCHEMES.register("hf", HfScheme())
SCHEMES.register("zoo", ZooScheme())
SCHEMES.register("api", ApiScheme())
SCHEMES.register("null", NullScheme())
SCHEMES.register(OBJECT_SCHEME, ObjectScheme())  # objects given to argus_eval.evaluate
SCHEMES.register(BARE_SCHEME, PresetScheme())


def load_model(cfg: ModelConfig) -> Model:
    """Load the model a config names, once. ModelLoadError (naming the spec and cause) when impossible."""
    way = route(cfg.spec)
    return way.handler.load(way.config(cfg), way.target)


def declared_info(cfg: ModelConfig) -> ModelInfo | None:
    """What the model of cfg offers as its scheme knows it without loading (a preset's row of the preset
    table), or None when only loading it tells."""
    scheme, target = _split(cfg.spec)
    return SCHEMES.get(scheme).declared(cfg, target)


def is_served(cfg: ModelConfig) -> bool:
    """Whether cfg's scheme (through its preset, for a preset) serves the model elsewhere: its calls are
    requests to a server, not forward passes here. False for a spec that names nothing."""
    try:
        return route(cfg.spec).handler.served
    except ModelLoadError:
        return False


def check_spec(cfg: ModelConfig) -> None:
    """ModelLoadError when a single-checkpoint config names nothing loadable, found without loading
    weights: an unknown preset or scheme, a missing local directory or one without config.json and
    weights, an unbuilt zoo model, a malformed api URL. A hub id is not looked up (that needs the hub)."""
    way = route(cfg.spec)
    way.handler.check(way.config(cfg), way.target)


def model_fingerprint(cfg: ModelConfig) -> str:
    """Identity of a model's answers, without loading it.

    Local directory: sha256 of its files; hub id: id + revision; api: url + model name; plus dtype,
    max_new_tokens, trust_remote_code and every option but the scheme's call-only ones. Not in it: where
    the model runs (device) and how inputs are batched (batch_size): every adapter answers the same at
    any batch size (tests/test_batch_invariance_*.py), so a record computed at one serves the other.
    A preset's is the fingerprint of the spec it stands for.
    """
    way = route(cfg.spec)
    cfg = way.config(cfg)
    options = fp.output_options(cfg.options, call_only_options(cfg.spec))
    parts: dict[str, Any] = {"scheme": way.scheme, "dtype": cfg.dtype, "options": options}
    if cfg.max_new_tokens is not None:  # caps every generation, so it changes answers
        parts["max_new_tokens"] = cfg.max_new_tokens
    if cfg.trust_remote_code:  # the checkpoint's own code runs instead of transformers' class
        parts["trust_remote_code"] = True
    parts.update(way.handler.identity(cfg, way.target))
    if way.handler.served:  # a served model: neither is ours to set
        parts.pop("dtype")
        parts.pop("trust_remote_code", None)
    return fp.combine(parts)


def describe_presets() -> list[dict[str, Any]]:
    """One row per preset for `argus models`: name, spec, family, capabilities, paper checkpoint."""
    rows = []
    for name in PRESETS.names():
        p = PRESETS.get(name)
        rows.append(
            {
                "name": p.name,
                "spec": p.spec,
                "family": p.family,
                "capabilities": sorted(p.capabilities),
                "paper_checkpoint": p.paper_checkpoint,
                "note": p.note,
            }
        )
    return rows
