"""The report reads only what the run made (report/roots.py): images under the run's folder or its data
roots; a samples.jsonl line naming any other file (edited, or a link out of a root) is not read and is
counted. A line nested deeper than MAX_DEPTH is one error naming the file and line, never a traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from argus_eval.errors import ResultsError
from argus_eval.report.gallery import build_gallery
from argus_eval.report.roots import data_roots, inside
from argus_eval.report.samples import MAX_DEPTH, iter_samples


def _line(sid: str, image_path: str, **extra: Any) -> dict[str, Any]:
    base = {"model": "m", "task": "t", "dataset": "d", "condition": "clean", "sample_id": sid}
    return {**base, "score": 0.0, "image": Path(image_path).name, "image_path": image_path, **extra}


def _png(path: Path, color: tuple[int, int, int]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (20, 20), color).save(path)
    return path


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_the_gallery_reads_images_only_under_the_run_and_its_data_roots(tmp_path: Path) -> None:
    data = tmp_path / "data"
    inside_root = _png(data / "coco" / "a.png", (200, 0, 0))
    in_run = _png(tmp_path / "run" / "b.png", (0, 200, 0))
    secret = _png(tmp_path / "home" / "secret.png", (0, 0, 200))
    link = data / "coco" / "link.png"
    os.symlink(secret, link)  # a link inside a root that points out of it
    config = {
        "data_root": str(data),
        "cache_dir": str(tmp_path / "cache"),
        "datasets": [{"name": "d", "format": "karpathy", "annotations": "coco/ann.json", "images": "coco"}],
    }
    roots = data_roots(config, tmp_path / "run")
    assert (data / "coco").resolve() in roots and (tmp_path / "run").resolve() in roots
    assert not inside(secret, roots) and not inside(link, roots) and inside(inside_root, roots)
    samples = _write(
        tmp_path / "run" / "samples.jsonl",
        [
            _line("s1", str(inside_root)),
            _line("s2", str(in_run)),
            _line("s3", str(secret)),
            _line("s4", str(link)),
            _line("s5", "/etc/hostname"),
            _line("s6", str(data / "coco" / ".." / ".." / "home" / "secret.png")),
        ],
    )
    g = build_gallery(samples, per_cell=10, max_total=10, roots=roots)
    shown = {it["sample_id"]: it["thumb"] for it in g.items}
    assert shown["s1"] is not None and shown["s2"] is not None
    assert [shown[s] for s in ("s3", "s4", "s5", "s6")] == [None] * 4
    assert len(g.thumbnails) == 2 and g.outside_roots == 4 and g.missing_images == 0
    # without roots (a caller of build_gallery alone), every readable file is shown as before
    assert build_gallery(samples, per_cell=10, max_total=10).outside_roots == 0


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1000, 200_000])
def test_a_line_nested_too_deep_is_one_error_naming_file_and_line(tmp_path: Path, depth: int) -> None:
    deep = "[" * depth + "]" * depth
    good = json.dumps(_line("ok", "/x.png"))
    bad = good[:-1] + f', "prediction": {deep}}}'
    path = tmp_path / "samples.jsonl"
    path.write_text(good + "\n" + bad + "\n", encoding="utf-8")
    with pytest.raises(ResultsError) as ei:
        list(iter_samples(path))
    assert str(ei.value).startswith(f"{path}:2: a value is nested deeper than {MAX_DEPTH} levels")


def test_a_line_at_the_depth_bound_reads(tmp_path: Path) -> None:
    nested: Any = "leaf"
    for _ in range(MAX_DEPTH):
        nested = [nested]
    path = _write(tmp_path / "samples.jsonl", [_line("ok", "/x.png", prediction=nested, question={"a": [1]})])
    (line,) = iter_samples(path)
    assert line.prediction == nested
