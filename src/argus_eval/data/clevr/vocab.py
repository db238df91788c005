"""CLEVR's attribute vocabulary, colours, answer set and synonyms (CLEVR v1.0 metadata and synonyms)."""

from __future__ import annotations

from typing import Final

SHAPES: Final = ("cube", "sphere", "cylinder")
COLORS: Final = ("gray", "red", "blue", "green", "brown", "purple", "cyan", "yellow")
SIZES: Final = ("large", "small")
MATERIALS: Final = ("rubber", "metal")
RELATIONS: Final = ("left", "right", "behind", "front")
ATTRIBUTES: Final = ("size", "color", "material", "shape")

VALUES: Final[dict[str, tuple[str, ...]]] = {
    "shape": SHAPES,
    "color": COLORS,
    "size": SIZES,
    "material": MATERIALS,
}

# CLEVR's properties.json colours (sRGB).
COLOR_RGB: Final[dict[str, tuple[int, int, int]]] = {
    "gray": (87, 87, 87),
    "red": (173, 35, 35),
    "blue": (42, 75, 215),
    "green": (29, 105, 20),
    "brown": (129, 74, 25),
    "purple": (129, 38, 192),
    "cyan": (41, 208, 208),
    "yellow": (255, 238, 51),
}

# World-space radius of each size (CLEVR: 0.7 and 0.35).
SIZE_RADIUS: Final[dict[str, float]] = {"large": 0.7, "small": 0.35}

MAX_COUNT: Final = 10

# The closed CLEVR answer vocabulary: 28 answers.
ANSWER_VOCAB: Final[tuple[str, ...]] = (
    "yes",
    "no",
    *(str(i) for i in range(MAX_COUNT + 1)),
    *COLORS,
    *SHAPES,
    *SIZES,
    *MATERIALS,
)

# CLEVR synonyms.json: the words a template may use for each value.
SYNONYMS: Final[dict[str, tuple[str, ...]]] = {
    "thing": ("thing", "object"),
    "sphere": ("sphere", "ball"),
    "cube": ("cube", "block"),
    "cylinder": ("cylinder",),
    "large": ("large", "big"),
    "small": ("small", "tiny"),
    "metal": ("metal", "metallic", "shiny"),
    "rubber": ("rubber", "matte"),
    "left": ("left of", "to the left of", "on the left side of"),
    "right": ("right of", "to the right of", "on the right side of"),
    "behind": ("behind",),
    "front": ("in front of",),
}

PLURALS: Final[dict[str, str]] = {
    "thing": "things",
    "object": "objects",
    "sphere": "spheres",
    "ball": "balls",
    "cube": "cubes",
    "block": "blocks",
    "cylinder": "cylinders",
}

NUMBER_WORDS: Final = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")

OPPOSITE: Final[dict[str, str]] = {"left": "right", "right": "left", "behind": "front", "front": "behind"}
