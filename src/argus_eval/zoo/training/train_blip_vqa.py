"""zoo:blip_vqa: a tiny BlipForQuestionAnswering on ShapesWorld studio questions.

BLIP's VQA head: the question, encoded by a text encoder that cross-attends to the image, conditions an
answer decoder. The prompt is the default reasoning task's, rendered around each question exactly as
the harness sends it, so the vocabulary holds the prompt's words.

Tiny QA models settle on the blind per-type answer prior and never look at the image. Six builds that
started the vision tower from the captioner and trained every part at one learning rate all did (see
docs/zoo.md); what made this one look:
* the vision tower and the question encoder start from the shipped retrieval head zoo:blip_itm, a pair
  already trained to read a text against the image (its ITM head), and move at PRETRAINED_LR_SCALE of
  the decoder's rate: at full rate a trial lost that grounding in the second phase (colour answers 0 %);
* lxmert's curriculum (zoo/training/qa_mix.py): "what colour is X" questions alone first (8 answers, a
  useless prior), then every single-attribute query, then every question with zero-hop ones
  oversampled, and last every question as a test split mixes them, at a lower rate: oversampling skews
  the per-type priors (e.g. of counts) away from the test mix, and without the last phase the trials
  answered yes/no questions below the blind prior;
* the chat models' object-token alignment (zoo/training/object_tokens.py): each patch token, read
  through the question encoder's own word embeddings (tied, nothing stored), must predict the attribute
  words of the scene objects covering its cell.
"""

from __future__ import annotations

from pathlib import Path

import torch

from argus_eval.models.protocols import GENERATE
from argus_eval.zoo.recipe import Log, Recipe, Trained
from argus_eval.zoo.training import object_tokens
from argus_eval.zoo.training import train_blip as blip
from argus_eval.zoo.training.chat_vlm import prompt_words, task_prompts
from argus_eval.zoo.training.loop import Schedule, param_groups
from argus_eval.zoo.training.qa_mix import Phase, QuestionSampler, describe_curriculum, run_curriculum

TRAIN_IMAGES = 3000
BATCH = 32
OBJECT_TOKEN_WEIGHT = 1.0
EASY_SHARE = 0.3  # zero-hop share of the "all" phase's questions
PRETRAINED_LR_SCALE = 0.1  # learning-rate multiplier of the parts started from zoo:blip_itm
PHASES: tuple[Phase, ...] = (
    ("colour", "query_color", Schedule(steps=800, lr=1e-3, warmup=30)),
    ("attributes", "query", Schedule(steps=600, lr=1e-3, warmup=30)),
    ("all", "all", Schedule(steps=2400, lr=1e-3, warmup=30)),
    ("final", "natural", Schedule(steps=1500, lr=3e-4, warmup=30)),
)
# As BLIP's VQA model starts from its pre-trained encoders and decoder.
START: tuple[blip.StartPart, ...] = (
    ("vision_model.", "blip_itm", "vision_model."),
    ("text_encoder.", "blip_itm", "text_encoder."),
    ("text_decoder.", "blip", "text_decoder."),
)


def lr_scale(name: str) -> float:
    """PRETRAINED_LR_SCALE for the parts started from the retrieval head, 1 for the answer decoder."""
    return PRETRAINED_LR_SCALE if name.startswith(("vision_model.", "text_encoder.")) else 1.0


def train(
    out_dir: Path,
    seed: int,
    seconds: float | None,
    log: Log,
    steps: int | None = None,
    n_images: int = TRAIN_IMAGES,
) -> Trained:
    """The curriculum (steps, if given, is split evenly over the phases); saves zoo:blip_vqa into out_dir."""
    s = blip.setup("BlipForQuestionAnswering", seed, n_images, prompt_words())
    model, tok, qs = s.model, s.tok, s.split.questions
    start = blip.start_parts(model, tok, START)
    prompt = task_prompts()[1]
    enc = tok([prompt.format(question=q["question"]) for q in qs], padding="longest", return_tensors="pt")
    ans = tok([q["answer"] for q in qs], padding="longest", return_tensors="pt")
    answer_ids = ans["input_ids"].clone()
    answer_ids[:, 0] = tok.convert_tokens_to_ids("[DEC]")  # generate() starts the answer from [DEC]
    labels = answer_ids.masked_fill(ans["attention_mask"] == 0, -100)
    image_of = torch.tensor([q["image_index"] for q in qs])
    grid = blip.IMAGE // blip.ARCH["patch"]
    targets = object_tokens.token_targets(s.split.scenes, grid, grid, tok.convert_tokens_to_ids, len(tok))
    words = model.text_encoder.embeddings.word_embeddings
    sampler = QuestionSampler(s.split, EASY_SHARE)

    def loss_of(idx: torch.Tensor) -> torch.Tensor:
        img = image_of[idx]
        m = enc["attention_mask"][idx]
        m = m[:, : int(m.sum(1).max())]
        image = model.vision_model(pixel_values=s.pixels[img]).last_hidden_state
        question = model.text_encoder(
            input_ids=enc["input_ids"][idx][:, : m.shape[1]], attention_mask=m, encoder_hidden_states=image
        ).last_hidden_state
        # transformers 5.24's BLIP text layers drop encoder_attention_mask in cross-attention, so the
        # decoder reads the question's pads (up to the batch's longest); at inference the adapter batches
        # equal-length questions, which have none.
        loss: torch.Tensor = model.text_decoder(
            input_ids=answer_ids[idx],
            attention_mask=ans["attention_mask"][idx],
            encoder_hidden_states=question,
            encoder_attention_mask=m,
            labels=labels[idx],
            reduction="mean",
        ).loss
        # Patch tokens (the [CLS] token at 0 is no cell) against the attribute words of their objects.
        cells = image[:, 1:] @ words.weight.T
        return loss + OBJECT_TOKEN_WEIGHT * object_tokens.object_token_loss(cells, targets[img])

    groups = param_groups(model, lr_scale)
    res = run_curriculum(model, loss_of, PHASES, BATCH, sampler, qs, s.gen, seconds, log, steps, groups)
    return s.finish(
        out_dir,
        res,
        {
            "batch": BATCH,
            "start": start,
            "pretrained_lr_scale": PRETRAINED_LR_SCALE,
            "curriculum": describe_curriculum(PHASES),
            "object_token_weight": OBJECT_TOKEN_WEIGHT,
            "loss": "answer LM ([DEC] answer [SEP]) + object-token alignment of the patch tokens",
        },
        sampling=sampler.describe(),
    )


RECIPE = Recipe(
    name="blip_vqa",
    family="blip",
    capabilities=(GENERATE,),
    seed=4,
    note="tiny BLIP VQA head (BlipForQuestionAnswering), ShapesWorld studio questions (curriculum, "
    "object-token alignment, towers from zoo:blip_itm)",
    train=train,
    tasks=("reasoning",),
)
