"""ShapesWorld: executor on hand-built scenes, program re-execution, round trip, determinism, domains."""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from argus_eval.data.clevr.program import ProgramError, family_of
from argus_eval.data.formats import FORMATS, LoadContext
from argus_eval.data.loaders import shapesworld as sw_loader
from argus_eval.data.shapesworld import ANSWER_VOCAB, DOMAINS, generate, generate_split, run_to_answer
from argus_eval.data.shapesworld.captions import CountIs, Exists, OnlyOne, Related, ShapeInventory, TruthIndex
from argus_eval.data.shapesworld.questions import TEMPLATES
from argus_eval.data.shapesworld.scene import SceneObject, relationships


def node(fn: str, inputs: list[int] | None = None, values: list[str] | None = None) -> dict[str, Any]:
    return {"function": fn, "inputs": inputs or [], "value_inputs": values or []}


def hand_scene() -> dict[str, Any]:
    # x grows to the right, y away from the camera.
    objs = [
        SceneObject("cube", "red", "large", "metal", x=-2.0, y=0.0, rotation=0),  # 0: leftmost
        SceneObject("sphere", "blue", "small", "rubber", x=0.0, y=2.0, rotation=0),  # 1: middle, far
        SceneObject("cube", "blue", "small", "rubber", x=2.0, y=-1.0, rotation=0),  # 2: rightmost, nearest
    ]
    return {"objects": [dict(o.__dict__) for o in objs], "relationships": relationships(objs)}


def test_relationships_follow_coordinates() -> None:
    rel = hand_scene()["relationships"]
    assert rel["left"][2] == [0, 1]  # objects left of the rightmost cube
    assert rel["right"][0] == [1, 2]
    assert rel["behind"][0] == [1]  # only the sphere (y=2) is farther than y=0
    assert rel["front"][0] == [2]


@pytest.mark.parametrize(
    ("program", "answer"),
    [
        ([node("scene"), node("filter_shape", [0], ["cube"]), node("count", [1])], "2"),
        ([node("scene"), node("filter_color", [0], ["green"]), node("exist", [1])], "no"),
        # What colour is the sphere?
        (
            [
                node("scene"),
                node("filter_shape", [0], ["sphere"]),
                node("unique", [1]),
                node("query_color", [2]),
            ],
            "blue",
        ),
        # How many things are left of the small cube?  (red cube and sphere)
        (
            [
                node("scene"),
                node("filter_size", [0], ["small"]),
                node("filter_shape", [1], ["cube"]),
                node("unique", [2]),
                node("relate", [3], ["left"]),
                node("count", [4]),
            ],
            "2",
        ),
        # Is the sphere the same colour as the small cube?
        (
            [
                node("scene"),
                node("filter_shape", [0], ["sphere"]),
                node("unique", [1]),
                node("query_color", [2]),
                node("scene"),
                node("filter_size", [4], ["small"]),
                node("filter_shape", [5], ["cube"]),
                node("unique", [6]),
                node("query_color", [7]),
                node("equal_color", [3, 8]),
            ],
            "yes",
        ),
        # How many other things have the same size as the sphere?  (the small cube)
        (
            [
                node("scene"),
                node("filter_shape", [0], ["sphere"]),
                node("unique", [1]),
                node("same_size", [2]),
                node("count", [3]),
            ],
            "1",
        ),
        # Are there more blue things than cubes?  2 vs 2
        (
            [
                node("scene"),
                node("filter_color", [0], ["blue"]),
                node("count", [1]),
                node("scene"),
                node("filter_shape", [3], ["cube"]),
                node("count", [4]),
                node("greater_than", [2, 5]),
            ],
            "no",
        ),
        # How many things are red or spheres?  (union: red cube, sphere)
        (
            [
                node("scene"),
                node("filter_color", [0], ["red"]),
                node("scene"),
                node("filter_shape", [2], ["sphere"]),
                node("union", [1, 3]),
                node("count", [4]),
            ],
            "2",
        ),
        # What shape is the thing that is both right of the red cube and behind the small cube?  (sphere)
        (
            [
                node("scene"),
                node("filter_color", [0], ["red"]),
                node("unique", [1]),
                node("relate", [2], ["right"]),
                node("scene"),
                node("filter_size", [4], ["small"]),
                node("filter_shape", [5], ["cube"]),
                node("unique", [6]),
                node("relate", [7], ["behind"]),
                node("intersect", [3, 8]),
                node("unique", [9]),
                node("query_shape", [10]),
            ],
            "sphere",
        ),
    ],
)
def test_executor_on_hand_built_scene(program: list[dict[str, Any]], answer: str) -> None:
    assert run_to_answer(program, hand_scene()) == answer


