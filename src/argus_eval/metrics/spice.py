"""SPICE (opt-in): the spice-1.0 jar shipped in pycocoevalcap, with a user-supplied Stanford CoreNLP 3.6.0
directory (we never download it). Files go to a private temp dir, not the package folder.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from argus_eval.errors import MetricError
from argus_eval.metrics._java import java_executable, pycocoevalcap_file


def spice_scores(
    candidates: Sequence[str], references: Sequence[Sequence[str]], corenlp_dir: str | Path
) -> tuple[float, NDArray[np.float64]]:
    """Corpus SPICE (mean of per-image 'All' F-scores, as pycocoevalcap) and per-image scores."""
    corenlp = Path(corenlp_dir)
    jars = sorted(corenlp.glob("stanford-corenlp-*.jar"))
    if not corenlp.is_dir() or not jars:
        raise MetricError(
            f"SPICE needs Stanford CoreNLP 3.6.0 jars (code and -models) in {corenlp}; "
            "download them yourself and pass that directory as spice_corenlp_dir"
        )
    spice_jar = pycocoevalcap_file("spice/spice-1.0.jar")
    classpath = os.pathsep.join([str(spice_jar), str(spice_jar.parent / "lib" / "*"), *map(str, jars)])
    data = [
        {"image_id": i, "test": c, "refs": list(r)}
        for i, (c, r) in enumerate(zip(candidates, references, strict=True))
    ]
    with tempfile.TemporaryDirectory(prefix="argus-spice-") as tmp:
        src, out, cache = Path(tmp) / "in.json", Path(tmp) / "out.json", Path(tmp) / "cache"
        src.write_text(json.dumps(data))
        cmd = [java_executable(), "-Xmx8G", "-cp", classpath, "edu.anu.spice.SpiceScorer", str(src)]
        cmd += ["-cache", str(cache), "-out", str(out), "-subset", "-silent"]
        proc = subprocess.run(cmd, capture_output=True, check=False, cwd=tmp)
        if proc.returncode != 0 or not out.is_file():
            tail = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no stderr"]
            raise MetricError(
                f"SPICE jar failed (exit {proc.returncode}): {tail[0]}; SPICE is known to break on "
                "Java > 8, try a Java 8 runtime"
            )
        results = json.loads(out.read_text())
    by_id = {item["image_id"]: item["scores"]["All"]["f"] for item in results}
    per = np.array([_to_float(by_id[i]) for i in range(len(candidates))], dtype=np.float64)
    return float(np.mean(per)), per


def _to_float(v: object) -> float:
    # SPICE writes "NaN" for images without tuples, as pycocoevalcap's float_convert expects
    try:
        return float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan
