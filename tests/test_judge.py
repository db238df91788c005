"""A judge for open answers: verdict parsing, the judged score beside exact match, and judged runs with a
zoo judge and with a loopback server as judge (reuse across reruns, rejudging, failures counted, report).
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from api_server import ServerState, serve
from argus_eval.commands.run_cmd import EXIT_FAILED_SAMPLES, exit_status
from argus_eval.errors import ConfigError
from argus_eval.report.build import write_reports
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import RunOutcome, run
from argus_eval.runner.store import Store
from argus_eval.tasks.base import CellResult, mean_finish
from argus_eval.tasks.judge import JudgeOptions, with_judge
from argus_eval.tasks.judge_verdicts import read_verdict
from argus_eval.tasks.reasoning import ReasoningOptions, ReasoningTask
from judge_fixtures import judged_config


def test_a_prompt_must_name_the_answer_and_only_known_placeholders() -> None:
    base = {"name": "x", "models": [{"name": "m", "spec": "zoo:clip"}],
            "datasets": [{"name": "d", "format": "shapesworld"}]}  # fmt: skip
    for prompt, said in [
        ("{question} {answr}", "unknown placeholder(s) ['answr']"),
        ("{question}", "{answer}"),
    ]:
        cfg = {**base, "tasks": [{"name": "reasoning", "judge": {"model": "zoo:gemma3", "prompt": prompt}}]}
        with pytest.raises(ConfigError, match=re.escape(said)) as e:
            parse_config(cfg, "run.yaml")
        assert "judge.prompt" in str(e.value)


def test_the_judge_stays_out_of_the_request_hash() -> None:
    """A judge scores answers without changing them: configuring one keeps every cell's key."""
    plain = ReasoningTask(ReasoningOptions())
    judged = ReasoningTask(ReasoningOptions(judge=JudgeOptions(model="zoo:gemma3")))
    protocol = plain.protocols()[1]
    assert plain.request_hash(protocol) == judged.request_hash(protocol)
    other = ReasoningTask(ReasoningOptions(prompt="{question}?"))
    assert other.request_hash(protocol) != plain.request_hash(protocol)


def test_with_judge_puts_both_scores_on_the_same_rows() -> None:
    exact = [1.0, 1.0, 0.0, 0.0, 1.0]
    verdicts = [1.0, 0.0, 1.0, 0.0, 0.5]
    comp = np.column_stack([exact, np.ones(5)])
    base = CellResult([f"s{i}" for i in range(5)], ["a"] * 5, exact, ["a"] * 5, comp, mean_finish, {})
    for primary, first, other, name in [
        ("exact_match", 0.6, 0.5, "judge"),
        ("judge", 0.5, 0.6, "exact_match"),
    ]:
        cell = with_judge(base, verdicts, primary)
        assert cell.components.shape == (5, 4)
        assert cell.primary == pytest.approx(first)
        sums = cell.components.sum(0)[None, :]
        assert cell.extras[name](sums)[0] == pytest.approx(other)
        assert cell.metrics == {"exact_match": pytest.approx(0.6), "judge": pytest.approx(0.5)}
        # a resample (rows 0, 2, 3): exact [1, 0, 0], judged [1, 1, 0], each from the same rows
        rows = cell.components[[0, 2, 3]].sum(0)[None, :]
        assert cell.finish(rows)[0] == pytest.approx(1 / 3 if primary == "exact_match" else 2 / 3)
        assert cell.extras[name](rows)[0] == pytest.approx(2 / 3 if primary == "exact_match" else 1 / 3)


def _config(judge: dict[str, Any], n_images: int = 3) -> dict[str, Any]:
    return judged_config("judged", {"device": "cpu", **judge}, n_images=n_images, resamples=30)


def _run(cfg: dict[str, Any], out: Path, tmp: Path) -> tuple[RunOutcome, dict[str, Any], dict[str, int]]:
    outcome = run(parse_config({**cfg, "cache_dir": str(tmp / "cache")}, "judged.yaml"), out, quiet=True)
    log = json.loads((out / "run_log.json").read_text())
    return outcome, json.loads((out / "results.json").read_text()), log["judge"]


def _verdicts(outcome: RunOutcome, out: Path) -> dict[str, dict[str, Any]]:
    """sample id -> the judge's stored record (raw text, verdict) of the run's one cell."""
    (cell,) = outcome.plan.cells
    key = outcome.plan.judges["reasoning"].key(cell.key)
    with Store(out / "store.sqlite") as store:
        return {sid: r.output or {} for sid, r in store.read(key).items()}


