"""A perturbation a user registers (perturb/image.py, perturb/identity.py, runner/execute/stamps.py): its
records are stamped with its `version` or a fingerprint of its code, so a rerun into the same folder
recomputes what changed code made and nothing else, while the built-in perturbations keep the keys and
stamps they always had; its output is held to the uint8 HxWx3 contract (the reference corruptions'
output is still coerced); a notebook cell registering it again says how (replace=True)."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import argus_eval
from argus_eval.data.types import fingerprint_of
from argus_eval.errors import PerturbationError
from argus_eval.perturb import image as image_perturb
from argus_eval.perturb import text as text_perturb
from argus_eval.perturb.conditions import CLEAN, Condition, expand_conditions
from argus_eval.perturb.identity import code_fingerprint
from argus_eval.perturb.image import IMAGE_PERTURBATIONS, ImagePerturbation, corrupt
from argus_eval.perturb.text import TEXT_PERTURBATIONS
from argus_eval.perturb.worker import meaning
from argus_eval.registry import Registry
from argus_eval.runner.inputs.perturbed_store import FORMAT_VERSION, PerturbedStore, _library_versions

IMG = np.random.default_rng(5).integers(0, 256, (40, 52, 3), dtype=np.uint8)


def _compiled(source: str, name: str = "fn", module: str = "user_script", **env: Any) -> Any:
    """name as defined by source in a fresh module (a script run again, or edited, in a new process)."""
    mod = types.ModuleType(module)
    mod.__dict__.update({"np": np, **env})
    exec(compile(textwrap.dedent(source), f"<{module}>", "exec"), mod.__dict__)
    return mod.__dict__[name]


@pytest.fixture()
def registered() -> Iterator[list[str]]:
    """Names a test registers, taken back afterwards."""
    names: list[str] = []
    yield names
    for name in names:
        IMAGE_PERTURBATIONS.unregister(name)
        TEXT_PERTURBATIONS.unregister(name)


# -- built-ins: no identity, so their stamps and keys are what they were ------------------------------------


def test_built_in_perturbations_have_no_identity_and_keep_their_stamp_and_store_key() -> None:
    conditions = expand_conditions(
        [{"preset": "full"}, {"preset": "controls"}, {"image": list(image_perturb.names())}]
    )
    assert len(conditions) > 100
    for c in conditions:
        assert c.identity is None, c.id
    # the formulas of earlier releases, written out: a store made by one stays valid
    key = PerturbedStore.key("abc", "image:fog@3", 7)
    old = [FORMAT_VERSION, "abc", "image:fog@3", 7, _library_versions()]
    assert key == hashlib.sha256(json.dumps(old).encode()).hexdigest()
    assert PerturbedStore.key("abc", "image:fog@3", 7, "image:x") != key
    # what a worker compares for a built-in corruption is as it was
    noise = Condition.parse("image:gaussian_noise@2")
    said = meaning(noise.behaviour, noise)
    assert said == "argus_eval.perturb.image:_reference.<locals>.run ['gaussian_noise'] noise True"


def test_a_built_in_stamp_is_made_of_the_file_partner_and_seed_alone(tmp_path: Path) -> None:
    from argus_eval.runner.execute.stamps import CellStamps
    from argus_eval.runner.inputs.digests import digest

    path = tmp_path / "a.png"
    path.write_bytes(b"not really a png, digested by content")

    class _Dataset:
        def image_path(self, sample: Any) -> Path:
            return path

    class _Sample:
        sample_id, image = "s1", "a.png"

    class _Cell:
        dataset, samples = _Dataset(), [_Sample()]

        def __init__(self, condition: Condition) -> None:
            self.condition = condition

    for cid in ("clean", "image:gaussian_noise@3", "image:brightness@2", "text:typos@1"):
        c = Condition.parse(cid)
        stamps = CellStamps(_Cell(c), 11, {})  # type: ignore[arg-type]
        seed = 11 if c.uses_seed else None
        assert stamps["s1"] == fingerprint_of(digest(path), None, seed), cid


# -- the fingerprint -----------------------------------------------------------------------------------------

SOURCE = """
LEVEL = 3
TABLE = frozenset({"alpha", "beta", "gamma", "delta"})

def helper(image):
    return 255 - image

def fn(image, severity, seed, strength=0.5):
    assert "alpha" in TABLE
    return helper(image) // LEVEL
