"""Visual reasoning / question answering: CLEVR exact match, VQA accuracy, multiple choice (VCR)."""

from __future__ import annotations

import copy
import string
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BeforeValidator, Field, StrictInt

from argus_eval.data.answer_types import answer_type, typed_candidates
from argus_eval.data.blind import baseline_source, blind_answers
from argus_eval.data.types import Dataset, Sample
from argus_eval.errors import CapabilityError
from argus_eval.metrics.vqa import exact_match, vqa_accuracy
from argus_eval.models.protocols import (
    CHOOSE,
    CLASSIFY,
    EMBED,
    GENERATE,
    Chooser,
    Classifier,
    Embedder,
    Generator,
    ModelInfo,
    chooses,
    classifies,
    embeds,
    generates,
)
from argus_eval.tasks.answers import answer_format, clean_generated, cleaned_output, parses
from argus_eval.tasks.base import CellResult, Prepared, ProtocolChoice, Task, TaskOptions, images_of, via
from argus_eval.tasks.judge import VERDICT, JudgeItem, JudgeOptions, with_judge
from argus_eval.tasks.reasoning_schemes import Scheme, accuracy_by, mean_scheme, scheme_of
from argus_eval.tasks.records import Record

LETTERS = string.ascii_uppercase


def _release_name(value: object) -> object:
    """YAML reads `vqa_release: 2017` as a number; the release is named by its text."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class ReasoningOptions(TaskOptions):
    name: str = "reasoning"
    prompt: str = Field(
        default="{question}\nAnswer with a single word or number.",
        description="Open-ended prompt; {question} is replaced.",
    )
    choice_prompt: str = Field(
        default="{question}\n{options}\nAnswer with the letter of the correct option.",
        description="Multiple-choice prompt for generative models.",
    )
    statement: str = Field(
        default="{question} {answer}",
        description="Substitute for dual encoders: each candidate answer as a statement.",
    )
    statements: dict[str, str] = Field(
        default_factory=dict,
        description="Statement templates per answer type (yes/no, number, color, shape, size, material, "
        "other, or a benchmark's own type), e.g. {number: 'there are {answer} of them: {question}'}; "
        "types without one use `statement`.",
    )
    max_new_tokens: StrictInt = Field(default=8, ge=1)
    vqa_min_answers: StrictInt = Field(
        default=3, ge=2, description="Items with this many gold answers use VQA accuracy."
    )
    vqa_release: Annotated[Literal["current", "2017"], BeforeValidator(_release_name)] = Field(
        default="current",
        description="Which official VQA evaluation scores them: 'current' (the VQA Challenge's, as "
        "lmms-eval and VLMEvalKit compute it: gold answers stripped and, where annotators disagree, "
        "normalised) or '2017' (GT-Vision-Lab's 2017 vqaEval.py: gold answers as stored).",
    )
    judge: JudgeOptions | None = Field(
        default=None, description="A judge model scoring open answers beside exact match (tasks/judge.py)."
    )


def _candidates(sample: Sample, dataset: Dataset) -> tuple[str, ...]:
    return typed_candidates(sample, dataset.answer_vocab)


def chance_level(samples: Sequence[Sample], dataset: Dataset, scheme: Scheme = mean_scheme) -> float | None:
    """The primary score of a uniform guess among each question's candidate answers (its answer type's,
    or its choices): the scheme's finish over per-item chances 1 / (number of candidates), so a VCR
    cell's chance is that of Q->A over its q2a items alone. None when a question has no candidate."""
    sizes = [len(_candidates(s, dataset)) for s in samples]
    if not sizes or min(sizes) == 0:
        return None
    guess = [1.0 / n for n in sizes]
    cell = scheme(samples, [""] * len(samples), guess)
    return float(cell.finish(cell.components.sum(0)[None, :])[0])


