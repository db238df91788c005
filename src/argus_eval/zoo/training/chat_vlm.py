"""Shared training of the zoo's generative VLMs (Gemma-3, Qwen2.5-VL): chat data, masking, phases.

Each example is rendered exactly as the framework's VLM adapter renders a request: the processor's chat
template around [image, task prompt], then the target and the end-of-turn token. The prompts are the
tasks' defaults (captioning and reasoning), so the default run asks what the model was trained on.
Loss is averaged per sample, so one-word answers weigh as much as 20-word captions (a token-mean loss let
~22-token captions swamp 1-token answers).

Phases: captions only first (caption training grounds the vision tower, as measured in docs/zoo.md);
optionally a
grounding phase of captions plus colour questions only (a useless answer prior, so looking pays; see
qa_mix.curriculum_pool); then a mix of captions and every question, zero-hop ones oversampled. An
optional object-token alignment loss (object_tokens.py) on every image makes the image tokens name the
objects under them, which is what lets the language model's attention find the object a question asks
about.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from argus_eval.models.hf_common import to_pil
from argus_eval.models.processor_files import save_processor
from argus_eval.zoo.recipe import Log, Trained
from argus_eval.zoo.training import object_tokens
from argus_eval.zoo.training.data import SplitData, load_split
from argus_eval.zoo.training.loop import Schedule, param_groups, run_phase, seed_everything
from argus_eval.zoo.training.qa_mix import QuestionSampler, curriculum_pool


def task_prompts() -> tuple[str, str]:
    """(captioning prompt, reasoning prompt template) exactly as the default tasks send them."""
    from argus_eval.tasks.captioning import CaptioningOptions
    from argus_eval.tasks.reasoning import ReasoningOptions

    return CaptioningOptions().prompt, ReasoningOptions().prompt


Part = tuple[list[int], list[str], list[str]]  # pool image indices, prompts, targets of part of a batch
Phase = tuple[str, Callable[[int, torch.Generator], torch.Tensor], Schedule]  # title, step, schedule


@dataclass(frozen=True)
class ChatFamily:
    """What differs between chat VLM families: how to build (model, processor), the turn tokens."""

    build: Callable[[list[str]], tuple[Any, Any]]  # vocabulary words -> (model, processor)
    # (model, processor batch) -> ((n, rows*cols, d) projected image tokens in raster order, (rows, cols))
    image_tokens: Callable[[Any, dict[str, Any]], tuple[torch.Tensor, tuple[int, int]]]
    turn_start: str  # the token that opens every turn (masking keeps what follows the last one's role)
    turn_end: str  # appended to every target; generation stops on it


@dataclass(frozen=True)
class ChatRecipe:
    """Data and schedule of one chat VLM."""

    domains: tuple[str, ...]
    images_per_domain: int
    caption_phase: Schedule
    mixed_phase: Schedule
    batch: int
    caption_share: float  # captions in the mixed phase
    easy_share: float  # zero-hop questions among the mixed phase's questions
    vision_lr_scale: float
    grounding_phase: Schedule | None = None
    grounding_questions: str = "query_color"  # a curriculum_pool stage
    # Weight of an in-batch contrastive loss between the mean image-token embedding and the caption's
    # mean word embedding, during the caption phase. Without it the tiny vision towers output nearly the
    # same tokens for every image and the language model learns templates (measured: one caption template for
    # every image).
    contrastive_weight: float = 0.0
    contrastive_throughout: bool = False  # also on the captions of the later phases' mixed batches
    # Weight of the object-token alignment loss (object_tokens.py) on every image of every batch.
    object_token_weight: float = 0.0


@dataclass(frozen=True)
class Pool:
    """Training images of all the recipe's domains, with captions and questions re-indexed onto them."""

    images: NDArray[np.uint8]
    captions: list[tuple[str, ...]]
    split: SplitData  # questions with image_index into images; scenes aligned with images

    @staticmethod
    def of(domains: Sequence[str], n: int) -> Pool:
        splits = [load_split(d, "train", n) for d in domains]
        questions: list[dict[str, Any]] = []
        offset = 0
        for s in splits:
            questions.extend({**q, "image_index": q["image_index"] + offset} for q in s.questions)
            offset += len(s.images)
        images = np.concatenate([s.images for s in splits])
        captions = [c for s in splits for c in s.captions]
        scenes = tuple(sc for s in splits for sc in s.scenes)
        merged = SplitData(
            "+".join(domains), "train", images, tuple(captions), tuple(questions), scenes=scenes
        )
        return Pool(images, captions, merged)


