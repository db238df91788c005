"""Registers every dataset format in FORMATS. Import this module once to make them available:

    import argus_eval.data.loaders  # noqa: F401

Entries are lazy "module:SPEC" strings: a loader module (and whatever it imports) loads on first use.
"""

from __future__ import annotations

from argus_eval.data.formats import FORMATS

_FORMATS: dict[str, str] = {
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
}

for _name, _module in _FORMATS.items():
    if _name not in FORMATS:
        FORMATS.register(_name, f"argus_eval.data.loaders.{_module}:SPEC")