class ReasoningTask(Task):
    """Answer each question. Native protocols: a fixed answer head (classify), generation, or option
    log-likelihood (choose). Substitute for dual encoders: 'embed-statements' scores every candidate
    answer of the question's answer type (the item's choices, or the closed vocabulary restricted to the
    type: yes/no, a number, a colour ...) as a statement, as zero-shot CLIP evaluations do."""

    name = "reasoning"
    options_model = ReasoningOptions
    options: ReasoningOptions
    scoring_options = frozenset({"vqa_release"})
    image_controls = True

    def __init__(self, options: TaskOptions | None = None) -> None:
        super().__init__(options)
        self._blind_known: dict[tuple[int, tuple[str, ...], Scheme], tuple[Dataset, dict[str, Any]]] = {}

    def select(self, dataset: Dataset) -> list[Sample]:
        return [
            s
            for s in dataset.samples
            if s.question is not None and (s.answers or s.answer_index is not None) and s.image is not None
        ]

    def baseline_source(self, dataset: Dataset) -> str | None:
        """Where the dataset's blind baseline comes from, or why there is none; None when not evaluated."""
        return baseline_source(dataset) if self.select(dataset) else None

    def protocols(self) -> Sequence[ProtocolChoice]:
        return [
            via(CLASSIFY, classifies, self._classify, "classify", "argmax of the model's answer head"),
            via(GENERATE, generates, self._generate, "generate",
                "greedy short answer (letter for multiple choice)"),
            via(CHOOSE, chooses, self._choose, "choose", "highest log-likelihood candidate answer",
                lacks=_no_candidates),
            via(EMBED, embeds, self._embed_statements, "embed-statements",
                "candidate answers as statements, best image-text similarity", native=False,
                lacks=_no_candidates),
        ]  # fmt: skip

    def _classify(
        self, model: Classifier, info: ModelInfo, batch: Sequence[Prepared], dataset: Dataset
    ) -> list[Record]:
        """The answer head's best label, restricted to the item's options when it has them."""
        idx = {label: i for i, label in enumerate(model.labels)}
        for p in batch:
            if p.sample.choices and not any(c in idx for c in p.sample.choices):
                # else every option scores -inf and the first always wins: a silent 1/n, not an answer
                raise CapabilityError(
                    f"the answer head of {info.name!r} has none of the options of question "
                    f"{p.sample.sample_id} (e.g. {p.sample.choices[0][:40]!r}), so classify cannot choose "
                    "among them; the cell is left out"
                )
        scores = model.classify(images_of(batch), _questions(batch))
        out = []
        for p, row in zip(batch, scores, strict=True):
            cands = p.sample.choices
            if cands:  # restrict the head to the item's options when it has them
                best = max(cands, key=lambda c: row[idx[c]] if c in idx else -np.inf)
                out.append(best)
            else:
                out.append(model.labels[int(np.argmax(row))])
        return _answers(batch, out)

    def _generate(
        self, model: Generator, info: ModelInfo, batch: Sequence[Prepared], dataset: Dataset
    ) -> list[Record]:
        """A short generated answer; for multiple choice a letter mapped back to its option."""
        prompts = []
        for p, q in zip(batch, _questions(batch), strict=True):
            if p.sample.choices:
                opts = "\n".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(p.sample.choices))
                prompts.append(self.options.choice_prompt.format(question=q, options=opts))
            else:
                prompts.append(self.options.prompt.format(question=q))
        texts = model.generate(images_of(batch), prompts, self.options.max_new_tokens)
        out = []
        for raw, p in zip(texts, batch, strict=True):
            cleaned = clean_generated(raw)
            choices = p.sample.choices
            answer = _letter_to_choice(cleaned.text, choices) if choices else cleaned.text.strip()
            out.append(Record(p.sample.sample_id, cleaned_output("answer", cleaned, answer)))
        return out

    def _choose(
        self, model: Chooser, info: ModelInfo, batch: Sequence[Prepared], dataset: Dataset
    ) -> list[Record]:
        """The candidate answer of highest log-likelihood."""
        options = _choosable(batch, dataset)
        prompts = [self.options.prompt.format(question=q) for q in _questions(batch)]
        lls = model.choose(images_of(batch), prompts, options)
        return _answers(batch, [opts[int(np.argmax(ll))] for opts, ll in zip(options, lls, strict=True)])

    def _embed_statements(
        self, model: Embedder, info: ModelInfo, batch: Sequence[Prepared], dataset: Dataset
    ) -> list[Record]:
        """The candidate answer whose statement is most similar to the image."""
        img = model.embed_images(images_of(batch))
        options = _choosable(batch, dataset)
        templates = [self._statement(p.sample) for p in batch]
        flat = [
            t.format(question=q, answer=a)
            for t, q, opts in zip(templates, _questions(batch), options, strict=True)
            for a in opts
        ]
        txt = model.embed_texts(flat)
        out, start = [], 0
        for i, opts in enumerate(options):
            # row by row, not a matrix product: BLAS kernels round a row by where it sits in the block,
            # so candidates whose statements the tower sees alike would tie unevenly, batch by batch
            sims = (txt[start : start + len(opts)] * img[i]).sum(axis=1)
            out.append(opts[int(np.argmax(sims))])
            start += len(opts)
        return _answers(batch, out)

    def _statement(self, sample: Sample) -> str:
        """The statement template of a question: its answer type's own, else the generic one."""
        kind = answer_type(sample)
        return self.options.statements.get(kind, self.options.statement) if kind else self.options.statement

    def _score(self, sample: Sample, answer: str) -> float:
        if sample.choices and sample.answer_index is not None:
            return float(answer == sample.choices[sample.answer_index])
        if len(sample.answers) >= self.options.vqa_min_answers:
            return vqa_accuracy(answer, sample.answers, self.options.vqa_release)
        return float(any(exact_match(answer, a) for a in sample.answers))

    def judge_item(self, sample: Sample, output: dict[str, Any]) -> JudgeItem | None:
        """An open question's answer, for the judge; None for multiple choice (its option is exact)."""
        if sample.choices and sample.answer_index is not None:
            return None
        return JudgeItem(sample.question or "", tuple(sample.answers), str(output.get("answer", "")))

    def finalize(
        self,
        dataset: Dataset,
        samples: Sequence[Sample],
        records: Mapping[str, Record],
        protocol: ProtocolChoice,
    ) -> CellResult:
        kept = [s for s in samples if s.sample_id in records]
        outputs = [records[s.sample_id].output for s in kept]
        preds = [str((o or {}).get("answer", "")) for o in outputs]
        scores = [self._score(s, a) for s, a in zip(kept, preds, strict=True)]
        # The benchmark's own scoring (VCR: Q->A primary, QA->R and Q->AR beside it; else mean accuracy).
        scheme = scheme_of(kept)
        cell = scheme(kept, preds, scores)
        metrics = dict(cell.metrics)
        breakdown: dict[str, Any] = {"accuracy_by": accuracy_by(kept, scores)}
        blind = self._blind_baseline(dataset, kept, scheme)
        breakdown["blind_baseline"] = blind
        if "score" in blind:
            metrics["blind_baseline"] = blind["score"]
        result = CellResult(
            sample_ids=[s.sample_id for s in kept],
            predictions=preds,
            scores=scores,
            references=[
                list(s.answers) if not s.choices or s.answer_index is None else s.choices[s.answer_index]
                for s in kept
            ],
            components=cell.components,
            finish=cell.finish,
            metrics=metrics,
            breakdown=breakdown,
            extras=cell.extras,
            chance=chance_level(kept, dataset, scheme),
            chance_basis="uniform over the candidate answers of each question's answer type",
            answer_format=answer_format(protocol.needs, kept, outputs, "answer", parses),
        )
        if self.options.judge is None:
            return result
        # a multiple-choice item is not judged: its judged score is its exact one
        verdicts = [float((o or {}).get(VERDICT, sc)) for o, sc in zip(outputs, scores, strict=True)]
        return with_judge(result, verdicts, self.options.judge.primary)

    def _blind_baseline(self, dataset: Dataset, kept: Sequence[Sample], scheme: Scheme) -> dict[str, Any]:
        """The training-answer prior scored like the model (same samples and scheme), or why it is skipped.

        The same for every model and condition of a dataset: worked out once per (dataset, samples)."""
        key = (id(dataset), tuple(s.sample_id for s in kept), scheme)
        known = self._blind_known.get(key)
        if known is None or known[0] is not dataset:  # the dataset held, so its id is not reused
            known = (dataset, self._blind_baseline_of(dataset, kept, scheme))
            self._blind_known[key] = known
        return copy.deepcopy(known[1])

    def _blind_baseline_of(self, dataset: Dataset, kept: Sequence[Sample], scheme: Scheme) -> dict[str, Any]:
        blind = blind_answers(dataset, kept)
        if blind.skipped is not None or not kept:
            return {"skipped": blind.skipped or "no scored sample"}
        scores = [self._score(s, a) for s, a in zip(kept, blind.answers, strict=True)]
        cell = scheme(kept, blind.answers, scores)
        out: dict[str, Any] = {"score": float(cell.finish(cell.components.sum(0)[None, :])[0])}
        if len(cell.metrics) > 1:  # the benchmark's other official scores, blind too
            out["metrics"] = cell.metrics
        out["answered_by"] = blind.levels
        out["source"] = baseline_source(dataset)
        return out


