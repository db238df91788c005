"""COCO caption tokenisation: the Stanford PTB tokenizer jar, then pycocoevalcap's punctuation filter.

We run the very jar pycocoevalcap runs (stanford-corenlp-3.4.1, -preserveLines -lowerCase), once per
corpus, from a private temp dir, so tokens match COCOEvalCap exactly. Quirks kept on purpose: after
lower-casing, bracket tokens read '-lrb-' and are not in the (upper-case) punctuation list, so they stay.

With -preserveLines the jar tokenises each line on its own (tests/test_metrics_ptb.py checks a corpus
against one call per sentence), so a sentence's tokens are kept for the process: a run's caption cells
share their references, and scoring sends every cell's sentences in one call first
(CaptioningTask.before_finalize), so the JVM starts once a run, not once a cell (0.15 s each).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from argus_eval.errors import MetricError
from argus_eval.metrics._java import java_executable, pycocoevalcap_file

# pycocoevalcap.tokenizer.ptbtokenizer.PUNCTUATIONS
PUNCTUATIONS = frozenset(
    ["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":", "-", "--", "...", ";"]
)
# pycocoevalcap replaces only '\n'; Java's -preserveLines also breaks at these, which would misalign lines.
_LINE_BREAKS = re.compile("[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


# sentence (line breaks replaced) -> its tokens; cleared when it grows past the limit
_KNOWN: dict[str, str] = {}
_KNOWN_LIMIT = 2_000_000


def ptb_tokenize(sentences: Sequence[str]) -> list[str]:
    """Tokenise sentences as pycocoevalcap's PTBTokenizer does; returns space-joined tokens per sentence.

    Only sentences this process has not tokenised before go to the jar, each once, in one call."""
    lines = [_LINE_BREAKS.sub(" ", s) for s in sentences]
    missing = list(dict.fromkeys(line for line in lines if line not in _KNOWN))
    if missing:
        if len(_KNOWN) + len(missing) > _KNOWN_LIMIT:
            _KNOWN.clear()
        _KNOWN.update(zip(missing, _run_jar(missing), strict=True))
    return [_KNOWN[line] for line in lines]


def forget_tokens() -> None:
    """Drop the sentences tokenised so far (a benchmark timing the jar call clears them first)."""
    _KNOWN.clear()


def _run_jar(lines: Sequence[str]) -> list[str]:
    """One jar call over lines (no line breaks inside any): the tokens of each, in order."""
    jar = pycocoevalcap_file("tokenizer/stanford-corenlp-3.4.1.jar")
    text = "\n".join(lines)
    with tempfile.TemporaryDirectory(prefix="argus-ptb-") as tmp:
        src = Path(tmp) / "captions.txt"
        src.write_bytes(text.encode())
        # C1 only: this JVM lives a second or two, and C2's compiler threads, busy that long, slowed it
        # 2.5x on a shared 2-core machine (same tokens: JIT tiers never change a result)
        cmd = [java_executable(), "-XX:TieredStopAtLevel=1", "-cp", str(jar)]
        cmd += ["edu.stanford.nlp.process.PTBTokenizer"]
        cmd += ["-preserveLines", "-lowerCase", str(src)]
        proc = subprocess.run(cmd, capture_output=True, check=False)
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no stderr"]
        raise MetricError(
            f"PTB tokenizer jar failed (exit {proc.returncode}): {err[0]}; check the Java install"
        )
    out = proc.stdout.decode().split("\n")
    # The jar ends every line with '\n'; trailing empty captions may leave fewer lines: they are empty.
    if len(out) < len(lines):
        out += [""] * (len(lines) - len(out))
    return [
        " ".join(w for w in line.rstrip().split(" ") if w not in PUNCTUATIONS) for line in out[: len(lines)]
    ]
