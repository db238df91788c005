"""The zoo ships as package data: its folder is found through the package's resources, and
pyproject.toml's package-data patterns take every file the manifest lists (so a built wheel holds
every checkpoint a `zoo:` model loads)."""

from __future__ import annotations

import tomllib
from importlib.resources import files
from pathlib import Path

import argus_eval
from argus_eval.models import zoo_store

PYPROJECT = Path(argus_eval.__file__).resolve().parents[2] / "pyproject.toml"


def _packaged(package_root: Path) -> set[str]:
    """Paths (relative to the package) that pyproject.toml's package-data patterns of argus_eval take."""
    patterns = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    return {
        p.relative_to(package_root).as_posix()
        for pattern in patterns["argus_eval"]
        for p in package_root.glob(pattern)
        if p.is_file()
    }


def test_the_zoo_folder_is_the_packages_zoo_resource() -> None:
    shipped = files("argus_eval").joinpath("zoo")
    assert isinstance(shipped, Path)
    assert shipped.resolve() == zoo_store.ZOO_DIR
    assert zoo_store.MANIFEST == zoo_store.ZOO_DIR / "manifest.json"
    assert zoo_store.CHECKPOINTS == zoo_store.ZOO_DIR / "checkpoints"


def test_package_data_takes_every_file_of_the_manifest() -> None:
    root = Path(argus_eval.__file__).resolve().parent
    models = zoo_store.read_manifest()["models"]
    assert models  # a zoo ships
    wanted = {"zoo/manifest.json"} | {
        f"zoo/checkpoints/{name}/{rel}" for name, entry in models.items() for rel in entry["files"]
    }
    assert wanted - _packaged(root) == set()
