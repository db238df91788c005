"""A served model keeps its slots full: `concurrency` requests in flight across batch boundaries (the
runner sends the next batches ahead, runner/execute/ahead.py), one connection per slot, every retry counted by
its reason, and each distinct image encoded once however many questions ask of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from api_server import ServerState, serve
from argus_eval.models.api import OpenAICompatibleModel
from argus_eval.models.spec import ModelConfig
from argus_eval.runner.config import parse_config
from argus_eval.runner.execute.ahead import MAX_AHEAD, window
from argus_eval.runner.pipeline import run


def _model(url: str, **options: Any) -> OpenAICompatibleModel:
    cfg = ModelConfig(name="m", spec=f"api:{url}#tiny", options={"adaptive": False, **options})
    return OpenAICompatibleModel(cfg, f"{url}#tiny", "fp")


def test_a_run_keeps_concurrency_in_flight_beyond_one_batch(tmp_path: Path) -> None:
    # batches of 4 and 16 slots: before, one batch at a time held the server to 4 (and the connection
    # pool's default to 10) whatever concurrency said
    state = ServerState(delay_s=0.1, keep_alive=True)
    with serve(state) as url:
        cfg = {
            "name": "served",
            "seed": 0,
            "cache_dir": str(tmp_path / "cache"),
            "models": [
                {"name": "served", "spec": f"api:{url}#tiny", "batch_size": 4, "options": {"concurrency": 16}}
            ],
            "datasets": [
                {
                    "name": "studio",
                    "format": "shapesworld",
                    "domain": "studio",
                    "split": "test",
                    "n_images": 16,
                    "train_images": 8,
                    "questions_per_image": 6,
                }
            ],
            "tasks": ["reasoning"],
            "perturbations": [],
            "scoring": {"resamples": 20},
            "efficiency": {"enabled": False},
        }
        run(parse_config(cfg, "t"), tmp_path / "out", quiet=True)
    assert state.requests == 96 and state.max_active == 16
    log = json.loads((tmp_path / "out" / "run_log.json").read_text())["served"]["served"][0]
    assert log["concurrency"]["in_flight"]["peak"] == 16 and log["concurrency"]["in_flight"]["requests"] == 96
    assert log["retries"] == {"total": 0, "by_reason": {}}
    assert log["images"]["encoded"] == 16  # 16 images, 6 questions each: one PNG per image
    lines = [json.loads(x) for x in (tmp_path / "out" / "samples.jsonl").read_text().splitlines()]
    assert len(lines) == 96 and all(x.get("error") is None for x in lines)


def test_ten_thousand_requests_over_kept_connections_retry_nothing() -> None:
    # httpcore's pool could close a kept connection it had just handed to a waiting request when more
    # threads than connections queued (about 1 request in 2,000 failed with EBADF and was retried
    # unseen); with one connection per slot nothing queues, and any retry would be counted here
    state = ServerState(keep_alive=True)
    images = [np.full((8, 8, 3), i, dtype=np.uint8) for i in range(10)]
    with serve(state) as url:
        model = _model(url, concurrency=32)
        try:
            for start in range(0, 10_000, 500):
                answers = model.generate(
                    [images[i % 10] for i in range(500)], [f"q{start + i}" for i in range(500)], 4
                )
                assert len(answers) == 500
            log = model.call_log
        finally:
            model.close()
    assert state.requests == 10_000
    assert log["retries"] == {"total": 0, "by_reason": {}}
    assert log["concurrency"]["in_flight"]["peak"] <= 32 and state.max_active <= 32
    assert log["images"] == {"encoded": 10, "reused": 9_990}


def test_every_retry_is_counted_with_its_reason() -> None:
    state = ServerState(fail_every=3)  # HTTP 500 for every 3rd request, then asked again
    with serve(state) as url:
        model = _model(url, concurrency=1, backoff_s=0.001, max_retries=2)
        try:
            model.generate([np.zeros((4, 4, 3), np.uint8)] * 6, [f"p{i}" for i in range(6)], 4)
            log = model.call_log
        finally:
            model.close()
    failed = state.requests - 6
    assert failed >= 2 and log["retries"] == {"total": failed, "by_reason": {"HTTP 500": failed}}


def test_equal_pixels_share_one_encoding_whatever_the_array() -> None:
    state = ServerState()
    with serve(state) as url:
        model = _model(url)
        try:
            a = np.arange(48, dtype=np.uint8).reshape(4, 4, 3)
            model.generate([a, a.copy(), a[::-1].copy(), np.ascontiguousarray(a)], ["1", "2", "3", "4"], 4)
            log = model.call_log
        finally:
            model.close()
    assert log["images"] == {"encoded": 2, "reused": 2}  # a, its copies, and the flipped one


def test_only_models_that_declare_max_in_flight_are_sent_ahead() -> None:
    class Local:
        pass

    class Served:
        max_in_flight = 16

    assert window([Local()], 4) == 1 and window([Served(), Local()], 4) == 1
    assert window([Served()], 4) == 5 and window([Served()], 64) == 2
    big = Served()
    big.max_in_flight = 10_000
    assert window([big], 1) == MAX_AHEAD
