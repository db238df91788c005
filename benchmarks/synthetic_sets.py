"""Writers of synthetic datasets in the official formats, shared by the benchmarks that need data at
scale (bench_scale.py, paper_layout.py): Karpathy split files, CLEVR questions (and scenes), Visual
Genome's image_data / region_descriptions / question_answers, and VCR jsonl, each with real image files
(JPEG photos-like gradients with noise, PNG flat shapes on grey as CLEVR renders). Everything is seeded:
the same arguments write the same bytes. Texts come from a small closed vocabulary; they mean nothing,
but they are valid text of the sizes the real sets have, so loaders, tokenizers and metrics run on them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

WORDS = [
    "a",
    "man",
    "woman",
    "dog",
    "cat",
    "red",
    "blue",
    "green",
    "small",
    "large",
    "cube",
    "ball",
    "table",
    "street",
    "car",
    "tree",
    "sits",
    "on",
    "near",
]
COLORS = ["red", "blue", "green", "gray", "brown", "purple", "cyan", "yellow"]
SHAPES = ["cube", "sphere", "cylinder"]
OBJECTS = ["person", "person", "person", "car", "horse", "dog", "chair", "bottle", "cup"]


def caption(rng: np.random.Generator) -> str:
    """A caption of 6 to 12 words."""
    return " ".join(rng.choice(WORDS, size=int(rng.integers(6, 13)))) + "."


def photo(rng: np.random.Generator, width: int, height: int) -> np.ndarray[Any, np.dtype[np.uint8]]:
    """A photo-like image: smooth gradients with noise, which JPEG compresses as it does photos."""
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    a, b, c = rng.uniform(0, 1, 3)
    base = np.stack([xx * a / 2.5, yy * b / 1.9, (xx + yy) * c / 4.4], axis=2)
    noise = rng.integers(0, 24, (height, width, 3), dtype=np.uint8)
    out: np.ndarray[Any, np.dtype[np.uint8]] = (base % 232).astype(np.uint8) + noise
    return out


def save_photo(rng: np.random.Generator, path: Path, size: tuple[int, int]) -> None:
    """A photo() of size (width, height) as a JPEG at path."""
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(photo(rng, *size)).save(path, quality=85)


def write_karpathy(
    annotations: Path,
    images: Path,
    n: int,
    *,
    name: Callable[[int], str],
    size: tuple[int, int] = (640, 480),
    filepath: str = "",
    dataset: str = "coco",
    split: str = "test",
    seed: int = 0,
) -> None:
    """A Karpathy split file at annotations with n images of split, 5 captions each, and the images:
    images/filepath/name(i) (JPEG, size). A COCO file ("coco") carries cocoid, Flickr's imgid alone."""
    rng = np.random.default_rng(seed)
    entries = []
    for i in range(n):
        fname = name(i)
        save_photo(rng, images / filepath / fname, size)
        raws = [caption(rng) for _ in range(5)]
        sentences = [
            {"raw": raw, "tokens": raw.rstrip(".").split(), "imgid": i, "sentid": 5 * i + j}
            for j, raw in enumerate(raws)
        ]
        entry: dict[str, Any] = {"filepath": filepath, "filename": fname, "imgid": i, "split": split}
        if dataset == "coco":
            entry["cocoid"] = i
        entry |= {"sentids": [s["sentid"] for s in sentences], "sentences": sentences}
        entries.append(entry)
    annotations.parent.mkdir(parents=True, exist_ok=True)
    annotations.write_text(json.dumps({"images": entries, "dataset": dataset}))