def _questions(batch: Sequence[Prepared]) -> list[str]:
    return [p.question or "" for p in batch]


def _answers(batch: Sequence[Prepared], answers: Sequence[str]) -> list[Record]:
    return [Record(p.sample.sample_id, {"answer": a}) for p, a in zip(batch, answers, strict=True)]


def _letter_to_choice(text: str, choices: Sequence[str]) -> str:
    """Map a generated letter (or the option text itself) back to an option; unknown -> the raw text."""
    t = text.strip().strip(".):").upper()
    if t[:1] and t[:1] in LETTERS[: len(choices)] and (len(t) == 1 or not t[1].isalpha()):
        return choices[LETTERS.index(t[:1])]
    for c in choices:
        if text.strip().lower() == c.lower():
            return c
    return text.strip()


def _no_candidates(dataset: Dataset, samples: Sequence[Sample], model: str = "") -> str | None:
    """Why choosing among answers gets nothing from these questions: the first without candidate
    answers (no choices and no closed answer vocabulary, as with open-ended VQA), or None."""
    for s in samples:
        if not _candidates(s, dataset):
            return (
                f"dataset {dataset.name!r} gives question {s.sample_id} no candidate answers (no choices "
                "and no closed answer vocabulary), which choosing among answers needs"
            )
    return None


def _choosable(batch: Sequence[Prepared], dataset: Dataset) -> list[tuple[str, ...]]:
    """The candidate answers of each question; CapabilityError (the cell is left out and named) when a
    question has none (_no_candidates)."""
    why = _no_candidates(dataset, [p.sample for p in batch])
    if why is not None:
        raise CapabilityError(why)
    return [_candidates(p.sample, dataset) for p in batch]
