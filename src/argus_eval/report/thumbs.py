"""Gallery thumbnails kept beside the run by content: a report built again reuses them.

The key of a thumbnail is a hash of the image file's bytes, the condition, the sample id and run seed
(they decide a perturbed image) and the size, so an edited image or another seed makes a new one. The
file (THUMBS_FILE in the run folder) holds the thumbnails the last report used, and no others.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from argus_eval.data.atomic import atomic_write_text

THUMBS_FILE = "thumbnails.cache.json"
_VERSION = "2"  # 2: clean thumbnails turned by their EXIF orientation


class ThumbCache:
    """Data URIs by content key, read from and written back to one JSON file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._known: dict[str, str] = {}
        self._used: dict[str, str] = {}
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(loaded, dict):
                self._known = {str(k): v for k, v in loaded.items() if isinstance(v, str)}
        except (OSError, ValueError):  # absent or unreadable: thumbnails are made again
            pass

    def get(
        self, image: Path, condition: str, sample_id: str, seed: int, px: int, make: Callable[[], str | None]
    ) -> str | None:
        """The thumbnail of the image under the condition, made only when no earlier report made it."""
        try:
            content = hashlib.sha256(image.read_bytes()).hexdigest()
        except OSError:
            return make()
        key = hashlib.sha256(
            json.dumps([_VERSION, content, condition, sample_id, seed, px]).encode()
        ).hexdigest()
        uri = self._known.get(key)
        if uri is None:
            uri = make()
            if uri is None:
                return None
        self._used[key] = uri
        return uri

    def save(self) -> None:
        """Write the thumbnails this report used (nothing when they are those the file holds)."""
        if self._used == self._known:
            return
        with contextlib.suppress(OSError):  # a read-only run folder: the report is written all the same
            atomic_write_text(self.path, json.dumps(self._used, sort_keys=True))