def clevr_question(rng: np.random.Generator) -> tuple[str, str, list[dict[str, Any]]]:
    """A CLEVR-like question, its answer and its program (count, exist or query_color)."""
    color, shape = rng.choice(COLORS), rng.choice(SHAPES)
    filt = [
        {"function": "scene", "inputs": [], "value_inputs": []},
        {"function": "filter_color", "inputs": [0], "value_inputs": [color]},
        {"function": "filter_shape", "inputs": [1], "value_inputs": [shape]},
    ]
    kind = int(rng.integers(0, 3))
    if kind == 0:
        prog = [*filt, {"function": "count", "inputs": [2], "value_inputs": []}]
        return f"How many {color} {shape}s are there?", str(int(rng.integers(0, 4))), prog
    if kind == 1:
        prog = [*filt, {"function": "exist", "inputs": [2], "value_inputs": []}]
        return f"Are there any {color} {shape}s?", str(rng.choice(["yes", "no"])), prog
    prog = [*filt[:1], {"function": "filter_shape", "inputs": [0], "value_inputs": [shape]}]
    prog += [{"function": "unique", "inputs": [1], "value_inputs": []}]
    prog += [{"function": "query_color", "inputs": [2], "value_inputs": []}]
    return f"What color is the {shape}?", str(rng.choice(COLORS)), prog