"""


def test_the_fingerprint_follows_the_code_and_nothing_else() -> None:
    base = code_fingerprint(_compiled(SOURCE))
    assert code_fingerprint(_compiled(SOURCE)) == base  # the same script run again
    moved = "\n\n# a comment, and the function lower in its file\n" + SOURCE
    assert code_fingerprint(_compiled(moved)) == base
    changes = {
        "body": SOURCE.replace("// LEVEL", "// LEVEL + 1"),
        "default": SOURCE.replace("strength=0.5", "strength=0.6"),
        "global constant": SOURCE.replace("LEVEL = 3", "LEVEL = 4"),
        "helper": SOURCE.replace("255 - image", "254 - image"),
        "set constant": SOURCE.replace('"delta"', '"epsilon"'),
        "name": SOURCE.replace("def fn(", "def fn2(") + "\nfn = fn2\n",
    }
    for what, source in changes.items():
        assert code_fingerprint(_compiled(source)) != base, what


def test_closures_partials_and_callable_objects_are_fingerprinted_by_what_they_hold() -> None:
    def make(k: float) -> Any:
        def fn(image: np.ndarray, severity: int, seed: int) -> np.ndarray:
            return (image * k).astype(np.uint8)

        return fn

    assert code_fingerprint(make(0.5)) == code_fingerprint(make(0.5))
    assert code_fingerprint(make(0.5)) != code_fingerprint(make(0.6))
    kernel = np.ones((3, 3))
    assert code_fingerprint(make(kernel)) != code_fingerprint(make(kernel * 2))  # type: ignore[arg-type]

    def scaled(image: np.ndarray, severity: int, seed: int, k: int = 1) -> np.ndarray:
        return image

    p1, p2 = functools.partial(scaled, k=2), functools.partial(scaled, k=3)
    assert code_fingerprint(p1) == code_fingerprint(functools.partial(scaled, k=2)) != code_fingerprint(p2)

    class Shift:
        def __init__(self, by: int) -> None:
            self.by = by

        def __call__(self, image: np.ndarray, severity: int, seed: int) -> np.ndarray:
            return image

    assert code_fingerprint(Shift(1)) == code_fingerprint(Shift(1)) != code_fingerprint(Shift(2))
    # no code to read: named by module and name, the same every time
    for fn in (len, np.add, np.fliplr, print):
        assert code_fingerprint(fn) == code_fingerprint(fn)
    assert code_fingerprint(np.add) != code_fingerprint(np.subtract)


def test_cycles_large_and_hostile_values_do_not_break_a_fingerprint() -> None:
    fn = _compiled(
        """
        BIG = list(range(100_000))
        def fn(image, severity, seed):
            return fn(image, severity - 1, seed) if severity > 1 and BIG else image
        """
    )
    assert code_fingerprint(fn) == code_fingerprint(fn)

    class Hostile:
        @property
        def __dict__(self) -> Any:  # type: ignore[override]
            raise RuntimeError("no")

        def __call__(self, *a: Any) -> Any:
            return None

    assert code_fingerprint(Hostile()) == code_fingerprint(Hostile())


def test_the_fingerprint_is_the_same_in_every_process(tmp_path: Path) -> None:
    module = tmp_path / "user_perturbations.py"
    module.write_text("import numpy as np\n" + textwrap.dedent(SOURCE))
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from argus_eval.perturb.identity import code_fingerprint;"
        "import user_perturbations as m; print(code_fingerprint(m.fn))"
    )
    got = set()
    for hash_seed in ("1", "2", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True,
                             text=True, check=True)  # fmt: skip
        got.add(out.stdout.strip())
    assert len(got) == 1 and len(next(iter(got))) == 16


# -- identity, version, registration ---------------------------------------------------------------------


def test_identity_of_a_registered_perturbation_follows_its_code_or_its_version(registered: list[str]) -> None:
    registered.append("user_dim")
    v1 = _compiled("def fn(image, severity, seed):\n    return image // 2\n")
    v2 = _compiled("def fn(image, severity, seed):\n    return image // 3\n")
    IMAGE_PERTURBATIONS.register("user_dim", ImagePerturbation(v1, "custom", stochastic=False))
    cond = Condition.parse("image:user_dim@1")
    first = cond.identity
    assert first is not None and first.startswith("image:")
    assert first in (meaning(cond.behaviour, cond) or "")  # a worker compares the same identity
    IMAGE_PERTURBATIONS.register("user_dim", ImagePerturbation(v1, "custom", stochastic=False), replace=True)
    assert cond.identity == first  # a new registration of the same code
    IMAGE_PERTURBATIONS.register("user_dim", ImagePerturbation(v2, "custom", stochastic=False), replace=True)
    assert cond.identity != first
    IMAGE_PERTURBATIONS.register("user_dim", ImagePerturbation(v1, "custom", stochastic=True), replace=True)
    assert cond.identity != first  # stochasticity is part of it too

    pinned = [ImagePerturbation(v, "custom", stochastic=False, version="1") for v in (v1, v2)]
    IMAGE_PERTURBATIONS.register("user_dim", pinned[0], replace=True)
    with_version = cond.identity
    IMAGE_PERTURBATIONS.register("user_dim", pinned[1], replace=True)
    assert cond.identity == with_version != first  # the version says it is the same
    with pytest.raises(PerturbationError, match="version"):
        ImagePerturbation(v1, "custom", stochastic=False, version=2)  # type: ignore[arg-type]

    # a built-in name replaced by a user's function is the user's: it has an identity
    resize = IMAGE_PERTURBATIONS.get("resize")
    try:
        IMAGE_PERTURBATIONS.register(
            "resize", ImagePerturbation(v1, "geometry", stochastic=False), replace=True
        )
        assert Condition.parse("image:resize@1").identity is not None
    finally:
        IMAGE_PERTURBATIONS.register("resize", resize, replace=True)
    assert Condition.parse("image:resize@1").identity is None


def test_a_user_text_perturbation_has_a_code_identity(registered: list[str]) -> None:
    registered.append("user_upper")
    TEXT_PERTURBATIONS.register(
        "user_upper", _compiled("def fn(text, severity, rng):\n    return text.upper()\n")
    )
    first = Condition.parse("text:user_upper@1").identity
    assert first is not None and first.startswith("text:")
    lower = _compiled("def fn(text, severity, rng):\n    return text.lower()\n")
    TEXT_PERTURBATIONS.register("user_upper", lower, replace=True)
    assert Condition.parse("text:user_upper@1").identity != first
    assert text_perturb.identity("typos") is None


def test_registering_a_taken_name_says_how_and_replace_takes_it(registered: list[str]) -> None:
    registered.append("user_invert")
    one = ImagePerturbation(lambda im, s, seed: 255 - im, "custom", stochastic=False)
    two = ImagePerturbation(lambda im, s, seed: 255 - im, "custom", stochastic=False)
    IMAGE_PERTURBATIONS.register("user_invert", one)
    IMAGE_PERTURBATIONS.register("user_invert", one)  # the same object again: nothing to say
    with pytest.raises(ValueError, match=r"already registered; pass replace=True") as e:
        IMAGE_PERTURBATIONS.register("user_invert", two)
    assert "unregister('user_invert')" in str(e.value)
    IMAGE_PERTURBATIONS.register("user_invert", two, replace=True)
    assert IMAGE_PERTURBATIONS.get("user_invert") is two

    registry: Registry[object] = Registry("thing", base=object)

    @registry.register("x")
    def x() -> None: ...

    @registry.register("x", replace=True)
    def x2() -> None: ...

    assert registry.get("x") is x2
    with Registry.frozen_for_run(), pytest.raises(Exception, match="frozen"):
        registry.register("x", x, replace=True)  # a run's registries still refuse every change


# -- the output contract -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fn", "said"),
    [
        (lambda im, s, seed: im[:10].astype(np.float32) / 255, "a float32 array of shape (10, 52, 3)"),
        (lambda im, s, seed: im[:10], "a uint8 array of shape (10, 52, 3)"),
        (lambda im, s, seed: im[:, :, 0], "a uint8 array of shape (40, 52)"),
        (lambda im, s, seed: im.astype(np.int64), "a int64 array of shape (40, 52, 3)"),
        (lambda im, s, seed: im.tolist(), "a list"),
        (lambda im, s, seed: None, "a NoneType"),
    ],
)
def test_a_user_perturbation_breaking_the_contract_is_a_perturbation_error(
    fn: Any, said: str, registered: list[str]
) -> None:
    registered.append("user_bad")
    IMAGE_PERTURBATIONS.register("user_bad", ImagePerturbation(fn, "custom", stochastic=False))
    with pytest.raises(PerturbationError) as e:
        corrupt(IMG, "user_bad", 1, 0)
    msg = str(e.value)
    assert "image perturbation 'user_bad' returned " + said in msg, msg
    assert "uint8 HxWx3" in msg and "(40, 52, 3)" in msg


def test_a_user_perturbation_keeping_the_contract_is_used_as_it_returned(registered: list[str]) -> None:
    registered.append("user_mirror")
    IMAGE_PERTURBATIONS.register(
        "user_mirror", ImagePerturbation(lambda im, s, seed: im[:, ::-1], "custom", False)
    )
    got = corrupt(IMG, "user_mirror", 2, 0)
    assert got.flags.c_contiguous and np.array_equal(got, IMG[:, ::-1])
    small = IMG[:20, :24]  # padded to 32 px for a non-geometry family, and cropped back
    assert np.array_equal(
        corrupt(small, "user_mirror", 2, 0),
        np.pad(small, ((0, 12), (0, 8), (0, 0)), "symmetric")[:, ::-1][:20, :24],
    )


def test_the_reference_corruptions_are_still_coerced_to_the_same_pixels() -> None:
    imagecorruptions = pytest.importorskip("imagecorruptions")
    for name in ("gaussian_noise", "frost", "zoom_blur", "glass_blur"):
        np.random.seed(9)
        kwargs = {"seed": 9} if name == "glass_blur" else {}
        raw = imagecorruptions.corrupt(IMG.copy(), severity=2, corruption_name=name, **kwargs)
        expected = image_perturb._as_uint8_rgb(raw, *IMG.shape[:2])
        assert np.array_equal(corrupt(IMG, name, 2, 9), expected), name


# -- end to end: evaluate into one folder ------------------------------------------------------------------


class _Means:
    """A model whose image features are each image's mean colour; it keeps what it was shown."""

    def __init__(self) -> None:
        self.shown: list[float] = []

    def embed_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        self.shown += [float(np.asarray(i).mean()) for i in images]
        return np.stack([np.asarray(i, dtype=np.float32).reshape(-1, 3).mean(0) + 1 for i in images])

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([np.array([len(t), t.count("a") + 1, t.count("e") + 1], np.float32) for t in texts])


