"""Image-text retrieval in both directions, scored with Recall@K (CLIP_benchmark's definition)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from pydantic import Field, PlainValidator, StrictInt

from argus_eval.data.types import Dataset, Sample
from argus_eval.errors import CapabilityError
from argus_eval.metrics.retrieval import (
    chance_recall_at_k,
    mean_rank,
    median_rank,
    recall_from_ranks,
    retrieval_ranks,
)
from argus_eval.metrics.retrieval_chunked import EmbeddingRanks, embedding_ranks
from argus_eval.models.protocols import (
    EMBED,
    SCORE_PAIRS,
    Embedder,
    ModelInfo,
    PairScorer,
    embeds,
    scores_pairs,
)
from argus_eval.tasks import retrieval_stages as stages
from argus_eval.tasks.base import (
    CellResult,
    Finish,
    Prepared,
    ProtocolChoice,
    Task,
    TaskOptions,
    TaskProtocol,
    images_of,
    via,
)
from argus_eval.tasks.records import Record


class RetrievalOptions(TaskOptions):
    name: str = "retrieval"
    ks: tuple[Annotated[StrictInt, Field(ge=1)], ...] = Field(
        default=(1, 5, 10), description="Recall cut-offs averaged into the score."
    )
    directions: tuple[str, ...] = Field(
        default=("i2t", "t2i"), description="Directions averaged into the primary score."
    )
    shortlist: Annotated[stages.Shortlist | None, PlainValidator(stages.shortlist_k)] = Field(
        default=None,
        description="Pair-scoring models: re-rank only each image's top k texts of the first stage "
        "(images x k pair scores instead of images x texts); 'all' scores every pair; unset: exhaustive.",
    )
    first_stage: str = Field(
        default=stages.SELF,
        description="What shortlists for `shortlist`: 'self' (the model's own pooled vectors) or the spec "
        "of a model that embeds (e.g. zoo:clip).",
    )


class RetrievalTask(Task):
    """Embed every image and its texts; rank the whole split's gallery in both directions.

    Per-sample records hold the embeddings, so the similarity matrix, ranks and recalls are computed
    at scoring time from the store alone. Multi-positive truth comes from metadata["also_true_of"].
    """

    name = "retrieval"
    options_model = RetrievalOptions
    options: RetrievalOptions

    def select(self, dataset: Dataset) -> list[Sample]:
        return [s for s in dataset.samples if s.texts and s.image is not None and s.question is None]

    def protocols(self) -> Sequence[ProtocolChoice]:
        embed = via(EMBED, embeds, _embed, "embed", "cosine similarity of image and text embeddings",
                    cost=_embed_calls)  # fmt: skip
        k, first = self.options.shortlist, self.options.first_stage
        if k is None:
            pairs = TaskProtocol(
                name="score-pairs",
                needs=frozenset({SCORE_PAIRS}),
                native=False,
                description="every image scored against every text of the split with the model's pair "
                "score (images x texts model calls: for small galleries)",
                gallery=True,
                cost=_pair_calls,
                offers=scores_pairs,
                answer=_score_all_pairs,
            )
            return [embed, pairs]
        return [embed, stages.Rerank(k, first).protocol()]

    def choose_protocol(self, info: ModelInfo) -> ProtocolChoice:
        """As Task's, but a pair scorer without pooled vectors under first_stage 'self' is told the fix."""
        try:
            return super().choose_protocol(info)
        except CapabilityError:
            if self.options.shortlist is None or SCORE_PAIRS not in info.capabilities:
                raise
            raise CapabilityError(
                f"model {info.name!r} scores pairs but has no pooled vectors for the retrieval option "
                f"first_stage={self.options.first_stage!r}; name a model that embeds (first_stage: zoo:clip)"
            ) from None

    def _ranks(
        self,
        samples: Sequence[Sample],
        kept: Sequence[Sample],
        records: Mapping[str, Record],
        text_to_image: NDArray[np.int64],
        positives: sp.csr_matrix,
    ) -> EmbeddingRanks:
        """Ranks and top texts: from embeddings block by block (the matrix is never held whole), or
        from the per-image pair-score rows the records already hold."""
        if "scores" not in records[kept[0].sample_id].arrays:
            img = np.stack([records[s.sample_id].arrays["image"] for s in kept])
            txt = np.concatenate([records[s.sample_id].arrays["texts"] for s in kept])
            return embedding_ranks(img, txt, text_to_image, positives)
        sim = self._pair_similarity(samples, kept, records)
        r_img, r_txt = retrieval_ranks(sim, text_to_image, positives)
        return EmbeddingRanks(i2t=r_img, t2i=r_txt, top_text=np.argmax(sim, axis=1))

    def _pair_similarity(
        self, samples: Sequence[Sample], kept: Sequence[Sample], records: Mapping[str, Record]
    ) -> NDArray[np.float32]:
        """(kept images, kept texts) similarity from per-image pair-score rows."""
        first = records[kept[0].sample_id].arrays
        # gallery columns are all cell samples' texts in order; keep the columns of kept samples
        keep = {s.sample_id for s in kept}
        owners = [s.sample_id for s in samples for _ in s.texts]
        cols = [j for j, sid in enumerate(owners) if sid in keep]
        rows = np.stack([records[s.sample_id].arrays["scores"] for s in kept]).astype(np.float32)
        if "first" in first:  # two-stage: unscored texts rank after the shortlist, in first-stage order
            firsts = np.stack([records[s.sample_id].arrays["first"] for s in kept]).astype(np.float32)
            return np.ascontiguousarray(stages.combine(rows[:, cols], firsts[:, cols]))
        return np.ascontiguousarray(rows[:, cols])

    def finalize(
        self,
        dataset: Dataset,
        samples: Sequence[Sample],
        records: Mapping[str, Record],
        protocol: ProtocolChoice,
    ) -> CellResult:
        kept = [s for s in samples if s.sample_id in records]
        index = {s.sample_id: i for i, s in enumerate(kept)}
        n_texts = [len(s.texts) for s in kept]
        text_to_image = np.repeat(np.arange(len(kept)), n_texts)
        positives = _positives(kept, index, text_to_image)
        ranks = self._ranks(samples, kept, records, text_to_image, positives)
        r_img, r_txt = ranks.i2t, ranks.t2i
        ks = self.options.ks
        # Components per sample: i2t hits@k, t2i hits@k summed over its texts, 1, n_texts.
        comp = np.zeros((len(kept), 2 * len(ks) + 2), dtype=np.float64)
        for j, k in enumerate(ks):
            comp[:, j] = r_img < k
            comp[:, len(ks) + j] = np.bincount(text_to_image, weights=r_txt < k, minlength=len(kept))
        comp[:, -2] = 1.0
        comp[:, -1] = n_texts
        finish = _make_finish(len(ks), self.options.directions)
        metrics = {f"i2t_R@{k}": v for k, v in recall_from_ranks(r_img, ks).items()}
        metrics.update({f"t2i_R@{k}": v for k, v in recall_from_ranks(r_txt, ks).items()})
        metrics.update(
            {
                "i2t_mean_rank": mean_rank(r_img),
                "i2t_median_rank": median_rank(r_img),
                "t2i_mean_rank": mean_rank(r_txt),
                "t2i_median_rank": median_rank(r_txt),
            }
        )
        breakdown: dict[str, object] = {}
        out = records[kept[0].sample_id].output or {}
        if "shortlist" in out:  # two-stage: k and first stage in every result
            breakdown = {"first_stage": self.options.first_stage, "shortlist_k": out.get("shortlist")}
            metrics["shortlist_k"] = float(out.get("shortlist", 0))
            if out.get("note"):
                breakdown["note"] = out["note"]
        top_text = ranks.top_text
        flat_texts = [t for s in kept for t in s.texts]
        per_sample = comp[:, : len(ks)].mean(axis=1)
        return CellResult(
            sample_ids=[s.sample_id for s in kept],
            predictions=[flat_texts[int(j)] for j in top_text],
            scores=[float(x) for x in per_sample],
            references=[list(s.texts) for s in kept],
            components=comp,
            finish=finish,
            metrics={k: float(v) for k, v in metrics.items()},
            breakdown=breakdown,
            chance=_chance(positives, ks, self.options.directions),
            chance_basis="expected recall of a uniformly random ranking under the same truth",
        )


