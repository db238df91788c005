"""The PTB tokenizer as scoring uses it: one jar call over many sentences tokenises each line as a call
of its own would (what lets scoring batch every caption cell into one call), and a sentence tokenised
once is not sent to the jar again."""

from __future__ import annotations

import shutil
from collections.abc import Sequence

import pytest

from argus_eval.metrics import _ptb

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="java not on PATH (PTB jar)")

# quotes, brackets, contractions, abbreviations, ellipses, unicode, empty and punctuation-only lines:
# anything whose tokens could depend on the lines around it
SENTENCES = [
    '"A man," she said, "rides a horse."',
    'an unmatched " quote at the end "',
    "It's the dog's toy (a ball) -- isn't it?",
    "Mr. Smith went to Washington, D.C. ... and then?",
    "",
    "a cafe\u0301 with na\u00efve d\u00e9cor & 3.5 tables",
    "!!! ...",
    "``quoted'' and 'single' quotes",
    "A red cube left of 2 blue spheres.",
    "e-mail me at a@b.com or http://x.org/y",
]


def test_one_call_over_many_lines_equals_one_call_per_line() -> None:
    batched = _ptb._run_jar(SENTENCES)
    alone = [_ptb._run_jar([s])[0] for s in SENTENCES]
    assert batched == alone
    assert batched[0] == "a man she said rides a horse"  # pycocoevalcap's filter drops the punctuation


def test_known_sentences_are_not_sent_again(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[list[str]] = []
    real = _ptb._run_jar

    def counted(lines: Sequence[str]) -> list[str]:
        sent.append(list(lines))
        return real(lines)

    monkeypatch.setattr(_ptb, "_run_jar", counted)
    _ptb.forget_tokens()
    first = _ptb.ptb_tokenize(["A dog.", "A cat.", "A dog."])
    again = _ptb.ptb_tokenize(["A cat.", "A bird\nflies."])
    assert first == ["a dog", "a cat", "a dog"]
    assert again == ["a cat", "a bird flies"]
    # each distinct sentence went to the jar once; a line break inside one is a space, as before
    assert sent == [["A dog.", "A cat."], ["A bird flies."]]