def test_executor_rejects_non_unique_and_accepts_generator_spelling() -> None:
    scene = hand_scene()
    with pytest.raises(ProgramError):
        run_to_answer([node("scene"), node("filter_shape", [0], ["cube"]), node("unique", [1])], scene)
    old: list[dict[str, Any]] = [
        {"type": "scene", "inputs": []},
        {"type": "filter_color", "inputs": [0], "side_inputs": ["blue"]},
        {"type": "count", "inputs": [1]},
    ]
    assert run_to_answer(old, scene) == "2"


def test_family_inferred_from_program_structure() -> None:
    assert family_of([node("scene"), node("count", [0])]) == "zero_hop"
    assert family_of(
        [node("scene"), node("unique", [0]), node("relate", [1], ["left"]), node("count", [2])]
    ) == ("one_hop")
    assert (
        family_of(
            [node("scene"), node("count", [0]), node("scene"), node("count", [2]), node("less_than", [1, 3])]
        )
        == "compare_integer"
    )


def test_caption_facts_on_hand_built_scene() -> None:
    scene = hand_scene()
    objs, rels = scene["objects"], scene["relationships"]
    assert ShapeInventory((("cube", 2), ("sphere", 1))).holds(objs, rels)
    assert not ShapeInventory((("cube", 2),)).holds(objs, rels)  # the sphere is not listed
    assert Related((("color", "red"),), "left", (("shape", "sphere"),)).holds(objs, rels)
    assert not Related((("color", "red"),), "behind", (("shape", "sphere"),)).holds(objs, rels)
    assert Exists((("size", "small"), ("color", "blue"), ("shape", "cube"))).holds(objs, rels)
    assert OnlyOne((("shape", "sphere"),), "color", "blue").holds(objs, rels)
    assert not OnlyOne((("shape", "cube"),), "color", "red").holds(objs, rels)  # two cubes
    assert CountIs((("color", "blue"),), 2).holds(objs, rels)
    assert CountIs((), 3).holds(objs, rels)


@pytest.fixture(scope="module")
def small_split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate_split(tmp_path_factory.mktemp("sw"), "studio", "val", 12, 7, 8)


def test_stored_programs_reexecute_to_stored_answers(small_split: Path) -> None:
    questions = json.loads((small_split / "questions" / "CLEVR_val_questions.json").read_text())["questions"]
    scenes = json.loads((small_split / "scenes" / "CLEVR_val_scenes.json").read_text())["scenes"]
    assert len(questions) >= 12 * 6
    for q in questions:
        assert run_to_answer(q["program"], scenes[q["image_index"]]) == q["answer"]
        assert q["answer"] in ANSWER_VOCAB


def test_layout_and_images(small_split: Path) -> None:
    coco = json.loads((small_split / "annotations" / "captions_val.json").read_text())
    assert len(coco["images"]) == 12 and len(coco["annotations"]) == 60
    for im in coco["images"]:
        with Image.open(small_split / "images" / "val" / im["file_name"]) as img:
            assert img.size == (im["width"], im["height"]) and img.mode == "RGB"
    assert (small_split / "images" / "val" / "CLEVR_val_000011.png").exists()


def test_round_trip_generator_to_loader(tmp_path: Path) -> None:
    spec = FORMATS.get("shapesworld")
    opts = spec.options.model_validate(
        {
            "name": "x",
            "format": "shapesworld",
            "domain": "palette",
            "split": "val",
            "n_images": 6,
            "train_images": 4,
            "questions_per_image": 5,
            "seed": 3,
        }
    )
    ds = spec.load(opts, LoadContext(cache_dir=tmp_path))
    expected = generate("palette", "val", 6, 3, 5).samples()
    assert ds.samples == expected
    assert ds.answer_vocab == ANSWER_VOCAB and len(ANSWER_VOCAB) == 28
    train = generate("palette", "train", 4, 3, 5)
    assert set(ds.caption_bank) == {c for caps in train.captions for c in caps}
    for s in ds.samples:
        assert (ds.image_root / s.image).is_file()  # type: ignore[operator]


