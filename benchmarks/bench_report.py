"""The report build of a finished run: its first build (no thumbnail cache yet) and a warm one.

    python benchmarks/bench_report.py RUN_DIR [--repeat 3]

RUN_DIR is an `argus run --out` folder; it is never written: each repeat copies it into a temporary
folder without thumbnails.cache.json, then times write_reports there twice (first build, then warm
cache), wall and CPU seconds, and says whether both report.html files equal RUN_DIR's own (they do
when RUN_DIR's report was built by the same code from the same files). The first repeat is the one a
new process pays (it imports the corruption library); later repeats run with it loaded. A few seconds
on a default run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from argus_eval.report.build import write_reports
from argus_eval.report.thumbs import THUMBS_FILE


def _timed(run_dir: Path) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    write_reports(run_dir)
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    """Time the first and the warm report build of RUN_DIR, `--repeat` times."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    page = (args.run_dir / "report.html").read_bytes()
    for i in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "run"
            shutil.copytree(args.run_dir, copy, ignore=shutil.ignore_patterns(THUMBS_FILE, "store.sqlite*"))
            for kind in ("first", "warm"):
                wall, cpu = _timed(copy)
                same = (copy / "report.html").read_bytes() == page
                print(
                    f"{i + 1} {kind}: {wall:.3f} s wall, {cpu:.3f} s CPU, report.html "
                    f"{'equal' if same else 'DIFFERS'}, load {os.getloadavg()[0]:.2f}"
                )


if __name__ == "__main__":
    main()
