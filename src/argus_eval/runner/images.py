"""A byte-bounded cache of decoded (and perturbed) images, owned by an execution context."""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

from argus_eval.data.images import ImageArray, load_image
from argus_eval.perturb.conditions import Condition

# (path, mtime, size, sample id, condition or None for the decoded file, seed)
_Key = tuple[Path, int, int, str, Condition | None, int]


class ImageCache:
    """A byte-bounded LRU of decoded (and perturbed) images, so that every model of a run sees the
    same pixels computed once; functools.lru_cache bounds entries, not bytes, and images vary in size.
    A file is decoded once for all its conditions; a condition that leaves the pixels as they are
    (clean, text, swap) shares the decoded image instead of storing a copy."""

    def __init__(self, max_bytes: int = 256 * 2**20) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[_Key, ImageArray] = OrderedDict()
        self._bytes = 0

    def get(self, path: Path, sample_id: str, condition: Condition, seed: int) -> ImageArray:
        """The image of sample_id's file at path as a model sees it under condition with seed."""
        try:
            st = path.stat()
            stamp = (st.st_mtime_ns, st.st_size)  # a file changed on disk is decoded afresh
        except OSError:
            stamp = (-1, -1)  # missing: load_image below raises the SampleError that names it
        key: _Key = (path, *stamp, sample_id, condition, seed)
        hit = self._lookup(key)
        if hit is not None:
            return hit
        decoded_key: _Key = (path, *stamp, sample_id, None, 0)
        decoded = self._lookup(decoded_key)
        if decoded is None:
            decoded = self._store(decoded_key, load_image(path, sample_id))
        image = condition.apply_image(decoded, seed)
        return decoded if image is decoded else self._store(key, image)

    def _lookup(self, key: _Key) -> ImageArray | None:
        hit = self._items.get(key)
        if hit is not None:
            self._items.move_to_end(key)
        return hit

    def _store(self, key: _Key, image: ImageArray) -> ImageArray:
        image.setflags(write=False)  # shared between models: nobody may modify it in place
        self._items[key] = image
        self._bytes += image.nbytes
        while self._bytes > self.max_bytes and len(self._items) > 1:
            _, old = self._items.popitem(last=False)
            self._bytes -= old.nbytes
        return image