def _config(cache: Path) -> dict[str, Any]:
    return {
        "name": "custom-identity",
        "seed": 2,
        "cache_dir": str(cache),
        "datasets": [
            {
                "name": "studio",
                "format": "shapesworld",
                "domain": "studio",
                "split": "test",
                "n_images": 4,
                "train_images": 4,
                "questions_per_image": 1,
            }
        ],
        "tasks": ["retrieval"],
        "scoring": {"resamples": 10},
        "perturbations": [{"image": ["user_tint", "gaussian_noise"], "severity": [1]}],
        "efficiency": {"batch_size": 2, "repeats": 1, "warmup": 0, "trials": 1, "min_trials": 1},
    }


def _run(cache: Path, out: Path, fn: Any) -> tuple[dict[str, Any], _Means]:
    IMAGE_PERTURBATIONS.register("user_tint", ImagePerturbation(fn, "custom", stochastic=False), replace=True)
    model = _Means()
    argus_eval.evaluate(_config(cache), models={"means": model}, out=out, quiet=True)
    return json.loads((out / "run_log.json").read_text()), model


def _stamps(out: Path) -> dict[tuple[str, str], tuple[str, bytes]]:
    """(cell, sample) -> (stamp, stored arrays) of every record."""
    with sqlite3.connect(out / "store.sqlite") as con:
        rows = con.execute("select cell, sample_id, stamp, arrays from records").fetchall()
    return {(c, s): (st, bytes(a)) for c, s, st, a in rows}