def test_a_zoo_judge_is_reused_rejudges_on_change_and_its_failures_count(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first, res, log = _run(_config({"model": "zoo:gemma3"}), out, tmp_path)
    (cell,) = first.plan.cells
    n = len(cell.samples)
    assert log["calls"] == n and log["reused"] == 0  # every open answer judged once
    raws = {sid: str(o["raw"]) for sid, o in _verdicts(first, out).items()}
    assert len(raws) == n
    read = {sid: read_verdict(raw, "yes_no", 10).score for sid, raw in raws.items()}
    failed = sorted(sid for sid, v in read.items() if v is None)
    judged = [v for v in read.values() if v is not None]
    assert failed and judged  # the tiny judge says both readable and unreadable things
    (summary,) = res["cells"]
    assert summary["failed"] == len(failed) and summary["scored"] == n - len(failed)
    assert summary["metrics"]["judge"] == pytest.approx(float(np.mean(judged)))
    assert res["failures"]["models"]["clip"]["failed"] == len(failed)
    assert res["judges"][0]["failed"] == len(failed) and res["judges"][0]["model"] == "zoo:gemma3"
    lines = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    assert sorted(x["sample_id"] for x in lines if str(x.get("error", "")).startswith("judge: ")) == failed
    assert exit_status(first.results, 0.0)[0] == EXIT_FAILED_SAMPLES  # --max-failed sees judge failures
    # the exact-match score beside the judged one, on the same samples
    scored = [x for x in lines if x["score"] is not None]
    (card,) = res["scorecard_cells"]
    assert card["score"] == pytest.approx(np.mean([x["score"] for x in scored]))
    assert card["extras"]["judge"]["score"] == pytest.approx(float(np.mean(judged)))

    again, res2, log2 = _run(_config({"model": "zoo:gemma3"}), out, tmp_path)
    assert log2 == {"calls": 0, "reused": n, "failed": 0} and again.stats.records_written == 0
    assert res2 == res

    prompt = "Question: {question}\nTrue answers: {references}\nGiven: {answer}\nRight or wrong?"
    for judge in [{"model": "zoo:gemma3", "prompt": prompt}, {"model": "zoo:qwen2_5_vl"}]:
        changed, res3, log3 = _run(_config(judge), out, tmp_path)
        assert log3["calls"] == n and log3["reused"] == 0  # exactly the judged records, judged again
        assert changed.stats.records_written == 0  # the scored model is not asked again
        assert res3["judges"][0]["fingerprint"] != res["judges"][0]["fingerprint"]

    write_reports(out)
    summary_md = (out / "summary.md").read_text()
    assert "## Judges" in summary_md and "## Judged and exact-match scores" in summary_md
    assert "zoo:qwen2_5_vl" in summary_md
    html = (out / "report.html").read_text()
    assert "Judged and exact-match scores" in html and res3["judges"][0]["fingerprint"] in html


def _served_verdict(prompt: str) -> str:
    """A loopback judge: yes when the candidate answer is one of the references (as written), else no."""
    refs = re.search(r"Reference answers: (.*)", prompt)
    answer = re.search(r"<answer>(.*?)</answer>", prompt, flags=re.DOTALL)
    assert refs is not None and answer is not None
    candidate = html.unescape(answer.group(1))
    return "Yes, correct." if candidate in refs.group(1).split("; ") else "No, that is wrong."


def test_a_loopback_server_as_judge_and_its_failed_calls_are_retried(tmp_path: Path) -> None:
    state = ServerState(answer=_served_verdict, fail_every=4)
    out = tmp_path / "run"
    with serve(state) as url:
        opts = {"concurrency": 1, "max_retries": 0, "backoff_s": 0.0}
        cfg = _config({"model": f"api:{url}#judge", "options": opts, "primary": "judge"}, n_images=4)
        first, res, log = _run(cfg, out, tmp_path)
        n = len(first.plan.cells[0].samples)
        assert log["calls"] >= n + log["failed"]  # a failed batch is asked again one by one
        lines = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
        lost = [x for x in lines if str(x.get("error", "")).startswith("judge: call failed")]
        assert len(lost) == log["failed"] > 0
        kept = [x for x in lines if x["prediction"] is not None]
        expected = np.mean([float(x["prediction"] in x["reference"]) for x in kept])
        # each judged sample shows why: the judge's raw text, its reading and the judge that read it
        for x in lost:  # the call failed: its reason shows, no verdict
            assert x["judges"] == [{"fingerprint": res["judges"][0]["fingerprint"], "raw": None,
                                    "verdict": None, "error": x["error"]}]  # fmt: skip
        for x in kept:
            right = x["prediction"] in x["reference"]
            (entry,) = x["judges"]
            assert entry["raw"] == ("Yes, correct." if right else "No, that is wrong.")
            assert entry["verdict"] == float(right) and "error" not in entry
            assert entry["fingerprint"] == res["judges"][0]["fingerprint"]
        (card,) = res["scorecard_cells"]
        assert res["judges"][0]["primary"] == "judge"
        assert card["score"] == pytest.approx(expected)  # the judged score is primary
        assert "exact_match" in card["extras"]

        state.fail_every = 0
        again, res2, log2 = _run(cfg, out, tmp_path)
        assert log2["calls"] == len(lost) and log2["reused"] == n - len(lost)  # only the failed calls
        assert res2["failures"]["models"]["clip"]["failed"] == 0
        assert again.stats.records_written == 0


def test_a_judged_captioning_cell_keeps_its_coco_score_primary(tmp_path: Path) -> None:
    """Beside the COCO metrics, never instead: the same answers score the same primary with or without
    the judge, and the judged score sits beside it."""
    cfg = _config({}, n_images=3)
    fast = ["Bleu_4", "ROUGE_L", "CIDEr"]  # METEOR would start a Java process per scoring
    cfg["tasks"] = [{"name": "captioning", "metrics": fast}]
    out = tmp_path / "run"
    plain = run(parse_config({**cfg, "cache_dir": str(tmp_path / "cache")}, "plain.yaml"), out, quiet=True)
    before = json.loads((out / "results.json").read_text())
    assert "judges" not in before and "judge" not in json.loads((out / "run_log.json").read_text())
    verdicts = iter(["Yes", "no", "maybe"] * 10)
    with serve(ServerState(answer=lambda _: next(verdicts))) as url:
        judge = {"model": f"api:{url}#judge", "options": {"concurrency": 1}, "device": "cpu"}
        cfg["tasks"] = [{"name": "captioning", "metrics": fast, "judge": judge}]
        judged, after, log = _run(cfg, out, tmp_path)
    n = len(plain.plan.cells[0].samples)
    assert judged.stats.records_written == 0 and log["calls"] == n  # the captions are reused, then judged
    (c0,), (c1,) = before["cells"], after["cells"]
    kept = {s["sample_id"] for s in map(json.loads, (out / "samples.jsonl").read_text().splitlines())
            if s["prediction"] is not None}  # fmt: skip
    assert c1["failed"] == n - len(kept) == n // 3  # every third verdict ("maybe") does not parse
    shown = [s["judges"][0] for s in map(json.loads, (out / "samples.jsonl").read_text().splitlines())]
    assert sorted(j["raw"] for j in shown if j["verdict"] is None) == ["maybe"] * (n // 3)
    assert all(("error" in j) == (j["verdict"] is None) for j in shown)  # an unread verdict says why
    assert c1["metrics"]["judge"] == pytest.approx(0.5)  # yes, no, yes, no ... over the parsed ones
    assert {k: v for k, v in c1["metrics"].items() if k not in {"judge", "coco"}}.keys() == c0[
        "metrics"
    ].keys()
    assert after["judges"][0]["primary"] == "exact_match"
    assert after["scorecard_cells"][0]["extras"]["judge"]["score"] == pytest.approx(0.5)


def test_a_judge_that_cannot_judge_is_named(tmp_path: Path) -> None:
    """A judge model that does not exist, or that does not generate, is one ConfigError naming it; a
    judge server that is down fails every judged sample, counted and retried on the next run."""
    missing = _config({"model": f"hf:{tmp_path / 'nowhere'}"})
    with pytest.raises(ConfigError, match=r"tasks\[0\] \(reasoning\): judge.model 'hf:.*nowhere'"):
        _run(missing, tmp_path / "a", tmp_path)
    with pytest.raises(
        ConfigError, match=re.escape("judge.model='zoo:clip' offers embed, score_pairs, not generate")
    ):
        _run(_config({"model": "zoo:clip"}), tmp_path / "b", tmp_path)
    state = ServerState(up=False)
    with serve(state) as url:
        cfg = _config({"model": f"api:{url}#judge", "options": {"max_retries": 0, "backoff_s": 0.0}})
        outcome, res, log = _run(cfg, tmp_path / "c", tmp_path)
        n = len(outcome.plan.cells[0].samples)
        assert log["failed"] == n and res["failures"]["models"]["clip"]["failed"] == n
        assert res["cells"][0]["primary"] is None and res["judges"][0]["failed"] == n
        state.up = True
        state.answer = lambda _: "yes"
        _, res2, log2 = _run(cfg, tmp_path / "c", tmp_path)
        assert log2["calls"] == n and res2["failures"]["models"]["clip"]["failed"] == 0
        assert res2["cells"][0]["metrics"]["judge"] == 1.0
