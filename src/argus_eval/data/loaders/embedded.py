"""Images that a data file embeds (parquet {bytes, path} structs, base64 TSV cells), written to files once
per distinct content, so rows sharing an image share one file and the image-level controls see one image."""

from __future__ import annotations

import hashlib
import os
from io import BytesIO
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from argus_eval.data.images import open_within_limit
from argus_eval.errors import DatasetError


class EmbeddedImages:
    """Writes embedded image bytes under out_dir as <content hash>.img, each content once; checks they
    decode, so a broken cell is one error naming the file, row and column, not a failed sample later.
    An image over PIL's decompression-bomb limit is written unverified: like a file on disk, it is
    refused when read (a counted failed sample), never decoded."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self._seen: set[str] = set()

    @property
    def used(self) -> bool:
        """Whether any image was stored (the dataset's images then live under out_dir)."""
        return bool(self._seen)

    def store(self, data: bytes, where: str) -> str:
        """The stored file's name (relative to out_dir) for these bytes; where: "FILE: row K: column C"."""
        name = hashlib.sha256(data).hexdigest()[:32] + ".img"
        if name in self._seen:
            return name
        try:
            with open_within_limit(BytesIO(data)) as im:
                im.verify()  # structure and checksums, without decoding every pixel of a large set
        except (Image.DecompressionBombError, Image.DecompressionBombWarning):
            # kept as a file: the bomb check of every image on disk (data/images.load_image) refuses it
            # when a sample reads it, a counted failed sample, and `datasets --check` names it
            pass
        except UnidentifiedImageError:
            raise DatasetError(
                f"{where}: the image does not decode (not an image format PIL reads); re-encode it as PNG "
                "or JPEG"
            ) from None
        except (OSError, ValueError, SyntaxError) as e:
            raise DatasetError(
                f"{where}: the image does not decode ({e}); re-encode it as PNG or JPEG"
            ) from None
        target = self.out_dir / name
        if not target.exists():
            self.out_dir.mkdir(parents=True, exist_ok=True)
            part = target.with_suffix(f".part{os.getpid()}")
            part.write_bytes(data)
            part.replace(target)  # whole or absent: an interrupted load never leaves half an image
        self._seen.add(name)
        return name
