"""Wording helpers shared by questions and captions: noun phrases with CLEVR synonyms, articles, relations."""

from __future__ import annotations

import random
from collections.abc import Mapping

from argus_eval.data.clevr.vocab import NUMBER_WORDS, PLURALS, SYNONYMS

ORDER = ("size", "color", "material", "shape")


def word(rng: random.Random, value: str) -> str:
    """A CLEVR synonym of value (the value itself when it has none)."""
    return rng.choice(SYNONYMS.get(value, (value,)))


def noun_phrase(rng: random.Random, desc: Mapping[str, str], plural: bool = False) -> str:
    """Adjectives in CLEVR's order (size, colour, material) then the shape noun or "thing"/"object"."""
    words = [word(rng, desc[a]) for a in ORDER[:3] if a in desc]
    noun = word(rng, desc.get("shape", "thing"))
    words.append(PLURALS[noun] if plural else noun)
    return " ".join(words)


def article(phrase: str) -> str:
    """Prefix a or an."""
    return ("an " if phrase[:1] in "aeiou" else "a ") + phrase


def relation(rng: random.Random, rel: str) -> str:
    """A CLEVR wording of a spatial relation ("left of", "to the left of", "in front of", ...)."""
    return word(rng, rel)


def number(n: int) -> str:
    """Number word for small counts."""
    return NUMBER_WORDS[n] if n < len(NUMBER_WORDS) else str(n)


def join_list(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def sentence(text: str) -> str:
    """Capitalise the first letter."""
    return text[:1].upper() + text[1:]
