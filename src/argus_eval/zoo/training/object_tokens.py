"""Object-token alignment: an auxiliary loss that makes each image token name the objects under it.

Real VLM vision towers arrive pre-trained on billions of images, and LXMERT reads detector regions
trained on Visual Genome's object and attribute labels. The zoo's towers start from nothing, and
trained on captions and questions alone their tokens never say *which* object sits *where*, so the
language model answers from the question prior (measured: accuracy equal to the swapped-image control). This
loss stands in for that
pre-training: each projected image token, read through the language model's own output head, must
predict the attribute words (colour, shape, size, material) of the scene objects whose footprint
covers its cell. The tokens then live where those words' embeddings live, and a question's words can
find them by attention. The targets come from the generator's scene records; the auxiliary head is the
tied output embedding, so nothing is added to the checkpoint.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch

from argus_eval.data.shapesworld.domains import get_domain
from argus_eval.data.shapesworld.scene import HEIGHT, WIDTH, camera_for

ATTRIBUTES = ("color", "shape", "size", "material")


def object_cells(scene: dict[str, Any], rows: int, cols: int) -> list[tuple[list[int], list[str]]]:
    """(covered raster cell indices, attribute words) of each object of a scene on a rows x cols
    tiling of the whole image (the processors resize the full frame, no crop).

    A cell is covered when its centre lies inside the object's projected radius, or the object's centre
    lies inside it (small objects still own one cell).
    """
    focal = camera_for(get_domain(str(scene["domain"]))).focal_px
    cw, ch = WIDTH / cols, HEIGHT / rows
    out = []
    for obj in scene["objects"]:
        px, py, depth = obj["pixel_coords"]
        radius = focal * float(obj["3d_coords"][2]) / max(float(depth), 1e-6)
        own = min(rows - 1, max(0, int(py // ch))) * cols + min(cols - 1, max(0, int(px // cw)))
        cells = {own}
        for r in range(rows):
            for c in range(cols):
                if math.hypot((c + 0.5) * cw - px, (r + 0.5) * ch - py) <= radius:
                    cells.add(r * cols + c)
        out.append((sorted(cells), [str(obj[a]) for a in ATTRIBUTES]))
    return out


def token_targets(
    scenes: Sequence[dict[str, Any]], rows: int, cols: int, word_id: Callable[[str], int], vocab: int
) -> torch.Tensor:
    """(n_images, rows*cols, vocab) target distributions: per cell, uniform over the attribute words
    of every object covering it; all-zero rows for empty cells (they carry no loss)."""
    out = torch.zeros(len(scenes), rows * cols, vocab)
    for i, scene in enumerate(scenes):
        for cells, words in object_cells(scene, rows, cols):
            ids = [word_id(w) for w in words]
            for cell in cells:
                out[i, cell, ids] += 1.0
    mass = out.sum(-1, keepdim=True)
    return out / mass.clamp(min=1.0)


def object_token_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Soft-target cross-entropy of (n, cells, vocab) token logits, averaged over occupied cells."""
    occupied = targets.sum(-1) > 0
    logp = torch.log_softmax(logits.float(), dim=-1)
    per_cell = -(targets * logp).sum(-1)
    return per_cell[occupied].mean() if bool(occupied.any()) else logits.sum() * 0.0
