"""LXMERT: CLASSIFY over the answer head (config id2label); SCORE_PAIRS via cross-modality matching.

LXMERT reads region features, not pixels. Where they come from, in order: ``options.region_features``
(a precomputed npz/h5/tsv file, a provider name: "frcnn-vg", "grid", "segments", or a provider with its
settings: ``{kind: frcnn-vg, detector: DIR_OR_SPEC, ...}``), else the provider stored in the checkpoint
config (``argus_region_features``, written by the zoo and tiny builders). Regions are computed once per
image content and provider (region_cache.py), through the run's feature cache when the executor gives
one (``use_feature_cache``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from argus_eval.data.images import ImageArray
from argus_eval.errors import CapabilityError, ModelLoadError
from argus_eval.models.feature_cache import FeatureCache
from argus_eval.models.hf_common import (
    HFAdapterBase,
    batches,
    call_pretrained,
    check_lengths,
    hf_module,
)
from argus_eval.models.load_request import LoadRequest
from argus_eval.models.options import LocalOptions
from argus_eval.models.protocols import CLASSIFY, SCORE_PAIRS
from argus_eval.models.region_cache import CachedRegions
from argus_eval.models.regions import (
    CONFIG_KEY,
    REGION_PROVIDERS,
    PlacedProvider,
    RegionFeatureProvider,
    load_precomputed,
    provider_from_config,
)


class LxmertAdapter(HFAdapterBase):
    """LxmertForQuestionAnswering (CLASSIFY) or LxmertForPreTraining (SCORE_PAIRS, CLASSIFY if task_qa)."""

    def __init__(
        self,
        req: LoadRequest,
        model: Any,
        tokenizer: Any,
        regions: RegionFeatureProvider,
        caps: frozenset[str],
    ) -> None:
        req = LoadRequest(
            req.cfg, req.source, req.hf_config, req.fingerprint, req.family, {"regions": regions.describe()}
        )
        super().__init__(req, model, caps)
        self.tokenizer = tokenizer
        if isinstance(regions, PlacedProvider):
            regions.place(self.device)
        self.region_provider = regions
        self._regions = CachedRegions(regions)
        id2label = getattr(model.config, "id2label", None) or {}
        self.labels: tuple[str, ...] = (
            tuple(str(id2label[i]) for i in sorted(id2label)) if CLASSIFY in caps else ()
        )

    def use_feature_cache(self, cache: FeatureCache) -> None:
        """Read and keep regions in the run's cache (shared by every model of the run)."""
        self._regions.cache = cache

    @property
    def regions_padded(self) -> int:
        """Images whose detector found fewer regions than asked (padded, masked out of attention)."""
        return self._regions.padded

    def _forward(self, images: Sequence[ImageArray], texts: Sequence[str]) -> Any:
        reg = self._regions.regions(images)
        enc = self.tokenizer(list(texts), padding="longest", truncation=True, return_tensors="pt")
        batch: dict[str, Any] = {
            "input_ids": enc["input_ids"],
            "attention_mask": enc["attention_mask"],
            "visual_feats": torch.from_numpy(reg.features),
            "visual_pos": torch.from_numpy(reg.boxes),
        }
        if reg.found is not None:  # a provider that pads: its padding rows are not regions
            rows = torch.arange(reg.features.shape[1])
            batch["visual_attention_mask"] = (rows[None, :] < torch.from_numpy(reg.found)[:, None]).long()
        inputs = self.to_device(batch)
        out = self.model(**inputs)
        self.forward_calls += 1
        return out

    @torch.inference_mode()
    def classify(self, images: Sequence[ImageArray], questions: Sequence[str]) -> NDArray[np.float32]:
        """(n, len(labels)) answer-head logits for each (image, question)."""
        if CLASSIFY not in self.info.capabilities:
            raise CapabilityError(f"model {self.info.name!r}: this LXMERT checkpoint has no answer head")
        n = check_lengths(images, questions)
        out = np.zeros((n, len(self.labels)), dtype=np.float32)
        for sl in batches(n, self.batch_size):
            out[sl] = self._forward(images[sl], questions[sl]).question_answering_score.float().cpu().numpy()
        return out

    @torch.inference_mode()
    def score_pairs(self, images: Sequence[ImageArray], texts: Sequence[str]) -> NDArray[np.float32]:
        """(n,) probability that text matches image, from the cross-modality matching head (class 1)."""
        if SCORE_PAIRS not in self.info.capabilities:
            raise CapabilityError(
                f"model {self.info.name!r}: LxmertForQuestionAnswering has no matching head"
            )
        n = check_lengths(images, texts)
        out = np.zeros((n,), dtype=np.float32)
        for sl in batches(n, self.batch_size):
            logits = self._forward(images[sl], texts[sl]).cross_relationship_score.float()
            out[sl] = torch.softmax(logits, dim=-1)[:, 1].cpu().numpy()
        return out