class Encoder:
    """Turns (image, prompt, target) triples into a right-padded batch with prompt-masked labels."""

    def __init__(self, processor: Any, family: ChatFamily) -> None:
        self.processor = processor
        tok = processor.tokenizer
        self.start_id = tok.convert_tokens_to_ids(family.turn_start)
        self.pad_id = tok.pad_token_id
        self.turn_end = family.turn_end

    def chat(self, prompt: str) -> str:
        """The adapter's rendering of a user turn [image, prompt] plus the generation prompt."""
        msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}]
        text: str = self.processor.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
        return text

    def batch(
        self, images: Sequence[NDArray[np.uint8]], prompts: Sequence[str], targets: Sequence[str]
    ) -> dict[str, Any]:
        texts = [self.chat(p) + t + self.turn_end for p, t in zip(prompts, targets, strict=True)]
        self.processor.tokenizer.padding_side = "right"  # real tokens start at position 0, pads follow
        enc = dict(
            self.processor(
                text=texts,
                images=[[im] for im in to_pil(images)],
                padding=True,
                add_special_tokens=False,
                return_tensors="pt",
            )
        )
        self.processor.tokenizer.padding_side = "left"
        ids = enc["input_ids"]
        labels = ids.clone()
        for r in range(ids.shape[0]):
            starts = (ids[r] == self.start_id).nonzero()
            labels[r, : int(starts[-1]) + 2] = -100  # the last turn start and its role token
        labels[enc["attention_mask"] == 0] = -100
        enc["labels"] = labels
        return enc


def contrastive_loss(
    image_vec: torch.Tensor, text_vec: torch.Tensor, image_ids: list[int], log_scale: torch.Tensor
) -> torch.Tensor:
    """Symmetric InfoNCE between (n, d) image and text vectors; other pairs of the same image are masked."""
    iv = torch.nn.functional.normalize(image_vec, dim=-1)
    tv = torch.nn.functional.normalize(text_vec, dim=-1)
    logits = log_scale.exp() * iv @ tv.T
    same = torch.tensor(image_ids)[:, None] == torch.tensor(image_ids)[None, :]
    logits = logits.masked_fill(same & ~torch.eye(len(image_ids), dtype=torch.bool), -1e4)
    y = torch.arange(len(image_ids))
    return 0.5 * (
        torch.nn.functional.cross_entropy(logits, y) + torch.nn.functional.cross_entropy(logits.T, y)
    )


