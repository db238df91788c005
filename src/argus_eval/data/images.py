"""Image decoding into the one in-memory form every model and perturbation sees: uint8 HxWx3 RGB."""

from __future__ import annotations

import struct
import threading
import warnings
from pathlib import Path
from typing import IO

import numpy as np
from numpy.typing import NDArray
from PIL import Image, ImageOps, UnidentifiedImageError

from argus_eval.data import jpeg
from argus_eval.errors import SampleError

ImageArray = NDArray[np.uint8]


# PIL modes that hold 16-bit samples; converting them through "RGB" clips every value above 255 to white.
_WIDE_MODES = frozenset({"I;16", "I;16L", "I;16B", "I;16N", "I"})


def readable_file(path: Path) -> bool:
    """Whether path is a file; False (not an OSError) for a name the file system cannot hold (too long)."""
    try:
        return path.is_file()
    except OSError:
        return False


# warnings filters are process-wide: two threads inside catch_warnings() at once can restore each other's
# filters away, and a file over the limit was then decoded. Only the open (header parse) is held under it.
_BOMB_FILTER = threading.Lock()


def open_within_limit(source: Path | IO[bytes]) -> Image.Image:
    """Image.open(source) (lazy, not decoded), refusing an image over PIL's decompression-bomb limit
    (Image.MAX_IMAGE_PIXELS) even where PIL only warns: DecompressionBombWarning or DecompressionBombError
    is raised. Safe from many threads at once."""
    with _BOMB_FILTER, warnings.catch_warnings():
        # Above MAX_IMAGE_PIXELS PIL only warns, then decodes hundreds of MB: refuse it instead.
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        return Image.open(source)


def load_image(path: Path, sample_id: str = "?") -> ImageArray:
    """Decode an image file to uint8 RGB, upright (EXIF orientation applied), 16-bit scaled to 8.

    Raises SampleError naming the sample and file when the file is missing, unreadable, not an image,
    or larger than PIL's decompression-bomb limit (PIL.Image.MAX_IMAGE_PIXELS)."""
    return read_image(path, sample_id)[0]


def read_image(path: Path, sample_id: str = "?") -> tuple[ImageArray, bytes | None]:
    """load_image's image, and the file's bytes where they were read whole (a JPEG, decoded from them),
    so that a caller who digests the file need not read it again; None where PIL read the file."""
    try:
        data = _jpeg_bytes(path)
        # the same pixels, a third of the cost; or the image PIL opened to vet it, not parsed again here
        got = None if data is None else jpeg.read(data)
        if isinstance(got, np.ndarray):
            return got, data
        with got if got is not None else open_within_limit(path) as im:
            im.load()
            # in place: otherwise an image without an orientation tag is copied whole for nothing
            ImageOps.exif_transpose(im, in_place=True)
            return to_rgb_uint8(_pixels(im), min_side=1), data
    except FileNotFoundError:
        raise SampleError(f"sample {sample_id}: image file {path} not found") from None
    except PermissionError:
        raise SampleError(
            f"sample {sample_id}: image file {path} is not readable (permission denied)"
        ) from None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
        raise SampleError(
            f"sample {sample_id}: image {path} is too large to decode safely ({e}); downscale the file"
        ) from None
    # struct.error: PIL reads a cut EXIF block with struct and lets that escape exif_transpose
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, struct.error) as e:
        raise SampleError(f"sample {sample_id}: image {path} failed to decode ({e})") from None


# Only files named as JPEGs are opened to look for one: a PNG (CLEVR's) is not opened twice. A JPEG under
# another name goes to PIL, with the same pixels.
_JPEG_SUFFIXES = frozenset({".jpg", ".jpeg", ".jpe", ".jfif"})


def _jpeg_bytes(path: Path) -> bytes | None:
    """The whole file when it is named and starts as a JPEG and the fast decoder can be used here."""
    if path.suffix.lower() not in _JPEG_SUFFIXES or not jpeg.available():
        return None
    with path.open("rb") as f:
        head = f.read(len(jpeg.MAGIC))
        return head + f.read() if head == jpeg.MAGIC else None


def _pixels(im: Image.Image) -> np.ndarray:
    """The decoded array, keeping 16-bit samples as uint16 (to_rgb_uint8 scales them)."""
    if im.mode in ("RGB", "L", "RGBA"):
        return np.asarray(im)
    if im.mode in _WIDE_MODES:
        wide = np.asarray(im).astype(np.int64)
        if im.mode == "I" and wide.max(initial=0) <= 255 and im.format != "PNG":
            return wide.astype(np.uint8)  # a 32-bit container of 8-bit data (e.g. some TIFFs)
        return np.clip(wide, 0, 65535).astype(np.uint16)
    return np.asarray(im.convert("RGB"))


def to_rgb_uint8(arr: np.ndarray, min_side: int = 8) -> ImageArray:
    """Convert grayscale, RGBA and 16-bit arrays to uint8 RGB; reject what cannot be an image.

    min_side: the smallest height and width accepted (a file of any size loads; a perturbation needs
    room for its kernels)."""
    a = np.asarray(arr)
    if a.dtype == np.uint16:
        a = (a >> 8).astype(np.uint8)
    elif a.dtype == bool:
        a = a.astype(np.uint8) * 255
    elif np.issubdtype(a.dtype, np.floating):
        if not np.isfinite(a).all():
            raise SampleError("image contains NaN or inf")
        a = np.clip(a * (255.0 if a.max() <= 1.0 else 1.0), 0, 255).round().astype(np.uint8)
    elif a.dtype != np.uint8:
        a = np.clip(a, 0, 255).astype(np.uint8)
    if a.ndim == 2:
        a = np.stack([a] * 3, axis=-1)
    if a.ndim != 3:
        raise SampleError(f"image has {a.ndim} dimensions; expected HxW or HxWxC")
    if a.shape[2] == 4:
        rgb = a[..., :3].astype(np.float32)
        alpha = a[..., 3:4].astype(np.float32) / 255.0
        a = (rgb * alpha + 255.0 * (1 - alpha)).round().astype(np.uint8)  # composite on white
    elif a.shape[2] == 1:
        a = np.repeat(a, 3, axis=2)
    elif a.shape[2] != 3:
        raise SampleError(f"image has {a.shape[2]} channels; expected 1, 3 or 4")
    if a.shape[0] < min_side or a.shape[1] < min_side:
        raise SampleError(
            f"image is {a.shape[1]}x{a.shape[0]} pixels; at least {min_side}x{min_side} is needed"
        )
    return np.ascontiguousarray(a)
