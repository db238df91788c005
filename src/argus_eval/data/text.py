"""What text may reach a tokenizer, and the rule by which a model's answer is made storable.

Two rules, one per direction:
- Input text (a question, caption, answer or choice read from a dataset) is usable only when it is
  non-empty, valid Unicode (no lone surrogate, which JSON's \\ud800 escape can produce) and at most
  MAX_TEXT_CHARS characters long; anything else is a skipped record that names why (loaders), never
  repaired, since a changed question would be scored as the original.
- Output text (what a model answered) is stored whatever it holds: every lone surrogate is replaced by
  U+FFFD, the Unicode replacement character (repair_text); a well-formed surrogate pair becomes its
  character. The store applies it to each record it writes and reads, so an answer cannot break
  samples.jsonl, a metric or a rerun.
"""

from __future__ import annotations

from typing import Any

# The cap on one text field of a dataset, checked before any tokenizer sees it: a caption or question is
# well under 1,000 characters (VCR's longest answers run to a few hundred); a 10M-token field would
# otherwise be tokenised whole.
MAX_TEXT_CHARS = 10_000
# The cap on one line of a JSON-lines annotation file (a VCR line is a few KB), checked while reading,
# before the line is held or parsed.
MAX_LINE_BYTES = 1 << 20


def is_valid_unicode(text: str) -> bool:
    """Whether text encodes as UTF-8 (a lone surrogate does not)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def text_problem(text: str, what: str) -> str | None:
    """Why a (stripped) text field cannot reach a tokenizer, or None when it can."""
    if not text:
        return f"empty {what}"
    if not is_valid_unicode(text):
        return f"{what} contains an unpaired surrogate escape (not valid Unicode text)"
    if len(text) > MAX_TEXT_CHARS:
        return f"{what} has {len(text):,} characters, over the cap of {MAX_TEXT_CHARS:,} (MAX_TEXT_CHARS)"
    return None


def repair_text(text: str) -> str:
    """text with each lone surrogate replaced by U+FFFD (pairs joined into their character)."""
    if is_valid_unicode(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def repair_value(value: Any) -> Any:
    """A JSON-able value with repair_text applied to every string in it (keys included)."""
    if isinstance(value, str):
        return repair_text(value)
    if isinstance(value, dict):
        return {repair_value(k): repair_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [repair_value(v) for v in value]
    return value
