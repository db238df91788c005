"""The run's cached path check (data/paths.InsideRoot) refuses and admits exactly what the plain check
(image_inside_root, a realpath per file) does, for links at the file, at a folder and at the root."""

from __future__ import annotations

from pathlib import Path

import pytest

from argus_eval.data.paths import InsideRoot, image_inside_root
from argus_eval.data.types import Dataset, Sample
from argus_eval.errors import SampleError


def _layout(tmp_path: Path) -> Dataset:
    root = tmp_path / "images"
    (root / "sub").mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    (outside / "deep").mkdir(parents=True)
    for f in (root / "plain.jpg", root / "sub" / "plain.jpg", outside / "x.jpg", outside / "deep" / "y.jpg"):
        f.write_bytes(b"not decoded here")
    (root / "file_out.jpg").symlink_to(outside / "x.jpg")  # a file linked out of the root
    (root / "file_in.jpg").symlink_to(root / "sub" / "plain.jpg")  # a file linked inside it
    (root / "folder_out").symlink_to(outside / "deep")  # a folder linked out of the root
    (root / "folder_in").symlink_to(root / "sub")  # a folder linked inside it
    linked_root = tmp_path / "linked"
    linked_root.symlink_to(root)  # the root itself a link: fine
    names = [
        "plain.jpg", "sub/plain.jpg", "file_out.jpg", "file_in.jpg", "folder_out/y.jpg",
        "folder_in/plain.jpg", "missing.jpg", "sub/missing.jpg", "folder_out/missing.jpg",
    ]  # fmt: skip
    samples = [Sample(sample_id=n, image=n) for n in names]
    return Dataset(name="links", samples=samples, image_root=linked_root, fingerprint="-")


def _verdict(check: object, dataset: Dataset, sample: Sample) -> str:
    try:
        return str(check(dataset, sample))  # type: ignore[operator]
    except SampleError as e:
        return f"refused: {e}"


def test_the_cached_check_gives_the_plain_checks_verdict_on_every_link_layout(tmp_path: Path) -> None:
    dataset = _layout(tmp_path)
    cached = InsideRoot()
    for _ in range(2):  # the second pass answers from the caches
        got = {s.sample_id: _verdict(cached, dataset, s) for s in dataset.samples}
        want = {s.sample_id: _verdict(image_inside_root, dataset, s) for s in dataset.samples}
        assert got == want
    refused = sorted(k for k, v in want.items() if v.startswith("refused"))
    assert refused == ["file_out.jpg", "folder_out/missing.jpg", "folder_out/y.jpg"]


@pytest.mark.parametrize("name", ["file_out.jpg", "folder_out/y.jpg"])
def test_a_refusal_names_the_link_its_target_and_the_option(tmp_path: Path, name: str) -> None:
    dataset = _layout(tmp_path)
    with pytest.raises(
        SampleError, match=r"is a link to .*elsewhere.*outside the image root.*allow_symlinks"
    ):
        InsideRoot()(dataset, Sample(sample_id=name, image=name))
