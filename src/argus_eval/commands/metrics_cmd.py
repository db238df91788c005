"""`argus score-captions`: COCO-format caption results scored like pycocoevalcap's COCOEvalCap."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table


def score_captions_command(results: Path, annotations: Path, as_json: bool, console: Console) -> None:
    from argus_eval.data.coco_results import load_coco_caption_results
    from argus_eval.metrics.caption import score_captions

    cands, refs = load_coco_caption_results(results, annotations)
    scores = score_captions(cands, refs)
    if as_json:
        sys.stdout.write(json.dumps(scores, indent=1, sort_keys=True) + "\n")
        return
    table = Table(title=f"{results.name} against {annotations.name} ({len(cands)} images)")
    table.add_column("metric")
    table.add_column("score", justify="right")
    for k, v in scores.items():
        if isinstance(v, float):
            table.add_row(k, f"{v:.6f}")
    console.print(table)
    for metric, reason in scores.get("skipped", {}).items():
        console.print(f"[yellow]skipped {metric}:[/] {reason}", highlight=False)
