"""The zoo's chat VLMs served by `transformers serve` on 127.0.0.1 answer exactly as in process.

One ShapesWorld suite (40 questions, 8 images) runs through the project's config and run machinery twice:
in process (zoo:gemma3, zoo:qwen2_5_vl) and through the api: scheme against a real server of each
checkpoint. Every stored answer must be the in-process one, no stored answer may hold a chat-template or
special token of either tokenizer, and a model name the server does not serve fails every sample with
the server's message.

The servers are stock `transformers serve` (transformers' CLI module, no PYTHONPATH, the shipped
checkpoint directories), as a user would start them. Stock transformers serves Qwen2.5-VL only where
torchvision is installed, so that server runs in the torchvision environment (ARGUS_TV_PYTHON, set by
.ci/run); without one, Qwen2.5-VL's served test is skipped with the command that makes it run.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from argus_eval.models.zoo_store import CHECKPOINTS
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
from transformers_server import Server, missing_serve_modules, serve_command, serving, torchvision_python

pytestmark = pytest.mark.skipif(
    bool(missing_serve_modules()),
    reason=f"the serve extra is not installed (missing {', '.join(missing_serve_modules())}); "
    "pip install -e '.[serve]'",
)

ZOO = {"Gemma-3": "gemma3", "Qwen2.5-VL": "qwen2_5_vl"}
TV_PYTHON = torchvision_python()
# The Python each model's server runs in: stock transformers needs torchvision for Qwen2.5-VL's processor.
PYTHONS = {"Gemma-3": sys.executable, **({"Qwen2.5-VL": TV_PYTHON} if TV_PYTHON else {})}
TV_HINT = "ARGUS_TV_PYTHON=$(bash scripts/torchvision_env.sh | tail -n 1)"
N_IMAGES, QUESTIONS_PER_IMAGE = 8, 5
SHAPES = {
    "format": "shapesworld",
    "domain": "studio",
    "split": "test",
    "n_images": N_IMAGES,
    "train_images": 8,
    "questions_per_image": QUESTIONS_PER_IMAGE,
}
# BLEU and CIDEr only: METEOR's JVM start would double the test's scoring time and changes no answer.
TASKS: list[Any] = ["reasoning", {"name": "captioning", "max_new_tokens": 32, "metrics": ["Bleu_4", "CIDEr"]}]


def _config(cache: Path, models: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": "served",
        "seed": 0,
        "cache_dir": str(cache),
        "models": models,
        "datasets": [{"name": "studio", **SHAPES}],
        "tasks": TASKS,
        "perturbations": [],
        "scoring": {"resamples": 0},
        "efficiency": {"enabled": False},
    }


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's ShapesWorld cache: the suite is generated once."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Server]]:
    root = tmp_path_factory.mktemp("served")
    wanted = {name: (CHECKPOINTS / ZOO[name], python) for name, python in PYTHONS.items()}
    with serving(wanted, root) as started:
        yield started


def test_the_servers_are_stock_transformers_serve(servers: dict[str, Server]) -> None:
    """No project code in a server: transformers' own CLI, the shipped checkpoint, no PYTHONPATH."""
    for name, server in servers.items():
        port = int(server.base_url.rsplit(":", 1)[1].split("/")[0])
        assert server.command == serve_command(PYTHONS[name], CHECKPOINTS / ZOO[name], port)
        assert server.command[1:4] == ["-m", "transformers.cli.transformers", "serve"]
        assert not [
            a for a in server.command[1:] if "argus" in a.lower() and a != str(CHECKPOINTS / ZOO[name])
        ]
        assert "PYTHONPATH" not in server.env
        server.wait_ready()  # the process as it runs (its cmdline is empty while it is being set up)
        cmdline = Path(f"/proc/{server.process.pid}/cmdline").read_bytes().split(b"\0")[:-1]
        assert [a.decode() for a in cmdline] == server.command


def test_qwen_is_served_where_torchvision_is() -> None:
    if TV_PYTHON is None:
        pytest.skip(f"stock transformers serve needs torchvision for Qwen2.5-VL; run with {TV_HINT}")
    assert "Qwen2.5-VL" in PYTHONS
    assert os.path.exists(TV_PYTHON)


def _lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def _results(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "results.json").read_text())
    return data


def _special_tokens(checkpoint: Path) -> set[str]:
    """Every special token of a checkpoint's tokenizer (its chat-template markers among them)."""
    added = json.loads((checkpoint / "tokenizer.json").read_text())["added_tokens"]
    return {t["content"] for t in added if t.get("special")}


def _raw_answer(server: Server) -> str:
    """One answer exactly as the server sends it (a blank image, the reasoning prompt)."""
    import numpy as np

    from argus_eval.models.api_images import png_data_url

    image = png_data_url(np.zeros((32, 32, 3), dtype=np.uint8))
    content = [{"type": "image_url", "image_url": {"url": image}}, {"type": "text", "text": "What shape?"}]
    body = {"model": server.model_path, "messages": [{"role": "user", "content": content}], "max_tokens": 4}
    r = httpx.post(f"{server.base_url}/chat/completions", json={**body, "temperature": 0.0}, timeout=60)
    r.raise_for_status()
    text: str = r.json()["choices"][0]["message"]["content"]
    return text


