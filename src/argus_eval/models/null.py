"""``null:NAME``: a model whose forward costs next to nothing, to measure the harness alone.

A benchmark of the harness needs a model that answers deterministically from its inputs but spends no
time on them: with it, a run's wall minus the model's own time is what the harness costs per record
(benchmarks/bench_scale.py). Its ``sleep_ms`` option makes each forward call wait a fixed time instead,
standing in for an accelerator that is busy while the harness prepares the next batch.

Answers derive from the inputs and the name only: embeddings from a strided sample of the pixels and a
hash of each text, generations from a hash of the prompt and a few pixels. They are garbage, but two
runs give the same records, and two null models of different names give different ones.
"""

from __future__ import annotations

import hashlib
import time
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from numpy.typing import NDArray

from argus_eval.data.images import ImageArray
from argus_eval.models.options import NullOptions
from argus_eval.models.protocols import EMBED, GENERATE, ModelInfo
from argus_eval.models.spec import ModelConfig

DIM = 32  # embedding width: small, so a similarity matmul costs nothing beside the harness
# the words generated answers are drawn from (captions and one-word answers alike)
_WORDS = ("a", "red", "blue", "green", "cube", "sphere", "cylinder", "yes", "no", "two", "small", "large")


class NullModel:
    """Embeds and generates at no cost (or after a fixed ``sleep_ms`` per forward call)."""

    def __init__(self, cfg: ModelConfig, name: str, fingerprint: str) -> None:
        opts = NullOptions.model_validate(cfg.options)
        self._sleep_s = opts.sleep_ms / 1000.0
        self._salt = zlib.crc32(name.encode())
        # a fixed per-name mixing of the pixel sample, so different null models rank differently
        self._mix = np.random.default_rng(self._salt).standard_normal((DIM, DIM)).astype(np.float32)
        self.forward_calls = 0
        self.sleep_s_total = 0.0  # time spent waiting (sleep_ms)
        self.busy_s_total = 0.0  # time inside its calls, sleep included: the benchmark's model time
        self.info = ModelInfo(
            name=cfg.name,
            spec=cfg.spec,
            fingerprint=fingerprint,
            capabilities=frozenset({EMBED, GENERATE}),
            family="null",
            dtype=cfg.dtype,
            device="cpu",
            params=0,
        )

    @contextmanager
    def _forward(self) -> Iterator[None]:
        """Count a forward call, wait sleep_ms, and time the whole call."""
        t0 = time.perf_counter()
        self.forward_calls += 1
        if self._sleep_s > 0:
            time.sleep(self._sleep_s)
            self.sleep_s_total += time.perf_counter() - t0
        try:
            yield
        finally:
            self.busy_s_total += time.perf_counter() - t0

    def embed_images(self, images: Sequence[ImageArray]) -> NDArray[np.float32]:
        """Unit vectors from DIM pixels at a fixed stride of each image, mixed per name."""
        with self._forward():
            rows = np.stack([_pixel_sample(im) for im in images]) if images else np.zeros((0, DIM))
            return _unit(rows.astype(np.float32) @ self._mix)

    def embed_texts(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Unit vectors from a hash of each text (and the name)."""
        with self._forward():
            salt = b"%d" % self._salt
            rows = [
                np.frombuffer(
                    hashlib.blake2b(t.encode("utf-8", "surrogatepass"), digest_size=DIM, salt=salt).digest(),
                    dtype=np.uint8,
                )
                for t in texts
            ]
            arr = np.stack(rows).astype(np.float32) if rows else np.zeros((0, DIM), np.float32)
            return _unit(arr - 127.5)

    def generate(
        self, images: Sequence[ImageArray], prompts: Sequence[str], max_new_tokens: int
    ) -> list[str]:
        """Up to max_new_tokens words chosen by a hash of the prompt and a few pixels."""
        with self._forward():
            n_words = max(1, min(max_new_tokens, 8))
            out = []
            for image, prompt in zip(images, prompts, strict=True):
                h = zlib.crc32(prompt.encode("utf-8", "surrogatepass"), self._salt)
                h = zlib.crc32(_pixel_sample(image).tobytes(), h)
                # one word for a short answer, a phrase for a caption-sized budget
                k = 1 if max_new_tokens <= 4 else 1 + h % n_words
                out.append(" ".join(_WORDS[(h >> (3 * i)) % len(_WORDS)] for i in range(k)))
            return out

    def close(self) -> None:
        """Nothing to release."""


def _pixel_sample(image: ImageArray) -> NDArray[np.uint8]:
    flat = image.reshape(-1)
    step = max(1, flat.size // DIM)
    picked = flat[::step][:DIM]
    if picked.size < DIM:
        picked = np.pad(picked, (0, DIM - picked.size))
    return np.ascontiguousarray(picked)


def _unit(rows: NDArray[np.float32]) -> NDArray[np.float32]:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.where(norms == 0, 1.0, norms)).astype(np.float32)
