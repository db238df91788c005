"""Read training captions for substitute protocols (e.g. captioning by retrieving from a bank).

The file kind is recognised by its content, not its name: a COCO captions object, a Karpathy split object
(train and restval images), or a LAVIS/BLIP flat list.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from argus_eval.data.loaders._common import expect, read_json
from argus_eval.errors import DatasetError


def _coco(top: dict[str, Any]) -> list[str]:
    return [
        a["caption"] for a in top["annotations"] if isinstance(a, dict) and isinstance(a.get("caption"), str)
    ]


def _karpathy(top: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for im in top["images"]:
        if isinstance(im, dict) and im.get("split") in ("train", "restval"):
            out.extend(s["raw"] for s in im.get("sentences", []) if isinstance(s, dict) and "raw" in s)
    return out


def _lavis(entries: list[Any]) -> list[str]:
    out: list[str] = []
    for e in entries:
        cap = e.get("caption") if isinstance(e, dict) else None
        out.extend([cap] if isinstance(cap, str) else [c for c in cap or [] if isinstance(c, str)])
    return out


def read_caption_bank(path: Path) -> tuple[str, ...]:
    """Deduplicated captions in file order."""
    top = expect(read_json(path, "caption bank"), (dict, list), path, "the top level")
    if isinstance(top, list):
        caps = _lavis(top)
    elif isinstance(top.get("annotations"), list):
        caps = _coco(top)
    elif isinstance(top.get("images"), list):
        caps = _karpathy(top)
    else:
        raise DatasetError(
            f"{path}: not a COCO captions, Karpathy or LAVIS file (no 'annotations' or 'images')"
        )
    return tuple(dict.fromkeys(c.strip() for c in caps if c.strip()))
