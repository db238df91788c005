"""report/gallery.py: worst samples per cell, caps, deduplicated thumbnails."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from argus_eval.report.gallery import build_gallery, select_worst, thumbnail
from argus_eval.report.samples import SampleLine


def _rec(cell: str, sid: str, score: float | None, **extra: Any) -> dict[str, Any]:
    return {
        "model": cell,
        "task": "t",
        "dataset": "d",
        "condition": "clean",
        "sample_id": sid,
        "score": score,
        **extra,
    }


def test_select_worst_keeps_failed_then_lowest_per_cell() -> None:
    recs = [_rec("a", f"s{i}", s) for i, s in enumerate([0.9, 0.1, 1.0, 0.5, None, 0.1, 0.3] * 5)]
    recs = [{**r, "sample_id": f"{r['sample_id']}-{i}"} for i, r in enumerate(recs)]
    recs += [_rec("b", "only", 0.7), _rec("c", "perfect", 1.0)]
    lines = [SampleLine.model_validate(r) for r in recs]
    worst = select_worst(lines, per_cell=3)
    kept, total, candidates = worst.kept, worst.total, worst.candidates
    assert total == 37
    assert candidates == 37 - 5 - 1  # perfect scores are not failures
    assert [r.score for r in kept[("a", "t", "d", "clean")]] == [None, None, None]
    assert [r.score for r in select_worst(lines, per_cell=8).kept[("a", "t", "d", "clean")]] == [None] * 5 + [
        0.1,
        0.1,
        0.1,
    ]
    assert [r.sample_id for r in kept[("b", "t", "d", "clean")]] == ["only"]
    assert ("c", "t", "d", "clean") not in kept


def _img(path: Path, color: tuple[int, int, int], size: tuple[int, int] = (640, 480)) -> Path:
    Image.new("RGB", size, color).save(path)
    return path


def test_thumbnail_is_small_jpeg(tmp_path: Path) -> None:
    uri = thumbnail(_img(tmp_path / "x.png", (200, 10, 10)), 96)
    assert uri is not None and uri.startswith("data:image/jpeg;base64,")
    im = Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1])))
    assert max(im.size) == 96 and im.size == (96, 72)
    assert len(uri) < 4000
    (tmp_path / "bad.png").write_bytes(b"not an image")
    assert thumbnail(tmp_path / "bad.png", 96) is None


def test_gallery_dedupes_thumbnails_and_caps_round_robin(tmp_path: Path) -> None:
    shared = _img(tmp_path / "shared.png", (0, 128, 0))
    lines = []
    for cell in ("m1", "m2", "m3"):
        for i in range(10):
            lines.append(
                _rec(
                    cell,
                    f"s{i}",
                    i / 20,
                    image="shared.png",
                    image_path=str(shared),
                    prediction=f"p{i}",
                    reference=["r1", "r2"],
                    question="q?",
                )
            )
    lines.append(_rec("m1", "gone", 0.0, image="gone.png", image_path="/nowhere/gone.png"))
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    g = build_gallery(path, per_cell=4, max_total=7)
    assert len(g.items) == 7
    assert {it["model"] for it in g.items} == {"m1", "m2", "m3"}  # every cell keeps its worst
    assert len(g.thumbnails) == 1  # one image, one thumbnail
    assert g.total_samples == 31 and g.candidates == 31 and g.left_out == 24
    worst_m1 = [it for it in g.items if it["model"] == "m1"]
    assert worst_m1[0]["sample_id"] == "gone" and worst_m1[0]["thumb"] is None
    assert g.missing_images == 1
    m2 = next(it for it in g.items if it["model"] == "m2")
    assert m2["reference"] == ["r1", "r2"] and m2["question"] == "q?" and m2["thumb"] == "t0"


def test_gallery_clips_long_text(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text(
        json.dumps(_rec("m", "s", 0.0, prediction="x" * 5000, reference=[str(i) for i in range(9)])) + "\n",
        encoding="utf-8",
    )
    it = build_gallery(path).items[0]
    assert len(it["prediction"]) == 600 and it["prediction"].endswith("…")
    assert it["reference"][-1] == "(+4 more)" and len(it["reference"]) == 6


def test_perturbed_sample_shows_the_image_the_model_saw_beside_the_clean_one(tmp_path: Path) -> None:
    import numpy as np

    from argus_eval.data.images import load_image
    from argus_eval.perturb.conditions import Condition, apply_image, derive_seed

    img = _img(tmp_path / "a.png", (120, 60, 200), size=(64, 48))
    recs = [
        _rec("m", "s1", 0.0, condition="image:fog@5", image_path=str(img)),
        _rec("m", "s1", 0.2, condition="clean", image_path=str(img)),
    ]
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    g = build_gallery(path, per_cell=3, thumb_px=64, run_seed=7)
    by_cond = {it["condition"]: it for it in g.items}
    pert, clean = by_cond["image:fog@5"], by_cond["clean"]
    assert clean["thumb_perturbed"] is None and pert["thumb"] == clean["thumb"]
    assert pert["thumb_perturbed"] is not None and pert["thumb_perturbed"] != pert["thumb"]

    def pixels(uri: str) -> np.ndarray:
        data = base64.b64decode(uri.split(",", 1)[1])
        return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), dtype=np.float64)

    # an independent rebuild with the run's seed derivation gives the same picture (JPEG noise aside)
    cond = Condition.parse("image:fog@5")
    expected = apply_image(cond, load_image(img, "s1"), derive_seed(7, "s1", cond.id))
    shown = pixels(g.thumbnails[pert["thumb_perturbed"]])
    assert shown.shape == expected.shape
    assert np.abs(shown - expected).mean() < 12.0
    assert np.abs(pixels(g.thumbnails[pert["thumb"]]) - expected).mean() > 2 * np.abs(shown - expected).mean()
    # without the run seed, the gallery cannot rebuild the perturbation and says so on the page
    assert build_gallery(path, per_cell=3, thumb_px=64).items[0]["thumb_perturbed"] is None


def test_thumbnail_is_turned_by_exif_orientation_as_the_model_saw_it(tmp_path: Path) -> None:
    """A JPEG stored landscape with EXIF orientation 6 (turn 90 degrees clockwise) is loaded portrait by
    load_image; its thumbnail is portrait too, with the same picture (the top row's colour)."""
    from argus_eval.data.images import load_image

    pixels = np.zeros((40, 80, 3), np.uint8)
    pixels[:, :40] = (230, 20, 20)  # the stored left half red: after the turn, the top half
    pixels[:, 40:] = (20, 20, 230)
    exif = Image.Exif()
    exif[0x0112] = 6
    path = tmp_path / "turned.jpg"
    Image.fromarray(pixels).save(path, quality=95, exif=exif)
    seen = load_image(path)
    assert seen.shape == (80, 40, 3)
    uri = thumbnail(path, 64)
    assert uri is not None
    thumb = np.asarray(Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1]))).convert("RGB"))
    assert thumb.shape == (64, 32, 3)
    top, bottom = thumb[:24].reshape(-1, 3).mean(0), thumb[-24:].reshape(-1, 3).mean(0)
    assert top[0] > 180 > top[2] and bottom[2] > 180 > bottom[0]
    assert seen[:30].reshape(-1, 3).mean(0)[0] > 180  # the model's top half is red as well
