"""Text perturbations: seeding, severity, per-perturbation invariants and the synonym table."""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable
from importlib import resources

import pytest

from argus_eval.errors import PerturbationError
from argus_eval.perturb.text import (
    NAMES,
    OCR_CONFUSIONS,
    QWERTY_NEIGHBOURS,
    names,
    perturb,
    synonym_table,
    synonyms_of,
)

SENTENCES = [
    "What color is the large rubber cube behind the small metal sphere?",
    "A man riding a wave on top of a surfboard.",
    "How many small cylinders are left of the red metallic object?",
    "Two dogs are playing with a frisbee in the green park near the river.",
    "Is there a big shiny ball that has the same size as the brown cylinder?",
    "A plate of food with broccoli, rice and a piece of chicken on a table.",
]
WORDS = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (test oracle, written independently of the code under test)."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def words(text: str) -> list[str]:
    return WORDS.findall(text)


def applicable(name: str) -> list[str]:
    """Sentences the perturbation can act on: synonyms needs two words with table entries."""
    if name != "synonyms":
        return SENTENCES
    found = [s for s in SENTENCES if sum(bool(synonyms_of(w)) for w in words(s)) >= 2]
    assert len(found) >= 3
    return found


def test_names() -> None:
    assert names() == list(NAMES) and len(NAMES) == 11


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_output_and_seed_dependence(name: str) -> None:
    for s in applicable(name):
        assert perturb(s, name, 3, 42) == perturb(s, name, 3, 42)
        outputs = {perturb(s, name, 1, seed) for seed in range(8)}  # severity 1: which word varies
        assert len(outputs) > 1, (name, s)
        assert s not in outputs, (name, s)


@pytest.mark.parametrize("name", NAMES)
def test_severity_five_changes_more_than_one(name: str) -> None:
    for s in applicable(name):
        low = sum(edit_distance(s, perturb(s, name, 1, seed)) for seed in range(10))
        high = sum(edit_distance(s, perturb(s, name, 5, seed)) for seed in range(10))
        assert 0 < low < high, (name, s, low, high)


def test_global_random_state_is_untouched() -> None:
    random.seed(5)
    state = random.getstate()
    for name in NAMES:
        perturb(SENTENCES[0], name, 4, 1)
    assert random.getstate() == state


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("text", ["", "   ", "?!", "42", "Cube", "a b"])
def test_degenerate_texts_do_not_crash(name: str, text: str) -> None:
    out = perturb(text, name, 5, 3)
    assert isinstance(out, str)
    if not words(text):
        assert out == text  # nothing to perturb


@pytest.mark.parametrize(("name", "severity"), [("typo", 1), ("typos", 0), ("typos", 6), ("typos", True)])
def test_invalid_name_or_severity_lists_valid_names(name: str, severity: int) -> None:
    with pytest.raises(PerturbationError) as info:
        perturb("a cube", name, severity, 0)
    assert all(n in str(info.value) for n in NAMES)


def changed_word_pairs(a: str, b: str, split: Callable[[str], list[str]] = words) -> list[tuple[str, str]]:
    wa, wb = split(a), split(b)
    assert len(wa) == len(wb)
    return [(x, y) for x, y in zip(wa, wb, strict=True) if x != y]


def test_typos_replace_one_letter_with_a_keyboard_neighbour() -> None:
    assert set(QWERTY_NEIGHBOURS["g"]) == set("fhtyvb")
    assert set(QWERTY_NEIGHBOURS["q"]) == {"w", "a"}
    for s in SENTENCES:
        for seed in range(5):
            for x, y in changed_word_pairs(s, perturb(s, "typos", 3, seed)):
                diffs = [(p, q) for p, q in zip(x, y, strict=True) if p != q]
                assert len(diffs) == 1 and diffs[0][1].lower() in QWERTY_NEIGHBOURS[diffs[0][0].lower()]


