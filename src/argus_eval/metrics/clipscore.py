"""CLIPScore and RefCLIPScore (Hessel et al., 2021) from precomputed embeddings; the model call lives
elsewhere. Inputs are re-normalised to unit length (a no-op for already L2-normalised embeddings)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from argus_eval.errors import MetricError


def _unit(x: ArrayLike, what: str) -> NDArray[np.float64]:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2:
        raise MetricError(f"{what} must be a 2-D (n, dim) array, got shape {a.shape}; stack the embeddings")
    norm = np.linalg.norm(a, axis=1, keepdims=True)
    bad = np.flatnonzero(~np.isfinite(norm[:, 0]) | (norm[:, 0] == 0))
    if bad.size:
        raise MetricError(f"{what} row {bad[0]} is zero or not finite; recompute that embedding")
    result: NDArray[np.float64] = a / norm
    return result


def clip_score(image_emb: ArrayLike, cand_emb: ArrayLike, w: float = 2.5) -> NDArray[np.float64]:
    """Per-sample CLIP-S = w * max(cos(image, candidate), 0); shapes (n, d) and (n, d) -> (n,)."""
    img, cand = _unit(image_emb, "image_emb"), _unit(cand_emb, "cand_emb")
    if img.shape != cand.shape:
        raise MetricError(
            f"image_emb {img.shape} and cand_emb {cand.shape} differ; pass one candidate per image"
        )
    result: NDArray[np.float64] = w * np.maximum(np.einsum("nd,nd->n", img, cand), 0.0)
    return result


def ref_clip_score(
    image_emb: ArrayLike, cand_emb: ArrayLike, ref_embs: Sequence[ArrayLike], w: float = 2.5
) -> NDArray[np.float64]:
    """Per-sample RefCLIP-S: harmonic mean of CLIP-S and max(max_r cos(candidate, ref_r), 0).

    ref_embs[i] is an (n_refs_i, d) array of sample i's reference-text embeddings. A sample whose two
    parts are both 0 scores 0.
    """
    cs = clip_score(image_emb, cand_emb, w)
    cand = _unit(cand_emb, "cand_emb")
    if len(ref_embs) != cand.shape[0]:
        raise MetricError(
            f"ref_embs has {len(ref_embs)} entries for {cand.shape[0]} candidates; give one per sample"
        )
    ref_part = np.empty(cand.shape[0], dtype=np.float64)
    for i, refs in enumerate(ref_embs):
        r = _unit(refs, f"ref_embs[{i}]")
        if r.shape[0] == 0 or r.shape[1] != cand.shape[1]:
            raise MetricError(
                f"ref_embs[{i}] has shape {r.shape}; need >= 1 reference of dim {cand.shape[1]}"
            )
        ref_part[i] = max(float((r @ cand[i]).max()), 0.0)
    total = cs + ref_part
    with np.errstate(invalid="ignore", divide="ignore"):
        result: NDArray[np.float64] = np.where(total > 0, 2 * cs * ref_part / total, 0.0)
    return result