def _embed_calls(samples: Sequence[Sample]) -> int:
    """Images plus texts embedded."""
    return len(samples) + sum(len(s.texts) for s in samples)


def _pair_calls(samples: Sequence[Sample]) -> int:
    """Every (image, text) pair of the cell."""
    return len(samples) * sum(len(s.texts) for s in samples)


def _embed(model: Embedder, info: ModelInfo, batch: Sequence[Prepared], dataset: Dataset) -> list[Record]:
    """Each sample's image embedding and its texts' embeddings."""
    img_emb = model.embed_images(images_of(batch))
    txt_emb = model.embed_texts([t for p in batch for t in p.texts])
    out: list[Record] = []
    start = 0
    for i, p in enumerate(batch):
        k = len(p.texts)
        out.append(
            Record(
                sample_id=p.sample.sample_id,
                output={"n_texts": k},
                arrays={
                    "image": np.asarray(img_emb[i], dtype=np.float32),
                    "texts": np.asarray(txt_emb[start : start + k], dtype=np.float32),
                },
            )
        )
        start += k
    return out


def _score_all_pairs(
    model: PairScorer, info: ModelInfo, batch: Sequence[Prepared], dataset: Dataset
) -> list[Record]:
    """Each sample's image scored against every text of the cell's gallery."""
    gallery = list(batch[0].gallery)
    images = [p.image for p in batch for _ in gallery if p.image is not None]
    scores = model.score_pairs(images, gallery * len(batch)).reshape(len(batch), len(gallery))
    return [
        Record(p.sample.sample_id, {"n_texts": len(p.texts)}, {"scores": scores[i].astype(np.float32)})
        for i, p in enumerate(batch)
    ]