def per_sample_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy averaged within each sample, then over samples."""
    lg, lb = logits[:, :-1].float(), labels[:, 1:]
    tok = torch.nn.functional.cross_entropy(
        lg.reshape(-1, lg.shape[-1]), lb.reshape(-1), ignore_index=-100, reduction="none"
    ).view(lb.shape)
    keep = (lb != -100).float()
    return ((tok * keep).sum(1) / keep.sum(1).clamp(min=1)).mean()


def prompt_words() -> list[str]:
    """The words of the task prompts, which the chat vocabularies must hold."""
    cap, qa = task_prompts()
    return [cap, qa.format(question="")]


class _Batches:
    """The batches and losses of one chat VLM's training: captions, questions and their mixes, each
    encoded as the adapter renders a request, and the loss of a batch with the recipe's extra terms."""

    def __init__(
        self, family: ChatFamily, recipe: ChatRecipe, pool: Pool, model: Any, processor: Any
    ) -> None:
        self.family, self.recipe, self.pool, self.model = family, recipe, pool, model
        self.enc = Encoder(processor, family)
        self.cap_prompt, self.qa_prompt = task_prompts()
        self.sampler = QuestionSampler(pool.split, recipe.easy_share)
        self.groups = param_groups(
            model, lambda n: recipe.vision_lr_scale if "visual" in n or "vision" in n else 1.0
        )
        self.emb = model.get_input_embeddings()
        self.tok = processor.tokenizer
        self.log_scale = torch.nn.Parameter(torch.tensor(2.5))
        self.groups.append({"params": [self.log_scale], "lr_scale": 1.0})
        self.targets_by_grid: dict[tuple[int, int], torch.Tensor] = {}  # built on first use of a token grid
        self.grounding = curriculum_pool(pool.split.questions, recipe.grounding_questions)

    def captions(self, size: int, g: torch.Generator) -> Part:
        """size random (image, caption) pairs."""
        pool = self.pool
        idx = torch.randint(0, len(pool.images), (size,), generator=g).tolist()
        pick = torch.randint(0, len(pool.captions[0]), (size,), generator=g).tolist()
        return idx, [self.cap_prompt] * size, [pool.captions[i][j] for i, j in zip(idx, pick, strict=True)]

    def questions(self, size: int, g: torch.Generator) -> Part:
        return self.as_parts([self.pool.split.questions[k] for k in self.sampler.batch(size, g)])

    def as_parts(self, qs: list[dict[str, Any]]) -> Part:
        return (
            [int(q["image_index"]) for q in qs],
            [self.qa_prompt.format(question=q["question"]) for q in qs],
            [q["answer"] for q in qs],
        )

    def token_targets(self, grid: tuple[int, int]) -> torch.Tensor:
        if grid not in self.targets_by_grid:
            tok = self.tok
            self.targets_by_grid[grid] = object_tokens.token_targets(
                self.pool.split.scenes, *grid, tok.convert_tokens_to_ids, len(tok)
            )
        return self.targets_by_grid[grid]

    def loss_of(self, parts: list[Part], contrast: bool = False) -> torch.Tensor:
        """Next-token loss of the batch; with contrast, plus the contrastive term on parts[0] (captions);
        plus the object-token term on every image when the recipe weights it."""
        recipe, model = self.recipe, self.model
        idx = [i for p in parts for i in p[0]]
        batch = self.enc.batch(
            [self.pool.images[i] for i in idx],
            [x for p in parts for x in p[1]],
            [x for p in parts for x in p[2]],
        )
        labels = batch.pop("labels")
        loss = per_sample_loss(model(**batch).logits, labels)
        need_contrast = contrast and recipe.contrastive_weight > 0
        if not need_contrast and recipe.object_token_weight <= 0:
            return loss
        image_tokens, grid = self.family.image_tokens(model, batch)
        if need_contrast:
            loss = loss + recipe.contrastive_weight * self._contrast(parts[0], image_tokens)
        if recipe.object_token_weight > 0:
            logits = model.get_output_embeddings()(image_tokens)
            loss = loss + recipe.object_token_weight * object_tokens.object_token_loss(
                logits, self.token_targets(grid)[idx]
            )
        return loss

    def _contrast(self, captions: Part, image_tokens: torch.Tensor) -> torch.Tensor:
        """The contrastive term between the captions' images (their mean image token) and their words."""
        cap_idx, _, targets = captions
        words = self.tok(targets, padding=True, add_special_tokens=False, return_tensors="pt")
        mask = words["attention_mask"][..., None]
        text_vec = (self.emb(words["input_ids"]) * mask).sum(1) / mask.sum(1).clamp(min=1)
        image_vec = image_tokens[: len(targets)].mean(dim=1)
        return contrastive_loss(image_vec, text_vec, cap_idx, self.log_scale)

    def caption_step(self, i: int, g: torch.Generator) -> torch.Tensor:
        return self.loss_of([self.captions(self.recipe.batch, g)], contrast=True)

    def mixed_step(self, i: int, g: torch.Generator) -> torch.Tensor:
        recipe = self.recipe
        n_cap = round(recipe.batch * recipe.caption_share)
        cap = self.captions(n_cap, g)
        return self.loss_of([cap, self.questions(recipe.batch - n_cap, g)], recipe.contrastive_throughout)

    def grounding_step(self, i: int, g: torch.Generator) -> torch.Tensor:
        recipe, grounding = self.recipe, self.grounding
        n_cap = round(recipe.batch * recipe.caption_share)
        pick = torch.randint(0, len(grounding), (recipe.batch - n_cap,), generator=g).tolist()
        cap = self.captions(n_cap, g)
        colour = self.as_parts([self.pool.split.questions[grounding[k]] for k in pick])
        return self.loss_of([cap, colour], recipe.contrastive_throughout)

    def phases(self) -> list[Phase]:
        """(title, step, schedule) of each phase in order: captions, grounding (when the recipe has
        one and its questions exist), then the mix."""
        recipe = self.recipe
        phases: list[Phase] = [("captions only", self.caption_step, recipe.caption_phase)]
        if recipe.grounding_phase is not None and self.grounding:
            phases.append(
                (
                    f"captions + {recipe.grounding_questions} questions",
                    self.grounding_step,
                    recipe.grounding_phase,
                )
            )
        phases.append(("captions + questions", self.mixed_step, recipe.mixed_phase))
        return phases


