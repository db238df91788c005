"""Reference captions: each is a fact about the scene graph with an exact truth test, worded by one of
several paraphrase templates. Because facts can be tested on any scene, the generator knows exactly which
other images a caption is also true of (multi-positive retrieval truth).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from argus_eval.data.clevr.vocab import OPPOSITE, PLURALS, SHAPES
from argus_eval.data.shapesworld import text as T

Objects = Sequence[Mapping[str, Any]]
Rels = Mapping[str, list[list[int]]]


Desc = tuple[tuple[str, str], ...]
Key = tuple[Any, ...]


def _match(obj: Mapping[str, Any], desc: Desc) -> bool:
    return all(obj[a] == v for a, v in desc)


class Fact(Protocol):
    """Something a caption asserts: testable on any scene, and wordable."""

    def holds(self, objs: Objects, rels: Rels) -> bool: ...

    def render(self, rng: random.Random) -> str: ...

    def needs(self) -> frozenset[Key]:
        """Index keys (see scene_keys) that every scene the fact is true of has."""
        ...


@dataclass(frozen=True)
class ShapeInventory:
    """Exactly these numbers of each shape (shapes not listed: none)."""

    counts: tuple[tuple[str, int], ...]

    def holds(self, objs: Objects, rels: Rels) -> bool:
        want = dict(self.counts)
        return all(sum(1 for o in objs if o["shape"] == s) == want.get(s, 0) for s in SHAPES)

    def needs(self) -> frozenset[Key]:
        return frozenset(("count", "shape", s, n) for s, n in self.counts)

    def render(self, rng: random.Random) -> str:
        parts = []
        for shape, n in self.counts:
            noun = T.word(rng, shape)
            parts.append(
                T.article(noun) if n == 1 and rng.random() < 0.5 else f"{T.number(n)} {_plural(noun, n)}"
            )
        listing = T.join_list(parts)
        verb = "is" if self.counts[0][1] == 1 else "are"
        tpl = rng.choice(
            (
                "A scene with {l}.",
                "There {v} {l} on the floor.",
                "This picture shows {l}.",
                "In the image we can see {l}.",
                "A rendered scene containing {l}.",
            )
        )
        return T.sentence(tpl.format(l=listing, v=verb))


def _plural(noun: str, n: int) -> str:
    return noun if n == 1 else PLURALS[noun]


@dataclass(frozen=True)
class Exists:
    """Some object matches this description."""

    desc: tuple[tuple[str, str], ...]

    def holds(self, objs: Objects, rels: Rels) -> bool:
        return any(_match(o, self.desc) for o in objs)

    def needs(self) -> frozenset[Key]:
        return frozenset(("has", a, v) for a, v in self.desc)

    def render(self, rng: random.Random) -> str:
        np_ = T.article(T.noun_phrase(rng, dict(self.desc)))
        tpl = rng.choice(
            ("There is {n}.", "{n} is visible.", "The picture contains {n}.", "You can see {n} in the scene.")
        )
        return T.sentence(tpl.format(n=np_))


@dataclass(frozen=True)
class Related:
    """Some object matching a is <rel> of some other object matching b."""

    a: tuple[tuple[str, str], ...]
    rel: str
    b: tuple[tuple[str, str], ...]

    def holds(self, objs: Objects, rels: Rels) -> bool:
        return any(
            _match(objs[j], self.b) and any(_match(objs[i], self.a) for i in rels[self.rel][j])
            for j in range(len(objs))
        )

    def needs(self) -> frozenset[Key]:
        return frozenset(("has", a, v) for a, v in self.a + self.b)

    def render(self, rng: random.Random) -> str:
        a = T.article(T.noun_phrase(rng, dict(self.a)))
        b = T.article(T.noun_phrase(rng, dict(self.b)))
        if rng.random() < 0.4:  # the converse relation states the same fact
            tpl = rng.choice(("{b} is {r} {a}.", "{b} sits {r} {a}.", "There is {b} {r} {a}."))
            return T.sentence(tpl.format(a=a, b=b, r=T.relation(rng, OPPOSITE[self.rel])))
        tpl = rng.choice(
            ("{a} is {r} {b}.", "There is {a} {r} {b}.", "{a} can be seen {r} {b}.", "{a} stands {r} {b}.")
        )
        return T.sentence(tpl.format(a=a, b=b, r=T.relation(rng, self.rel)))


ADJECTIVE: dict[str, tuple[str, ...]] = {
    "metal": ("metal", "shiny", "metallic"),
    "rubber": ("rubber", "matte"),
    "large": ("large", "big"),
    "small": ("small", "tiny"),
}


@dataclass(frozen=True)
class OnlyOne:
    """Exactly one object matches desc, and its attr is value."""

    desc: tuple[tuple[str, str], ...]
    attr: str
    value: str

    def holds(self, objs: Objects, rels: Rels) -> bool:
        hits = [o for o in objs if _match(o, self.desc)]
        return len(hits) == 1 and hits[0][self.attr] == self.value

    def needs(self) -> frozenset[Key]:
        keys: set[Key] = {("has", a, v) for a, v in self.desc} | {("has", self.attr, self.value)}
        if len(self.desc) == 1:
            keys.add(("count", *self.desc[0], 1))
        return frozenset(keys)

    def render(self, rng: random.Random) -> str:
        noun = T.noun_phrase(rng, dict(self.desc))
        adj = rng.choice(ADJECTIVE.get(self.value, (self.value,)))
        tpl = rng.choice(
            (
                "The only {n} is {v}.",
                "There is exactly one {n}, and it is {v}.",
                "Only one {n} appears, and it is {v}.",
            )
        )
        return T.sentence(tpl.format(n=noun, v=adj))


@dataclass(frozen=True)
class CountIs:
    """Exactly n objects match desc."""

    desc: tuple[tuple[str, str], ...]
    n: int

    def holds(self, objs: Objects, rels: Rels) -> bool:
        return sum(1 for o in objs if _match(o, self.desc)) == self.n

    def needs(self) -> frozenset[Key]:
        if not self.desc:
            return frozenset({("total", self.n)})
        if len(self.desc) == 1:
            return frozenset({("count", *self.desc[0], self.n)})
        return frozenset(("has", a, v) for a, v in self.desc) if self.n > 0 else frozenset()

    def render(self, rng: random.Random) -> str:
        d = dict(self.desc)
        num = T.number(self.n)
        if not d:
            tpl = rng.choice(
                (
                    "{N} objects are in the scene.",
                    "The scene contains {n} objects.",
                    "There are {n} things in total.",
                )
            )
            return T.sentence(tpl.format(N=num, n=num))
        phrase = T.noun_phrase(rng, d, plural=self.n != 1)
        verb = "is" if self.n == 1 else "are"
        tpl = rng.choice(
            ("There {v} exactly {n} {p}.", "Exactly {n} {p} can be seen.", "The scene has exactly {n} {p}.")
        )
        return T.sentence(tpl.format(v=verb, n=num, p=phrase))


def _pick_desc(rng: random.Random, obj: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    attrs = rng.choices(
        (("color", "shape"), ("size", "color", "shape"), ("shape",), ("color", "material", "shape")),
        weights=(5, 2, 1, 2),
    )[0]
    return tuple((a, obj[a]) for a in attrs)


def facts_for_scene(rng: random.Random, objs: Objects, rels: Rels, n: int = 5) -> list[Fact]:
    """n distinct true facts: an inventory, relations, an existence or uniqueness fact, a count."""
    counts = tuple((s, c) for s in SHAPES if (c := sum(1 for o in objs if o["shape"] == s)))
    order = list(counts)
    rng.shuffle(order)
    facts: list[Fact] = [ShapeInventory(tuple(order))]
    candidates: list[Fact] = []
    idx = list(range(len(objs)))
    for _ in range(6):
        i, j = rng.sample(idx, 2)
        rel = rng.choice([r for r in rels if i in rels[r][j]])
        candidates.append(Related(_pick_desc(rng, objs[i]), rel, _pick_desc(rng, objs[j])))
    o = objs[rng.randrange(len(objs))]
    candidates.append(Exists(tuple((a, o[a]) for a in ("size", "color", "material", "shape"))))
    for shape, k in counts:
        if k == 1:
            only = next(x for x in objs if x["shape"] == shape)
            attr = rng.choice(("color", "material", "size"))
            candidates.append(OnlyOne((("shape", shape),), attr, only[attr]))
    attr = rng.choice(("color", "material", "size"))
    value = objs[rng.randrange(len(objs))][attr]
    candidates.append(CountIs(((attr, value),), sum(1 for x in objs if x[attr] == value)))
    candidates.append(CountIs((), len(objs)))
    # Keep two relations, then fill with the other kinds, never repeating a fact.
    relations = [c for c in candidates if isinstance(c, Related)]
    others = [c for c in candidates if not isinstance(c, Related)]
    rng.shuffle(others)
    for fact in relations[:2] + others + relations[2:]:
        if len(facts) >= n:
            break
        if fact not in facts:
            facts.append(fact)
    return facts


def scene_keys(objs: Objects) -> set[Key]:
    """Index keys of a scene: ("has", attr, value), ("count", attr, value, n) and ("total", n)."""
    keys: set[Key] = {("total", len(objs))}
    for a in ("shape", "color", "size", "material"):
        for v in {o[a] for o in objs}:
            keys.add(("has", a, v))
            keys.add(("count", a, v, sum(1 for o in objs if o[a] == v)))
    for s in SHAPES:  # an inventory also states which shapes are absent
        if not any(o["shape"] == s for o in objs):
            keys.add(("count", "shape", s, 0))
    return keys


class TruthIndex:
    """Finds the scenes a fact is true of: an inverted index of scene_keys narrows the candidates, then the
    fact's exact test decides (the index only prunes; it never decides truth)."""

    def __init__(self, scenes: Sequence[tuple[Objects, Rels]]) -> None:
        self.scenes = scenes
        self.index: dict[Key, set[int]] = {}
        # Generic facts ("there are three things") recur across thousands of scenes: test each once.
        self._memo: dict[Fact, list[int]] = {}
        for k, (objs, _) in enumerate(scenes):
            for key in scene_keys(objs):
                self.index.setdefault(key, set()).add(k)

    def true_of(self, fact: Fact, exclude: int = -1) -> list[int]:
        """Sorted indices of scenes (other than exclude) the fact holds in."""
        true = self._memo.get(fact)
        if true is None:
            cands: set[int] | range = range(len(self.scenes))
            for key in fact.needs():
                cands = set(cands) & self.index.get(key, set())
            true = self._memo[fact] = [k for k in sorted(cands) if fact.holds(*self.scenes[k])]
        return [k for k in true if k != exclude]
