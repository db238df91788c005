"""Judging open answers: after the models answered, a task's judge model scores each stored answer.

A judged record lives in the store under its own key, the cell's key and the judge's fingerprint
(tasks/judge.py: model fingerprint, prompt template hash, parse settings), stamped with the hash of the
prompt the judge read. So an unchanged judge reuses every verdict across reruns (0 calls), a changed
judge rejudges exactly the judged records, and a recomputed answer is judged again. The judge loads
through the runner's model pool and is called through the generative protocol. A call that fails, or a
verdict that does not parse (its raw text kept), is a judge failure: scoring counts the sample failed,
like a model failure (runner/score/failures.py, --max-failed). Failed calls are retried on a rerun; a verdict
that did not parse is not (a greedy judge would say the same again), unless the judge or answer changes.

A verdict's stamp also holds a digest of the record as written, and its verdict must be what its raw text
reads as: a verdict edited, truncated or made NaN in the store is never used; it is judged again and
counted (run_log.json judge.rejected).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from argus_eval.data.types import Sample, fingerprint_of
from argus_eval.errors import (
    ArgusError,
    ConfigError,
    ModelCallError,
    PerturbationError,
    SampleError,
    StrictModeError,
)
from argus_eval.models.protocols import GENERATE, Generator, generates
from argus_eval.models.secrets import redact_text
from argus_eval.perturb.conditions import CLEAN
from argus_eval.runner.execute.pool import LOAD_ERRORS, ModelPool
from argus_eval.runner.inputs.images import ImageCache
from argus_eval.runner.inputs.prepare import prepare
from argus_eval.runner.plan.plan import Cell, Plan
from argus_eval.runner.store import Store
from argus_eval.tasks.base import TaskOptions
from argus_eval.tasks.judge import VERDICT, Judged, JudgeItem, JudgeOptions, JudgeSetup, parse_verdict
from argus_eval.tasks.records import Record


@dataclass
class JudgeStats:
    """What judging did this run (run_log.json): judge calls made, verdicts reused, failures written."""

    calls: int = 0
    reused: int = 0
    failed: int = 0
    rejected: dict[str, int] = field(default_factory=dict)  # damaged verdicts judged again, by reason

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"calls": self.calls, "reused": self.reused, "failed": self.failed}
        return out | ({"rejected": dict(sorted(self.rejected.items()))} if self.rejected else {})


def _stamp(prompt: str, record: Record) -> str:
    """A verdict's stamp: the prompt the judge read, and the digest of the record as written."""
    return f"{fingerprint_of(prompt)}:{fingerprint_of(record.output, record.error)}"


def _standing(prompt: str, record: Record | None, stamp: str | None, opts: JudgeOptions) -> str | None:
    """Whether a stored verdict stands for this prompt: None when it does, "stale" when it read another
    prompt (or predates digests), else why it is damaged."""
    if record is None or stamp is None or ":" not in stamp:
        return "stale"
    read, digest = stamp.split(":", 1)
    if read != fingerprint_of(prompt):
        return "stale"
    if digest != fingerprint_of(record.output, record.error):
        return "content does not match its digest (edited or truncated)"
    if record.output is None:
        return None  # a failed call: nothing to read
    raw, verdict = record.output.get("raw"), record.output.get("verdict")
    if not isinstance(raw, str):
        return "no raw text"
    again = parse_verdict(raw, opts)
    if not _same(again.score, verdict) or (again.error is None) != (record.error is None):
        return "verdict is not what its raw text reads as"
    return None


def _same(a: Any, b: Any) -> bool:
    # a NaN verdict never stands (NaN != NaN); bool and int are kept apart
    return type(a) is type(b) and a == b


