"""Small word-level vocabularies for the zoo: ShapesWorld's words, the 28 answers, prompts and roles.

Tokenisation is lowercase + whitespace + punctuation split, so every ShapesWorld word is one token and
decoded text differs from the source only in spacing around punctuation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from argus_eval.data.clevr.vocab import ANSWER_VOCAB, NUMBER_WORDS
from argus_eval.zoo.training.data import DOMAIN_NAMES, load_split

_WORD = re.compile(r"\w+|[^\w\s]")
VOCAB_IMAGES = 60  # images per domain whose texts define the vocabulary


def words_of(texts: Iterable[str]) -> set[str]:
    """Lowercased word and punctuation tokens of texts."""
    out: set[str] = set()
    for t in texts:
        out.update(_WORD.findall(t.lower()))
    return out


def shapesworld_words(extra: Sequence[str] = ()) -> list[str]:
    """Sorted vocabulary: words of captions and questions of all domains, answers, number words, extra."""
    texts: list[str] = [*ANSWER_VOCAB, *NUMBER_WORDS, *extra]
    for domain in DOMAIN_NAMES:
        split = load_split(domain, "train", VOCAB_IMAGES)
        texts.extend(c for caps in split.captions for c in caps)
        texts.extend(q["question"] for q in split.questions)
    return sorted(words_of(texts))


def word_level(specials: Sequence[str], words: Sequence[str], template: str | None = None) -> Any:
    """A `tokenizers` WordLevel tokenizer: specials first (ids 0..), then words; optional post-template."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers
    from tokenizers.models import WordLevel
    from tokenizers.processors import TemplateProcessing

    vocab: dict[str, int] = {}
    for t in [*specials, *words]:
        vocab.setdefault(t, len(vocab))
    unk = next(s for s in specials if "unk" in s.lower())
    tok = Tokenizer(WordLevel(vocab=vocab, unk_token=unk))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()]
    )
    # Specials must match before pre-tokenisation splits them at their punctuation (else they never match as
    # one token).
    tok.add_special_tokens(list(specials))
    if template is not None:
        used = [s for s in specials if s in template.split()]
        tok.post_processor = TemplateProcessing(single=template, special_tokens=[(s, vocab[s]) for s in used])
    return tok
