"""samples.jsonl shows why a sample was judged right (issue 40): a judged run end to end with a loopback
judge that says yes, no or something unreadable, and fails some calls. Each judged line carries one entry
per judge (raw text, verdict, fingerprint; a failure's reason instead of a verdict), the judged score is
those verdicts aggregated by hand, a resume that calls no judge writes the same bytes, and a judge adds
nothing but its entries to the lines it judged.
"""

from __future__ import annotations

import html
import json
import re
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from api_server import ServerState, serve
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import RunOutcome, run
from argus_eval.runner.store import Store
from judge_fixtures import judged_config

UNREADABLE = "Hard to say from this picture."


def _reply(question: str, candidate: str, references: list[str]) -> str:
    """The loopback judge's reply, a function of what it reads: yes for an answer among the references,
    else (by the question's checksum) something that is no verdict, or no."""
    if candidate in references:
        return "Yes, correct."
    return UNREADABLE if zlib.crc32(question.encode()) % 3 == 0 else "No, that is wrong."


def _served(prompt: str) -> str:
    question = re.search(r"Question: (.*)", prompt)
    refs = re.search(r"Reference answers: (.*)", prompt)
    answer = re.search(r"<answer>(.*?)</answer>", prompt, flags=re.DOTALL)
    assert question is not None and refs is not None and answer is not None
    return _reply(question.group(1), html.unescape(answer.group(1)), refs.group(1).split("; "))


def _config(judge: dict[str, Any] | None, cache: Path) -> dict[str, Any]:
    return {**judged_config("judged-lines", judge), "cache_dir": str(cache)}


Ran = tuple[RunOutcome, bytes, dict[str, Any]]  # the outcome, samples.jsonl's bytes, run_log.json


def _run(cfg: dict[str, Any], out: Path, retry_failed: bool = True) -> Ran:
    outcome = run(parse_config(cfg, "judged.yaml"), out, quiet=True, retry_failed=retry_failed)
    return outcome, (out / "samples.jsonl").read_bytes(), json.loads((out / "run_log.json").read_text())


def _lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(x) for x in data.decode().splitlines()]


def test_judged_lines_show_each_verdict_and_a_resume_writes_the_same_bytes(tmp_path: Path) -> None:
    state = ServerState(answer=_served, fail_every=5)
    out = tmp_path / "run"
    with serve(state) as url:
        opts = {"concurrency": 1, "max_retries": 0, "backoff_s": 0.0}
        judge = {"model": f"api:{url}#judge", "options": opts, "primary": "judge", "device": "cpu"}
        cfg = _config(judge, tmp_path / "cache")
        first, data, log = _run(cfg, out)
        res = json.loads((out / "results.json").read_text())
        (cell,) = first.plan.cells
        open_ids = {s.sample_id for s in cell.samples if not (s.choices and s.answer_index is not None)}
        samples = {s.sample_id: s for s in cell.samples}
        with Store(out / "store.sqlite") as store:  # what the model answered, failed judge or not
            answers = {sid: str((r.output or {})["answer"]) for sid, r in store.read(cell.key).items()}

        def expected(sid: str) -> str:
            s = samples[sid]
            return _reply(s.question or "", answers[sid], list(s.answers))

        lines = _lines(data)
        fingerprint = res["judges"][0]["fingerprint"]

        # every open answer is judged by the one judge, and nothing else is
        assert {x["sample_id"] for x in lines if "judges" in x} == open_ids
        kinds: dict[str, list[dict[str, Any]]] = {"yes": [], "no": [], "unread": [], "call": []}
        for x in (x for x in lines if "judges" in x):
            (entry,) = x["judges"]
            assert entry["fingerprint"] == fingerprint
            if entry["raw"] is None:  # the call failed: its reason, no verdict
                assert entry["verdict"] is None and entry["error"].startswith("judge: call failed")
                assert x["error"] == entry["error"] and x["score"] is None
                kinds["call"].append(x)
                continue
            assert entry["raw"] == expected(x["sample_id"])
            if entry["raw"] == UNREADABLE:  # no verdict: the sample fails, quoting the judge
                assert entry["verdict"] is None and UNREADABLE[:20] in entry["error"]
                assert x["error"] == entry["error"] and x["score"] is None
                kinds["unread"].append(x)
            else:  # read by hand: yes is 1, no is 0
                assert "error" not in entry and "error" not in x
                assert entry["verdict"] == (1.0 if entry["raw"].startswith("Yes") else 0.0)
                kinds["yes" if entry["verdict"] == 1.0 else "no"].append(x)
        assert all(kinds.values()), {k: len(v) for k, v in kinds.items()}  # each kind is exercised

        # the judged score is these verdicts aggregated by hand (an unjudged choice: its exact score)
        scored = [x for x in lines if x["score"] is not None]
        by_hand = np.mean([x["judges"][0]["verdict"] if "judges" in x else x["score"] for x in scored])
        (summary,) = res["cells"]
        assert summary["metrics"]["judge"] == pytest.approx(by_hand)
        assert res["scorecard_cells"][0]["score"] == pytest.approx(by_hand)  # primary: judge
        failed = len(kinds["call"]) + len(kinds["unread"])
        assert summary["failed"] == res["judges"][0]["failed"] == failed
        assert log["judge"]["failed"] == failed and log["judge"]["calls"] > 0

        # a resume that retries nothing calls no judge and writes the same bytes
        state.up, asked = False, state.requests
        again, data2, log2 = _run(cfg, out, retry_failed=False)
        assert state.requests == asked and log2["judge"] == {"calls": 0, "reused": len(open_ids), "failed": 0}
        assert again.stats.records_written == 0 and data2 == data

        # the failed calls retried with the server back: those lines now carry verdicts; then a resume
        state.up, state.fail_every = True, 0
        _, data3, log3 = _run(cfg, out)
        assert log3["judge"]["calls"] == len(kinds["call"])
        lost = {x["sample_id"] for x in kinds["call"]}
        for x in _lines(data3):
            if x["sample_id"] in lost:
                assert x["judges"][0]["raw"] == expected(x["sample_id"])
        asked = state.requests
        _, data4, log4 = _run(cfg, out)
        assert log4["judge"]["calls"] == 0 and state.requests == asked and data4 == data3


def test_a_judge_adds_only_its_entries_to_the_lines_it_judged(tmp_path: Path) -> None:
    """Without a judge no line has `judges`; with one, a line whose verdict was read is the judgeless
    line plus its `judges` (so a judge changes nothing else a line says), and a line no judge read (a
    multiple-choice item, where a dataset has them) is the same line."""
    cache = tmp_path / "cache"
    _, plain, _ = _run(_config(None, cache), tmp_path / "plain")
    assert not any("judges" in x for x in _lines(plain))
    with serve(ServerState(answer=_served)) as url:
        judge = {"model": f"api:{url}#judge", "options": {"concurrency": 1}, "device": "cpu"}
        _, judged, _ = _run(_config(judge, cache), tmp_path / "judged")
    before = {x["sample_id"]: x for x in _lines(plain)}
    after = _lines(judged)
    assert [x["sample_id"] for x in after] == list(before)  # the same lines, in the same order
    read = 0
    for x in after:
        entries = x.pop("judges", None)
        if entries is None or "error" not in entries[0]:
            assert x == before[x["sample_id"]]
            read += entries is not None
    assert read > 0
