#!/usr/bin/env bash
# Install ARGUS-EVAL and everything it needs, idempotently.
# torch: a plain `torch` requirement pulls a multi-GB CUDA build on a CPU machine, so the CPU wheel is
# installed first when no torch is importable; a machine that already has (CUDA) torch keeps it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if ! "$PY" -c "import torch" >/dev/null 2>&1; then
  "$PY" -m pip install --quiet "torch==2.13.0"
fi
"$PY" -m pip install --quiet -e ".[all]"
if ! command -v java >/dev/null 2>&1; then
  echo "note: java not found; METEOR is skipped until a Java runtime is installed (apt-get install default-jre-headless)" >&2
fi
