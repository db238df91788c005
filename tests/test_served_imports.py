"""A run of served models only never imports torch (nor scipy, where no image corruption asks for it:
imagecorruptions itself loads scipy through numba): start-up is the CLI's, not 5-20 s of libraries the
client does not use. Checked in a fresh interpreter, since this test process has loaded both."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from scipy.stats import rankdata

from argus_eval.scoring.ranking import rank_models

TESTS = Path(__file__).resolve().parent

SCRIPT = """
import json, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from api_server import ServerState, serve
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
out = Path({out!r})
with serve(ServerState(usage=True)) as url:
    cfg = {{
        "name": "a", "seed": 0, "cache_dir": str(out / "cache"),
        "models": [{{"name": "s1", "spec": f"api:{{url}}#one"}},
                   {{"name": "s2", "spec": f"api:{{url}}#two"}}],
        "datasets": [{{"name": "studio", "format": "shapesworld", "domain": "studio", "split": "test",
                      "n_images": 8, "train_images": 4, "questions_per_image": 2}}],
        "tasks": ["reasoning"], "perturbations": [{{"text": "typos", "severity": 2}}],
        "scoring": {{"resamples": 20}}, "efficiency": {{"enabled": False}},
    }}
    outcome = run(parse_config(cfg, "t"), out / "run", quiet=True)
print(json.dumps({{"loaded": [m for m in ("torch", "scipy", "transformers") if m in sys.modules],
                  "records": outcome.stats.records_written}}))
"""


def test_a_served_only_run_imports_neither_torch_nor_scipy(tmp_path: Path) -> None:
    code = SCRIPT.format(tests=str(TESTS), out=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["records"] == 2 * 2 * 16  # two models, clean and typos, 16 questions
    assert got["loaded"] == []


def test_competition_ranks_equal_scipys_min_ranks() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 9))
        vals = rng.integers(0, 4, n).astype(float) / 4  # many ties
        values: dict[str, float | None] = {f"m{i}": float(v) for i, v in enumerate(vals)}
        values["none"] = None
        values["nan"] = float("nan")
        ranks = rank_models(values)
        named = sorted(m for m in values if m.startswith("m"))
        expected = rankdata([-values[m] for m in named], method="min")  # type: ignore[operator]
        assert [ranks[m] for m in named] == [int(r) for r in expected]
        assert ranks["none"] is None and ranks["nan"] is None