def judge_setups(options: Sequence[TaskOptions], fingerprint: Callable[[Any], str]) -> dict[str, JudgeSetup]:
    """task name -> its judge, for every task whose options name one; ConfigError naming the key when
    the judge's model cannot be fingerprinted (a missing directory, an unknown preset)."""
    out: dict[str, JudgeSetup] = {}
    for i, opts in enumerate(options):
        judge = getattr(opts, "judge", None)
        if judge is None:
            continue
        try:
            fp = fingerprint(judge.config())
        except ArgusError as e:
            raise ConfigError(
                f"tasks[{i}] ({opts.name}): judge.model {redact_text(judge.model)!r}: {e}"
            ) from None
        out[opts.name] = JudgeSetup(opts.name, judge, fp)
    return out


@dataclass
class _Due:
    """One cell's answers to judge: the items, their prompts and stamps."""

    cell: Cell
    key: str
    samples: list[Sample] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)
    damaged: list[str] = field(default_factory=list)  # sample ids whose stored verdict is deleted first


def _items(cell: Cell, records: dict[str, Record]) -> list[tuple[Sample, JudgeItem]]:
    """The cell's successful answers that its task has judged, in sample order."""
    task = cell.task
    if not isinstance(task, Judged):
        return []
    out = []
    for s in cell.samples:
        r = records.get(s.sample_id)
        if r is not None and r.error is None:
            item = task.judge_item(s, r.output or {})
            if item is not None:
                out.append((s, item))
    return out


def _due(cell: Cell, setup: JudgeSetup, store: Store, retry_failed: bool, stats: JudgeStats) -> _Due:
    key = setup.key(cell.key)
    done = store.read(key)
    states = store.states(key)
    due = _Due(cell, key)
    for s, item in _items(cell, store.read(cell.key)):
        prompt = item.prompt(setup.options.prompt)
        old = done.get(s.sample_id)
        why = _standing(prompt, old, states.get(s.sample_id, (None, False))[0], setup.options)
        if (
            why is None
            and old is not None
            and (old.error is None or old.output is not None or not retry_failed)
        ):
            stats.reused += 1
            continue
        if why not in (None, "stale"):
            stats.rejected[str(why)] = stats.rejected.get(str(why), 0) + 1
            due.damaged.append(s.sample_id)
        due.samples.append(s)
        due.prompts.append(prompt)
    return due


def _judge_cell(
    due: _Due, setup: JudgeSetup, judge: Generator, run_seed: int, cache: ImageCache, stats: JudgeStats
) -> list[Record]:
    """Ask the judge about each due answer in batches (a failed batch: one by one); one record each."""
    opts = setup.options

    def ask(images: list[Any], prompts: list[str]) -> list[str]:
        stats.calls += len(prompts)
        return judge.generate(images, prompts, opts.max_new_tokens)

    records: list[Record] = []
    ready: list[tuple[Sample, Any, str]] = []
    for s, prompt in zip(due.samples, due.prompts, strict=True):
        try:  # the judge sees the clean image the question is about
            ready.append((s, prepare(s, due.cell.dataset, CLEAN, run_seed, None, cache).image, prompt))
        except (SampleError, PerturbationError) as e:
            records.append(Record(s.sample_id, None, error=f"judge: input: {e}"))
    for start in range(0, len(ready), opts.batch_size):
        batch = ready[start : start + opts.batch_size]
        raws: list[str | None] = []
        try:
            raws += ask([b[1] for b in batch], [b[2] for b in batch])
        except ModelCallError:
            for b in batch:
                try:
                    raws += ask([b[1]], [b[2]])
                except ModelCallError as e:
                    raws.append(None)
                    records.append(Record(b[0].sample_id, None, error=f"judge: call failed: {e}"))
        for (s, _, _), raw in zip(batch, raws, strict=True):
            if raw is None:
                continue
            v = parse_verdict(raw, opts)
            records.append(Record(s.sample_id, {"raw": raw, "verdict": v.score}, error=v.error))
    return records


def _load(setup: JudgeSetup, pool: ModelPool) -> Generator:
    """The judge, loaded by the pool; ConfigError when it does not generate from instructions."""
    model = pool.get(setup.options.config())
    if GENERATE in model.info.capabilities and generates(model):
        return model
    offered = ", ".join(sorted(model.info.capabilities)) or "nothing"
    raise ConfigError(
        f"task {setup.task} option judge.model={redact_text(setup.options.model)!r} offers {offered}, "
        "not generate; name a model that follows instructions (a chat VLM or api:URL#MODEL)"
    )


