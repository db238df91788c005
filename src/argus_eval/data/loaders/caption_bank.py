"""Read training captions for substitute protocols (e.g. captioning by retrieving from a bank).

The file kind is recognised by its content, not its name: a COCO captions object, a Karpathy split object
(train and restval images), or a LAVIS/BLIP flat list. An entry that is not non-empty, valid text (a number,
a lone surrogate) is left out: the bank is a pool of candidate answers, not scored records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from argus_eval.data.loaders._common import expect, read_json
from argus_eval.errors import DatasetError


def _coco(top: dict[str, Any]) -> list[Any]:
    return [
        a["caption"] for a in top["annotations"] if isinstance(a, dict) and isinstance(a.get("caption"), str)
    ]


def _karpathy(top: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for im in top["images"]:
        if isinstance(im, dict) and im.get("split") in ("train", "restval"):
            sentences = im.get("sentences")
            if isinstance(sentences, list):
                out.extend(s.get("raw") for s in sentences if isinstance(s, dict))
    return out


def _lavis(entries: list[Any]) -> list[Any]:
    out: list[Any] = []
    for e in entries:
        cap = e.get("caption") if isinstance(e, dict) else None
        out.extend(cap if isinstance(cap, list) else [cap])
    return out


def _usable(text: Any) -> bool:
    """A caption the bank can offer: non-empty text that is valid Unicode (no lone surrogate)."""
    if not isinstance(text, str) or not text.strip():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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
    return tuple(dict.fromkeys(c.strip() for c in caps if _usable(c)))
