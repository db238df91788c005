"""CLEVR functional programs: the executor, and what a program says about its question.

A program is CLEVR's list of nodes {"function", "inputs", "value_inputs"} (the generator's older spelling
{"type", "side_inputs"} is accepted too). execute() runs it on a CLEVR scenes-file record, so it works on
real CLEVR scenes as well as on ShapesWorld's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from argus_eval.data.clevr.vocab import ATTRIBUTES

Value = frozenset[int] | int | bool | str
Scene = Mapping[str, Any]
Node = Mapping[str, Any]


class ProgramError(ValueError):
    """A program cannot run on a scene (e.g. unique over a set that is not a singleton)."""


def _objects(scene: Scene) -> list[Mapping[str, Any]]:
    objs: list[Mapping[str, Any]] = scene["objects"]
    return objs


def _set(v: Value) -> frozenset[int]:
    if not isinstance(v, frozenset):
        raise ProgramError(f"expected an object set, got {v!r}")
    return v


def _obj(v: Value) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ProgramError(f"expected one object, got {v!r}")
    return v


def _int(v: Value) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ProgramError(f"expected a number, got {v!r}")
    return v


def _unique(scene: Scene, args: list[Value], vals: list[str]) -> Value:
    s = _set(args[0])
    if len(s) != 1:
        raise ProgramError(f"unique over {len(s)} objects")
    return next(iter(s))


def _relate(scene: Scene, args: list[Value], vals: list[str]) -> Value:
    return frozenset(scene["relationships"][vals[0]][_obj(args[0])])


def _filter(attr: str) -> Callable[[Scene, list[Value], list[str]], Value]:
    def run(scene: Scene, args: list[Value], vals: list[str]) -> Value:
        objs = _objects(scene)
        return frozenset(i for i in _set(args[0]) if objs[i][attr] == vals[0])

    return run


def _query(attr: str) -> Callable[[Scene, list[Value], list[str]], Value]:
    def run(scene: Scene, args: list[Value], vals: list[str]) -> Value:
        value: str = _objects(scene)[_obj(args[0])][attr]
        return value

    return run


def _same(attr: str) -> Callable[[Scene, list[Value], list[str]], Value]:
    def run(scene: Scene, args: list[Value], vals: list[str]) -> Value:
        objs = _objects(scene)
        me = _obj(args[0])
        return frozenset(j for j, o in enumerate(objs) if j != me and o[attr] == objs[me][attr])

    return run


def _equal_attr(scene: Scene, args: list[Value], vals: list[str]) -> Value:
    if not (isinstance(args[0], str) and isinstance(args[1], str)):
        raise ProgramError(f"equal_* expects two attribute values, got {args!r}")
    return args[0] == args[1]


FUNCTIONS: dict[str, Callable[[Scene, list[Value], list[str]], Value]] = {
    "scene": lambda scene, args, vals: frozenset(range(len(_objects(scene)))),
    "unique": _unique,
    "relate": _relate,
    "union": lambda scene, args, vals: _set(args[0]) | _set(args[1]),
    "intersect": lambda scene, args, vals: _set(args[0]) & _set(args[1]),
    "count": lambda scene, args, vals: len(_set(args[0])),
    "exist": lambda scene, args, vals: len(_set(args[0])) > 0,
    "equal_integer": lambda scene, args, vals: _int(args[0]) == _int(args[1]),
    "less_than": lambda scene, args, vals: _int(args[0]) < _int(args[1]),
    "greater_than": lambda scene, args, vals: _int(args[0]) > _int(args[1]),
    **{f"filter_{a}": _filter(a) for a in ATTRIBUTES},
    **{f"query_{a}": _query(a) for a in ATTRIBUTES},
    **{f"same_{a}": _same(a) for a in ATTRIBUTES},
    **{f"equal_{a}": _equal_attr for a in ATTRIBUTES},
}


def node_function(node: Node) -> str:
    """The function name of a node in either CLEVR spelling."""
    name = node.get("function", node.get("type"))
    if not isinstance(name, str):
        raise ProgramError(f"program node without a function: {dict(node)!r}")
    return name


def execute(program: Sequence[Node], scene: Scene) -> Value:
    """Run a program on a scene and return the last node's value."""
    if not program:
        raise ProgramError("empty program")
    outputs: list[Value] = []
    for k, node in enumerate(program):
        name = node_function(node)
        fn = FUNCTIONS.get(name)
        if fn is None:
            raise ProgramError(f"node {k}: unknown function {name!r}")
        inputs = [outputs[i] for i in node.get("inputs", [])]
        values = list(node.get("value_inputs", node.get("side_inputs", [])))
        try:
            outputs.append(fn(scene, inputs, values))
        except (IndexError, KeyError) as e:
            raise ProgramError(f"node {k} ({name}): {e!r}") from None
    return outputs[-1]


def answer_text(value: Value) -> str:
    """CLEVR's answer string of a program value: yes/no, a count, or an attribute value."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | str):
        return str(value)
    raise ProgramError(f"program ends in an object set, not an answer: {sorted(value)!r}")


def run_to_answer(program: Sequence[Node], scene: Scene) -> str:
    """execute() then answer_text()."""
    return answer_text(execute(program, scene))


def question_type(program: Sequence[Node]) -> str:
    """The answer-producing function, e.g. count, exist, query_color, equal_size, greater_than."""
    return node_function(program[-1])


# The paper's five reasoning types, keyed by answer-producing function.
SKILLS: dict[str, str] = {
    "count": "count",
    "exist": "exist",
    **{f"query_{a}": "query_attribute" for a in ATTRIBUTES},
    **{f"equal_{a}": "compare_attribute" for a in ATTRIBUTES},
    "equal_integer": "compare_integer",
    "less_than": "compare_integer",
    "greater_than": "compare_integer",
}

HOPS: dict[int, str] = {0: "zero_hop", 1: "one_hop", 2: "two_hop", 3: "three_hop"}

# Structural markers of CLEVR's template files, strongest first (a comparison never contains same_*, etc.).
FAMILY_MARKERS: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"equal_integer", "less_than", "greater_than"}), "compare_integer"),
    (frozenset(f"equal_{a}" for a in ATTRIBUTES), "comparison"),
    (frozenset(f"same_{a}" for a in ATTRIBUTES), "same_relate"),
    (frozenset({"union"}), "single_or"),
    (frozenset({"intersect"}), "single_and"),
)


def family_of(program: Sequence[Node]) -> str:
    """CLEVR question family (template file stem) inferred from a program's structure.

    Released CLEVR v1.0 questions carry no template file name, so the family is read off the program:
    integer comparison, attribute comparison, same_*, union, intersect, else the number of relate hops.
    """
    names = {node_function(n) for n in program}
    for markers, family in FAMILY_MARKERS:
        if names & markers:
            return family
    hops = sum(1 for n in program if node_function(n) == "relate")
    return HOPS.get(hops, f"{hops}_hop")
