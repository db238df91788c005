"""Image captioning, scored with COCO caption metrics (pycocoevalcap-exact BLEU, METEOR, ROUGE-L, CIDEr-D)."""

from __future__ import annotations

import shutil
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pydantic import Field, StrictFloat, StrictInt

from argus_eval.data.types import Dataset, Sample
from argus_eval.errors import CapabilityError
from argus_eval.metrics.caption import caption_components, caption_finish, components_ahead
from argus_eval.metrics.meteor_remote import warm_meteor
from argus_eval.metrics.meteor_server import meteor_version
from argus_eval.metrics.retrieval import similarity
from argus_eval.models.protocols import (
    CAPTION,
    EMBED,
    GENERATE,
    Embedder,
    Generator,
    ModelInfo,
    embeds,
    generates,
)
from argus_eval.tasks.answers import answer_format, clean_generated, cleaned_output, non_empty
from argus_eval.tasks.base import (
    CellResult,
    FinalizeInput,
    Finish,
    Prepared,
    ProtocolChoice,
    Task,
    TaskOptions,
    images_of,
    via,
)
from argus_eval.tasks.judge import VERDICT, JudgeItem, JudgeOptions, with_judge
from argus_eval.tasks.records import Record

DEFAULT_METRICS = ("Bleu_4", "METEOR", "ROUGE_L", "CIDEr")


class CaptioningOptions(TaskOptions):
    name: str = "captioning"
    prompt: str = Field(
        default="Describe the image in one sentence.", description="Instruction for chat models."
    )
    prefix_prompt: str = Field(
        default="", description="Text prefix for captioners that continue a prefix (BLIP)."
    )
    max_new_tokens: StrictInt = Field(default=40, ge=1)
    metrics: tuple[str, ...] = Field(default=DEFAULT_METRICS, description="Averaged into the primary score.")
    cider_scale: StrictFloat = Field(
        default=2.0, gt=0, description="CIDEr enters the score as min(CIDEr/scale, 1)."
    )
    judge: JudgeOptions | None = Field(
        default=None,
        description="A judge model scoring captions beside the COCO metrics, never instead (tasks/judge.py); "
        "its primary: exact_match keeps the COCO metrics' score primary.",
    )


class CaptioningTask(Task):
    """Caption each image; score against its references. Image conditions only (no query text).

    Substitute for dual encoders: "caption-by-retrieval" picks the best caption of the dataset's
    caption bank (its training-split captions) by embedding similarity.
    """

    name = "captioning"
    options_model = CaptioningOptions
    options: CaptioningOptions
    perturbable_inputs = frozenset({"image"})  # its texts are the references
    image_controls = True

    def __init__(self, options: CaptioningOptions | None = None) -> None:
        super().__init__(options)
        self._bank_cache: dict[tuple[str, str], NDArray[np.float32]] = {}

    def select(self, dataset: Dataset) -> list[Sample]:
        return [s for s in dataset.samples if s.texts and s.image is not None and s.question is None]

    def protocols(self) -> Sequence[ProtocolChoice]:
        opts = self.options
        return [
            via(GENERATE, generates, Prompted(opts.prompt, opts.max_new_tokens), "generate",
                "greedy generation from the captioning instruction"),
            via(CAPTION, generates, Prompted(opts.prefix_prompt, opts.max_new_tokens), "caption",
                "greedy caption continuing the caption prefix"),
            via(EMBED, embeds, self._nearest_caption, "caption-by-retrieval",
                "best caption of the training-split caption bank by image-text embedding similarity",
                native=False, lacks=_no_caption_bank),
        ]  # fmt: skip

    def _metrics(self) -> list[str]:
        # METEOR needs a Java runtime; without one it is left out of the score and the cell says so.
        return [m for m in self.options.metrics if m != "METEOR" or shutil.which("java")]

    def scorer_identity(self) -> str:
        """The metrics this machine computes (METEOR is left out without Java) and METEOR's scorer: the
        jar's digest and options, which the local JVM and any server it uses share (a server must
        declare the same version and passes spot checks against the local JVM, metrics/meteor_remote.py),
        so kept scores move between them, but not to a machine without Java or with another jar."""
        used = self._metrics()
        return ",".join(used) + (f" {meteor_version()}" if "METEOR" in used else "")

    def warm_up(self) -> None:
        # the METEOR JVM loads its paraphrase table for seconds: start it while the models caption
        if "METEOR" in self._metrics():
            warm_meteor()

    def _nearest_caption(
        self, model: Embedder, info: ModelInfo, batch: Sequence[Prepared], dataset: Dataset
    ) -> list[Record]:
        """The caption bank's entry nearest each image."""
        why = _no_caption_bank(dataset, [p.sample for p in batch], info.name)
        if why is not None:
            raise CapabilityError(why)
        key = (info.fingerprint, dataset.fingerprint)
        if key not in self._bank_cache:
            chunks = [
                model.embed_texts(list(dataset.caption_bank[i : i + 256]))
                for i in range(0, len(dataset.caption_bank), 256)
            ]
            self._bank_cache[key] = np.concatenate(chunks).astype(np.float32)
        sims = similarity(model.embed_images(images_of(batch)), self._bank_cache[key])
        return _captions(batch, [dataset.caption_bank[int(j)] for j in np.argmax(sims, axis=1)])

    def judge_item(self, sample: Sample, output: dict[str, Any]) -> JudgeItem:
        """A caption, for the judge: the instruction as its question, the reference captions."""
        return JudgeItem(self.options.prompt, tuple(sample.texts), str(output.get("caption", "")))

    def before_finalize(self, cells: Sequence[FinalizeInput]) -> None:
        """Tokenise every cell's captions and references in one PTB jar call, and score their distinct
        METEOR segments in one exchange (finalize then finds both kept, and starts no process)."""
        corpora = [_corpus(c.samples, c.records) for c in cells]
        corpora = [(cands, refs) for cands, refs in corpora if cands]
        if corpora:
            components_ahead(corpora, _needed(self._metrics()))

    def finalize(
        self,
        dataset: Dataset,
        samples: Sequence[Sample],
        records: Mapping[str, Record],
        protocol: ProtocolChoice,
    ) -> CellResult:
        kept = [s for s in samples if s.sample_id in records]
        outputs = [records[s.sample_id].output for s in kept]
        cands, refs = _corpus(samples, records)
        used = self._metrics()
        keys, comp, _ = caption_components(cands, refs, metrics=_needed(used))
        order = {k: i for i, k in enumerate(keys)}
        comp = comp[[order[s.sample_id] for s in kept]]
        finish = _make_finish(used, self.options.cider_scale)
        full = caption_finish(comp.sum(0)[None, :])
        per_sample = finish(comp)  # each row alone: a per-sample score for the gallery
        metrics = {k: float(v[0]) for k, v in full.items()}
        if "METEOR" in self.options.metrics and "METEOR" not in used:
            metrics["METEOR_skipped"] = 1.0
        result = CellResult(
            sample_ids=[s.sample_id for s in kept],
            predictions=[cands[s.sample_id] for s in kept],
            scores=[float(x) for x in per_sample],
            references=[list(s.texts) for s in kept],
            components=np.nan_to_num(comp, nan=0.0),
            finish=finish,
            metrics=metrics,
            answer_format=answer_format(protocol.needs, kept, outputs, "caption", non_empty),
        )
        if self.options.judge is None:
            return result
        verdicts = [float((o or {}).get(VERDICT, 0.0)) for o in outputs]  # every caption is judged
        return with_judge(result, verdicts, self.options.judge.primary, own="coco")


