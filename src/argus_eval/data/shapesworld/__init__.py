"""ShapesWorld: a seeded, procedural CLEVR-style benchmark with several rendering domains.

Public API: generate_split (write a split in the official CLEVR + COCO layouts), generate (in memory),
DOMAINS, ANSWER_VOCAB, execute/run_to_answer (the CLEVR program executor).
"""

from __future__ import annotations

from argus_eval.data.clevr.program import execute, family_of, question_type, run_to_answer
from argus_eval.data.clevr.vocab import ANSWER_VOCAB
from argus_eval.data.shapesworld.domains import DOMAINS, Domain
from argus_eval.data.shapesworld.generate import GeneratedSplit, derived_seed, generate
from argus_eval.data.shapesworld.writer import generate_split

__all__ = [
    "ANSWER_VOCAB",
    "DOMAINS",
    "Domain",
    "GeneratedSplit",
    "derived_seed",
    "execute",
    "family_of",
    "generate",
    "generate_split",
    "question_type",
    "run_to_answer",
]
