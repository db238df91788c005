"""Connecting to (or starting) a Ray cluster, and checking it can do a run before any work starts.

Ray is imported lazily so that ARGUS-EVAL imports without it; ExecutorError says how to install it.
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

from argus_eval.errors import ExecutorError
from argus_eval.runner.ray.loss import lost_component, note_session
from argus_eval.runner.ray.options import RayOptions, ResourceRequest

# Ray's defaults write outside the run (usage stats upload, a token in ~/.ray); a run must not.
# Set only when unset, so a cluster that uses token auth can still be joined (RAY_AUTH_MODE=token).
RAY_ENV_DEFAULTS = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


def import_ray() -> Any:
    """The ray module, or ExecutorError telling how to install it."""
    try:
        import ray
    except ImportError:
        raise ExecutorError(
            "executor 'ray' needs Ray: pip install 'argus-eval[ray]' (ray[default]>=2.40)"
        ) from None
    return ray


def local_versions() -> dict[str, str]:
    """Versions that must match between the driver and every worker for records to be comparable."""
    out = {"python": ".".join(platform.python_version_tuple()[:2])}
    for name in ("ray", "argus-eval"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "missing"
    return out


def _node_versions() -> dict[str, str]:
    # Runs on a worker: module-level so Ray ships it by reference and the worker's own code answers.
    return local_versions()


def _check_reachable(address: str) -> None:
    """A TCP probe first: Ray itself retries an unreachable address for minutes before failing."""
    if address in ("auto", "local"):
        return
    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        raise ExecutorError(f"Ray address {address!r} is not HOST:PORT, ray://HOST:PORT or auto")
    try:
        with socket.create_connection((host, int(port)), timeout=5):
            pass
    except OSError as e:
        raise ExecutorError(
            f"cannot reach the Ray cluster at {address} ({e}); start it with `ray start --head` "
            "or fix --address"
        ) from None


@contextmanager
def connected(opts: RayOptions, quiet: bool) -> Iterator[Any]:
    """Yield the ray module connected to a cluster; shut down on exit only what this call started.

    An existing connection in this process (a notebook or test that called ray.init) is reused as is.
    """
    for k, v in RAY_ENV_DEFAULTS.items():
        os.environ.setdefault(k, v)
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    temp_dir: str | None = None
    own_temp = False
    if opts.address is None:
        # Ray's unix sockets live under the temp dir, whose path must stay short: never under a deep run dir.
        if opts.temp_dir is not None:
            temp_dir = str(opts.temp_dir.resolve())
        else:
            temp_dir, own_temp = tempfile.mkdtemp(prefix="argus-ray-"), True
        kwargs: dict[str, Any] = {
            "address": "local",
            "num_cpus": opts.num_cpus,
            "num_gpus": opts.num_gpus,
            "include_dashboard": False,
            "_temp_dir": temp_dir,
        }
    else:
        _check_reachable(opts.address)
        kwargs = {"address": opts.address}
    if temp_dir is not None:
        note_session(temp_dir, own_temp)
    try:
        ray.init(**kwargs, log_to_driver=not quiet, configure_logging=not quiet)
    except Exception as e:  # Ray raises a bare Exception when a local node does not start in time
        if own_temp and temp_dir is not None:
            shutil.rmtree(temp_dir, ignore_errors=True)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ExecutorError(
            f"cannot connect to the Ray cluster at {opts.address or 'local'}: {first}"
            + ("; rerun to try again (a busy machine starts a local cluster slowly)" if temp_dir else "")
        ) from None
    try:
        yield ray
    except ExecutorError as e:  # workers lost: say what the local cluster lost, when its log tells
        cause = lost_component(Path(temp_dir)) if temp_dir is not None else None
        if cause is None:
            raise
        raise ExecutorError(f"{e} (the local Ray cluster lost a component: {cause})") from None
    finally:
        ray.shutdown()
        if own_temp and temp_dir is not None:
            shutil.rmtree(temp_dir, ignore_errors=True)


def _describe(resources: Mapping[str, float], zeros: bool = False) -> str:
    shown = {k: resources.get(k, 0.0) for k in ("CPU", "GPU", "memory") if zeros or resources.get(k)}
    parts = [
        f"{k} {v / 1024**3:.1f} GiB" if k == "memory" else f"{k} {v:g}" for k, v in sorted(shown.items())
    ]
    return ", ".join(parts) or "nothing"


def check_resources(ray: Any, requests: Mapping[str, ResourceRequest]) -> None:
    """Every model's actor must fit on some alive node; otherwise Ray would wait for it forever."""
    nodes = [n["Resources"] for n in ray.nodes() if n.get("Alive")]
    total = ray.cluster_resources()
    for name, req in requests.items():
        needs = req.needs()
        if not any(all(node.get(k, 0.0) >= v for k, v in needs.items()) for node in nodes):
            raise ExecutorError(
                f"model {name!r} asks for {_describe(needs)} per worker, but no node of the Ray cluster "
                f"has that (cluster total: {_describe(total, zeros=True)}); lower gpus_per_model / "
                "memory_per_model_gb in executor_options or add nodes"
            )


def check_versions(ray: Any, timeout_s: float) -> None:
    """One tiny task on every alive node: its Python, Ray and ARGUS-EVAL versions must equal the driver's."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    probe = ray.remote(num_cpus=0, max_retries=0)(_node_versions)
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    refs = [
        probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote()
        for n in nodes
    ]
    try:
        answers = ray.get(refs, timeout=timeout_s)
    except ray.exceptions.GetTimeoutError:
        raise ExecutorError(
            f"Ray workers did not answer a version check within {timeout_s:g} s (startup_timeout_s)"
        ) from None
    mine = local_versions()
    for node, theirs in zip(nodes, answers, strict=True):
        diff = {k: (mine[k], theirs.get(k)) for k in mine if theirs.get(k) != mine[k]}
        if diff:
            what = "; ".join(f"{k}: driver {a}, worker {b}" for k, (a, b) in sorted(diff.items()))
            raise ExecutorError(
                f"Ray node {node.get('NodeManagerAddress', node['NodeID'])} runs different versions than "
                f"the driver ({what}); install the same versions on every node"
            )
