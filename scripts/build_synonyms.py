"""Build src/argus_eval/perturb/assets/synonyms.json.gz, a one-word synonym table, from WordNet 3.0.

Usage (Debian: apt-get install wordnet-base):
    python scripts/build_synonyms.py [--wordnet /usr/share/wordnet] [--out src/argus_eval/perturb/assets]

Rule, chosen for meaning preservation over coverage: for each single-word lemma, take its dominant part of
speech (most SemCor-tagged senses in cntlist.rev), then that part of speech's most frequent sense, and keep
that synset's other single-word, lower-case lemmas that are themselves in common use (tagged in SemCor,
and sharing that meaning among their own first two senses). Function words are never replaced. A small curated
table fixes the ShapesWorld/CLEVR scene vocabulary (shapes, sizes, materials, colours), where WordNet's
first senses go wrong ("sphere" -> "domain", "rubber" -> "condom", "red" -> "bolshevik").
The output is deterministic (sorted keys, gzip mtime 0), so rebuilding gives identical bytes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
from collections import defaultdict
from pathlib import Path

POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
SS_TYPE_POS = {"1": "n", "2": "v", "3": "a", "4": "r", "5": "a"}  # 5 = adjective satellite
QUANTITY_LEXFILE = "23"  # noun.quantity: "trillion" -> "billion" and "ix" -> "niner" are not synonyms
MAX_SYNONYM_RANK = 2  # a replacement's shared sense must be among its own first senses
WORD_RE = re.compile(r"^[a-z]{2,}$")

# Closed-class words: never replaced, never used as replacements (WordNet has "can" -> "tin").
FUNCTION_WORDS = set(
    """a about above across after again against all almost along also although always am among an and another
    any anybody anyone anything are around as at be because been before behind being below beneath beside
    besides between beyond both but by can cannot could did do does doing done down during each either else
    enough even ever every everybody everyone everything few for from further had has have having he her here
    hers herself him himself his how however i if in inside into is it its itself just least less many may
    me might mine more most much must my myself neither never no nobody none nor not nothing now of off often
    on once one only onto or other others ought our ours ourselves out outside over own per perhaps please
    quite rather same several shall she should since so some somebody someone something sometimes still such
    than that the their theirs them themselves then there these they this those though through throughout
    till to together too toward towards under underneath unless until up upon us very via was we were what
    whatever when where whether which while who whom whose why will with within without would yes yet you
    your yours yourself yourselves left right front back top bottom side near next far number count equal
    zero two three four five six seven eight nine ten first second third last""".split()  # noqa: SIM905
)

# ShapesWorld / CLEVR scene vocabulary. Replacements keep the visual meaning (CLEVR's own question templates
# use these variants); colour names are kept as they are, except spelling variants, because "crimson" for
# "red" changes which colour a closed-vocabulary question asks about.
SCENE_SYNONYMS: dict[str, list[str]] = {
    "cube": ["block"],
    "cubes": ["blocks"],
    "block": ["cube"],
    "sphere": ["ball"],
    "spheres": ["balls"],
    "ball": ["sphere"],
    "cylinder": [],
    "object": ["thing"],
    "objects": ["things"],
    "thing": ["object"],
    "things": ["objects"],
    "large": ["big"],
    "big": ["large"],
    "small": ["little", "tiny"],
    "tiny": ["small"],
    "little": ["small"],
    "metal": ["metallic"],
    "metallic": ["metal"],
    "shiny": ["metallic"],
    "rubber": ["matte"],
    "matte": ["rubber"],
    "gray": ["grey"],
    "grey": ["gray"],
    "color": ["colour"],
    "colour": ["color"],
    "shape": ["form"],
    "size": [],
    "material": [],
}
COLOUR_WORDS = [
    "red",
    "green",
    "blue",
    "yellow",
    "purple",
    "cyan",
    "brown",
    "black",
    "white",
    "orange",
    "pink",
]


def read_synsets(wordnet: Path) -> dict[tuple[str, str], list[str]]:
    """(pos, offset) -> the synset's lemmas in file order (adjective markers like "(a)" stripped)."""
    synsets: dict[tuple[str, str], list[str]] = {}
    for pos, stem in POS_FILES.items():
        for line in (wordnet / f"data.{stem}").read_text(encoding="latin-1").splitlines():
            if line.startswith("  "):  # licence header
                continue
            fields = line.split()
            if pos == "n" and fields[1] == QUANTITY_LEXFILE:
                continue
            count = int(fields[3], 16)
            synsets[(pos, fields[0])] = [re.sub(r"\(.*\)$", "", fields[4 + 2 * i]) for i in range(count)]
    return synsets


