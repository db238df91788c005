"""zoo:blip_itm: a tiny BlipForImageTextRetrieval (contrastive and image-text matching heads) on ShapesWorld.

BLIP's retrieval checkpoint is trained with two losses over one text encoder: image-text contrastive
(ITC: the [CLS] projections of the unimodal text encoder and of the vision tower, what `embed` serves)
and image-text matching (ITM: the text encoder cross-attending to the image, [CLS] into a 2-way head,
what `score_pairs` serves). Both use the generator's exact truth: ShapesWorld captions are often true
of several scenes ("There are three things in total."), so such in-batch pairs are positives for ITC
(multi-positive targets, as zoo:clip) and are never drawn as ITM negatives.

The vision tower and text encoder start from the shipped captioner zoo:blip (its vision tower and its
decoder's BERT layers, the same BlipTextModel), as BLIP's heads all start from one pre-trained model.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.nn.functional as F

from argus_eval.models.protocols import EMBED, SCORE_PAIRS
from argus_eval.zoo.recipe import Log, Recipe, Trained
from argus_eval.zoo.training import train_blip as blip
from argus_eval.zoo.training.data import CaptionBatches
from argus_eval.zoo.training.loop import Schedule, param_groups, run_phase
from argus_eval.zoo.training.train_clip import multi_positive_loss

SCHEDULE = Schedule(steps=500, lr=1e-3, weight_decay=0.05, warmup=30)
BATCH = 48  # images per step, each with all its captions (5 x 48 texts for ITC)
ITM_WEIGHT = 1.0
TEMPERATURE = 0.07  # BLIP's initial contrastive temperature; learned during training, not stored


def draw_false(weight: torch.Tensor, pos: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Per row, one column whose pair is false (pos 0), drawn with probability softmax(weight) over the
    false pairs: the hard negatives when weight is the contrastive similarity, a uniform draw when it is
    constant. A row whose weights all underflow falls back to a uniform draw over its false pairs."""
    with torch.no_grad():
        w = F.softmax(weight.float(), dim=1).masked_fill(pos > 0, 0.0)
        w = torch.where(w.sum(1, keepdim=True) > 0, w, (pos == 0).float())
        return torch.multinomial(w, 1, generator=g).squeeze(1)


def train(
    out_dir: Path, seed: int, seconds: float | None, log: Log, steps: int | None = None, n_images: int = 2000
) -> Trained:
    """ITC + ITM on every caption of each image; saves zoo:blip_itm into out_dir."""
    s = blip.setup("BlipForImageTextRetrieval", seed, n_images)
    model, pixels = s.model, s.pixels
    start = blip.start_from_captioner(model, s.tok, text_encoder=True)
    batches = CaptionBatches(s.tok, s.split.captions, BATCH)
    truth = torch.from_numpy(s.split.positives())  # (n_images * n_caps, n_images), image-major
    log_scale = torch.nn.Parameter(torch.tensor(math.log(1 / TEMPERATURE)))
    groups = [*param_groups(model), {"params": [log_scale], "lr_scale": 1.0}]

    def step(i: int, g: torch.Generator) -> torch.Tensor:
        idx, x, m = batches.next(g)
        image = model.vision_model(pixel_values=pixels[idx]).last_hidden_state
        image_feat = F.normalize(model.vision_proj(image[:, 0]), dim=-1)
        text = model.text_encoder(input_ids=x, attention_mask=m).last_hidden_state
        text_feat = F.normalize(model.text_proj(text[:, 0]), dim=-1)
        rows = (idx[:, None] * batches.n_caps + torch.arange(batches.n_caps)).flatten()
        pos = truth[rows][:, idx].float()  # (texts, images): caption true of image
        sim = text_feat @ image_feat.T * log_scale.exp().clamp(max=100.0)
        itc = multi_positive_loss(sim, pos)
        # ITM on one random caption of each image (positive), a false caption of each image and a false
        # image of each chosen caption (negatives): BLIP's 1:2 mix. The false images are the hard ones (by
        # similarity), the false captions uniform: hard captions are mostly generic ones with a wrong count
        # ("There are four things in total."), and with only those the head stayed at chance (loss 0.61
        # after 300 steps, own caption above another image's in 56 % of test pairs).
        b = len(idx)
        chosen = torch.arange(b) * batches.n_caps + torch.randint(0, batches.n_caps, (b,), generator=g)
        neg_text = draw_false(torch.zeros_like(sim.T), pos.T, g)
        neg_image = draw_false(sim.detach()[chosen], pos[chosen], g)
        texts = torch.cat([chosen, neg_text, chosen])
        fused = model.text_encoder(
            input_ids=x[texts],
            attention_mask=m[texts],
            encoder_hidden_states=torch.cat([image, image, image[neg_image]]),
        ).last_hidden_state
        labels = torch.cat([torch.ones(b), torch.zeros(2 * b)]).long()
        itm = F.cross_entropy(model.itm_head(fused[:, 0]), labels)
        return itc + ITM_WEIGHT * itm

    schedule = SCHEDULE if steps is None else Schedule(steps=steps, lr=SCHEDULE.lr, warmup=min(steps, 30))
    res = run_phase(model, step, schedule, s.gen, seconds, log, groups)
    return s.finish(
        out_dir,
        res,
        {
            "batch": BATCH,
            "lr": SCHEDULE.lr,
            "start": start,
            "loss": "multi-positive ITC over all 5 captions per image (learned temperature) + ITM on "
            f"1 positive, 1 uniform false caption and 1 hard false image per image (weight {ITM_WEIGHT})",
        },
    )


RECIPE = Recipe(
    name="blip_itm",
    family="blip",
    capabilities=(EMBED, SCORE_PAIRS),
    seed=6,
    note="tiny BLIP retrieval head (BlipForImageTextRetrieval: ITC embeddings + ITM pair score), "
    "ShapesWorld studio, from zoo:blip's towers",
    train=train,
    tasks=("retrieval",),
)