def test_char_edits_change_length_and_letters_as_named() -> None:
    for s in SENTENCES:
        n = len(words(s))
        for seed in range(5):
            for severity in (1, 5):
                ins = perturb(s, "char_insert", severity, seed)
                dele = perturb(s, "char_delete", severity, seed)
                swap = perturb(s, "char_swap", severity, seed)
                k = len(changed_word_pairs(s, ins))
                assert 1 <= k <= n and len(ins) == len(s) + k
                assert len(dele) == len(s) - len(changed_word_pairs(s, dele))
                for x, y in changed_word_pairs(s, swap):
                    assert sorted(x) == sorted(y) and edit_distance(x, y) == 2


def test_ocr_uses_the_confusion_table() -> None:
    for s in SENTENCES:
        for seed in range(5):
            # OCR may put digits into words ("large" -> "lar9e"), so compare whitespace tokens.
            pairs = changed_word_pairs(s, perturb(s, "ocr", 5, seed), str.split)
            assert pairs
            for x, y in pairs:
                assert any(
                    y == x[:i] + dst + x[i + len(src) :]
                    for src, dst in OCR_CONFUSIONS
                    for i in range(len(x))
                    if x.startswith(src, i)
                ), (x, y)


def test_word_level_invariants() -> None:
    for s in SENTENCES:
        ws = words(s)
        for seed in range(5):
            dropped = words(perturb(s, "word_drop", 5, seed))
            it = iter(ws)
            assert all(w in it for w in dropped) and 1 <= len(dropped) < len(ws)  # an ordered subsequence
            swapped = words(perturb(s, "word_swap", 5, seed))
            assert Counter(swapped) == Counter(ws) and swapped != ws
            repeated = words(perturb(s, "word_repeat", 3, seed))
            assert Counter(repeated) - Counter(ws) and not Counter(ws) - Counter(repeated)
            noisy = perturb(s, "case_noise", 5, seed)
            assert noisy.lower() == s.lower() and noisy != s
            punct = perturb(s, "punctuation", 5, seed)
            assert words(punct) == ws and len(punct) > len(s)
    assert perturb("Is the cube red?", "word_drop", 5, 0).endswith("?")


def test_synonyms_use_the_table_and_keep_case() -> None:
    for s in SENTENCES:
        for x, y in changed_word_pairs(s, perturb(s, "synonyms", 5, 0)):
            assert y in synonyms_of(x), (x, y)
    assert synonyms_of("Sphere") == ["Ball"] and synonyms_of("CUBE") == ["BLOCK"]
    assert synonyms_of("cubes") == ["blocks"]


def test_scene_vocabulary_is_sensible() -> None:
    assert synonyms_of("cube") == ["block"]
    assert synonyms_of("sphere") == ["ball"]
    assert set(synonyms_of("large")) == {"big"}
    assert set(synonyms_of("small")) <= {"little", "tiny"}
    assert synonyms_of("metal") == ["metallic"]
    assert "condom" not in synonyms_of("rubber")
    for colour in ("red", "green", "blue", "yellow", "purple", "cyan", "brown"):
        assert synonyms_of(colour) == []  # a colour is never swapped for a different colour name
    for word in ("left", "right", "behind", "front", "same", "how", "many", "is", "the", "can", "a"):
        assert synonyms_of(word) == []


def test_table_shape_size_and_licence() -> None:
    table = synonym_table()
    assert len(table) > 10_000
    for word, syns in table.items():
        assert word.isalpha() and word.islower() and syns and word not in syns
        assert all(s.isalpha() and s.islower() for s in syns)
    assets = resources.files("argus_eval.perturb").joinpath("assets")
    assert len(assets.joinpath("synonyms.json.gz").read_bytes()) < 1_000_000
    notice = assets.joinpath("WORDNET_LICENSE.txt").read_text()
    assert "WordNet 3.0 Copyright 2006 by Princeton University" in notice


def test_numpy_integers_are_accepted_and_bad_seeds_rejected() -> None:
    np = pytest.importorskip("numpy")
    s = SENTENCES[0]
    assert perturb(s, "typos", np.int64(3), np.uint32(7)) == perturb(s, "typos", 3, 7)
    with pytest.raises(PerturbationError, match="seed"):
        perturb(s, "typos", 3, "7")  # type: ignore[arg-type]
