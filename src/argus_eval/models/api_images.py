"""Images as a served model receives them: a PNG data URL, encoded once per distinct image.

A question set asks many questions of one image, and every question is its own request; encoding the
PNG afresh for each was a third of the client's CPU per request. The URL is kept by the pixels' content
(shape and bytes), never by sample id or object identity, in a byte-bounded LRU.
"""

from __future__ import annotations

import base64
import hashlib
import io
import threading
from collections import OrderedDict

import numpy as np
from PIL import Image

from argus_eval.data.images import ImageArray


def png_data_url(image: ImageArray) -> str:
    """A uint8 HxWx3 array as a data:image/png;base64 URL (lossless, so perturbations survive)."""
    buf = io.BytesIO()
    Image.fromarray(np.asarray(image, dtype=np.uint8), mode="RGB").save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def pixels_digest(image: ImageArray) -> str:
    """A digest of what the server is shown: the uint8 pixels and their shape."""
    arr = np.ascontiguousarray(np.asarray(image, dtype=np.uint8))
    h = hashlib.blake2b(repr(arr.shape).encode(), digest_size=16)
    h.update(arr.data)
    return h.hexdigest()


class DataUrls:
    """digest -> data URL for the images a model was sent, at most max_bytes of URLs (thread-safe)."""

    def __init__(self, max_bytes: int = 256 * 2**20) -> None:
        self.max_bytes = max_bytes
        self.encoded = 0  # PNGs encoded (distinct images, plus any the bound pushed out)
        self.reused = 0
        self._urls: OrderedDict[str, str] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._encoding: dict[str, threading.Event] = {}  # digest -> set once its URL is kept

    def get(self, image: ImageArray) -> tuple[str, str]:
        """(the image's digest, its data URL), encoded only when not already kept; a thread asking for
        an image another thread is encoding waits for that encoding instead of making its own."""
        digest = pixels_digest(image)
        while True:
            with self._lock:
                url = self._urls.get(digest)
                if url is not None:
                    self._urls.move_to_end(digest)
                    self.reused += 1
                    return digest, url
                busy = self._encoding.get(digest)
                if busy is None:
                    busy = self._encoding[digest] = threading.Event()
                    break
            busy.wait()  # then look again: kept now, or (too big to keep) this thread encodes it
        try:
            url = png_data_url(image)  # outside the lock: PIL releases the GIL, other requests go on
        except BaseException:
            with self._lock:
                del self._encoding[digest]
            busy.set()
            raise
        with self._lock:
            self.encoded += 1
            if len(url) <= self.max_bytes:
                self._urls[digest] = url
                self._bytes += len(url)
                while self._bytes > self.max_bytes:
                    _, old = self._urls.popitem(last=False)
                    self._bytes -= len(old)
            del self._encoding[digest]
        busy.set()
        return digest, url
