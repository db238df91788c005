"""Failures that heal: a loopback OpenAI-compatible server that fails, then recovers; Retry-After,
one retry level, answer cap, and no secret (env key, URL credentials, echoed Authorization) in any
output file."""

from __future__ import annotations

import base64
import io
import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from api_server import ServerState, serve
from argus_eval.errors import ConfigError, ModelCallError
from argus_eval.models.api import retry_after
from argus_eval.models.loading import load_model
from argus_eval.models.protocols import Generator
from argus_eval.models.spec import ModelConfig
from argus_eval.results_model import results_json
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
from argus_eval.runner.store import Store
from hardening_fixtures import karpathy_config
from model_fixtures import tiny_images

ENV_KEY = "sk-ENVSECRET-4242"
URL_PASSWORD = "URLSECRET-7777"


def _api_config(data: Path, url: str, **options: Any) -> dict[str, Any]:
    """Two served models: one with the key in the environment, one with credentials in its URL (the
    client then sends those as Basic auth instead)."""
    host = url.removeprefix("http://")
    opts = {"api_key_env": "ARGUS_SECRET_KEY", "max_retries": 1, "backoff_s": 0.01, **options}
    models: list[dict[str, Any]] = [
        {"name": "keyed", "spec": f"api:{url}#tiny-vlm", "batch_size": 2, "options": opts},
        {"name": "in-url", "spec": f"api:http://argus:{URL_PASSWORD}@{host}#tiny-vlm", "options": opts},
    ]
    cfg = karpathy_config(data, models=models)
    cfg["tasks"] = [{"name": "captioning", "metrics": ["CIDEr"]}]  # METEOR's Java start is not the point
    return cfg


def _secrets_in(out: Path) -> list[str]:
    basic = base64.b64encode(f"argus:{URL_PASSWORD}".encode()).decode()
    found = []
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        blob = path.read_bytes()
        found += [f"{path.name}: {s}" for s in (ENV_KEY, URL_PASSWORD, basic) if s.encode() in blob]
    return found


def test_failed_records_heal_on_rerun_and_no_secret_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from argus_eval.commands.run_cmd import run_command

    monkeypatch.setenv("ARGUS_SECRET_KEY", ENV_KEY)
    data, out = tmp_path / "data", tmp_path / "out"
    state = ServerState(up=False)
    with serve(state) as url:
        cfg = parse_config(_api_config(data, url, max_answer_chars=60), "test")
        first = run(cfg, out, quiet=True)
        n = sum(len(c.samples) for c in first.plan.cells)
        assert first.stats.failed == n and n > 0
        kept = run(cfg, out, quiet=True, retry_failed=False)  # --no-retry-failed keeps them
        assert kept.stats.forward_calls == 0 and kept.stats.retried == 0
        assert sum(c["failed"] for c in results_json(kept.results)["cells"]) == n

        state.up, state.answer_chars = True, 500
        config_file = tmp_path / "run.yaml"
        config_file.write_text(yaml.safe_dump(_api_config(data, url, max_answer_chars=60)))
        buf = io.StringIO()
        run_command(
            config_file, out, strict=False, as_json=False, quiet=True, console=Console(file=buf, width=300)
        )
    printed = buf.getvalue()
    assert f"retried failures: {n}" in printed and "failed samples: 0" in printed
    assert f"note: {n} generated answers were longer than their model's max_answer_chars" in printed
    log = json.loads((out / "run_log.json").read_text())
    assert log["answers_cut"] == n and log["retried_failed"] == n
    results = json.loads((out / "results.json").read_text())
    assert sum(c["failed"] for c in results["cells"]) == 0
    with (out / "samples.jsonl").open() as fh:
        captions = {json.loads(line)["prediction"] for line in fh}
    # The echoed Authorization value is masked, then the answer cut to 60 characters.
    assert {c.split(" in ")[0] for c in captions} == {
        "a shape seen by Bearer ***",
        "a shape seen by Basic ***",
    }
    assert {len(c) for c in captions} == {60}
    assert (out / "report.html").is_file()
    assert _secrets_in(out) == []


