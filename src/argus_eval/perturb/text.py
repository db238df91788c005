"""Text perturbations of queries and questions: character, word and surface noise at severities 1..5.

Severity sets the share of words affected, WORD_FRACTIONS[severity - 1] (at least one word), so severity 5
changes more than severity 1. Every call uses its own random.Random(seed), never the global state.
Written here rather than taken from nlpaug or textattack, which need downloads (word lists, models) or
fail to install.
"""

from __future__ import annotations

import gzip
import json
import math
import random
import re
from collections.abc import Callable
from functools import cache
from importlib import resources
from numbers import Integral
from typing import ClassVar

from argus_eval.errors import PerturbationError, UnknownNameError
from argus_eval.perturb.identity import code_fingerprint
from argus_eval.perturb.kinds import SEVERITIES, Condition, ConditionKind
from argus_eval.registry import CALLABLE, Registry

TextFn = Callable[[str, int, random.Random], str]  # (text, severity, rng) -> perturbed text

WORD_FRACTIONS: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5)
_WORD_RE = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")  # letters, with an inner apostrophe ("don't")

TEXT_PERTURBATIONS: Registry[TextFn] = Registry("text perturbation", base=CALLABLE)

NAMES: tuple[str, ...] = (
    "typos", "char_swap", "char_insert", "char_delete", "ocr",
    "word_drop", "word_swap", "word_repeat", "synonyms", "case_noise", "punctuation",
)  # fmt: skip


def _qwerty_neighbours() -> dict[str, str]:
    # Staggered rows: a key touches its row neighbours, keys i and i+1 of the row above, i-1 and i below.
    rows = ["qwertyuiop", "asdfghjkl", "zxcvbnm"]
    out: dict[str, str] = {}
    for r, row in enumerate(rows):
        for i, key in enumerate(row):
            near = [row[j] for j in (i - 1, i + 1) if 0 <= j < len(row)]
            if r > 0:
                near += [rows[r - 1][j] for j in (i, i + 1) if j < len(rows[r - 1])]
            if r < len(rows) - 1:
                near += [rows[r + 1][j] for j in (i - 1, i) if 0 <= j < len(rows[r + 1])]
            out[key] = "".join(sorted(set(near)))
    return out


QWERTY_NEIGHBOURS = _qwerty_neighbours()

# Common OCR misreadings, both directions where the reverse also happens.
OCR_CONFUSIONS: tuple[tuple[str, str], ...] = (
    ("rn", "m"), ("m", "rn"), ("cl", "d"), ("d", "cl"), ("vv", "w"), ("w", "vv"),
    ("l", "1"), ("l", "I"), ("I", "l"), ("i", "l"), ("O", "0"), ("o", "0"), ("S", "5"), ("s", "5"),
    ("B", "8"), ("Z", "2"), ("g", "9"), ("q", "9"), ("e", "c"), ("c", "e"), ("h", "b"), ("u", "v"),
)  # fmt: skip
PUNCTUATION_MARKS = ".,;:!?"


def _count(n: int, severity: int) -> int:
    """How many of n units to change at severity: ceil(fraction * n), at least 1 when n > 0."""
    return min(n, max(1, math.ceil(WORD_FRACTIONS[severity - 1] * n))) if n else 0


def _split(text: str) -> tuple[list[str], list[str]]:
    """Words and the gaps around them: text == gaps[0] + words[0] + gaps[1] + ... + words[-1] + gaps[-1]."""
    words, gaps, last = [], [], 0
    for m in _WORD_RE.finditer(text):
        gaps.append(text[last : m.start()])
        words.append(m.group())
        last = m.end()
    gaps.append(text[last:])
    return words, gaps


def _join(words: list[str], gaps: list[str]) -> str:
    return gaps[0] + "".join(w + g for w, g in zip(words, gaps[1:], strict=True))