def test_also_true_of_is_exact(tmp_path: Path) -> None:
    gen = generate("clutter", "test", 25, 1, 0)
    graphs = [(s["objects"], s["relationships"]) for s in gen.scenes]
    index = TruthIndex(graphs)
    rng = random.Random(0)
    from argus_eval.data.shapesworld.captions import facts_for_scene

    for i, (objs, rels) in enumerate(graphs):
        for fact in facts_for_scene(rng, objs, rels):
            assert fact.holds(objs, rels)  # every caption is true of its own image
            brute = [k for k, g in enumerate(graphs) if k != i and fact.holds(*g)]
            assert index.true_of(fact, exclude=i) == brute
            # A second ask is answered from the index's memo: still exact, for any excluded scene.
            j = rng.randrange(len(graphs))
            assert index.true_of(fact, exclude=j) == [
                k for k, g in enumerate(graphs) if k != j and fact.holds(*g)
            ]
    assert all(len(c) == 5 and len(set(c)) == 5 for c in gen.captions)


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_generation_is_byte_deterministic(tmp_path: Path) -> None:
    a = _digest(generate_split(tmp_path / "a", "clutter", "test", 4, 11, 4))
    b = _digest(generate_split(tmp_path / "b", "clutter", "test", 4, 11, 4))
    c = _digest(generate_split(tmp_path / "c", "clutter", "test", 4, 12, 4))
    assert a == b
    assert a.keys() == c.keys() and all(a[k] != c[k] for k in a if k.endswith(".png"))


def test_splits_and_domains_get_different_scenes() -> None:
    test = generate("studio", "test", 3, 0, 0).scenes
    val = generate("studio", "val", 3, 0, 0).scenes
    other = generate("palette", "test", 3, 0, 0).scenes
    assert test[0]["objects"] != val[0]["objects"] and test[0]["objects"] != other[0]["objects"]


def test_domains_differ_in_rendering() -> None:
    stats = {}
    for name in DOMAINS:
        rendered: dict[str, Image.Image] = {}
        generate(name, "test", 6, 0, 0, sink=rendered.__setitem__)
        arr = np.stack([np.asarray(im, np.float32) for im in rendered.values()])
        high_freq = float(np.abs(np.diff(arr, axis=2)).mean())  # texture and sensor noise
        warmth = float(arr[..., 0].mean() - arr[..., 2].mean())  # red minus blue
        stats[name] = (high_freq, warmth)
    assert stats["clutter"][0] > 2 * stats["studio"][0]
    assert stats["palette"][1] > stats["studio"][1] + 15


def test_answers_balanced_and_families_present() -> None:
    gen = generate("studio", "train", 150, 0, 10)
    families = {q["template_filename"].removesuffix(".json") for q in gen.questions}
    assert families == {t.family for t in TEMPLATES}
    binary = Counter(q["answer"] for q in gen.questions if q["answer"] in ("yes", "no"))
    assert 0.4 < binary["yes"] / (binary["yes"] + binary["no"]) < 0.6
    zero_hop_query = [
        q
        for q in gen.questions
        if q["program"][-1]["function"].startswith("query_") and q["template_filename"] == "zero_hop.json"
    ]
    assert len(zero_hop_query) > 0.2 * len(gen.questions)  # easy grounded questions in good proportion


def test_cache_is_reused_and_marked_complete(tmp_path: Path) -> None:
    first = sw_loader.ensure_split(tmp_path, "studio", "test", 2, 0, 2)
    assert (first / sw_loader.MARKER).exists()
    stamp = (first / "questions" / "CLEVR_test_questions.json").stat().st_mtime_ns
    again = sw_loader.ensure_split(tmp_path, "studio", "test", 2, 0, 2)
    assert again == first and (first / "questions" / "CLEVR_test_questions.json").stat().st_mtime_ns == stamp
    assert not [p for p in (tmp_path / "shapesworld").iterdir() if p.name.startswith(".")]


def test_unknown_domain_is_named(tmp_path: Path) -> None:
    from argus_eval.errors import DatasetError

    with pytest.raises(DatasetError, match=r"unknown ShapesWorld domain 'moon'.*studio"):
        sw_loader.ensure_split(tmp_path, "moon", "test", 2, 0, 2)