def judge_plan(plan: Plan, store: Store, pool: ModelPool, run_seed: int, strict: bool) -> JudgeStats:
    """Judge every stored answer of the plan's judged tasks that has no current verdict."""
    stats = JudgeStats()
    cache = ImageCache()
    for task_name, setup in sorted(plan.judges.items()):
        todo = [
            d
            for c in plan.cells
            if c.task.name == task_name and (d := _due(c, setup, store, plan.retry_failed, stats)).samples
        ]
        if not todo:
            continue
        judge: Generator | None = None
        try:
            judge = _load(setup, pool)
        except LOAD_ERRORS as e:
            if strict:
                raise
            why = redact_text(str(e))
        for due in todo:
            if judge is None:
                records = [
                    Record(s.sample_id, None, error=f"judge: could not load: {why}") for s in due.samples
                ]
            else:
                records = _judge_cell(due, setup, judge, run_seed, cache, stats)
            failed = [r for r in records if r.error is not None]
            if failed and strict:
                raise StrictModeError(
                    f"sample {failed[0].sample_id} failed ({failed[0].error}); --strict is set"
                )
            stats.failed += len(failed)
            prompts = {s.sample_id: p for s, p in zip(due.samples, due.prompts, strict=True)}
            stamps = {r.sample_id: _stamp(prompts[r.sample_id], r) for r in records}
            # a damaged verdict may carry the stamp its judged-again record gets: deleted, or it would stay
            store.delete(due.key, due.damaged)
            store.write(due.key, records, stamps)
        pool.release(setup.options.config())
    return stats


def judge_entry(setup: JudgeSetup, raw: Any, verdict: Any, error: str | None) -> dict[str, Any]:
    """One judge's entry on a judged sample's line of samples.jsonl: its raw text, the verdict read from
    it (None when it did not parse or there is none), its fingerprint, and why it failed (only then)."""
    entry = {"fingerprint": setup.fingerprint, "raw": raw, "verdict": verdict}
    return entry if error is None else {**entry, "error": error}


def apply_judgments(
    cell: Cell, setup: JudgeSetup | None, store: Store, ok: dict[str, Record], failures: dict[str, str]
) -> dict[str, dict[str, Any]]:
    """Merge a judged cell's verdicts into its successful records (output[VERDICT]) before finalize; a
    judged answer without a current verdict moves to failures with the judge's reason. Returns, per judged
    sample, the judge's entry on its samples.jsonl line (judge_entry): the verdict the score used, or,
    for a judge failure, its reason (a failed call or an answer never judged has no raw text)."""
    if setup is None:
        return {}
    key = setup.key(cell.key)
    verdicts, states = store.read(key), store.states(key)
    shown: dict[str, dict[str, Any]] = {}
    for s, item in _items(cell, ok):
        v = verdicts.get(s.sample_id)
        stamp = states.get(s.sample_id, (None, False))[0]
        current = _standing(item.prompt(setup.options.prompt), v, stamp, setup.options) is None
        if v is None or not current:  # a stale verdict read another prompt: not shown as this one's
            why = failures[s.sample_id] = "judge: not judged (the judge did not run on this answer)"
            shown[s.sample_id] = judge_entry(setup, None, None, why)
        elif v.error is not None:  # a failed call (no output), or a verdict that did not parse
            failures[s.sample_id] = v.error  # an unparsed verdict's reason quotes its raw text
            shown[s.sample_id] = judge_entry(setup, (v.output or {}).get("raw"), None, v.error)
        else:
            out = v.output or {}
            shown[s.sample_id] = judge_entry(setup, out.get("raw"), out["verdict"], None)
            ok[s.sample_id].output = {**(ok[s.sample_id].output or {}), VERDICT: out["verdict"]}
            continue
        del ok[s.sample_id]
    return shown
