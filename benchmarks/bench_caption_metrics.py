"""Caption metrics: argus_eval vs pycocoevalcap 1.2 on synthetic corpora (n images x 5 references).

Prints, per size, the time of each implementation measured in the same run and the speed-up ratio for
CIDEr-D and BLEU (from the same PTB-tokenised strings on both sides, so both times include splitting
them into words and counting n-grams) and for the whole
score_captions vs the COCOEvalCap steps (PTB tokenisation, BLEU, METEOR, ROUGE_L, CIDEr), plus the
largest absolute difference between the two results. The whole score_captions is timed three ways:
cold (the METEOR JVM started inside the call), warm (started before it, as a run does while its models
run) and served (a warm `argus meteor-server`); the machine is shared, so compare ratios within a run.
Usage: python benchmarks/bench_caption_metrics.py [--sizes 5000 40000] [--skip-whole] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from argus_eval.metrics._ngrams import ngram_counts_text
from argus_eval.metrics._ptb import forget_tokens, ptb_tokenize
from argus_eval.metrics.bleu import bleu_from_stats, bleu_stats
from argus_eval.metrics.caption import score_captions
from argus_eval.metrics.cider import cider_d
from argus_eval.metrics.meteor import close_shared_meteor, shared_meteor, warm_jit
from argus_eval.metrics.meteor_remote import RemoteMeteor, named_server
from argus_eval.metrics.meteor_server import SERVER_ENV

T = TypeVar("T")


def _timed(fn: Callable[[], T]) -> tuple[T, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def _corpus(n: int, seed: int = 0) -> tuple[dict[Hashable, str], dict[Hashable, list[str]]]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(3000)] + ["a", "the", "man", "dog", "on", "of", "with", "is"]
    weights = [1.0 / (i + 1) for i in range(len(vocab))]

    def sent() -> str:
        words = rng.choices(vocab, weights, k=rng.randint(8, 15))
        return " ".join(words).capitalize() + rng.choice([".", "", " ."])

    refs: dict[Hashable, list[str]] = {i: [sent() for _ in range(5)] for i in range(n)}
    cands: dict[Hashable, str] = {i: sent() for i in refs}
    return cands, refs


def _best(fn: Callable[[], T], repeat: int) -> tuple[T, float]:
    """fn's result and its fastest time over repeat runs (the machine is shared, timings are noisy)."""
    out, best = _timed(fn)
    for _ in range(repeat - 1):
        best = min(best, _timed(fn)[1])
    return out, best


def _ours_cider_bleu(
    cands: list[str], refs: list[list[str]], repeat: int
) -> tuple[Any, tuple[Any, Any], float, float, float]:
    """CIDEr-D per image, BLEU (corpus, per-sample), their times each from the tokenised strings, and the
    time of both together from one split of the strings (as score_captions computes them)."""
    n = len(cands)
    ref_image = np.repeat(np.arange(n), [len(r) for r in refs])
    texts = [*cands, *(r for rs in refs for r in rs)]

    def cider() -> Any:
        return cider_d(ngram_counts_text(texts, 4), n, ref_image)

    def bleu() -> tuple[Any, Any]:
        counts = ngram_counts_text(texts, 4)
        stats = bleu_stats(counts, n, ref_image, counts.lengths[:n], counts.lengths[n:])
        return bleu_from_stats(stats.sum(axis=0), 4)[0], bleu_from_stats(stats, 4)

    def both() -> None:
        counts = ngram_counts_text(texts, 4)
        cider_d(counts, n, ref_image)
        stats = bleu_stats(counts, n, ref_image, counts.lengths[:n], counts.lengths[n:])
        bleu_from_stats(stats.sum(axis=0), 4), bleu_from_stats(stats, 4)

    c, tc = _best(cider, repeat)
    b, tb = _best(bleu, repeat)
    _, t_both = _best(both, repeat)
    return c, b, tc, tb, t_both


def _coco_tokenizer(folder: Path) -> Any:
    # pycocoevalcap's tokenizer writes temp files beside its jar: point it at a temp copy instead
    from pycocoevalcap.tokenizer import ptbtokenizer

    # the module's origin, not __file__: an earlier call (an earlier --sizes value) re-pointed __file__
    # at its own temp folder, since deleted
    origin = ptbtokenizer.__spec__.origin if ptbtokenizer.__spec__ else None
    jar = Path(origin or ptbtokenizer.__file__).parent / ptbtokenizer.STANFORD_CORENLP_3_4_1_JAR
    os.symlink(jar, folder / jar.name)
    ptbtokenizer.__file__ = str(folder / "ptbtokenizer.py")
    return ptbtokenizer.PTBTokenizer()


