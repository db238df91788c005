"""Gallery thumbnails kept by content (report/thumbs.py): made once, remade when the image changes."""

from __future__ import annotations

from pathlib import Path

from argus_eval.report.thumbs import THUMBS_FILE, ThumbCache


def test_a_thumbnail_is_made_once_and_again_for_new_content(tmp_path: Path) -> None:
    img = tmp_path / "a.png"
    img.write_bytes(b"first image bytes")
    made: list[str] = []

    def make() -> str:
        made.append(img.read_bytes().decode())
        return f"data:{len(made)}"

    first = ThumbCache(tmp_path / THUMBS_FILE)
    assert first.get(img, "image:blur@2", "s1", 0, 128, make) == "data:1"
    first.save()
    again = ThumbCache(tmp_path / THUMBS_FILE)
    assert again.get(img, "image:blur@2", "s1", 0, 128, make) == "data:1"  # read back, not made
    assert again.get(img, "image:blur@2", "s1", 1, 128, make) == "data:2"  # another seed: another image
    assert made == ["first image bytes"] * 2
    img.write_bytes(b"edited image bytes")
    assert again.get(img, "image:blur@2", "s1", 0, 128, make) == "data:3"
    assert made[-1] == "edited image bytes"
    again.save()  # keeps only what this report used
    assert len(ThumbCache(tmp_path / THUMBS_FILE)._known) == 3
