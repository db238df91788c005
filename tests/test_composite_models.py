"""A composite model: one name over task-specific checkpoints (the paper's BLIP: ITM for retrieval, the
captioner for captions, the VQA head for questions). It is one row everywhere, each cell names the
checkpoint that served it, a rerun makes no model call, and changing one task's checkpoint recomputes
only that task's cells. A mapping that cannot work is one line naming the model, the task and what the
checkpoint offers."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from argus_eval.cli import main
from argus_eval.errors import CapabilityError
from argus_eval.models.loading import load_model, model_fingerprint
from argus_eval.models.protocols import Model
from argus_eval.models.spec import ModelConfig
from argus_eval.report.build import write_reports
from argus_eval.results_model import results_json
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
from argus_eval.testing.tiny import build_tiny
from model_fixtures import tiny_dir
from pipeline_fixtures import tiny_config

ROOT = Path(__file__).resolve().parent.parent
# task -> the tiny BLIP head serving it, and the protocol it must serve it by (natively)
HEADS = {"retrieval": "blip-itm", "captioning": "blip-caption", "reasoning": "blip-vqa"}
NATIVE = {"retrieval": "embed", "captioning": "caption", "reasoning": "generate"}


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def _config(cache: Path, specs: dict[str, str], *, efficiency: bool) -> dict[str, Any]:
    """Four studio images (4 questions), one image perturbation; short generations, no Java metric."""
    cfg = tiny_config(cache, tasks=["retrieval", "captioning", "reasoning"])
    cfg["tasks"] = [
        "retrieval",
        {"name": "captioning", "metrics": ["Bleu_4", "CIDEr"], "max_new_tokens": 4},
        "reasoning",
    ]
    tasks: dict[str, Any] = {t: s for t, s in specs.items()}
    tasks["reasoning"] = {"spec": specs["reasoning"], "batch_size": 3}  # a per-task override
    cfg["models"] = [{"name": "BLIP", "device": "cpu", "batch_size": 4, "max_new_tokens": 4, "tasks": tasks}]
    cfg["datasets"] = [{**cfg["datasets"][0], "n_images": 4, "questions_per_image": 1}]
    cfg["perturbations"] = [{"image": "brightness", "severity": 2}]
    cfg["scoring"] = {"resamples": 0}
    cfg["efficiency"] = {"enabled": efficiency, "batch_size": 2, "repeats": 1, "warmup": 0, "trials": 1}
    return cfg


def _specs() -> dict[str, str]:
    return {task: f"hf:{tiny_dir(family)}" for task, family in HEADS.items()}


def _params(directory: Path) -> int:
    """Parameters of a checkpoint counted straight from transformers (not through the adapter)."""
    import transformers

    arch = json.loads((directory / "config.json").read_text())["architectures"][0]
    model = getattr(transformers, arch).from_pretrained(directory)
    return sum(p.numel() for p in model.parameters())


def _table_rows(html: str, table_id: str) -> list[str]:
    table = re.search(rf"<table id='{table_id}'>(.*?)</table>", html, re.S)
    assert table is not None, table_id
    return re.findall(r"<tr>(.*?)</tr>", table.group(1), re.S)


def test_composite_is_one_row_and_each_cell_names_its_checkpoint(cache: Path, tmp_path: Path) -> None:
    specs = _specs()
    out = tmp_path / "out"
    first = run(parse_config(_config(cache, specs, efficiency=True), "t"), out, quiet=True)
    res = results_json(first.results)
    assert list(res["models"]) == ["BLIP"]
    assert {c["model"] for c in res["cells"]} == {"BLIP"}
    assert {c["task"] for c in res["cells"]} == set(HEADS)
    for c in res["cells"]:
        task = c["task"]
        assert c["checkpoint"] == specs[task]
        assert (c["protocol"], c["native_protocol"]) == (NATIVE[task], True)
        # the fingerprint of that checkpoint alone, with the model's shared settings under its overrides:
        # the same a single-spec entry of the checkpoint gets, so both share stored records
        alone = ModelConfig(
            name="BLIP",
            spec=specs[task],
            device="cpu",
            batch_size=3 if task == "reasoning" else 4,
            max_new_tokens=4,
        )
        assert c["model_fingerprint"] == model_fingerprint(alone)
    assert len({c["model_fingerprint"] for c in res["cells"]}) == 3
    manifest = res["manifest"]["models"]
    assert set(manifest) == {"BLIP"}
    assert {t: e["spec"] for t, e in manifest["BLIP"]["tasks"].items()} == specs
    # efficiency per task, measured on the checkpoint that ran it (each head has its own parameter count)
    timed = {t["task"]: t for t in res["timing"]["per_task"] if t["model"] == "BLIP"}
    assert set(timed) == set(HEADS)
    for task, family in HEADS.items():
        assert timed[task]["params"] == _params(tiny_dir(family)), task
    assert res["efficiency"]["BLIP"] is not None

    write_reports(out)
    summary = (out / "summary.md").read_text()
    scorecard = summary.split("## Scorecard", 1)[1].split("\n## ", 1)[0]
    assert len([r for r in scorecard.splitlines() if r.startswith("| BLIP ")]) == 1
    rows = [r.split("|")[1].strip() for r in summary.splitlines() if r.startswith("| ") and "---" not in r]
    assert not any("blip-" in r for r in rows)  # no row is named after a checkpoint
    html = (out / "report.html").read_text()
    assert len([r for r in _table_rows(html, "table-scorecard") if ">BLIP<" in r]) == 1
    assert len([r for r in _table_rows(html, "table-cells") if ">BLIP<" in r]) == len(res["cells"])

    before = (out / "results.json").read_bytes()
    second = run(parse_config(_config(cache, specs, efficiency=True), "t"), out, quiet=True)
    assert second.stats.forward_calls == 0 and second.stats.records_written == 0
    assert json.loads((out / "run_log.json").read_text())["forward_calls"] == 0
    assert (out / "results.json").read_bytes() == before


def test_changing_one_tasks_checkpoint_recomputes_only_its_cells(cache: Path, tmp_path: Path) -> None:
    specs = _specs()
    out = tmp_path / "out"
    first = results_json(
        run(parse_config(_config(cache, specs, efficiency=False), "t"), out, quiet=True).results
    )
    other_vqa = build_tiny("blip-vqa", tmp_path / "vqa-seed1", seed=1)  # another checkpoint, same head
    changed = {**specs, "reasoning": f"hf:{other_vqa}"}
    loaded: list[str] = []

    def loader(cfg: ModelConfig) -> Model:
        loaded.append(cfg.spec)
        return load_model(cfg)

    outcome = run(
        parse_config(_config(cache, changed, efficiency=False), "t"), out, quiet=True, loader=loader
    )
    assert loaded == [changed["reasoning"]]  # the other checkpoints were neither loaded nor called
    reasoning = [c for c in results_json(outcome.results)["cells"] if c["task"] == "reasoning"]
    assert outcome.stats.records_written == sum(c["samples"] for c in reasoning) > 0
    before = {(c["task"], c["condition"]): c for c in first["cells"]}
    for c in results_json(outcome.results)["cells"]:
        old = before[(c["task"], c["condition"])]
        if c["task"] == "reasoning":
            assert c["checkpoint"] == changed["reasoning"]
            assert c["model_fingerprint"] != old["model_fingerprint"]
        else:
            assert c == old  # from the store: same checkpoint, fingerprint and scores


def test_for_task_shares_settings_and_applies_overrides() -> None:
    m = ModelConfig.model_validate(
        {
            "name": "BLIP",
            "device": "cpu",
            "dtype": "bfloat16",
            "batch_size": 16,
            "options": {"region_features": "a.npz"},
            "tasks": {
                "retrieval": "blip-itm-large-coco",
                "reasoning": {"spec": "blip-vqa-base", "batch_size": 2, "dtype": "float32"},
            },
        }
    )
    r = m.for_task("retrieval")
    q = m.for_task("reasoning")
    assert r is not None and q is not None
    assert (r.name, r.spec, r.device, r.dtype, r.batch_size) == (
        "BLIP",
        "blip-itm-large-coco",
        "cpu",
        "bfloat16",
        16,
    )
    assert (q.name, q.spec, q.device, q.dtype, q.batch_size) == ("BLIP", "blip-vqa-base", "cpu", "float32", 2)
    assert r.options == q.options == {"region_features": "a.npz"}
    assert not r.composite and m.composite
    assert m.for_task("captioning") is None
    assert set(m.checkpoints()) == {"retrieval", "reasoning"}
    # a dump validates again to the same model; a single-spec entry dumps without a tasks key
    assert ModelConfig.model_validate(m.model_dump(mode="json")) == m
    single = ModelConfig(name="CLIP", spec="clip-vit-b32")
    assert "tasks" not in single.model_dump() and single.for_task("captioning") is single


# ---- bad input: one line, exit 2, naming the model, the task and what the checkpoint offers ----


def _cli(argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    monkeypatch.setattr(sys, "argv", ["argus", *argv])
    with pytest.raises(SystemExit) as ei:
        main()
    err = capsys.readouterr().err.strip()
    assert ei.value.code == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def _write(tmp_path: Path, cache: Path, tasks: Any, **extra: Any) -> Path:
    cfg = _config(cache, _specs(), efficiency=False)
    cfg["models"] = [{"name": "BLIP", "device": "cpu", "tasks": tasks, **extra}]
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


PRESETS_OK = {"retrieval": "blip-itm-large-coco", "reasoning": "blip-vqa-base"}
DRY = ("--dry-run",)  # preset capabilities are declared: the dry run checks them without loading
BOTH = ("--dry-run", None)  # caught before any model is loaded, by the dry run and by the run alike


@pytest.mark.parametrize(
    ("tasks", "extra", "wanted", "modes"),
    [
        # captions only by the ITM head's retrieval substitute: named, not silently substituted
        (
            {**PRESETS_OK, "captioning": "blip-itm-large-coco"},
            {},
            ["'BLIP'", "'captioning'", "blip-itm-large-coco", "offers embed, score_pairs", "substitute"],
            DRY,
        ),
        # a captioner cannot answer questions at all
        (
            {**PRESETS_OK, "reasoning": "blip-caption-base"},
            {},
            ["'BLIP'", "'reasoning'", "blip-caption-base", "offers caption", "cannot serve it"],
            DRY,
        ),
        (
            {"retrieval": "blip-itm-large-coco", "captions": "blip-caption-base"},
            {},
            ["'BLIP'", "tasks.captions", "blip-caption-base", "is not a task", "captioning"],
            BOTH,
        ),
        ({}, {}, ["'BLIP'", "tasks is empty"], BOTH),
        (
            {"retrieval": "blip-itm-large-coco"},
            {"spec": "clip-vit-b32"},
            ["'BLIP'", "both given", "retrieval"],
            BOTH,
        ),
    ],
)
def test_bad_mappings_are_one_line(
    tasks: dict[str, str],
    extra: dict[str, str],
    wanted: list[str],
    modes: tuple[str | None, ...],
    cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = _write(tmp_path, cache, tasks, **extra)
    for mode in modes:
        flag = [mode] if mode is not None else ["--out", str(tmp_path / "o")]
        err = _cli(["run", "-c", str(path), *flag], monkeypatch, capsys)
        for w in wanted:
            assert w in err, (w, err)


def test_checkpoint_that_cannot_serve_its_task_stops_a_run_before_any_call(
    cache: Path, tmp_path: Path
) -> None:
    specs = {
        **_specs(),
        "captioning": f"hf:{tiny_dir('blip-vqa')}",
        "reasoning": f"hf:{tiny_dir('blip-itm')}",
    }
    calls: list[Model] = []

    def loader(cfg: ModelConfig) -> Model:
        calls.append(model := load_model(cfg))
        return model

    with pytest.raises(CapabilityError) as ei:
        run(
            parse_config(_config(cache, specs, efficiency=False), "t"),
            tmp_path / "out",
            quiet=True,
            loader=loader,
        )
    msg = str(ei.value)
    assert "'BLIP'" in msg and "'reasoning'" in msg and "offers embed, score_pairs" in msg, msg
    assert sum(m.forward_calls for m in calls) == 0


def test_paper_preset_dry_run_shows_blip_on_three_tasks_with_three_checkpoints(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "run",
        "--config",
        str(ROOT / "configs/paper.yaml"),
        "--data-root",
        str(ROOT / "tests/fixtures/data"),
    ]
    monkeypatch.setattr(sys, "argv", ["argus", *argv, "--dry-run", "--json"])
    with pytest.raises(SystemExit) as ei:
        main()
    assert ei.value.code == 0
    plan = json.loads(capsys.readouterr().out)
    assert sorted({r["model"] for r in plan["cells"]}) == sorted(
        ["CLIP", "BLIP", "LXMERT", "Gemma-3-4B", "Qwen2.5-VL-3B"]
    )
    blip = {(r["task"], r["checkpoint"], r["protocol"]) for r in plan["cells"] if r["model"] == "BLIP"}
    assert blip == {
        ("retrieval", "blip-itm-large-coco", "embed"),
        ("captioning", "blip-caption-base", "caption"),
        ("reasoning", "blip-vqa-base", "generate"),
    }


def test_profile_takes_a_composite_by_name_and_times_each_tasks_checkpoint(
    cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(_config(cache, _specs(), efficiency=False)))
    argv = ["argus", "profile", "-m", "BLIP", "-c", str(path), "--batch-size", "2", "--device", "cpu"]
    monkeypatch.setattr(sys, "argv", [*argv, "--json"])
    with pytest.raises(SystemExit) as ei:
        main()
    assert ei.value.code == 0
    per_task = json.loads(capsys.readouterr().out)
    assert set(per_task) == set(HEADS)
    for task, family in HEADS.items():
        on = per_task[task]["measured_on"]
        assert (on["task"], on["checkpoint"], on["protocol"]) == (
            task,
            f"hf:{tiny_dir(family)}",
            NATIVE[task],
        )
        assert per_task[task]["params"] == _params(tiny_dir(family))


def test_a_task_the_mapping_leaves_out_is_named_not_run(
    cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = _write(tmp_path, cache, PRESETS_OK)  # no captioning checkpoint
    monkeypatch.setattr(sys, "argv", ["argus", "run", "-c", str(path), "--dry-run", "--json"])
    with pytest.raises(SystemExit) as ei:
        main()
    assert ei.value.code == 0
    plan = json.loads(capsys.readouterr().out)
    assert {(r["task"], r["checkpoint"]) for r in plan["cells"]} == set(PRESETS_OK.items())
    [left_out] = plan["skipped"]
    assert (left_out["model"], left_out["task"]) == ("BLIP", "captioning")
    assert "maps no checkpoint to captioning" in left_out["reason"]


def test_default_suite_blip_row_serves_every_task_natively_from_its_zoo_heads(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default suite's BLIP is one row over the zoo's three BLIP heads, each serving its task natively
    (datasets shrunk so the dry run generates little; models, tasks and mapping are the suite's own)."""
    from argus_eval.runner.config import default_config_path

    cfg = yaml.safe_load(default_config_path().read_text())
    cfg["datasets"] = [{**d, "n_images": 2, "questions_per_image": 1} for d in cfg["datasets"]]
    cfg["cache_dir"] = str(cache)
    path = tmp_path / "default.yaml"
    path.write_text(yaml.safe_dump(cfg))
    monkeypatch.setattr(sys, "argv", ["argus", "run", "-c", str(path), "--dry-run", "--json"])
    with pytest.raises(SystemExit) as ei:
        main()
    assert ei.value.code == 0
    plan = json.loads(capsys.readouterr().out)
    blip = {(r["task"], r["checkpoint"], r["protocol"]) for r in plan["cells"] if r["model"] == "BLIP"}
    assert blip == {
        ("retrieval", "zoo:blip_itm", "embed"),
        ("captioning", "zoo:blip", "caption"),
        ("reasoning", "zoo:blip_vqa", "generate"),
    }
    assert not [s for s in plan["skipped"] if s["model"] == "BLIP"]
