"""Column maps of the lmms-lab layouts that lmms-eval reads, for the `hf_datasets` format's `preset`.

Each preset gives `columns` (sample fields) and `metadata` (metadata keys, dotted for nesting) as column
paths (data/loaders/columns.py); an entry's own `columns` and `metadata` override the preset's per key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from argus_eval.registry import Registry


@dataclass(frozen=True)
class Preset:
    """The column map of one layout."""

    columns: Mapping[str, str]
    metadata: Mapping[str, str]


PRESETS: Registry[Preset] = Registry("hf_datasets preset", base=Preset)

# lmms-lab/VQAv2: ten annotators' answers per question (list of {answer, answer_confidence, answer_id}),
# so VQA accuracy applies; the answer type gives the official yes/no, number, other breakdown.
PRESETS.register(
    "lmms-vqav2",
    Preset(
        columns={
            "id": "question_id",
            "image": "image",
            "question": "question",
            "answers": "answers[].answer",
        },
        metadata={
            "image_id": "image_id",
            "question_type": "question_type",
            "answer_type": "answer_type",
            "family": "answer_type",
            "multiple_choice_answer": "multiple_choice_answer",
            "categories.answer_type": "answer_type",
        },
    ),
)
# lmms-lab/flickr30k: one row per image, its five captions in `caption`.
PRESETS.register(
    "lmms-flickr30k",
    Preset(
        columns={"id": "img_id", "image": "image", "texts": "caption"},
        metadata={"filename": "filename"},
    ),
)
# lmms-lab/COCO-Caption2017: `question_id` is the image's file name; the sample id is the COCO image id in it.
PRESETS.register(
    "lmms-coco-caption2017",
    Preset(
        columns={"id": "question_id|file_number", "image": "image", "texts": "answer"},
        metadata={"file_name": "question_id"},
    ),
)
