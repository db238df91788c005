"""Generated answers: the form they are stored in, and whether they have the form the question asks for.

Every answer a generative protocol receives (an in-process adapter's decode or a served model's
message) passes through ``clean_generated`` before it becomes a record, whichever adapter produced it.
The one rule: a chat-template or special token is removed together with a role name directly after it,
and the answer is stripped. A token is

- ``<|name|>``, ``<|name>`` or ``<name|>`` (ChatML, Llama-3, Phi, Gemma-4 markers: ``<|im_start|>``,
  ``<|im_end|>``, ``<|endoftext|>``, ``<|eot_id|>``, ``<|start_header_id|>``, ``<|turn>``);
- ``<snake_case_name>`` with at least one underscore (``<start_of_turn>``, ``<end_of_turn>``,
  ``<start_of_image>``), or ``</...>`` of one;
- one of the sentinels ``<s>``, ``</s>``, ``<bos>``, ``<eos>``, ``<pad>``, ``<unk>``;

and a role name is ``system``, ``user``, ``assistant`` or ``model`` (any case), after optional whitespace,
even when the answer follows it with no space (a server that decodes the prompt's last turn and the
answer apart joins them: ``<|im_start|> assistantsphere``). Each removed token leaves a space; when
anything was removed, runs of spaces are squeezed and the answer is stripped. An answer without such a
token is returned as it is.

The answer-format rate of a cell is the share of its answers that have the form the question asks for
(``parses``): for a question with choices, one of them; for a typed closed question (data/answer_types.py)
a value of its type (yes/no, a whole number, a colour, shape, size or material of the vocabulary); for an
open or untyped question, and for a caption, any non-empty text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from argus_eval.data.answer_types import TYPE_VALUES, answer_type
from argus_eval.data.types import Sample
from argus_eval.metrics.vqa import normalize_short_answer
from argus_eval.models.protocols import CAPTION, GENERATE

# The capabilities whose protocols receive free text from the model (the others pick among candidates).
GENERATIVE = frozenset({GENERATE, CAPTION})

_TOKEN = r"<\|[^<>|\s]{1,48}\|?>|<[^<>|\s]{1,48}\|>|</?[a-z]+(?:_[a-z]+)+>|</?(?:s|bos|eos|pad|unk)>"
_ROLE = r"(?:\s*(?i:system|user|assistant|model))?"
TEMPLATE_TOKEN = re.compile(f"(?:{_TOKEN}){_ROLE}")
_SPACES = re.compile(r" {2,}")

# The record key of the number of template tokens removed from a stored answer (absent: none).
CLEANED_KEY = "template_tokens"


@dataclass(frozen=True)
class Cleaned:
    """An answer as stored and how many template tokens were removed from it."""

    text: str
    removed: int


def clean_generated(raw: str) -> Cleaned:
    """raw with every chat-template or special token (and the role name after it) removed, spaces
    squeezed and stripped; raw itself when it holds none."""
    text, n = TEMPLATE_TOKEN.subn(" ", raw)
    if not n:
        return Cleaned(raw, 0)
    return Cleaned(_SPACES.sub(" ", text).strip(), n)


def cleaned_output(key: str, cleaned: Cleaned, text: str | None = None) -> dict[str, Any]:
    """A generative record's output: the answer (text, else the cleaned text) under key, and the number
    of template tokens removed when there were any."""
    out: dict[str, Any] = {key: cleaned.text if text is None else text}
    if cleaned.removed:
        out[CLEANED_KEY] = cleaned.removed
    return out


def parses(sample: Sample, answer: str) -> bool:
    """Whether answer has the form sample's question asks for (see the module docstring)."""
    if sample.choices:
        return answer in sample.choices
    norm = normalize_short_answer(answer)
    if not norm:
        return False
    kind = answer_type(sample)
    if kind == "number":
        return norm.isdigit()
    if kind in TYPE_VALUES:
        return norm in TYPE_VALUES[kind]
    return True


@dataclass(frozen=True)
class AnswerFormat:
    """Per kept sample of a generative cell: whether its answer parses, and template tokens removed."""

    parsed: list[bool]
    cleaned: list[int]

    @property
    def rate(self) -> float | None:
        """The cell's answer-format rate (None without a sample)."""
        return sum(self.parsed) / len(self.parsed) if self.parsed else None


def non_empty(sample: Sample, text: str) -> bool:
    """The form of a caption: any non-empty text."""
    return bool(text.strip())


def answer_format(
    needs: frozenset[str],
    samples: Sequence[Sample],
    outputs: Sequence[Mapping[str, Any] | None],
    key: str,
    check: Callable[[Sample, str], bool],
) -> AnswerFormat | None:
    """The answer format of a cell whose protocol needs `needs`: each stored answer (outputs[i][key]) by
    check, and its removed-token count; None for a protocol that picks among candidates."""
    if not needs & GENERATIVE:
        return None
    rows = [dict(o or {}) for o in outputs]
    return AnswerFormat(
        parsed=[check(s, str(o.get(key, ""))) for s, o in zip(samples, rows, strict=True)],
        cleaned=[int(o.get(CLEANED_KEY, 0)) for o in rows],
    )