def test_served_answers_are_the_in_process_answers(
    servers: dict[str, Server], cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t0 = time.perf_counter()
    # In process first: it runs while the servers load.
    local = [{"name": n, "spec": f"zoo:{ZOO[n]}", "device": "cpu", "batch_size": 8} for n in servers]
    inproc = run(parse_config(_config(cache, local), "in-process"), tmp_path / "in", quiet=True)
    for server in servers.values():
        server.wait_ready()
    remote = [{"name": n, "spec": s.spec(), "options": {"concurrency": 2}} for n, s in servers.items()]
    served = run(parse_config(_config(cache, remote), "served"), tmp_path / "out", quiet=True)
    assert inproc.stats.failed == 0 and served.stats.failed == 0

    answers: dict[tuple[str, str, str], dict[str, Any]] = {}
    for side, outcome in (("in", inproc), ("out", served)):
        for line in _lines(outcome.out_dir):
            answers.setdefault((line["model"], line["task"], line["sample_id"]), {})[side] = line
    specials = set().union(*(_special_tokens(CHECKPOINTS / z) for z in ZOO.values()))
    assert {"<|im_start|>", "<|im_end|>", "<start_of_turn>", "<end_of_turn>"} <= specials
    assert set(servers) == set(PYTHONS)

    counts: dict[str, dict[str, int]] = {}
    for (model, task, _sid), pair in sorted(answers.items()):
        c = counts.setdefault(model, {"questions": 0, "images": 0, "equal": 0, "cleaned": 0})
        c["questions" if task == "reasoning" else "images"] += 1
        inside, outside = pair["in"], pair["out"]
        c["equal"] += inside["prediction"] == outside["prediction"]
        c["cleaned"] += bool(outside["template_cleaned"])
        for line in (inside, outside):
            held = [t for t in specials if t in line["prediction"]]
            assert held == [], f"{model} {task} {line['sample_id']}: stored answer holds {held}"
        assert inside["template_cleaned"] == 0  # the in-process decode skips special tokens
    for model, c in counts.items():
        assert c["questions"] >= 40 and c["images"] >= 8, (model, c)
        assert c["equal"] == c["questions"] + c["images"], (model, c)

    # Whether the server's raw answers carry the template (transformers' Qwen response parser looks for
    # "<|im_start|>assistant\n", which the zoo tokenizer decodes without the newline): then every served
    # Qwen answer was cleaned, and the cells count them.
    for model, server in servers.items():
        raw = _raw_answer(server)
        expect = counts[model]["questions"] + counts[model]["images"] if "<|im_start|>" in raw else 0
        assert counts[model]["cleaned"] == expect, (model, raw)
        cells = [c for c in _results(served.out_dir)["cells"] if c["model"] == model]
        assert sum(c["template_cleaned"] for c in cells) == expect

    # Equal answers give equal answer-format rates and scores, and the rate is the share of parsed lines.
    for outcome in (inproc, served):
        lines = _lines(outcome.out_dir)
        for cell in _results(outcome.out_dir)["cells"]:
            mine = [ln for ln in lines if (ln["model"], ln["task"]) == (cell["model"], cell["task"])]
            assert cell["answers_parsed"] == sum(ln["answer_parsed"] for ln in mine)
            assert cell["answer_format_rate"] == pytest.approx(cell["answers_parsed"] / len(mine))
    by_cell = {(c["model"], c["task"]): c for c in _results(inproc.out_dir)["cells"]}
    for c in _results(served.out_dir)["cells"]:
        twin = by_cell[(c["model"], c["task"])]
        assert (c["answer_format_rate"], c["primary"]) == (twin["answer_format_rate"], twin["primary"])
    assert _results(served.out_dir)["comparison"]["withheld"] == []
    with capsys.disabled():
        print(f"\nserved vs in-process: {counts}; {time.perf_counter() - t0:.1f} s")


def test_a_model_name_the_server_does_not_serve_fails_every_sample_with_its_message(
    servers: dict[str, Server], cache: Path, tmp_path: Path
) -> None:
    server = servers["Gemma-3"]
    server.wait_ready()
    models = [{"name": "wrong", "spec": server.spec("gemma-3-wrong-name")}]
    outcome = run(parse_config(_config(cache, models), "wrong"), tmp_path / "out", quiet=True)
    lines = _lines(outcome.out_dir)
    assert len(lines) == N_IMAGES * (QUESTIONS_PER_IMAGE + 1) and outcome.stats.failed == len(lines)
    for line in lines:
        assert line["prediction"] is None
        assert f"Server is pinned to '{server.model_path}'" in line["error"], line["error"]
        assert "the name after '#' in the spec must be one it serves" in line["error"]
    for cell in _results(outcome.out_dir)["cells"]:
        assert cell["scored"] == 0 and cell["failed"] == cell["samples"]
        (reason,) = cell["failure_reasons"]
        assert "requested 'gemma-3-wrong-name'" in reason