def read_senses(wordnet: Path) -> dict[str, dict[str, list[str]]]:
    """lemma -> pos -> synset offsets in WordNet's sense order (most frequent first)."""
    senses: dict[str, dict[str, list[str]]] = defaultdict(dict)
    for pos, stem in POS_FILES.items():
        for line in (wordnet / f"index.{stem}").read_text(encoding="latin-1").splitlines():
            if line.startswith("  "):
                continue
            fields = line.split()
            n_synsets, n_pointers = int(fields[2]), int(fields[3])
            senses[fields[0]][pos] = fields[6 + n_pointers : 6 + n_pointers + n_synsets]
    return senses


def read_tag_counts(wordnet: Path) -> dict[tuple[str, str], int]:
    """(lemma, pos) -> SemCor tag count summed over its senses."""
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for line in (wordnet / "cntlist.rev").read_text(encoding="latin-1").splitlines():
        key, _sense_number, tag_count = line.split()
        lemma, _, rest = key.partition("%")
        counts[(lemma.lower(), SS_TYPE_POS[rest[0]])] += int(tag_count)
    return counts


def _verb_base(word: str, senses: dict[str, dict[str, list[str]]]) -> bool:
    """Whether an -ing word comes from a WordNet verb (ride/riding, sit/sitting, hold/holding)."""
    stem = word[:-3]
    return any("v" in senses.get(base, {}) for base in (stem, stem + "e", stem[:-1]))


def build_table(wordnet: Path) -> dict[str, list[str]]:
    """The synonym table (see the module docstring for the rule)."""
    synsets, senses, counts = read_synsets(wordnet), read_senses(wordnet), read_tag_counts(wordnet)
    table: dict[str, list[str]] = {}
    for lemma, by_pos in senses.items():
        if not WORD_RE.match(lemma) or lemma in FUNCTION_WORDS:
            continue
        # Dominant part of speech: most tagged uses, then most senses, then n > v > a > r.
        pos = max(by_pos, key=lambda p: (counts.get((lemma, p), 0), len(by_pos[p]), -"nvar".index(p)))
        if pos == "n" and lemma.endswith("ing") and _verb_base(lemma, senses):
            continue  # "riding", "holding": in queries these are verb forms, not the nouns WordNet lists
        offset = by_pos[pos][0]
        if (pos, offset) not in synsets:
            continue
        synonyms = sorted(
            w
            for w in set(synsets[(pos, offset)])
            if WORD_RE.match(w)
            and w != lemma
            and w not in FUNCTION_WORDS
            # the shared meaning must also be a main meaning of the synonym ("photo" -/-> "exposure")
            and offset in senses.get(w, {}).get(pos, [])[:MAX_SYNONYM_RANK]
            # and the synonym must be attested in SemCor ("chicken" -/-> "volaille", "bus" -/-> "charabanc")
            and counts.get((w, pos), 0) > 0
        )
        if synonyms:
            table[lemma] = synonyms
    for colour in COLOUR_WORDS:
        table.pop(colour, None)
    for word, synonyms in SCENE_SYNONYMS.items():
        if synonyms:
            table[word] = synonyms
        else:
            table.pop(word, None)
    return dict(sorted(table.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wordnet", type=Path, default=Path("/usr/share/wordnet"))
    parser.add_argument("--out", type=Path, default=Path("src/argus_eval/perturb/assets"))
    parser.add_argument("--licence", type=Path, default=Path("/usr/share/doc/wordnet-base/copyright"))
    args = parser.parse_args()
    table = build_table(args.wordnet)
    args.out.mkdir(parents=True, exist_ok=True)
    payload = json.dumps(table, separators=(",", ":"), sort_keys=True).encode("utf-8")
    target = args.out / "synonyms.json.gz"
    with target.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        gz.write(payload)
    shutil.copyfile(args.licence, args.out / "WORDNET_LICENSE.txt")
    print(f"{len(table)} words, {target.stat().st_size / 1e6:.2f} MB -> {target}")


if __name__ == "__main__":
    main()