@dataclass(frozen=True)
class Prompted:
    """The generate and caption protocols: greedy generation from one prompt (an instruction for a
    model that follows instructions, a prefix to continue for a captioner)."""

    prompt: str
    max_new_tokens: int

    def __call__(
        self, model: Generator, info: ModelInfo, batch: Sequence[Prepared], dataset: Dataset
    ) -> list[Record]:
        images = images_of(batch)
        texts = model.generate(images, [self.prompt] * len(images), self.max_new_tokens)
        return [
            Record(p.sample.sample_id, cleaned_output("caption", clean_generated(t)))
            for p, t in zip(batch, texts, strict=True)
        ]


def _corpus(
    samples: Sequence[Sample], records: Mapping[str, Record]
) -> tuple[dict[Hashable, str], dict[Hashable, Sequence[str]]]:
    """The caption of each sample with a record, and its references, by sample id."""
    kept = [s for s in samples if s.sample_id in records]
    cands: dict[Hashable, str] = {
        s.sample_id: str((records[s.sample_id].output or {}).get("caption", "")) for s in kept
    }
    return cands, {s.sample_id: list(s.texts) for s in kept}


def _no_caption_bank(dataset: Dataset, samples: Sequence[Sample], model: str) -> str | None:
    """Why caption-by-retrieval gets nothing from dataset for model (no caption bank), or None."""
    if dataset.caption_bank:
        return None
    return (
        f"dataset {dataset.name!r} has no caption bank (training-split captions), which "
        f"caption-by-retrieval needs for model {model!r}"
    )


def _captions(batch: Sequence[Prepared], captions: Sequence[str]) -> list[Record]:
    return [Record(p.sample.sample_id, {"caption": c}) for p, c in zip(batch, captions, strict=True)]


def _needed(used: Sequence[str]) -> list[str]:
    # BLEU-4's components come with every BLEU order; computing all orders costs nothing more.
    extra = [f"Bleu_{k}" for k in range(1, 5)] if any(m.startswith("Bleu") for m in used) else []
    return sorted(set(used) | set(extra))


def _make_finish(used: Sequence[str], cider_scale: float) -> Finish:
    def finish(sums: NDArray[np.float64]) -> NDArray[np.float64]:
        m = caption_finish(sums)
        parts = []
        for name in used:
            v = m[name]
            parts.append(np.minimum(v / cider_scale, 1.0) if name == "CIDEr" else v)
        out: NDArray[np.float64] = np.mean(parts, axis=0)
        return out

    return finish