def _chance(positives: sp.csr_matrix, ks: Sequence[int], directions: Sequence[str]) -> float:
    """The primary score of a uniformly random ranking: chance recall averaged like the primary."""
    truth = {"i2t": positives.T.tocsr(), "t2i": positives}
    parts = [chance_recall_at_k(truth[d], k) for d in ("i2t", "t2i") if d in directions for k in ks]
    return float(np.mean(parts))


def _positives(
    kept: Sequence[Sample], index: Mapping[str, int], text_to_image: NDArray[np.int64]
) -> sp.csr_matrix:
    """(n_texts, n_images) truth: each text's own image plus the images it is also true of."""
    extra_rows: list[int] = []
    extra_cols: list[int] = []
    t = 0
    for s in kept:
        also = s.metadata.get("also_true_of")
        if not also:  # the common case: no extra truth, nothing to walk text by text
            t += len(s.texts)
            continue
        for others in also:
            for sid in others:
                if sid in index:
                    extra_rows.append(t)
                    extra_cols.append(index[sid])
            t += 1
    n = len(text_to_image)
    rows = np.concatenate((np.arange(n, dtype=np.int64), np.asarray(extra_rows, dtype=np.int64)))
    cols = np.concatenate((np.asarray(text_to_image, dtype=np.int64), np.asarray(extra_cols, dtype=np.int64)))
    data = np.ones(rows.size, dtype=bool)
    return sp.csr_matrix((data, (rows, cols)), shape=(n, len(kept)))


def _make_finish(n_k: int, directions: Sequence[str]) -> Finish:
    use_i2t, use_t2i = "i2t" in directions, "t2i" in directions

    def finish(sums: NDArray[np.float64]) -> NDArray[np.float64]:
        parts = []
        if use_i2t:
            parts.append(sums[:, :n_k] / np.maximum(sums[:, -2:-1], 1e-300))
        if use_t2i:
            parts.append(sums[:, n_k : 2 * n_k] / np.maximum(sums[:, -1:], 1e-300))
        out: NDArray[np.float64] = np.concatenate(parts, axis=1).mean(axis=1)
        return out

    return finish
