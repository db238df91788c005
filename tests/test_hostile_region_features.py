"""Region features kept in the store are sealed (runner/store.py): an edited, truncated or re-sealed
non-finite entry is never used; it is deleted, the detector runs on that image again, the rejection is
counted in run_log.json, and the answers equal those of an undamaged store."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from argus_eval.runner.array_blob import pack as pack_arrays
from argus_eval.runner.array_blob import unpack as unpack_arrays
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
from argus_eval.runner.seal import seal, unseal
from frcnn_fixtures import lxmert_config


def _config(cache: Path, detector: Path, perturbations: list[dict[str, Any]]) -> dict[str, Any]:
    return lxmert_config(cache, detector, perturbations, resamples=0)


def _nan_resealed(blob: bytes) -> bytes:
    arrays = unpack_arrays(unseal(blob))
    name = next(k for k in sorted(arrays) if arrays[k].dtype.kind == "f")
    arrays[name].flat[0] = np.nan
    packed = pack_arrays(arrays)
    assert packed is not None
    return seal(packed)


DAMAGE: list[tuple[Callable[[bytes], bytes], str]] = [
    (lambda b: b[:-7], "does not match its digest"),
    (lambda b: b[: len(b) // 2] + bytes([b[len(b) // 2] ^ 0x10]) + b[len(b) // 2 + 1 :], "does not match"),
    (_nan_resealed, "non-finite"),
]
TYPOS = [{"text": "typos", "severity": 2}]


def test_damaged_region_features_are_detected_again_and_counted(
    tmp_path: Path, detector: Path, detected: list[int]
) -> None:
    cache = tmp_path / "cache"
    run(parse_config(_config(cache, detector, []), "t"), tmp_path / "out", quiet=True)
    assert sum(detected) == 3
    shutil.copytree(tmp_path / "out", tmp_path / "sound")
    with sqlite3.connect(tmp_path / "out" / "store.sqlite") as db:
        keys = [str(k) for (k,) in db.execute("SELECT key FROM features ORDER BY key")]
        assert len(keys) == 3
        for key, (change, _why) in zip(keys, DAMAGE, strict=True):
            (blob,) = db.execute("SELECT arrays FROM features WHERE key=?", (key,)).fetchone()
            db.execute("UPDATE features SET arrays=? WHERE key=?", (change(bytes(blob)), key))

    # a text perturbation shows the clean images: their regions come from the store, or the detector
    detected.clear()
    run(parse_config(_config(cache, detector, TYPOS), "t"), tmp_path / "sound", quiet=True)
    assert sum(detected) == 0  # the sound store serves all three
    damaged = run(parse_config(_config(cache, detector, TYPOS), "t"), tmp_path / "out", quiet=True)
    assert sum(detected) == 3 and damaged.stats.forward_calls > 0
    log = json.loads((tmp_path / "out" / "run_log.json").read_text())
    rejected = log["features_rejected"]
    assert sum(rejected.values()) == 3, rejected
    for _change, why in DAMAGE:
        assert any(why in reason for reason in rejected), (why, rejected)
    lines = {n: (tmp_path / n / "samples.jsonl").read_text() for n in ("out", "sound")}
    assert lines["out"] == lines["sound"]  # the same answers as from the undamaged regions
    # the entries were kept again, sound: another condition reads them with no detection
    detected.clear()
    more = [*TYPOS, {"text": "typos", "severity": 4}]
    run(parse_config(_config(cache, detector, more), "t"), tmp_path / "out", quiet=True)
    assert sum(detected) == 0
    assert "features_rejected" not in json.loads((tmp_path / "out" / "run_log.json").read_text())
