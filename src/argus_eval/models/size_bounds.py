"""What a config.json may ask `--size-only` to build: a config is data, so its sizes are checked before
transformers sees them, and the build itself is bounded.

- Every value under a size-like key (`hidden_size`, `num_hidden_layers`, `patch_size`, `vocab_size`, ...,
  in the config and its sub-configs) must be null or a whole number (not a boolean, not 1.5, not text),
  positive for the keys a model divides by or loops over (CORE), at least 0 for the others, and at most
  MAX_SIZE (MAX_LAYERS for a count of layers): the largest published models stay far below both.
- The build (on the meta device: no memory for weights) must finish within BUILD_SECONDS and hold at most
  MAX_PARAMS parameters.
Each violation is one ModelLoadError naming the file and the key path.
"""

from __future__ import annotations

import re
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from argus_eval.errors import ModelLoadError

MAX_SIZE = 100_000_000  # a dimension, vocabulary or context length (published: at most ~1e7)
MAX_LAYERS = 1_000  # layers, blocks or depth (published: at most ~200)
MAX_PARAMS = 10**13  # 10 trillion
BUILD_SECONDS = 120.0

_SIZE_KEY = re.compile(
    r"(^|_)(size|sizes|dim|dims|layers|heads|experts|embeddings|channels|depth|depths|length|tokens)$"
    r"|^(num|n)_"
)
# flags named after what they switch (tie_word_embeddings, use_sliding_window_layers) are not sizes
_FLAG_KEY = re.compile(r"^(tie|use|is|add|output|return|do|scale|share|apply|skip)_")
_LAYERS_KEY = re.compile(r"(^|_)(layers|depth|depths|blocks)$")
CORE = frozenset(
    {"hidden_size", "num_attention_heads", "num_hidden_layers", "intermediate_size", "patch_size",
     "image_size", "vocab_size", "head_dim", "hidden_dim", "d_model", "embed_dim", "num_channels"}
)  # fmt: skip
T = TypeVar("T")


def check_sizes(config: Any, source: str, path: str = "") -> None:
    """ModelLoadError naming source and the key path of the first size-like value out of bounds."""
    if isinstance(config, dict):
        for key, value in config.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(value, dict):
                check_sizes(value, source, where)
            elif isinstance(key, str) and _SIZE_KEY.search(key) and not _FLAG_KEY.match(key):
                for i, item in enumerate(value if isinstance(value, list) else [value]):
                    _check_one(key, item, source, f"{where}[{i}]" if isinstance(value, list) else where)


def _check_one(key: str, value: Any, source: str, where: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise ModelLoadError(f"{source}: {where} is {value!r}; a size must be a whole number")
    least = 1 if key in CORE else 0
    most = MAX_LAYERS if _LAYERS_KEY.search(key) else MAX_SIZE
    if not least <= value <= most:
        raise ModelLoadError(
            f"{source}: {where} is {value:,}; it must be from {least} to {most:,} (a bound on what "
            "--size-only builds)"
        )


def check_params(n: int, source: str) -> None:
    """ModelLoadError when a built model holds more than MAX_PARAMS parameters."""
    if n > MAX_PARAMS:
        raise ModelLoadError(f"{source}: the model holds {n:,} parameters, over the bound of {MAX_PARAMS:,}")


@contextmanager
def _deadline(seconds: float, source: str) -> Iterator[None]:
    """SIGALRM after seconds (main thread only: elsewhere the bound on sizes alone applies)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(_signum: int, _frame: Any) -> None:
        raise ModelLoadError(f"{source}: building the model took over {seconds:g} s (a bound on --size-only)")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def bounded_build(make: Callable[[], T], source: str, what: str, seconds: float = BUILD_SECONDS) -> T:
    """make() within the time bound; any failure of transformers to build (its own validation errors
    among them, which are of many types) is one ModelLoadError naming source."""
    try:
        with _deadline(seconds, source):
            return make()
    except ModelLoadError:
        raise
    except Exception as e:  # transformers and huggingface_hub validators raise their own types
        why = " ".join(str(e).split())[:300] or type(e).__name__
        raise ModelLoadError(f"{source}: transformers cannot build {what} from it ({why})") from None
