"""Named models of the paper: short names for their official checkpoints (loading them needs the hub)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from argus_eval.models.protocols import CAPTION, CHOOSE, CLASSIFY, EMBED, GENERATE, POOL, SCORE_PAIRS
from argus_eval.registry import Registry


@dataclass(frozen=True)
class Preset:
    """A preset name, the spec it stands for, its adapter family and the capabilities it will offer;
    config: the file under models/published holding its checkpoint's published config.json (what
    `argus profile --size-only` sizes it from without a download), "" when none is shipped."""

    name: str
    spec: str
    family: str
    capabilities: frozenset[str]
    paper_checkpoint: bool = True
    note: str = ""
    config: str = ""


PRESETS: Registry[Preset] = Registry("model preset", base=Preset)
PUBLISHED = Path(__file__).resolve().parent / "published"
# the scheme of presets (models/loading.py): "preset:clip-vit-b32", or the bare name "clip-vit-b32"
PRESET_SCHEME = "preset"


def preset_named(spec: str) -> Preset | None:
    """The preset a spec names (``clip-vit-b32`` or ``preset:clip-vit-b32``); None when it names none."""
    name = spec.removeprefix(f"{PRESET_SCHEME}:")
    return PRESETS.get(name) if name in PRESETS else None


def _add(p: Preset) -> None:
    PRESETS.register(p.name, p)


_add(
    Preset(
        "clip-vit-b32",
        "hf:openai/clip-vit-base-patch32",
        "clip",
        frozenset({EMBED, SCORE_PAIRS}),
        config="clip-vit-b32.json",
    )
)
_add(
    Preset(
        "blip-itm-large-coco",
        "hf:Salesforce/blip-itm-large-coco",
        "blip",
        frozenset({EMBED, SCORE_PAIRS}),
        config="blip-itm-large-coco.json",
    )
)
_add(Preset("blip-caption-base", "hf:Salesforce/blip-image-captioning-base", "blip", frozenset({CAPTION})))
_add(Preset("blip-vqa-base", "hf:Salesforce/blip-vqa-base", "blip", frozenset({GENERATE})))
_add(
    Preset(
        "lxmert-vqa",
        "hf:unc-nlp/lxmert-vqa-uncased",
        "lxmert",
        frozenset({CLASSIFY}),
        note="needs region features: options.region_features, e.g. {kind: frcnn-vg} (the detector it was "
        "trained on) or a precomputed npz/h5/tsv file",
        config="lxmert-vqa.json",
    )
)
_add(
    Preset(
        "gemma-3-4b",
        "hf:google/gemma-3-4b-it",
        "gemma3",
        frozenset({GENERATE, CHOOSE, SCORE_PAIRS, POOL}),
        config="gemma-3-4b.json",
    )
)
_add(
    Preset(
        "qwen2.5-vl-3b",
        "hf:Qwen/Qwen2.5-VL-3B-Instruct",
        "qwen2_5_vl",
        frozenset({GENERATE, CHOOSE, SCORE_PAIRS, POOL}),
        config="qwen2.5-vl-3b.json",
    )
)