def test_retry_after_is_honoured() -> None:
    state = ServerState(retry_after="1")
    with serve(state) as url:
        m = load_model(
            ModelConfig(name="s", spec=f"api:{url}#m", options={"max_retries": 1, "backoff_s": 0.01})
        )
        assert isinstance(m, Generator)
        assert m.generate(tiny_images(1), ["hello"], 4) == ["a shape seen by  in 4 tokens"]
        m.close()
    first, second = state.hits["hello"]
    assert second - first >= 1.0  # not the 0.01 s backoff


def test_retry_after_forms() -> None:
    assert retry_after("2") == 2.0 and retry_after(None) == 0.0 and retry_after("soon") == 0.0
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past: no wait
    future = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 < retry_after(future) <= 30


def test_a_failing_prompt_is_retried_once_not_per_level() -> None:
    state = ServerState(fail_prompt="bad")
    with serve(state) as url:
        m = load_model(
            ModelConfig(name="s", spec=f"api:{url}#m", options={"max_retries": 1, "backoff_s": 0.01})
        )
        assert isinstance(m, Generator)
        ims = tiny_images(3)
        with pytest.raises(ModelCallError, match="HTTP 500"):
            m.generate(ims, ["ok1", "bad", "ok2"], 4)
        # The runner then asks sample by sample: answers come from the failed batch, nothing is re-sent.
        assert m.generate(ims[:1], ["ok1"], 4) == ["a shape seen by  in 4 tokens"]
        with pytest.raises(ModelCallError, match="HTTP 500"):
            m.generate(ims[1:2], ["bad"], 4)
        m.close()
    assert len(state.hits["bad"]) == 2 and len(state.hits["ok1"]) == 1  # one try plus one retry


def test_unknown_model_option_is_rejected_listing_valid_ones() -> None:
    cfg = {
        "models": [{"name": "served", "spec": "api:http://127.0.0.1:1/v1#m", "options": {"api_key": "sk-x"}}],
        "datasets": [{"name": "s", "format": "shapesworld"}],
    }
    with pytest.raises(ConfigError) as e:
        parse_config(cfg, "run.yaml")
    msg = str(e.value)
    assert (
        "run.yaml: models[0].options.api_key: model 'served': unknown option(s) api_key for api: models"
        in msg
    )
    assert "valid options: adaptive, api_key_env, backoff_s, concurrency" in msg and "sk-x" not in msg
    assert msg.endswith("(an API key belongs in the environment variable named by api_key_env)")
    cfg["models"] = [{"name": "c", "spec": "zoo:clip", "options": {"temperature": 0}}]
    with pytest.raises(
        ConfigError, match=r"unknown option\(s\) temperature for zoo: models; valid options: region_features$"
    ):
        parse_config(cfg, "run.yaml")


def test_changed_model_option_recomputes_exactly_that_models_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARGUS_SECRET_KEY", ENV_KEY)
    data = tmp_path / "data"
    with serve(ServerState()) as url:
        cfg = _api_config(data, url)
        first = run(parse_config(cfg, "test"), tmp_path / "reused", quiet=True)
        cfg["models"][0]["max_new_tokens"] = 7  # reaches the request (max_tokens), so the answers
        changed = sum(len(c.samples) for c in first.plan.cells if c.model.name == "keyed")
        again = run(parse_config(cfg, "test"), tmp_path / "reused", quiet=True)
        assert again.stats.records_written == changed and again.stats.forward_calls == changed
        run(parse_config(cfg, "test"), tmp_path / "fresh", quiet=True)
    with Store(tmp_path / "reused" / "store.sqlite") as a, Store(tmp_path / "fresh" / "store.sqlite") as b:
        for cell in again.plan.cells:
            got = {k: r.output for k, r in a.read(cell.key).items()}
            assert got == {k: r.output for k, r in b.read(cell.key).items()}
            if cell.model.name == "keyed":
                assert all("in 7 tokens" in str(o) for o in got.values())