def _char_level(build: Callable[[random.Random, str], str | None]) -> TextFn:
    """A perturbation that rewrites each chosen word with build (None: build cannot change this word)."""

    def run(text: str, severity: int, rng: random.Random) -> str:
        words, gaps = _split(text)
        # build is pure given its rng, so a throwaway rng tells which words it can change.
        eligible = [i for i, w in enumerate(words) if build(random.Random(0), w) is not None]
        for i in sorted(rng.sample(eligible, min(len(eligible), _count(len(words), severity)))):
            words[i] = build(rng, words[i]) or words[i]
        return _join(words, gaps)

    return run


def _typo(rng: random.Random, word: str) -> str | None:
    positions = [i for i, ch in enumerate(word) if ch.lower() in QWERTY_NEIGHBOURS]
    if not positions:
        return None
    i = rng.choice(positions)
    new = rng.choice(QWERTY_NEIGHBOURS[word[i].lower()])
    return word[:i] + (new.upper() if word[i].isupper() else new) + word[i + 1 :]


def _swap(rng: random.Random, word: str) -> str | None:
    pairs = [i for i in range(len(word) - 1) if word[i] != word[i + 1]]
    if not pairs:
        return None
    i = rng.choice(pairs)
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def _insert(rng: random.Random, word: str) -> str | None:
    i = rng.randrange(len(word) + 1)
    return word[:i] + rng.choice("abcdefghijklmnopqrstuvwxyz") + word[i:]


def _delete(rng: random.Random, word: str) -> str | None:
    if len(word) < 2:
        return None  # deleting the only letter would drop the word (that is word_drop's job)
    i = rng.randrange(len(word))
    return word[:i] + word[i + 1 :]


def _ocr(rng: random.Random, word: str) -> str | None:
    hits = [(i, src, dst) for src, dst in OCR_CONFUSIONS for i in range(len(word)) if word.startswith(src, i)]
    if not hits:
        return None
    i, src, dst = rng.choice(hits)
    return word[:i] + dst + word[i + len(src) :]


def _case(rng: random.Random, word: str) -> str | None:
    letters = [i for i, ch in enumerate(word) if ch.swapcase() != ch]
    if not letters:
        return None
    flip = {i for i in letters if rng.random() < 0.5} or {rng.choice(letters)}
    return "".join(ch.swapcase() if i in flip else ch for i, ch in enumerate(word))


@cache
def synonym_table() -> dict[str, list[str]]:
    """The shipped one-word synonym table (WordNet 3.0, see scripts/build_synonyms.py)."""
    path = resources.files("argus_eval.perturb").joinpath("assets/synonyms.json.gz")
    table: dict[str, list[str]] = json.loads(gzip.decompress(path.read_bytes()))
    return table


def synonyms_of(word: str) -> list[str]:
    """Synonyms of word (case-insensitive; a plain plural "-s" is handled), in the word's casing."""
    low = word.lower()
    table = synonym_table()
    found = table.get(low)
    if found is None and low.endswith("s") and low[:-1] in table:
        found = [s + "s" for s in table[low[:-1]]]
    return [_match_case(word, s) for s in found or []]


def _match_case(model: str, word: str) -> str:
    if len(model) > 1 and model.isupper():
        return word.upper()
    return word[:1].upper() + word[1:] if model[:1].isupper() else word


def _synonym(rng: random.Random, word: str) -> str | None:
    options = synonyms_of(word)
    return rng.choice(options) if options else None


def _word_drop(text: str, severity: int, rng: random.Random) -> str:
    words, gaps = _split(text)
    drop = set(rng.sample(range(len(words)), max(0, min(len(words) - 1, _count(len(words), severity)))))
    kept_words, kept_gaps = [], [gaps[0]]
    for i, word in enumerate(words):
        if i in drop:
            after = gaps[i + 1]
            # One separator survives; punctuation after the dropped word stays ("the cube?" -> "the?").
            kept_gaps[-1] = kept_gaps[-1] if after and after.isspace() else kept_gaps[-1].rstrip() + after
        else:
            kept_words.append(word)
            kept_gaps.append(gaps[i + 1])
    return _join(kept_words, kept_gaps)


