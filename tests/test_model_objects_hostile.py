"""A user's model object that raises, or breaks its protocol's output contract, through argus_eval.evaluate
(models/objects.py): each failed call is a ModelCallError naming the model and the method, counted as
failed samples as a built-in model's failed call is; the run finishes, a rerun with the object fixed
computes exactly the failed samples, strict stops at the first, and Ctrl-C and sys.exit still stop it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import argus_eval
from argus_eval.errors import ModelCallError, StrictModeError
from argus_eval.models.objects import ObjectModel
from argus_eval.models.spec import ModelConfig
from argus_eval.results_model import Results

N_IMAGES = 6
BATCH = 4  # two batches, the last one short


def _unit(n: int, seed: int, d: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)  # type: ignore[no-any-return]


def _digest(image: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(image).tobytes()).hexdigest()


class Embedder:
    """A well-formed embedder: a vector per image from its pixels, per text from its characters."""

    fingerprint = "hostile-v1"

    def embed_images(self, images: Sequence[np.ndarray]) -> Any:
        return np.stack([_unit(1, int(_digest(im)[:8], 16))[0] for im in images])

    def embed_texts(self, texts: Sequence[str]) -> Any:
        return np.stack([_unit(1, sum(map(ord, t)))[0] for t in texts])


class OnFire(Embedder):
    def embed_images(self, images: Sequence[np.ndarray]) -> Any:
        raise RuntimeError("GPU on fire")


class Short(Embedder):
    def embed_images(self, images: Sequence[np.ndarray]) -> Any:
        return super().embed_images(images)[:-1]


class Wide(Embedder):
    def embed_texts(self, texts: Sequence[str]) -> Any:
        return np.stack([_unit(1, len(t), d=16)[0] for t in texts])


class Words(Embedder):
    def embed_images(self, images: Sequence[np.ndarray]) -> Any:
        return np.array([["x"] * 8 for _ in images])


class Poisoned(Embedder):
    """Raises on any batch holding the first image it was ever shown, while poisoned: one failed sample
    (the runner asks the rest of the batch one by one)."""

    def __init__(self, poisoned: bool = True) -> None:
        self.poisoned = poisoned
        self.poison: str | None = None
        self.calls = 0

    def embed_images(self, images: Sequence[np.ndarray]) -> Any:
        self.calls += 1
        if self.poisoned:
            self.poison = self.poison or _digest(images[0])
            if any(_digest(im) == self.poison for im in images):
                raise ValueError("cannot read this image")
        return super().embed_images(images)


class Answerer:
    """A well-formed generator: one short answer per prompt."""

    def generate(self, images: Sequence[np.ndarray], prompts: Sequence[str], max_new_tokens: int) -> Any:
        return ["yes" for _ in prompts]


class Long(Answerer):
    def generate(self, images: Sequence[np.ndarray], prompts: Sequence[str], max_new_tokens: int) -> Any:
        return ["yes"] * (len(prompts) + 1)


class Bare(Answerer):
    def generate(self, images: Sequence[np.ndarray], prompts: Sequence[str], max_new_tokens: int) -> Any:
        return "yes"  # a str for the batch: a sequence of characters, not of answers


class Numbers(Answerer):
    def generate(self, images: Sequence[np.ndarray], prompts: Sequence[str], max_new_tokens: int) -> Any:
        return [1] * len(prompts)


def _config(cache: Path, task: str = "retrieval") -> dict[str, Any]:
    """One task on a few ShapesWorld images, clean only, timed once."""
    return {
        "name": "hostile",
        "seed": 2,
        "cache_dir": str(cache),
        "datasets": [
            {
                "name": "studio",
                "format": "shapesworld",
                "domain": "studio",
                "split": "test",
                "n_images": N_IMAGES,
                "train_images": 8,
                "questions_per_image": 1,
            }
        ],
        "tasks": [task],
        "scoring": {"resamples": 10},
        "efficiency": {"batch_size": 2, "repeats": 1, "warmup": 0, "trials": 1, "min_trials": 1},
    }


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def _evaluate(cache: Path, out: Path, name: str, obj: object, task: str = "retrieval", **kw: Any) -> Results:
    models = {name: {"spec": obj, "batch_size": BATCH}}
    return argus_eval.evaluate(_config(cache, task), models=models, out=out, quiet=True, **kw)


def _log(out: Path) -> dict[str, Any]:
    return json.loads((out / "run_log.json").read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("name", "obj", "task", "reason"),
    [
        ("fire", OnFire(), "retrieval", "model 'fire': embed_images raised RuntimeError: GPU on fire"),
        (
            "short",
            Short(),
            "retrieval",
            "model 'short': embed_images returned 0 rows for 1 image; it must "
            "return an (n, d) float array, a row per image",
        ),
        (
            "wide",
            Wide(),
            "retrieval",
            "model 'wide': embed_texts returned 16-dimensional vectors where embed_images gave 8",
        ),
        ("words", Words(), "retrieval", "model 'words': embed_images returned ndarray of <U1, not floats"),
        (
            "long",
            Long(),
            "reasoning",
            "model 'long': generate returned 2 answers for 1 prompt; it must "
            "return a list of str, one per prompt",
        ),
        ("bare", Bare(), "reasoning", "model 'bare': generate returned a str for 1 prompt"),
        ("numbers", Numbers(), "reasoning", "model 'numbers': generate returned an answer of type int"),
    ],
)
def test_a_failing_or_malformed_call_is_counted_failed_samples_naming_model_and_method(
    cache: Path, tmp_path: Path, name: str, obj: object, task: str, reason: str
) -> None:
    res = _evaluate(cache, tmp_path / "out", name, obj, task)  # finishes: nothing raised
    (cell,) = res.cells
    assert cell.samples > 0 and cell.failed == cell.samples and cell.scored == 0
    assert len(cell.failure_reasons) == 1 and reason in cell.failure_reasons[0], cell.failure_reasons
    assert res.failures is not None and res.failures.models[name].failed == cell.samples
    assert _log(tmp_path / "out")["failed"] == cell.samples
    assert (tmp_path / "out" / "results.json").is_file()


def test_one_bad_sample_fails_alone_and_a_rerun_with_the_object_fixed_computes_only_it(
    cache: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    first = _evaluate(cache, out, "mine", Poisoned())
    (cell,) = first.cells
    assert (cell.samples, cell.failed, cell.scored) == (N_IMAGES, 1, N_IMAGES - 1)
    assert cell.failure_reasons == [
        "model: model 'mine': embed_images raised ValueError: cannot read this image"
    ]
    assert cell.primary is not None  # scored on the others

    fixed = Poisoned(poisoned=False)  # same class, name and fingerprint: the same records
    again = _evaluate(cache, out, "mine", fixed)
    log = _log(out)
    assert (log["records_written"], log["retried_failed"], log["failed"]) == (1, 1, 0)
    assert fixed.calls > 0
    (cell,) = again.cells
    assert (cell.failed, cell.scored, cell.failure_reasons) == (0, N_IMAGES, [])


def test_strict_stops_at_the_first_failed_sample_naming_model_and_method(cache: Path, tmp_path: Path) -> None:
    with pytest.raises(StrictModeError, match=r"model 'fire': embed_images raised RuntimeError: GPU on fire"):
        _evaluate(cache, tmp_path / "out", "fire", OnFire(), strict=True)
    with pytest.raises(StrictModeError, match=r"model 'short': embed_images returned 0 rows for 1 image"):
        _evaluate(cache, tmp_path / "out2", "short", Short(), strict=True)


@pytest.mark.parametrize("stop", [KeyboardInterrupt, SystemExit])
def test_ctrl_c_and_sys_exit_in_a_call_still_stop_the_run(
    cache: Path, tmp_path: Path, stop: type[BaseException]
) -> None:
    class Stopping(Embedder):
        def embed_images(self, images: Sequence[np.ndarray]) -> Any:
            raise stop()

    with pytest.raises(stop):
        _evaluate(cache, tmp_path / "out", "stop", Stopping())


def _model(obj: object, name: str = "m") -> Any:
    return ObjectModel(ModelConfig(name=name, spec=f"object:{name}"), obj, "fp")


IMAGES = [np.zeros((8, 8, 3), np.uint8), np.full((8, 8, 3), 9, np.uint8)]


def test_the_error_keeps_the_objects_exception_and_traceback_as_its_cause() -> None:
    with pytest.raises(ModelCallError) as ei:
        _model(OnFire(), "fire").embed_images(IMAGES)
    assert str(ei.value) == "model 'fire': embed_images raised RuntimeError: GPU on fire"
    cause = ei.value.__cause__
    assert isinstance(cause, RuntimeError) and str(cause) == "GPU on fire"
    frames = []
    tb = cause.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    assert frames[-1] == "embed_images"  # the object's own frame, where it raised


class Everything:
    """Each member returns what `out` maps it to (a callable of the call's arguments)."""

    labels = ("a", "b", "c")

    def __init__(self, **out: Callable[..., Any]) -> None:
        self.out = out

    def _call(self, member: str, *args: Any) -> Any:
        return self.out[member](*args)

    def embed_images(self, images: Any) -> Any:
        return self._call("embed_images", images)

    def embed_texts(self, texts: Any) -> Any:
        return self._call("embed_texts", texts)

    def pool_images(self, images: Any) -> Any:
        return self._call("pool_images", images)

    def pool_texts(self, texts: Any) -> Any:
        return self._call("pool_texts", texts)

    def score_pairs(self, images: Any, texts: Any) -> Any:
        return self._call("score_pairs", images, texts)

    def generate(self, images: Any, prompts: Any, max_new_tokens: int) -> Any:
        return self._call("generate", images, prompts)

    def choose(self, images: Any, prompts: Any, options: Any) -> Any:
        return self._call("choose", images, prompts, options)

    def classify(self, images: Any, questions: Any) -> Any:
        return self._call("classify", images, questions)


GOOD: dict[str, Callable[..., Any]] = {
    "embed_images": lambda xs: _unit(len(xs), 0),
    "embed_texts": lambda xs: _unit(len(xs), 1),
    "pool_images": lambda xs: _unit(len(xs), 0, d=4),
    "pool_texts": lambda xs: _unit(len(xs), 1, d=4),
    "score_pairs": lambda xs, ts: [0.5] * len(xs),
    "generate": lambda xs, ps: ("yes",) * len(xs),
    "choose": lambda xs, ps, os: [np.zeros(len(o)) for o in os],
    "classify": lambda xs, qs: np.zeros((len(xs), 3), np.float32),
}


def _call(model: Any, member: str) -> Any:
    args: dict[str, tuple[Any, ...]] = {
        "embed_images": (IMAGES,),
        "embed_texts": (["a", "b"],),
        "pool_images": (IMAGES,),
        "pool_texts": (["a", "b"],),
        "score_pairs": (IMAGES, ["a", "b"]),
        "generate": (IMAGES, ["q", "q"], 8),
        "choose": (IMAGES, ["q", "q"], [["x", "y"], ["x", "y", "z"]]),
        "classify": (IMAGES, ["q", "q"]),
    }
    return getattr(model, member)(*args[member])


def test_well_formed_outputs_pass_as_arrays_and_lists() -> None:
    model = _model(Everything(**GOOD))
    assert model.info.capabilities >= {"embed", "pool", "score_pairs", "generate", "choose", "classify"}
    for member in GOOD:
        _call(model, member)
    assert _call(model, "score_pairs").reshape(2, 1).shape == (2, 1)  # a list became an array
    assert _call(model, "generate") == ["yes", "yes"]
    assert [ll.shape for ll in _call(model, "choose")] == [(2,), (3,)]


@pytest.mark.parametrize(
    ("member", "bad", "message"),
    [
        ("embed_images", lambda xs: _unit(len(xs) + 1, 0), "embed_images returned 3 rows for 2 images"),
        ("embed_texts", lambda xs: _unit(len(xs), 0)[0], "embed_texts returned an array of shape (8,)"),
        (
            "pool_texts",
            lambda xs: _unit(len(xs), 0, d=5),
            "pool_texts returned 5-dimensional vectors where pool_images gave 4",
        ),
        ("embed_images", lambda xs: np.ones((len(xs), 8), np.int64), "returned ndarray of int64, not floats"),
        ("embed_images", lambda xs: None, "embed_images returned NoneType of object, not floats"),
        (
            "score_pairs",
            lambda xs, ts: np.zeros((len(xs), 1)),
            "score_pairs returned an array of shape (2, 1) for 2 pairs; it must return an (n,) float array",
        ),
        (
            "classify",
            lambda xs, qs: np.zeros((len(xs), 2)),
            "classify returned an array of shape (2, 2) for "
            "2 questions; it must return an (n, 3) float array",
        ),
        ("generate", lambda xs, ps: ["yes"], "generate returned 1 answer for 2 prompts"),
        ("choose", lambda xs, ps, os: [np.zeros(2)], "choose returned 1 item for 2 prompts"),
        (
            "choose",
            lambda xs, ps, os: [np.zeros(2), np.zeros(2)],
            "choose returned an array of shape (2,) for item 1, which has 3 options",
        ),
    ],
)
def test_a_broken_contract_names_model_method_and_contract(
    member: str, bad: Callable[..., Any], message: str
) -> None:
    model = _model(Everything(**{**GOOD, member: bad}), "broken")
    if member == "pool_texts":
        _call(model, "pool_images")  # the space's first vectors
    with pytest.raises(ModelCallError) as ei:
        _call(model, member)
    assert str(ei.value).startswith(f"model 'broken': {member} returned "), str(ei.value)
    assert message in str(ei.value)
