"""The zoo's training code stays off the runtime path: loading a zoo checkpoint, the runner, `argus zoo
list` / `argus models` and the configuration of `argus zoo eval` never import argus_eval.zoo.training,
nor the tiny test builders (argus_eval.testing)."""

from __future__ import annotations

import os
import subprocess
import sys

# A fresh interpreter: this test process may already hold the training modules from other tests.
_SCRIPT = """
import sys
from typer.testing import CliRunner

import argus_eval.cli
import argus_eval.runner.pipeline
import argus_eval.zoo.catalog
import argus_eval.zoo.recipes
from argus_eval.cli import app
from argus_eval.models.loading import load_model
from argus_eval.models.spec import ModelConfig

from argus_eval.runner.config import parse_config
from argus_eval.zoo.catalog import read_manifest
from argus_eval.zoo.measure import eval_config

for args in (["zoo", "list"], ["zoo", "list", "--json"], ["models"]):
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, (args, res.output)
res = CliRunner().invoke(app, ["zoo", "eval", "no-such-model"])
assert "is not shipped" in str(res.exception), res.output
parse_config(eval_config("lxmert", read_manifest()["models"]["lxmert"]), "zoo eval")
model = load_model(ModelConfig(name="lxmert", spec="zoo:lxmert", device="cpu"))
model.close()
assert "argus_eval.zoo" in sys.modules and "argus_eval.models.hf_lxmert" in sys.modules
print(sorted(m for m in sys.modules if m.startswith(("argus_eval.zoo.training", "argus_eval.testing"))))
"""


def test_runtime_path_does_not_import_zoo_training() -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_naming_a_recipe_does_not_import_it() -> None:
    code = (
        "import sys\nfrom argus_eval.zoo.recipes import ORDER, RECIPES\n"
        "assert set(ORDER) <= set(RECIPES.names())\n"
        "print(any(m.startswith('argus_eval.zoo.training') for m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"