def write_clevr(
    root: Path,
    n_images: int,
    n_questions: int,
    *,
    split: str = "val",
    size: tuple[int, int] = (480, 320),
    scenes: bool = False,
    images: bool = True,
    seed: int = 1,
) -> None:
    """A CLEVR v1.0 folder at root: n_images PNGs in images/split/ (flat shapes on grey, as CLEVR renders;
    drawn but not saved without images) and n_questions in questions/CLEVR_split_questions.json, spread
    evenly over the images in order (each gets the floor or the ceiling of n_questions / n_images); with
    scenes, scenes/CLEVR_split_scenes.json listing each image's drawn objects."""
    from PIL import Image, ImageDraw

    width, height = size
    side = width // 12  # an object's box: 40 px on CLEVR's 480x320
    folder = root / "images" / split
    if images:
        folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    questions: list[dict[str, Any]] = []
    scene_list: list[dict[str, Any]] = []
    for i in range(n_images):
        im = Image.new("RGB", (width, height), (128, 128, 128))
        draw = ImageDraw.Draw(im)
        objects = []
        for _ in range(int(rng.integers(3, 8))):
            x, y = int(rng.integers(0, width - side)), int(rng.integers(0, height - side))
            fill = tuple(int(v) for v in rng.integers(0, 256, 3))
            round_ = rng.random() < 0.5
            box = (x, y, x + side, y + side)
            draw.ellipse(box, fill=fill) if round_ else draw.rectangle(box, fill=fill)
            shape = "sphere" if round_ else "cube"
            objects.append({"shape": shape, "pixel_coords": [x + side // 2, y + side // 2, 10.0]})
        name = f"CLEVR_{split}_{i:06d}.png"
        if images:
            im.save(folder / name, compress_level=1)
        scene_list.append({"image_index": i, "image_filename": name, "split": split, "objects": objects})
        for _ in range((i + 1) * n_questions // n_images - i * n_questions // n_images):
            text, answer, program = clevr_question(rng)
            questions.append(
                {
                    "question_index": len(questions),
                    "image_index": i,
                    "image_filename": name,
                    "split": split,
                    "question": text,
                    "answer": answer,
                    "program": program,
                }
            )
    info = {"split": split, "version": "1.0"}
    (root / "questions").mkdir(parents=True, exist_ok=True)
    (root / "questions" / f"CLEVR_{split}_questions.json").write_text(
        json.dumps({"info": info, "questions": questions})
    )
    if scenes:
        (root / "scenes").mkdir(parents=True, exist_ok=True)
        (root / "scenes" / f"CLEVR_{split}_scenes.json").write_text(
            json.dumps({"info": info, "scenes": scene_list})
        )


def write_visual_genome(
    image_data: Path,
    region_descriptions: Path,
    question_answers: Path,
    images: Path,
    n_images: int,
    *,
    regions_per_image: int = 8,
    qas_per_image: int = 3,
    size: tuple[int, int] = (64, 48),
    seed: int = 2,
) -> None:
    """Visual Genome v1.2's three files for n_images images (ids 1..n), each with regions_per_image
    region descriptions (boxes of distinct areas) and qas_per_image question answers, and the JPEGs:
    the first half under images/VG_100K_2/, the rest under images/VG_100K/, as the urls name them."""
    rng = np.random.default_rng(seed)
    data, regions, qas = [], [], []
    half = (n_images + 1) // 2
    for i in range(n_images):
        iid = i + 1
        folder = "VG_100K_2" if i < half else "VG_100K"
        save_photo(rng, images / folder / f"{iid}.jpg", size)
        url = f"https://cs.stanford.edu/people/rak248/{folder}/{iid}.jpg"
        data.append({"width": size[0], "height": size[1], "url": url, "image_id": iid, "coco_id": None})
        boxes = []
        for j in range(regions_per_image):
            w, h = int(rng.integers(4, size[0])), int(rng.integers(4, size[1]))
            phrase = " ".join(rng.choice(WORDS, size=int(rng.integers(2, 6))))
            rid = iid * 100 + j
            boxes.append({"region_id": rid, "image_id": iid, "phrase": phrase, "x": 0, "y": 0})
            boxes[-1] |= {"width": w, "height": h}
        regions.append({"id": iid, "regions": boxes})
        entries = []
        for j in range(qas_per_image):
            obj = str(rng.choice(WORDS[1:5] + WORDS[10:16]))
            answer = str(rng.choice(COLORS)).capitalize() + "."
            entries.append(
                {"qa_id": iid * 100 + j, "image_id": iid, "question": f"What color is the {obj}?"}
                | {"answer": answer, "a_objects": [], "q_objects": []}
            )
        qas.append({"id": iid, "qas": entries})
    for path, body in ((image_data, data), (region_descriptions, regions), (question_answers, qas)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(body))


def _vcr_tokens(rng: np.random.Generator, n_objects: int, words: int) -> list[Any]:
    """A VCR token list: words with object tags ([0], [1, 2]) among them."""
    out: list[Any] = [str(w) for w in rng.choice(WORDS, size=words)]
    out.insert(int(rng.integers(0, words)), [int(rng.integers(0, n_objects))])
    return [*out, "."]


def write_vcr(
    annotations: Path,
    images: Path,
    n_items: int,
    n_images: int,
    *,
    split: str = "val",
    size: tuple[int, int] = (64, 48),
    per_movie: int = 20,
    seed: int = 3,
) -> None:
    """A VCR v1.0 jsonl file of n_items annotations over n_images images (in order, each image the
    floor or ceiling of the mean), 4 answer and 4 rationale choices each with labels, and the JPEGs
    under images/<movie>/ (per_movie images a movie), as vcr1images holds them."""
    rng = np.random.default_rng(seed)
    annotations.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with annotations.open("w") as out:
        for i in range(n_images):
            movie = f"synthetic_{split}_{i // per_movie:05d}"
            img_fn = f"{movie}/{movie}_{i:05d}@0.jpg"
            save_photo(rng, images / img_fn, size)
            objects = [str(o) for o in rng.choice(OBJECTS, size=int(rng.integers(2, 6)))]
            for _ in range((i + 1) * n_items // n_images - i * n_items // n_images):
                aid = f"{split}-{written}"
                written += 1
                n = len(objects)
                rec = {
                    "movie": movie,
                    "objects": objects,
                    "img_fn": img_fn,
                    "metadata_fn": img_fn.removesuffix(".jpg") + ".json",
                    "question": _vcr_tokens(rng, n, 5),
                    "answer_choices": [_vcr_tokens(rng, n, 4) for _ in range(4)],
                    "rationale_choices": [_vcr_tokens(rng, n, 7) for _ in range(4)],
                    "answer_label": int(rng.integers(0, 4)),
                    "rationale_label": int(rng.integers(0, 4)),
                    "img_id": f"{split}-{i}",
                    "annot_id": aid,
                }
                out.write(json.dumps(rec) + "\n")