def _word_swap(text: str, severity: int, rng: random.Random) -> str:
    words, gaps = _split(text)
    for i in sorted(rng.sample(range(len(words) - 1), _count(len(words) - 1, severity)) if words else []):
        words[i], words[i + 1] = words[i + 1], words[i]
    return _join(words, gaps)


def _word_repeat(text: str, severity: int, rng: random.Random) -> str:
    words, gaps = _split(text)
    for i in rng.sample(range(len(words)), _count(len(words), severity)):
        words[i] = f"{words[i]} {words[i]}"
    return _join(words, gaps)


def _punctuation(text: str, severity: int, rng: random.Random) -> str:
    words, gaps = _split(text)
    # AEDA-style: a mark inserted as its own token before a word.
    for i in sorted(rng.sample(range(len(words)), _count(len(words), severity))):
        words[i] = f"{rng.choice(PUNCTUATION_MARKS)} {words[i]}"
    return _join(words, gaps)


_FUNCTIONS: dict[str, TextFn] = {
    "typos": _char_level(_typo),
    "char_swap": _char_level(_swap),
    "char_insert": _char_level(_insert),
    "char_delete": _char_level(_delete),
    "ocr": _char_level(_ocr),
    "word_drop": _word_drop,
    "word_swap": _word_swap,
    "word_repeat": _word_repeat,
    "synonyms": _char_level(_synonym),
    "case_noise": _char_level(_case),
    "punctuation": _punctuation,
}
for _name in NAMES:
    TEXT_PERTURBATIONS.register(_name, _FUNCTIONS[_name])


def names() -> list[str]:
    """Registered text perturbation names: the built-in ones in NAMES order, then any others sorted."""
    return list(NAMES) + [n for n in TEXT_PERTURBATIONS.names() if n not in NAMES]


def identity(name: str) -> str | None:
    """None for a built-in text perturbation (its id says it all); for one a user registered, a
    fingerprint of its code (perturb/identity.py), so a rerun recomputes what changed code made."""
    fn = _get(name)
    if _FUNCTIONS.get(name) is fn:
        return None
    return "text:" + code_fingerprint(fn)


def _get(name: str) -> TextFn:
    try:
        return TEXT_PERTURBATIONS.get(name)
    except UnknownNameError:
        raise PerturbationError(f"unknown text perturbation {name!r}; valid: {', '.join(names())}") from None


def perturb(text: str, name: str, severity: int, seed: int) -> str:
    """Apply text perturbation name at severity 1..5 with seed; same inputs give the same output."""
    fn = _get(name)
    if isinstance(severity, bool) or not isinstance(severity, Integral) or not 1 <= severity <= 5:
        raise PerturbationError(
            f"text perturbation {name!r}: severity {severity!r} is outside 1..5; valid: {', '.join(names())}"
        )
    if isinstance(seed, bool) or not isinstance(seed, Integral):
        raise PerturbationError(f"text perturbation {name!r}: seed {seed!r} must be an integer")
    if not isinstance(text, str):
        raise PerturbationError(f"text perturbation {name!r}: expected a string, got {type(text).__name__}")
    return fn(text, int(severity), random.Random(int(seed)))


class TextKind(ConditionKind):
    """Text conditions ("text:typos@2"): a registered perturbation of every query and question."""

    kind = "text"
    role = "perturbation"
    severities = SEVERITIES
    changes: ClassVar[frozenset[str]] = frozenset({"text"})

    def names(self) -> list[str]:
        return names()

    def apply_text(self, condition: Condition, text: str, seed: int) -> str:
        return perturb(text, condition.name, condition.severity, seed)

    def identity(self, condition: Condition) -> str | None:
        return identity(condition.name)