def run(n: int, whole: bool, repeat: int) -> None:
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider

    cands, refs = _corpus(n)
    toks = ptb_tokenize([*(r for k in refs for r in refs[k]), *cands.values()])
    tok_refs = [toks[5 * i : 5 * i + 5] for i in range(n)]
    tok_cands = toks[5 * n :]
    gts = {i: tok_refs[i] for i in range(n)}
    res = {i: [tok_cands[i]] for i in range(n)}

    (_, ref_cs), t_ref_c = _best(lambda: Cider().compute_score(gts, res), repeat)
    (ref_b, ref_bs), t_ref_b = _best(lambda: Bleu(4).compute_score(gts, res, verbose=0), repeat)
    ours_c, (ours_b, ours_bs), t_c, t_b, t_both = _ours_cider_bleu(tok_cands, tok_refs, repeat)
    b_diff = max(np.abs(np.array(ref_b) - ours_b).max(), np.abs(np.array(ref_bs).T - ours_bs).max())
    print(f"== {n} images x 5 refs (best of {repeat})")
    print(
        f"CIDEr-D  pycocoevalcap {t_ref_c:7.3f} s  argus {t_c:6.3f} s  ratio {t_ref_c / t_c:5.1f}x  "
        f"max|diff| {np.abs(ours_c - ref_cs).max():.1e}"
    )
    print(
        f"BLEU-1..4 pycocoevalcap {t_ref_b:6.3f} s  argus {t_b:6.3f} s  ratio {t_ref_b / t_b:5.1f}x  "
        f"max|diff| {b_diff:.1e} (corpus and per-sample)"
    )
    t_ref = t_ref_c + t_ref_b
    print(
        f"CIDEr-D+BLEU pycocoevalcap {t_ref:4.3f} s  argus {t_both:6.3f} s  ratio {t_ref / t_both:5.1f}x  "
        "(argus: one split of the strings for both, as score_captions does)"
    )
    if whole:
        _whole(cands, refs)


def _coco_whole(
    cands: dict[Hashable, str], refs: dict[Hashable, list[str]]
) -> tuple[dict[str, float], list[float]]:
    """COCOEvalCap's steps: PTB tokenisation, BLEU, METEOR (a fresh JVM), ROUGE_L, CIDEr; and METEOR per
    image."""
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.meteor.meteor import Meteor
    from pycocoevalcap.rouge.rouge import Rouge

    with tempfile.TemporaryDirectory() as tmp:
        tok = _coco_tokenizer(Path(tmp))
        g = tok.tokenize({k: [{"caption": c} for c in v] for k, v in refs.items()})
        r = tok.tokenize({k: [{"caption": cands[k]}] for k in refs})
    out: dict[str, float] = {}
    b, _ = Bleu(4).compute_score(g, r, verbose=0)
    out.update({f"Bleu_{k + 1}": b[k] for k in range(4)})
    m = Meteor()
    out["METEOR"], per_meteor = m.compute_score(g, r)
    del m
    out["ROUGE_L"], _ = Rouge().compute_score(g, r)
    out["CIDEr"], _ = Cider().compute_score(g, r)
    return out, list(per_meteor)


@contextlib.contextmanager
def _meteor_server() -> Iterator[Path]:
    """A real `argus meteor-server` on a free loopback port, warmed by one segment (across runs it is)."""
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "meteor-server.json"
        cmd = [sys.executable, "-m", "argus_eval.cli", "meteor-server", "--state", str(state)]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 120
            while not state.is_file():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("argus meteor-server did not start")
                time.sleep(0.1)
            named = named_server(str(state))
            assert named is not None
            RemoteMeteor(named.address, named.token).score(["a dog"], [["a dog runs"]])
            yield state
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def _whole(cands: dict[Hashable, str], refs: dict[Hashable, list[str]]) -> None:
    """The whole score_captions against COCOEvalCap's steps, three ways: cold (this process starts the
    METEOR JVM inside the call, as a lone call does), warm (the JVM started earlier, as a run starts it
    while its models run) and served (a warm `argus meteor-server` in another process)."""
    (expect, expect_per), t_coco = _timed(lambda: _coco_whole(cands, refs))
    close_shared_meteor()
    os.environ[SERVER_ENV] = ""  # no server, whatever state file this machine has
    # every timed call tokenises afresh: the process keeps the tokens of sentences it has seen
    forget_tokens()
    cold, t_cold = _timed(lambda: score_captions(cands, refs, per_sample=True))
    warm_jit(shared_meteor(0)).join()  # started and warmed before the call, as a run's warm_up does
    forget_tokens()
    warm, t_warm = _timed(lambda: score_captions(cands, refs, per_sample=True))
    close_shared_meteor()
    with _meteor_server() as state:
        os.environ[SERVER_ENV] = str(state)
        # the local JVM that spot-checks the server's scores, started while the models run (warm_meteor)
        warm_jit(shared_meteor(0)).join()
        forget_tokens()
        served, t_served = _timed(lambda: score_captions(cands, refs, per_sample=True))
        os.environ[SERVER_ENV] = ""
    for name, got, t in (("cold", cold, t_cold), ("warm", warm, t_warm), ("served", served, t_served)):
        diff = max(abs(got[m] - expect[m]) for m in expect)
        per = np.array([got["per_sample"][k]["METEOR"] for k in refs])
        print(
            f"whole {name:6s} COCOEvalCap {t_coco:7.3f} s  argus {t:6.3f} s  ratio {t_coco / t:5.1f}x  "
            f"max|diff| {diff:.1e} corpus, {np.abs(per - np.array(expect_per)).max():.1e} METEOR per "
            f"image; {'equal to' if got == cold else 'DIFFERS from'} the cold call"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[5000, 40000])
    ap.add_argument("--skip-whole", action="store_true", help="only CIDEr-D and BLEU")
    ap.add_argument("--repeat", type=int, default=1, help="report the best of this many CIDEr-D/BLEU runs")
    args = ap.parse_args()
    for n in args.sizes:
        run(n, not args.skip_whole, max(1, args.repeat))


if __name__ == "__main__":
    main()