def _qa_caps(cfg: dict[str, Any]) -> frozenset[str]:
    return frozenset({CLASSIFY})


def _pretraining_caps(cfg: dict[str, Any]) -> frozenset[str]:
    return frozenset({SCORE_PAIRS} | ({CLASSIFY} if cfg.get("task_qa") else set()))


LXMERT_HEADS: dict[str, Callable[[dict[str, Any]], frozenset[str]]] = {
    "LxmertForQuestionAnswering": _qa_caps,
    "LxmertForPreTraining": _pretraining_caps,
}


def _configured_provider(req: LoadRequest, opt: dict[str, Any]) -> RegionFeatureProvider:
    """A provider from an options mapping ``{kind: NAME, SETTING: VALUE, ...}``."""
    settings = {k: v for k, v in opt.items() if k != "kind"}
    factory = REGION_PROVIDERS.get(str(opt.get("kind", "")))
    params = inspect.signature(factory).parameters
    unknown = sorted(set(settings) - set(params))
    if unknown:
        raise ModelLoadError(
            f"model {req.cfg.spec!r}: region_features {opt.get('kind')!r} has no setting "
            f"{', '.join(unknown)}; valid: {', '.join(params)}"
        )
    return factory(**settings)


def _region_provider(req: LoadRequest) -> RegionFeatureProvider:
    opt = LocalOptions.model_validate(req.cfg.options).region_features  # checked with the config
    if isinstance(opt, str) and opt in REGION_PROVIDERS:
        return REGION_PROVIDERS.get(opt)()
    if isinstance(opt, dict):
        return _configured_provider(req, opt)
    if opt:
        try:
            return load_precomputed(Path(str(opt)))
        except ModelLoadError as e:
            raise ModelLoadError(str(e), key="options.region_features") from None
    stored = req.hf_config.get(CONFIG_KEY)
    if isinstance(stored, dict):
        return provider_from_config(stored)
    raise ModelLoadError(
        f"model {req.cfg.spec!r}: LXMERT needs region features; set options.region_features to an "
        f"npz/h5/tsv file of detector features, or a provider: {', '.join(REGION_PROVIDERS.names())}",
        key="options.region_features",
    )


def load_lxmert(req: LoadRequest) -> LxmertAdapter:
    """Load an LXMERT checkpoint with its tokenizer and region-feature provider."""
    archs = [a for a in req.hf_config.get("architectures") or [] if a in LXMERT_HEADS]
    if not archs:
        raise ModelLoadError(
            f"model {req.cfg.spec!r}: LXMERT architectures {req.hf_config.get('architectures')} "
            f"not supported; expected one of {sorted(LXMERT_HEADS)}",
            key="spec",
        )
    regions = _region_provider(req)
    want = int(req.hf_config.get("visual_feat_dim", regions.feature_dim))
    if regions.feature_dim != want:
        raise ModelLoadError(
            f"model {req.cfg.spec!r}: region features have dimension {regions.feature_dim}, "
            f"the checkpoint expects visual_feat_dim {want}",
            key="options.region_features",
        )
    tf = hf_module()
    kw = req.pretrained_kwargs()
    cls = getattr(tf, archs[0])
    model = call_pretrained(req, "model", lambda: cls.from_pretrained(req.source, **kw))
    tok = call_pretrained(req, "tokenizer", lambda: tf.AutoTokenizer.from_pretrained(req.source, **kw))
    return LxmertAdapter(req, model, tok, regions, LXMERT_HEADS[archs[0]](req.hf_config))