def test_a_rerun_recomputes_exactly_what_changed_code_made(tmp_path: Path, registered: list[str]) -> None:
    registered.append("user_tint")
    cache, out = tmp_path / "cache", tmp_path / "out"
    script = "def fn(image, severity, seed):\n    return (image // {}).astype(np.uint8)\n"
    first, model = _run(cache, out, _compiled(script.format(2)))
    n = first["records_written"]
    assert n > 0 and first["failed"] == 0
    before = _stamps(out)
    samples = (out / "samples.jsonl").read_text()

    # the same script run again (a new function object of the same code): nothing computed
    again, model = _run(cache, out, _compiled(script.format(2)))
    assert (again["records_written"], again["forward_calls"], model.shown) == (0, 0, [])
    assert (out / "samples.jsonl").read_text() == samples and _stamps(out) == before

    # changed code under the same name: its records, and only those, are recomputed from its new images
    changed, model = _run(cache, out, _compiled(script.format(4)))
    per_cell = n // 3  # clean, user_tint, gaussian_noise
    assert changed["recomputed_stale"] == changed["records_written"] == per_cell
    after = _stamps(out)
    assert after.keys() == before.keys()
    restamped = {k for k in before if after[k][0] != before[k][0]}
    recomputed = {k for k in before if after[k][1] != before[k][1]}  # the embeddings the model gave
    assert len(restamped) == per_cell and recomputed == restamped
    assert len(model.shown) == per_cell and max(model.shown) < 256 / 4  # the new pixels, not the kept ones

    # and back: recomputed again, then stable
    back, _ = _run(cache, out, _compiled(script.format(2)))
    assert back["recomputed_stale"] == per_cell and _stamps(out) == before
    assert (out / "samples.jsonl").read_text() == samples

    # a function breaking the contract: a counted failure per sample, the run goes on
    broken, _ = _run(cache, out, _compiled("def fn(image, severity, seed):\n    return image / 255\n"))
    assert broken["failed"] == per_cell and broken["recomputed_stale"] == per_cell
    doc = json.loads((out / "results.json").read_text())
    reasons = doc["failures"]["models"]["means"]["reasons"]
    assert any("image perturbation 'user_tint' returned a float64 array" in r for r in reasons), reasons
    assert CLEAN.identity is None
