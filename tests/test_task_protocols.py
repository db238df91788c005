"""Protocol objects: each binds a model to the interface it calls (or names what the model lacks), and
their names, native flags, descriptions and request hashes stay what every stored record is keyed on."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from argus_eval.data.types import Dataset, Sample, fingerprint_of
from argus_eval.errors import CapabilityError
from argus_eval.models.protocols import (
    CAPTION,
    CHOOSE,
    CLASSIFY,
    EMBED,
    GENERATE,
    POOL,
    SCORE_PAIRS,
    ModelInfo,
)
from argus_eval.tasks.base import Prepared, Task, TaskProtocol
from argus_eval.tasks.captioning import CaptioningOptions, CaptioningTask
from argus_eval.tasks.reasoning import ReasoningTask
from argus_eval.tasks.retrieval import RetrievalOptions, RetrievalTask
from model_fixtures import load_tiny
from task_fixtures import fake_info

ALL = frozenset({CAPTION, CHOOSE, CLASSIFY, EMBED, GENERATE, POOL, SCORE_PAIRS})


class _Embeds:
    def embed_images(self, images: Sequence[object]) -> NDArray[np.float32]:
        return np.ones((len(images), 2), np.float32)

    def embed_texts(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return np.ones((len(texts), 2), np.float32)


class _ScoresPairs:
    def score_pairs(self, images: Sequence[object], texts: Sequence[str]) -> NDArray[np.float32]:
        return np.zeros(len(texts), np.float32)


class _Pools:
    def pool_images(self, images: Sequence[object]) -> NDArray[np.float32]:
        return np.ones((len(images), 2), np.float32)

    def pool_texts(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return np.ones((len(texts), 2), np.float32)


class _Generates:
    def __init__(self) -> None:
        self.prompts: list[str] = []

    def generate(self, images: Sequence[object], prompts: Sequence[str], max_new_tokens: int) -> list[str]:
        self.prompts += prompts
        return ["a caption"] * len(prompts)


class _Chooses:
    def choose(
        self, images: Sequence[object], prompts: Sequence[str], options: Sequence[Sequence[str]]
    ) -> list[NDArray[np.float32]]:
        return [np.zeros(len(o), np.float32) for o in options]


class _Classifies:
    labels = ("yes", "no")

    def classify(self, images: Sequence[object], questions: Sequence[str]) -> NDArray[np.float32]:
        return np.zeros((len(images), 2), np.float32)


# capability -> the methods a model offering it has (CAPTION is generation from a prefix)
METHODS: dict[str, type] = {
    EMBED: _Embeds,
    SCORE_PAIRS: _ScoresPairs,
    POOL: _Pools,
    GENERATE: _Generates,
    CAPTION: _Generates,
    CHOOSE: _Chooses,
    CLASSIFY: _Classifies,
}


def _fake(declared: frozenset[str], methods: frozenset[str]) -> object:
    """A model declaring `declared` whose class has the methods of the capabilities in `methods`."""
    bases = tuple(dict.fromkeys(METHODS[c] for c in sorted(methods))) or (object,)
    model = type("Fake", bases, {})()
    model.info = fake_info(*declared)  # type: ignore[attr-defined]
    model.forward_calls = 0  # type: ignore[attr-defined]
    return model


def _tasks() -> dict[str, Task]:
    return {
        "retrieval": RetrievalTask(),
        "retrieval+shortlist": RetrievalTask(RetrievalOptions(shortlist=5)),
        "captioning": CaptioningTask(),
        "reasoning": ReasoningTask(),
    }


def _protocols() -> list[tuple[str, TaskProtocol[object]]]:
    out = []
    for task in _tasks().values():
        for p in task.protocols():
            assert isinstance(p, TaskProtocol)
            out.append((f"{task.name}/{p.name}", p))
    return out


@pytest.mark.parametrize(("label", "protocol"), _protocols(), ids=[label for label, _ in _protocols()])
def test_a_model_offering_the_capability_binds_and_one_lacking_it_is_named(
    label: str, protocol: TaskProtocol[object]
) -> None:
    offering = _fake(protocol.needs, protocol.needs)
    assert protocol.bind(offering) is offering  # type: ignore[arg-type]
    # declares everything else (and has every method), but not what the protocol needs
    lacking = _fake(ALL - protocol.needs, ALL)
    with pytest.raises(CapabilityError) as err:
        protocol.bind(lacking)  # type: ignore[arg-type]
    assert "+".join(sorted(protocol.needs)) in str(err.value)
    assert repr(protocol.name) in str(err.value) and "'fake'" in str(err.value)
    # declares the capability, but its class has none of the methods the protocol calls
    needed = {METHODS[c] for c in protocol.needs}
    pretender = _fake(protocol.needs, frozenset(c for c in ALL if METHODS[c] not in needed))
    with pytest.raises(CapabilityError, match="lacks its methods"):
        protocol.bind(pretender)  # type: ignore[arg-type]


@pytest.mark.parametrize("family", ["clip", "lxmert-vqa", "qwen2_5_vl"])
def test_tiny_models_bind_to_every_protocol_they_declare(family: str) -> None:
    """The adapters have the methods of what they declare: every protocol they are offered binds."""
    model = load_tiny(family, batch_size=2)
    try:
        bound = [p.name for _, p in _protocols() if p.offered_by(model.info)]
        assert bound, f"{family} declares {sorted(model.info.capabilities)}, offered no protocol"
        for _, p in _protocols():
            if p.offered_by(model.info):
                assert p.bind(model) is model
            else:
                with pytest.raises(CapabilityError, match="needs"):
                    p.bind(model)
    finally:
        model.close()


def _choose(task: Task, *caps: str) -> str:
    return task.choose_protocol(fake_info(*caps)).name


def test_names_native_flags_and_descriptions_are_the_stored_ones() -> None:
    """These strings are in every results.json and (the names) in every store key: unchanged."""
    got = {
        label: [(p.name, sorted(p.needs), p.native, p.description) for p in task.protocols()]
        for label, task in _tasks().items()
    }
    assert got == {
        "retrieval": [
            ("embed", [EMBED], True, "cosine similarity of image and text embeddings"),
            ("score-pairs", [SCORE_PAIRS], False, "every image scored against every text of the split with "
             "the model's pair score (images x texts model calls: for small galleries)"),
        ],
        "retrieval+shortlist": [
            ("embed", [EMBED], True, "cosine similarity of image and text embeddings"),
            ("rerank-top5-by-self", [POOL, SCORE_PAIRS], False, "the top 5 texts of each image by the first "
             "stage (self) re-ranked by the model's pair score, the rest after them "
             "(images x k model calls)"),
        ],
        "captioning": [
            ("generate", [GENERATE], True, "greedy generation from the captioning instruction"),
            ("caption", [CAPTION], True, "greedy caption continuing the caption prefix"),
            ("caption-by-retrieval", [EMBED], False,
             "best caption of the training-split caption bank by image-text embedding similarity"),
        ],
        "reasoning": [
            ("classify", [CLASSIFY], True, "argmax of the model's answer head"),
            ("generate", [GENERATE], True, "greedy short answer (letter for multiple choice)"),
            ("choose", [CHOOSE], True, "highest log-likelihood candidate answer"),
            ("embed-statements", [EMBED], False,
             "candidate answers as statements, best image-text similarity"),
        ],
    }  # fmt: skip
    # preference order: the first protocol the model offers
    assert _choose(ReasoningTask(), EMBED, GENERATE, CHOOSE) == "generate"
    assert _choose(CaptioningTask(), CAPTION, EMBED, SCORE_PAIRS) == "caption"
    assert _choose(RetrievalTask(), EMBED, SCORE_PAIRS) == "embed"


@pytest.mark.parametrize(
    ("task", "caps", "name"),
    [
        (RetrievalTask(), {EMBED}, "embed"),
        (RetrievalTask(), {SCORE_PAIRS}, "score-pairs"),
        (RetrievalTask(RetrievalOptions(shortlist=5)), {SCORE_PAIRS, POOL}, "rerank-top5-by-self"),
        (RetrievalTask(RetrievalOptions(shortlist="all")), {SCORE_PAIRS, POOL}, "rerank-topall-by-self"),
        (CaptioningTask(), {GENERATE}, "generate"),
        (CaptioningTask(CaptioningOptions(prompt="Caption:")), {GENERATE}, "generate"),
        (ReasoningTask(), {CLASSIFY}, "classify"),
        (ReasoningTask(), {GENERATE}, "generate"),
        (ReasoningTask(), {CHOOSE}, "choose"),
        (ReasoningTask(), {EMBED}, "embed-statements"),
    ],
)
def test_request_hash_is_the_documented_recipe(task: Task, caps: set[str], name: str) -> None:
    """request hash = fingerprint_of(task name, protocol name, options as JSON but a judge and the
    scoring-only options (the VQA release), which score answers without changing them): the store's key
    part."""
    protocol = task.choose_protocol(fake_info(*caps))
    assert protocol.name == name
    left_out = {"judge", "vqa_release"}
    options = {k: v for k, v in task.options.model_dump(mode="json").items() if k not in left_out}
    assert task.request_hash(protocol) == fingerprint_of(task.name, name, options)


def test_a_protocol_carries_its_settings_captioning_prompts() -> None:
    """generate sends the instruction, caption the prefix: chosen by capability, not by name."""
    task = CaptioningTask(CaptioningOptions(prompt="Say what you see.", prefix_prompt="a photo of"))
    sample = Sample("s", "s.png", ("a cat",))
    batch = [Prepared(sample, np.zeros((2, 2, 3), np.uint8), sample.texts, None)]
    ds = Dataset("d", [sample], Path("."), "fp")
    for caps, prompt in (({GENERATE}, "Say what you see."), ({CAPTION}, "a photo of")):
        model = _fake(frozenset(caps), frozenset(caps))
        records = task.infer(model, task.choose_protocol(model.info), batch, ds)  # type: ignore[arg-type,attr-defined]
        assert model.prompts == [prompt]  # type: ignore[attr-defined]
        assert records[0].output == {"caption": "a caption"}


def test_unknown_capabilities_name_what_the_task_needs() -> None:
    with pytest.raises(CapabilityError, match="needs classify or generate or choose or embed"):
        ReasoningTask().choose_protocol(ModelInfo("m", "x:", "fp", frozenset({POOL})))
