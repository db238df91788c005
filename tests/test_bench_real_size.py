"""benchmarks/bench_real_size.py without a GPU: it builds every paper config on the meta device
(--dry-run) and, with no CUDA device, says so in one line and exits 0."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_real_size.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_real_size", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_dry_run_builds_every_paper_config_on_meta(capsys: pytest.CaptureFixture[str]) -> None:
    bench = _bench()
    assert bench.main(["--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == [c.preset for c in bench.CASES]
    assert "151,277,313 parameters" in lines[0] and "4,300,079,472 parameters" in lines[3]


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present: the benchmark would run")
def test_without_cuda_it_says_so_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    bench = _bench()
    assert bench.main(["--models", "clip-vit-b32"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "no CUDA device" in out
    assert bench.main(["--models", "clip,gemma-3-4b"]) == 2
    assert "valid: clip-vit-b32" in capsys.readouterr().err
