#!/usr/bin/env bash
# Build, idempotently, a second Python environment where transformers sees torchvision: what a GPU
# machine has (a CUDA torch, which also runs on CPU, and its torchvision). With torchvision present,
# transformers picks other processor classes (torchvision image and video processors) than in the
# main environment (PIL ones), so the CI runs the processor tests in both. torchvision must never go
# into the main environment: beside a CPU torch its wheel fails to import and breaks transformers.
#
# Usage: scripts/torchvision_env.sh [VENV_DIR]   (default ${ARGUS_TV_ENV:-/tmp/argus-tvenv})
# Prints the venv's python on the last line. A venv that already holds the pinned torch and
# torchvision and this checkout's project is reused as is (a few seconds); a first build is minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${1:-${ARGUS_TV_ENV:-/tmp/argus-tvenv}}"
TORCH_VERSION="${ARGUS_TV_TORCH:-2.14.1}"
TORCHVISION_VERSION="${ARGUS_TV_TORCHVISION:-0.29.1}"
BASE_PY="${PYTHON:-python3}"
PY="$VENV/bin/python"
STAMP="$VENV/.argus-stamp"
# The extras the processor tests, the served test's stock Qwen2.5-VL server and a default run need (no
# ray: the tests in this env do not use it).
EXTRAS="hf,robustness,report,api,metrics,serve,dev"
# The stamp ties a built venv to its pins, its extras and this checkout's dependency list.
WANT="torch=$TORCH_VERSION torchvision=$TORCHVISION_VERSION [$EXTRAS] $(sha256sum pyproject.toml | cut -c1-16) $(pwd)"

if [[ -x "$PY" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]] \
  && "$PY" -c "import torchvision, transformers, argus_eval" >/dev/null 2>&1; then
  echo "$PY"
  exit 0
fi
[[ -x "$PY" ]] || "$BASE_PY" -m venv "$VENV"
export PIP_DISABLE_PIP_VERSION_CHECK=1
"$PY" -m pip install --quiet "torch==$TORCH_VERSION" "torchvision==$TORCHVISION_VERSION"
"$PY" -m pip install --quiet -e ".[$EXTRAS]"
"$PY" -c "import torch, torchvision, transformers; print('torchvision env:', torch.__version__, \
torchvision.__version__, 'transformers', transformers.__version__)" >&2
echo "$WANT" >"$STAMP"
echo "$PY"
