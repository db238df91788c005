"""`argus profile --size-only`: a model sized from its config.json alone, on the meta device.

Parameters and weight bytes come from the architecture; FLOPs and passes over the weights from each
task's reference sample (models/sizing.py), counted as a run counts them (efficiency/work.py); the
projections are the roofline of that work on each catalogued device (efficiency/roofline.py). Nothing
is downloaded and no weight is allocated: Gemma-3-4B sizes in seconds, in a few hundred MB.

A generation longer than a few tokens is counted over its first steps and extended: each decode step
reads the same weights and costs a fixed amount more than the one before (one more cached position),
up to the model's attention window (Workload.affine_until); past it, every step is counted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from argus_eval.efficiency.devices import projected_devices
from argus_eval.efficiency.roofline import project_work
from argus_eval.efficiency.work import DTYPE_BYTES, Work, count_work, extend_decode
from argus_eval.errors import CapabilityError
from argus_eval.models.protocols import ModelInfo
from argus_eval.models.sizing import Reference, Sized, Workload, build, config_dtype, read_config
from argus_eval.tasks.base import Task

_PROBE_STEPS = 4  # new tokens counted before a generation is extended


@dataclass(frozen=True)
class TaskSize:
    """One task's reference sample: the protocol a run would use, what the sample sends, its work and
    projections; reason says why there is no work (a substitute protocol, no reference sample)."""

    task: str
    protocol: str | None
    native: bool
    inputs: str | None = None
    new_tokens: int | None = None
    work: Work | None = None
    reason: str | None = None
    projections: list[dict[str, object]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        w = self.work
        return {
            "task": self.task,
            "protocol": self.protocol,
            "native": self.native,
            "inputs": self.inputs,
            "new_tokens": self.new_tokens,
            "flops_per_sample": None if w is None else w.flops,
            "passes": None if w is None else len(w.passes),
            "weight_bytes_read": None if w is None else w.weight_bytes,
            "reason": self.reason,
            "projections": self.projections,
        }


@dataclass(frozen=True)
class SizeReport:
    """A model sized from its config: where the config came from, the architecture, parameters, weight
    bytes per dtype, the dtype projected, each task's reference sample, and the reference sizes."""

    spec: str
    source: str
    family: str
    architecture: str
    dtype: str
    params: int
    weight_bytes: dict[str, int]
    tasks: list[TaskSize]
    reference: Reference

    def to_json(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "source": self.source,
            "family": self.family,
            "architecture": self.architecture,
            "dtype": self.dtype,
            "params": self.params,
            "weight_bytes": dict(self.weight_bytes),
            "reference": {
                "text_tokens": self.reference.text_tokens,
                "prompt_tokens": self.reference.prompt_tokens,
                "regions": self.reference.regions,
                "image_size": self.reference.image_size,
            },
            "flops": "2 x multiply-accumulates (matrix products, convolutions, attention)",
            "tasks": {t.task: t.to_json() for t in self.tasks},
        }


class WorkCounter:
    """Counts workloads, a generation's first steps once per workload (extended to each length)."""

    def __init__(self) -> None:
        self.probes: dict[int, Work] = {}

    def work(self, w: Workload, new_tokens: int) -> Work:
        longer = w.generates and new_tokens > _PROBE_STEPS
        if not longer or (w.affine_until is not None and new_tokens > w.affine_until):
            return count_work(lambda: w.run(new_tokens))
        if id(w) not in self.probes:
            self.probes[id(w)] = count_work(lambda: w.run(_PROBE_STEPS))
        extended = extend_decode(self.probes[id(w)], _PROBE_STEPS, new_tokens)
        return extended if extended is not None else count_work(lambda: w.run(new_tokens))


def _task_size(
    task: Task,
    sized: Sized,
    info: ModelInfo,
    counter: WorkCounter,
    max_new_tokens: int | None,
    project: Callable[[Work], list[dict[str, object]]],
) -> TaskSize:
    try:
        protocol = task.choose_protocol(info)
    except CapabilityError as e:
        return TaskSize(task.name, None, False, reason=str(e))
    if not protocol.native:
        return TaskSize(
            task.name,
            protocol.name,
            False,
            reason=f"substitute protocol {protocol.name!r}: its cost per sample depends on the dataset "
            "(its gallery, caption bank or candidate answers), so it has no reference sample",
        )
    workload = next((sized.workloads[c] for c in sorted(protocol.needs) if c in sized.workloads), None)
    if workload is None:
        return TaskSize(
            task.name,
            protocol.name,
            True,
            reason=f"no reference sample for {sized.architecture} {protocol.name}",
        )
    new_tokens = None
    if workload.generates:
        new_tokens = int(getattr(task.options, "max_new_tokens", 1))
        if max_new_tokens is not None:
            new_tokens = min(new_tokens, max_new_tokens)
    work = counter.work(workload, new_tokens or 1)
    return TaskSize(
        task.name, protocol.name, True, workload.inputs, new_tokens, work, projections=project(work)
    )


def size_model(
    spec: str,
    tasks: Sequence[Task],
    *,
    dtype: str | None = None,
    reference: Reference | None = None,
    max_new_tokens: int | None = None,
    devices: Sequence[str] | None = None,
) -> SizeReport:
    """Size the model `spec` names (a preset, hf:DIR holding at least config.json, zoo:NAME) on the meta
    device: parameters, weight bytes, and per task its reference sample's work and projections at dtype
    (default: the dtype its config ships in)."""
    hf_config, source = read_config(spec)
    dt = dtype or config_dtype(hf_config)
    ref = reference or Reference()
    sized = build(hf_config, "meta", dt, source, ref)
    params = sized.params
    weights = {d: params * DTYPE_BYTES[d] for d in ("float32", "float16", "bfloat16")}
    names = list(devices) if devices is not None else projected_devices()

    def project(work: Work) -> list[dict[str, object]]:
        return [project_work(work.flops, work.passes, weights[dt], d, dt) for d in names]

    info = ModelInfo(
        name=spec, spec=spec, fingerprint="", capabilities=sized.capabilities, family=sized.family
    )
    counter = WorkCounter()
    sizes = [_task_size(t, sized, info, counter, max_new_tokens, project) for t in tasks]
    return SizeReport(spec, source, sized.family, sized.architecture, dt, params, weights, sizes, ref)
