"""CLEVR-style questions: each template builds a program with its wording, and the answer is the program
executed on the scene graph (never computed separately). Answers are balanced per (family, question type)
by rejection sampling, as CLEVR's generator does, so a blind per-type prior stays weak.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from argus_eval.data.clevr.program import ProgramError, question_type, run_to_answer
from argus_eval.data.clevr.vocab import ATTRIBUTES, RELATIONS, VALUES
from argus_eval.data.shapesworld import text as T

Desc = dict[str, str]
Objects = list[Mapping[str, Any]]


@dataclass
class Draft:
    """A candidate question: wording, CLEVR program, family (template file stem) and template index."""

    text: str
    program: list[dict[str, Any]]
    family: str
    template_index: int = -1


class Prog:
    """Builds a CLEVR program node by node."""

    def __init__(self) -> None:
        self.nodes: list[dict[str, Any]] = []

    def add(self, function: str, inputs: tuple[int, ...] = (), values: tuple[str, ...] = ()) -> int:
        self.nodes.append({"function": function, "inputs": list(inputs), "value_inputs": list(values)})
        return len(self.nodes) - 1

    def filters(self, src: int, desc: Mapping[str, str]) -> int:
        for a in T.ORDER:
            if a in desc:
                src = self.add(f"filter_{a}", (src,), (desc[a],))
        return src

    def ref(self, desc: Mapping[str, str]) -> int:
        """scene -> filters -> unique."""
        return self.add("unique", (self.filters(self.add("scene"), desc),))


def matches(obj: Mapping[str, Any], desc: Mapping[str, str]) -> bool:
    return all(obj[a] == v for a, v in desc.items())


def unique_desc(
    rng: random.Random, objs: Objects, among: set[int], target: int, exclude: tuple[str, ...] = ()
) -> Desc | None:
    """Attributes of target that single it out among `among` (None if impossible without `exclude`)."""
    attrs = [a for a in ATTRIBUTES if a not in exclude]
    rng.shuffle(attrs)
    if "shape" in attrs and rng.random() < 0.6:  # people name the shape first
        attrs.remove("shape")
        attrs.insert(0, "shape")
    desc: Desc = {}
    for a in attrs:
        if sum(1 for i in among if matches(objs[i], desc)) == 1:
            break
        desc[a] = objs[target][a]
    if sum(1 for i in among if matches(objs[i], desc)) != 1:
        return None
    spare = [a for a in attrs if a not in desc]
    if spare and rng.random() < 0.2:
        a = rng.choice(spare)
        desc[a] = objs[target][a]
    return desc


def set_desc(rng: random.Random, objs: Objects, pool: list[int], exclude: tuple[str, ...] = ()) -> Desc:
    """A random filter description; usually borrowed from an object of pool so answers are not all zero."""
    attrs = [a for a in ATTRIBUTES if a not in exclude]
    k = min(rng.choices((0, 1, 2, 3), weights=(1, 5, 4, 1))[0], len(attrs))
    chosen = rng.sample(attrs, k)
    if pool and rng.random() < 0.75:
        src = objs[rng.choice(pool)]
        return {a: src[a] for a in chosen}
    return {a: rng.choice(VALUES[a]) for a in chosen}


ATTR_QUESTIONS: dict[str, tuple[str, ...]] = {
    "color": ("What color is {s}?", "What is the color of {s}?", "{S} has what color?"),
    "size": ("What size is {s}?", "How big is {s}?", "What is the size of {s}?", "{S} is what size?"),
    "material": ("What material is {s}?", "What is {s} made of?", "What is the material of {s}?"),
    "shape": ("What shape is {s}?", "What is the shape of {s}?", "{S} has what shape?"),
}


def _ask_attr(rng: random.Random, attr: str, subject: str) -> str:
    tpl = rng.choice(ATTR_QUESTIONS[attr])
    return tpl.format(s=subject, S=T.sentence(subject))


# ------------------------------------------------------------------ endings shared by several families


@dataclass
class Ending:
    """What to ask about a final object set: count it, test it, or query the unique object in it."""

    kind: str  # count | exist | query

    def build(
        self, rng: random.Random, objs: Objects, prog: Prog, src: int, members: set[int], tail: str
    ) -> tuple[str, list[str]] | None:
        """Add the ending to prog; return (question text, extra excluded attrs) or None if impossible.

        tail is the wording that restricts the set, e.g. "left of the red cube".
        """
        if self.kind == "query":
            if not members:
                return None
            target = rng.choice(sorted(members))
            attr = rng.choice(ATTRIBUTES)
            desc = unique_desc(rng, objs, members, target, exclude=(attr,))
            if desc is None:
                return None
            prog.add(f"query_{attr}", (prog.add("unique", (prog.filters(src, desc),)),))
            subject = f"the {T.noun_phrase(rng, desc)}{' that is' if rng.random() < 0.5 else ''} {tail}"
            return _ask_attr(rng, attr, subject), []
        desc = set_desc(rng, objs, sorted(members))
        end = prog.filters(src, desc)
        prog.add(self.kind, (end,))
        if self.kind == "count":
            plural = T.noun_phrase(rng, desc, plural=True)
            tpl = rng.choice(("How many {p} are {t}?", "What number of {p} are {t}?"))
            return tpl.format(p=plural, t=tail), []
        if rng.random() < 0.5:
            return f"Are there any {T.noun_phrase(rng, desc, plural=True)} {tail}?", []
        return f"Is there {T.article(T.noun_phrase(rng, desc))} {tail}?", []


# ------------------------------------------------------------------ families


def zero_hop_query(rng: random.Random, objs: Objects) -> Draft | None:
    """What <attr> is the <unique object>? The easy, grounded single-attribute question."""
    target = rng.randrange(len(objs))
    attr = rng.choice(ATTRIBUTES)
    desc = unique_desc(rng, objs, set(range(len(objs))), target, exclude=(attr,))
    if desc is None:
        return None
    p = Prog()
    p.add(f"query_{attr}", (p.ref(desc),))
    return Draft(_ask_attr(rng, attr, f"the {T.noun_phrase(rng, desc)}"), p.nodes, "zero_hop")


def zero_hop_count(rng: random.Random, objs: Objects) -> Draft | None:
    desc = set_desc(rng, objs, list(range(len(objs))))
    p = Prog()
    p.add("count", (p.filters(p.add("scene"), desc),))
    plural = T.noun_phrase(rng, desc, plural=True)
    tpl = rng.choice(
        ("How many {p} are there?", "What number of {p} are there?", "How many {p} are in the scene?")
    )
    return Draft(tpl.format(p=plural), p.nodes, "zero_hop")


def zero_hop_exist(rng: random.Random, objs: Objects) -> Draft | None:
    desc = set_desc(rng, objs, list(range(len(objs))))
    if not desc:
        return None
    p = Prog()
    p.add("exist", (p.filters(p.add("scene"), desc),))
    if rng.random() < 0.5:
        return Draft(f"Are there any {T.noun_phrase(rng, desc, plural=True)}?", p.nodes, "zero_hop")
    return Draft(f"Is there {T.article(T.noun_phrase(rng, desc))}?", p.nodes, "zero_hop")


def _rel_set(scene_rel: Mapping[str, list[list[int]]], obj: int, rel: str) -> set[int]:
    return set(scene_rel[rel][obj])


def hop_chain(hops: int, ending: str) -> Callable[[random.Random, Objects, Mapping[str, Any]], Draft | None]:
    """<ending> about things <rel_n> the <obj> [that is] <rel> ... the <anchor> (CLEVR one/two/three_hop)."""
    family = {1: "one_hop", 2: "two_hop", 3: "three_hop"}[hops]

    def gen(rng: random.Random, objs: Objects, rels: Mapping[str, Any]) -> Draft | None:
        every = set(range(len(objs)))
        cur = rng.randrange(len(objs))
        desc = unique_desc(rng, objs, every, cur)
        if desc is None:
            return None
        p = Prog()
        node = p.ref(desc)
        ref = f"the {T.noun_phrase(rng, desc)}"
        for h in range(hops):
            rel = rng.choice(RELATIONS)
            members = _rel_set(rels, cur, rel)
            node = p.add("relate", (node,), (rel,))
            tail = f"{T.relation(rng, rel)} {ref}"
            if h == hops - 1:
                built = Ending(ending).build(rng, objs, p, node, members, tail)
                if built is None:
                    return None
                return Draft(built[0], p.nodes, family)
            if not members:
                return None
            nxt = rng.choice(sorted(members))
            d = unique_desc(rng, objs, members, nxt)
            if d is None:
                return None
            node = p.add("unique", (p.filters(node, d),))
            that = "that is " if rng.random() < 0.5 else ""
            ref = f"the {T.noun_phrase(rng, d)} {that}{tail}"
            cur = nxt
        return None

    return gen


def single_and(ending: str) -> Callable[[random.Random, Objects, Mapping[str, Any]], Draft | None]:
    """<ending> about things that are both <R1> the <A> and <R2> the <B>."""

    def gen(rng: random.Random, objs: Objects, rels: Mapping[str, Any]) -> Draft | None:
        every = set(range(len(objs)))
        a, b = rng.sample(range(len(objs)), 2)
        da, db = unique_desc(rng, objs, every, a), unique_desc(rng, objs, every, b)
        if da is None or db is None:
            return None
        r1, r2 = rng.choice(RELATIONS), rng.choice(RELATIONS)
        p = Prog()
        left = p.add("relate", (p.ref(da),), (r1,))
        right = p.add("relate", (p.ref(db),), (r2,))
        both = p.add("intersect", (left, right))
        members = _rel_set(rels, a, r1) & _rel_set(rels, b, r2)
        tail = (
            f"{'both ' if rng.random() < 0.5 else ''}{T.relation(rng, r1)} the {T.noun_phrase(rng, da)}"
            f" and {T.relation(rng, r2)} the {T.noun_phrase(rng, db)}"
        )
        built = Ending(ending).build(rng, objs, p, both, members, tail)
        return None if built is None else Draft(built[0], p.nodes, "single_and")

    return gen


def single_or(rng: random.Random, objs: Objects, rels: Mapping[str, Any]) -> Draft | None:
    """How many things are <A>s or <B>s? (count of a union; the two sets must differ)."""
    pool = list(range(len(objs)))
    d1, d2 = set_desc(rng, objs, pool), set_desc(rng, objs, pool)
    if not d1 or not d2:
        return None
    s1 = {i for i in pool if matches(objs[i], d1)}
    s2 = {i for i in pool if matches(objs[i], d2)}
    if s1 == s2:
        return None
    p = Prog()
    u = p.add("union", (p.filters(p.add("scene"), d1), p.filters(p.add("scene"), d2)))
    p.add("count", (u,))
    a, b = T.noun_phrase(rng, d1, plural=True), T.noun_phrase(rng, d2, plural=True)
    tpl = rng.choice(
        (
            "How many {t} are either {a} or {b}?",
            "How many {t} are {a} or {b}?",
            "What number of {t} are {a} or {b}?",
            "How many {a} or {b} are there?",
        )
    )
    return Draft(tpl.format(t=T.word(rng, "thing") + "s", a=a, b=b), p.nodes, "single_or")


def same_relate(ending: str) -> Callable[[random.Random, Objects, Mapping[str, Any]], Draft | None]:
    """<ending> about the other things that have the same <attr> as the <A> (A never names attr)."""

    def gen(rng: random.Random, objs: Objects, rels: Mapping[str, Any]) -> Draft | None:
        every = set(range(len(objs)))
        a = rng.randrange(len(objs))
        attr = rng.choice(ATTRIBUTES)
        da = unique_desc(rng, objs, every, a, exclude=(attr,))
        if da is None:
            return None
        p = Prog()
        same = p.add(f"same_{attr}", (p.ref(da),))
        members = {j for j in every if j != a and objs[j][attr] == objs[a][attr]}
        anchor = f"the {T.noun_phrase(rng, da)}"
        if ending == "query":
            if not members:
                return None
            target = rng.choice(sorted(members))
            q = rng.choice([x for x in ATTRIBUTES if x != attr])
            d = unique_desc(rng, objs, members, target, exclude=(attr, q))
            if d is None:
                return None
            p.add(f"query_{q}", (p.add("unique", (p.filters(same, d),)),))
            subject = f"the other {T.noun_phrase(rng, d)} that has the same {attr} as {anchor}"
            return Draft(_ask_attr(rng, q, subject), p.nodes, "same_relate")
        d = set_desc(rng, objs, sorted(members), exclude=(attr,))
        p.add(ending, (p.filters(same, d),))
        if ending == "count":
            tpl = rng.choice(
                (
                    "How many other {p} have the same {x} as {a}?",
                    "What number of other {p} are the same {x} as {a}?",
                )
            )
            return Draft(tpl.format(p=T.noun_phrase(rng, d, True), x=attr, a=anchor), p.nodes, "same_relate")
        if rng.random() < 0.5:
            txt = f"Are there any other {T.noun_phrase(rng, d, True)} that have the same {attr} as {anchor}?"
        else:
            txt = f"Is there another {T.noun_phrase(rng, d)} that has the same {attr} as {anchor}?"
        return Draft(txt, p.nodes, "same_relate")

    return gen


def comparison(rng: random.Random, objs: Objects, rels: Mapping[str, Any]) -> Draft | None:
    """Is the <A> the same <attr> as the <B>? (neither reference names attr)."""
    every = set(range(len(objs)))
    a, b = rng.sample(range(len(objs)), 2)
    attr = rng.choice(ATTRIBUTES)
    da = unique_desc(rng, objs, every, a, exclude=(attr,))
    db = unique_desc(rng, objs, every, b, exclude=(attr,))
    if da is None or db is None:
        return None
    p = Prog()
    qa = p.add(f"query_{attr}", (p.ref(da),))
    qb = p.add(f"query_{attr}", (p.ref(db),))
    p.add(f"equal_{attr}", (qa, qb))
    na, nb = T.noun_phrase(rng, da), T.noun_phrase(rng, db)
    tpl = rng.choice(
        (
            "Is the {a} the same {x} as the {b}?",
            "Does the {a} have the same {x} as the {b}?",
            "Do the {a} and the {b} have the same {x}?",
        )
    )
    return Draft(tpl.format(a=na, b=nb, x=attr), p.nodes, "comparison")


COMPARE_WORDING: dict[str, tuple[str, ...]] = {
    "greater_than": ("Are there more {a} than {b}?", "Is the number of {a} greater than the number of {b}?"),
    "less_than": ("Are there fewer {a} than {b}?", "Is the number of {a} less than the number of {b}?"),
    "equal_integer": (
        "Are there the same number of {a} and {b}?",
        "Is the number of {a} the same as the number of {b}?",
        "Are there an equal number of {a} and {b}?",
    ),
}


def compare_integer(op: str) -> Callable[[random.Random, Objects, Mapping[str, Any]], Draft | None]:
    """Compare the counts of two different sets."""

    def gen(rng: random.Random, objs: Objects, rels: Mapping[str, Any]) -> Draft | None:
        pool = list(range(len(objs)))
        d1, d2 = set_desc(rng, objs, pool), set_desc(rng, objs, pool)
        if not d1 or not d2 or d1 == d2:
            return None
        p = Prog()
        c1 = p.add("count", (p.filters(p.add("scene"), d1),))
        c2 = p.add("count", (p.filters(p.add("scene"), d2),))
        p.add(op, (c1, c2))
        a, b = T.noun_phrase(rng, d1, plural=True), T.noun_phrase(rng, d2, plural=True)
        return Draft(rng.choice(COMPARE_WORDING[op]).format(a=a, b=b), p.nodes, "compare_integer")

    return gen


def _no_rel(fn: Callable[[random.Random, Objects], Draft | None]) -> Callable[..., Draft | None]:
    return lambda rng, objs, rels: fn(rng, objs)


@dataclass(frozen=True)
class Template:
    """One question template: its family (CLEVR template file stem), a label, a sampling weight, a builder."""

    family: str
    label: str
    weight: float
    build: Callable[[random.Random, Objects, Mapping[str, Any]], Draft | None]


# Sampling weights: about 40 % zero_hop, most of it single-attribute queries about a unique object,
# the only questions tiny models can learn to ground (see docs: the blind-prior trap).
TEMPLATES: tuple[Template, ...] = (
    Template("zero_hop", "query", 0.30, _no_rel(zero_hop_query)),
    Template("zero_hop", "count", 0.06, _no_rel(zero_hop_count)),
    Template("zero_hop", "exist", 0.05, _no_rel(zero_hop_exist)),
    Template("one_hop", "count", 0.04, hop_chain(1, "count")),
    Template("one_hop", "exist", 0.03, hop_chain(1, "exist")),
    Template("one_hop", "query", 0.05, hop_chain(1, "query")),
    Template("two_hop", "count", 0.02, hop_chain(2, "count")),
    Template("two_hop", "exist", 0.015, hop_chain(2, "exist")),
    Template("two_hop", "query", 0.025, hop_chain(2, "query")),
    Template("three_hop", "count", 0.012, hop_chain(3, "count")),
    Template("three_hop", "exist", 0.01, hop_chain(3, "exist")),
    Template("three_hop", "query", 0.018, hop_chain(3, "query")),
    Template("single_and", "count", 0.02, single_and("count")),
    Template("single_and", "exist", 0.02, single_and("exist")),
    Template("single_and", "query", 0.02, single_and("query")),
    Template("single_or", "count", 0.06, single_or),
    Template("same_relate", "count", 0.025, same_relate("count")),
    Template("same_relate", "exist", 0.025, same_relate("exist")),
    Template("same_relate", "query", 0.03, same_relate("query")),
    Template("comparison", "equal", 0.08, comparison),
    Template("compare_integer", "greater_than", 0.027, compare_integer("greater_than")),
    Template("compare_integer", "less_than", 0.027, compare_integer("less_than")),
    Template("compare_integer", "equal_integer", 0.026, compare_integer("equal_integer")),
)


@dataclass
class Balancer:
    """Per (family, question type) answer histograms; rejects answers already over-represented."""

    slack: float = 1.1
    hist: dict[tuple[str, str], Counter[str]] = field(default_factory=dict)

    def _domain(self, qtype: str, seen: Counter[str]) -> int:
        attr = qtype.removeprefix("query_")
        if attr in VALUES:
            return len(VALUES[attr])
        return max(len(seen), 2)

    def accept(self, family: str, qtype: str, answer: str) -> bool:
        seen = self.hist.get((family, qtype), Counter())
        total = sum(seen.values())
        cap = self.slack * total / self._domain(qtype, seen) + 2
        return seen[answer] < cap

    def add(self, family: str, qtype: str, answer: str) -> None:
        self.hist.setdefault((family, qtype), Counter())[answer] += 1


@dataclass
class Question:
    """A generated question with its executed answer."""

    text: str
    program: list[dict[str, Any]]
    answer: str
    family: str
    template_index: int


def questions_for_scene(
    rng: random.Random,
    scene: Mapping[str, Any],
    n: int,
    balancer: Balancer,
    tries_per_question: int = 40,
) -> list[Question]:
    """Up to n distinct, balanced questions about one scene (CLEVR scenes-file record)."""
    objs: Objects = scene["objects"]
    rels = scene["relationships"]
    weights = [t.weight for t in TEMPLATES]
    out: list[Question] = []
    texts: set[str] = set()
    for _ in range(n):
        for _attempt in range(tries_per_question):
            k = rng.choices(range(len(TEMPLATES)), weights=weights)[0]
            draft = TEMPLATES[k].build(rng, objs, rels)
            if draft is None or draft.text in texts:
                continue
            try:
                answer = run_to_answer(draft.program, scene)
            except ProgramError:
                continue
            qtype = question_type(draft.program)
            if not balancer.accept(draft.family, qtype, answer):
                continue
            balancer.add(draft.family, qtype, answer)
            texts.add(draft.text)
            out.append(Question(draft.text, draft.program, answer, draft.family, k))
            break
    return out