def train_chat(
    family: ChatFamily,
    recipe: ChatRecipe,
    out_dir: Path,
    seed: int,
    seconds: float | None,
    log: Log,
    words: list[str],
) -> Trained:
    """Every phase; saves model and processor (with chat template) into out_dir."""
    gen = seed_everything(seed)
    pool = Pool.of(recipe.domains, recipe.images_per_domain)
    model, processor = family.build(words)
    batches = _Batches(family, recipe, pool, model, processor)
    phases = batches.phases()
    planned = sum(sch.steps for _, _, sch in phases)
    done: list[Any] = []
    for k, (title, fn, sch) in enumerate(phases, start=1):
        log(f"  phase {k}: {title}")
        share = None if seconds is None else seconds * sch.steps / planned
        done.append(run_phase(model, fn, sch, gen, share, log, batches.groups))
    model.save_pretrained(out_dir)
    save_processor(processor, out_dir)
    return _trained(batches, [t for t, _, _ in phases], done)


def _trained(batches: _Batches, titles: list[str], done: list[Any]) -> Trained:
    """What the training did: sizes, steps and time, its settings and data, and the losses of every step."""
    recipe, pool = batches.recipe, batches.pool
    return Trained(
        params=sum(p.numel() for p in batches.model.parameters()),
        steps=sum(r.steps for r in done),
        seconds=sum(r.seconds for r in done),
        config={
            "batch": recipe.batch,
            "phases": [{"phase": t, "steps": r.steps} for t, r in zip(titles, done, strict=True)],
            "lr": recipe.mixed_phase.lr,
            "vision_lr_scale": recipe.vision_lr_scale,
            "caption_share": recipe.caption_share,
            "contrastive_weight": recipe.contrastive_weight,
            "contrastive_throughout": recipe.contrastive_throughout,
            "object_token_weight": recipe.object_token_weight,
            "vocab": len(batches.tok),
            "loss": "per-sample mean next-token CE on the answer/caption and end-of-turn token",
        },
        data={
            "domains": list(recipe.domains),
            "split": "train",
            "images": len(pool.images),
            "captions": sum(len(c) for c in pool.captions),
            "sampling": batches.sampler.describe(),
        },
        losses=[x for r in done for x in r.losses],
    )
