"""No escape from a root: links out of the image folder refused by default (and named), a run name
cannot write outside runs/, secrets in config values and URLs never written."""

from __future__ import annotations

from pathlib import Path

import pytest

import argus_eval.data.loaders  # noqa: F401  (registers the formats)
from argus_eval.data.check import check_entries
from argus_eval.data.formats import LoadContext
from argus_eval.errors import ConfigError
from argus_eval.models.secrets import redact, redact_url
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
from argus_eval.runner.store import Store
from hardening_fixtures import karpathy_config, write_image


def _link_out(data: Path, tmp_path: Path) -> Path:
    """Replace im1.png by a link to an image outside the image folder."""
    outside = tmp_path / "elsewhere" / "secret.png"
    outside.parent.mkdir()
    write_image(outside, seed=5)
    link = data / "images" / "im1.png"
    link.unlink()
    link.symlink_to(outside)
    return outside


def test_link_out_of_the_root_is_refused_and_named(tmp_path: Path) -> None:
    data = tmp_path / "data"
    cfg = karpathy_config(data)
    outside = _link_out(data, tmp_path)
    (report,) = check_entries(cfg["datasets"], LoadContext(cache_dir=tmp_path))
    assert not report.ok and len(report.outside) == 1
    assert f"is a link to {outside}, outside the image root" in report.outside[0]
    assert "set allow_symlinks: true on dataset 'k3'" in report.outside[0]
    out = run(parse_config(cfg, "test"), tmp_path / "out", quiet=True)
    with Store(tmp_path / "out" / "store.sqlite") as st:
        errors = {r.error for c in out.plan.cells for r in st.read(c.key).values() if r.sample_id == "img/1"}
    assert errors and all(e is not None and "outside the image root" in e for e in errors)


def test_links_are_followed_when_allowed_and_a_linked_root_is_fine(tmp_path: Path) -> None:
    data = tmp_path / "data"
    cfg = karpathy_config(data)
    _link_out(data, tmp_path)
    cfg["datasets"][0]["allow_symlinks"] = True
    (report,) = check_entries(cfg["datasets"], LoadContext(cache_dir=tmp_path))
    assert report.ok
    linked_root = tmp_path / "linked-images"
    linked_root.symlink_to(data / "images")  # a user who links a whole image folder
    cfg["datasets"][0].update(images=str(linked_root), allow_symlinks=False)
    (im,) = [p for p in (data / "images").iterdir() if p.name == "im1.png"]
    im.unlink()
    write_image(im, seed=1)
    (report,) = check_entries(cfg["datasets"], LoadContext(cache_dir=tmp_path))
    assert report.ok


@pytest.mark.parametrize("name", ["../../x", "a/b", "..", ".hidden", "/abs", ""])
def test_run_name_cannot_leave_runs(name: str) -> None:
    cfg = {
        "name": name,
        "models": [{"name": "m", "spec": "zoo:clip"}],
        "datasets": [{"name": "s", "format": "shapesworld"}],
    }
    with pytest.raises(ConfigError, match=r"run\.yaml: name: .* must be a plain folder name .*runs/<name>"):
        parse_config(cfg, "run.yaml")


def test_secrets_are_redacted() -> None:
    assert redact_url("https://bob:hunter2@api.example.com/v1?api_key=abc&x=1") == (
        "https://***@api.example.com/v1?api_key=***&x=1"
    )
    cfg = {
        "spec": "api:http://u:pw@h/v1#m",
        "options": {"extra_body": {"access_token": "t0k", "max_tokens": 3}},
    }
    assert redact(cfg) == {
        "spec": "api:http://***@h/v1#m",
        "options": {"extra_body": {"access_token": "***", "max_tokens": 3}},
    }
    assert redact({"api_key_env": "MY_KEY"}) == {"api_key_env": "MY_KEY"}  # a variable name, not a secret
