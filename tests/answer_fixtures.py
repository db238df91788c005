"""The answer-form check by hand, shared by the tests of the answer-format rate."""

from __future__ import annotations

from typing import Any


def parses_line(line: dict[str, Any]) -> bool:
    """The form check by hand for ShapesWorld questions: the reference's answer type decides."""
    from argus_eval.data.clevr.vocab import VALUES

    ref = line["reference"][0]
    answer = " ".join(str(line["prediction"]).lower().replace(".", " ").split())
    for kinds in (("yes", "no"), tuple(str(i) for i in range(100)), *VALUES.values()):
        if ref in kinds:
            return answer in kinds
    raise AssertionError(f"reference {ref!r} of no known type")
