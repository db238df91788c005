"""Complete processor files, so that a checkpoint's processor loads with and without torchvision.

transformers picks processor classes by what is installed. Without torchvision it uses PIL image
processors and has no video processors; with torchvision, a Qwen2-VL-style processor also needs a video
processor, read from video_preprocessor_config.json (or a "video_processor" entry of
processor_config.json, or a legacy preprocessor_config.json). A checkpoint saved where torchvision is
missing has none of these, and AutoProcessor fails on it wherever torchvision is installed (any GPU
machine). The design: every checkpoint the project writes (tiny builders, zoo recipes, the shipped zoo)
carries the complete files, rather than the loader assembling processors from parts. Files serve every
reader of the directory (this loader, transformers serve, a user's own script), work in either
environment and keep the checkpoint an ordinary Hugging Face one. A loader-side workaround would fix
only this loader and hide an incomplete checkpoint. When a processor still fails to load, load_processor
names the missing file and the command that writes it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from argus_eval.errors import ModelLoadError
from argus_eval.models.hf_common import call_pretrained, hf_module
from argus_eval.models.load_request import LoadRequest
from argus_eval.models.zoo_store import CHECKPOINTS as ZOO_ROOT

PROCESSOR_FILE = "processor_config.json"
IMAGE_PROCESSOR_FILE = "preprocessor_config.json"  # the pre-v5 name; transformers still reads it
VIDEO_PROCESSOR_FILE = "video_preprocessor_config.json"

# Processor class (processor_config.json's "processor_class") -> the video processor transformers pairs
# it with when torchvision is installed.
VIDEO_PROCESSORS = {
    "Qwen2_5_VLProcessor": "Qwen2VLVideoProcessor",
    "Qwen2VLProcessor": "Qwen2VLVideoProcessor",
}
# What a Qwen2-VL video processor shares with its image processor; every other video setting (frame
# sampling, token caps) keeps transformers' default.
SHARED_SETTINGS = (
    "do_convert_rgb",
    "do_normalize",
    "do_rescale",
    "do_resize",
    "image_mean",
    "image_std",
    "merge_size",
    "patch_size",
    "resample",
    "rescale_factor",
    "size",
    "temporal_patch_size",
)


def _read(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else None


def _processor_class(d: Path) -> str | None:
    """The checkpoint's processor class, from processor_config.json or the legacy image config."""
    for name in (PROCESSOR_FILE, IMAGE_PROCESSOR_FILE):
        cls = (_read(d / name) or {}).get("processor_class")
        if isinstance(cls, str):
            return cls
    return None


def video_settings(image_settings: dict[str, Any]) -> dict[str, Any]:
    """The video processor settings that match an image processor's (its to_dict(), or its config)."""
    return {k: image_settings[k] for k in SHARED_SETTINGS if k in image_settings}


def _video_config(d: Path, cls: str) -> dict[str, Any]:
    """The video processor config of checkpoint d: a nested one if processor_config.json has it, else
    one derived from the image processor's settings."""
    proc = _read(d / PROCESSOR_FILE) or {}
    nested = proc.get("video_processor")
    if isinstance(nested, dict):
        return nested
    image = proc.get("image_processor") or _read(d / IMAGE_PROCESSOR_FILE) or {}
    return {
        **video_settings(image),
        "processor_class": cls,
        "video_processor_type": VIDEO_PROCESSORS[cls],
    }


def missing_processor_files(d: Path) -> dict[str, str]:
    """The processor files checkpoint directory d lacks for transformers to load its processor with
    torchvision installed as well as without, each with why it is needed (empty: complete)."""
    if not (d / PROCESSOR_FILE).is_file() and not (d / IMAGE_PROCESSOR_FILE).is_file():
        return {PROCESSOR_FILE: "every processor reads its settings from it"}
    cls = _processor_class(d)
    if cls not in VIDEO_PROCESSORS:
        return {}
    nested = "video_processor" in (_read(d / PROCESSOR_FILE) or {})
    if nested or (d / VIDEO_PROCESSOR_FILE).is_file() or (d / IMAGE_PROCESSOR_FILE).is_file():
        return {}
    why = f"transformers needs a video processor for {cls} where torchvision is installed"
    return {VIDEO_PROCESSOR_FILE: why}


def complete_processor_files(d: Path) -> list[str]:
    """Write the processor files checkpoint d lacks (derived from its own configs; no existing file is
    changed) and return their names. A video-capable processor always gets a standalone
    video_preprocessor_config.json: the file readers look for first."""
    cls = _processor_class(d)
    if cls not in VIDEO_PROCESSORS or (d / VIDEO_PROCESSOR_FILE).is_file():
        return []
    text = json.dumps(_video_config(d, cls), indent=2, sort_keys=True) + "\n"
    (d / VIDEO_PROCESSOR_FILE).write_text(text, encoding="utf-8")
    return [VIDEO_PROCESSOR_FILE]


def save_processor(processor: Any, out_dir: Path) -> None:
    """processor.save_pretrained, then the files it leaves out in this environment (see module doc)."""
    processor.save_pretrained(out_dir)
    complete_processor_files(Path(out_dir))


def _fix(d: Path, name: str) -> str:
    """How to write the missing file `name` of checkpoint d."""
    if name == PROCESSOR_FILE:
        return "save the model's processor into it (processor.save_pretrained)"
    if d.resolve().parent == ZOO_ROOT.resolve():
        return f"run `argus zoo complete {d.name}` to write it (and record it in the zoo manifest)"
    return (
        "write it from the checkpoint's own image processor settings with `python -c \"from "
        "argus_eval.models.processor_files import complete_processor_files as c; "
        f"c(__import__('pathlib').Path('{d}'))\"`, or save the processor where torchvision is installed"
    )


def load_processor(req: LoadRequest) -> Any:
    """AutoProcessor of a checkpoint. When a local checkpoint's processor fails to load and a file is
    missing, the ModelLoadError names the directory, the file, why it is needed and the fix."""
    tf = hf_module()
    kw = req.pretrained_kwargs()
    try:
        return call_pretrained(req, "processor", lambda: tf.AutoProcessor.from_pretrained(req.source, **kw))
    except ModelLoadError as e:
        d = Path(req.source)
        missing = missing_processor_files(d) if d.is_dir() else {}
        if not missing:
            raise
        name, why = next(iter(missing.items()))
        raise ModelLoadError(
            f"model {req.cfg.spec!r}: cannot load processor from {d}: {d / name} is missing ({why}); "
            f"{_fix(d, name)}"
        ) from e
