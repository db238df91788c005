"""Generated answers: the template-token rule, the answer-format rate and the claims a low rate withholds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from answer_fixtures import format_run_config, parses_line
from argus_eval.data.types import Sample
from argus_eval.models.zoo_store import CHECKPOINTS
from argus_eval.runner.plan.cell_keys import cell_key
from argus_eval.scoring.cells import mean_cell
from argus_eval.scoring.options import ScoringOptions
from argus_eval.scoring.scorecard import bootstrap_scorecard
from argus_eval.scoring.types import CellData
from argus_eval.tasks.answers import clean_generated, parses


@pytest.mark.parametrize(
    ("raw", "text", "removed"),
    [
        ("<|im_start|> assistantsphere", "sphere", 1),  # transformers serve of the zoo's Qwen2.5-VL
        ("<|im_start|>assistant\na red cube<|im_end|>", "a red cube", 2),
        ("<start_of_turn>model\nyes<end_of_turn>", "yes", 2),
        ("<|start_header_id|>assistant<|end_header_id|>\n\nno<|eot_id|>", "no", 3),
        ("<s> two </s>", "two", 2),
        ("red<|im_sep|>cube", "red cube", 1),
        ("<|turn>model\nblue<turn|>", "blue", 2),
        ("  a cube  behind\tit ", "  a cube  behind\tit ", 0),  # no token: the answer as it is
        ("user manual <b>bold</b> x < y > z", "user manual <b>bold</b> x < y > z", 0),
    ],
)
def test_template_tokens_and_their_role_name_are_removed(raw: str, text: str, removed: int) -> None:
    got = clean_generated(raw)
    assert (got.text, got.removed) == (text, removed)


@pytest.mark.parametrize("name", ["gemma3", "qwen2_5_vl"])
def test_cleaning_a_raw_decode_gives_the_tokenizers_own_skip_special_decode(name: str) -> None:
    """What a server that decodes prompt and answer with their special tokens sends, cleaned, is what the
    checkpoint's tokenizer decodes with skip_special_tokens (the in-process answer)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(CHECKPOINTS / name)
    added = json.loads((CHECKPOINTS / name / "tokenizer.json").read_text())["added_tokens"]
    specials = [t["content"] for t in added]
    prompt = tok.apply_chat_template(
        [{"role": "user", "content": "what color is the cube?"}], add_generation_prompt=True, tokenize=False
    )
    prefix = tok(prompt, add_special_tokens=False)["input_ids"]
    for answer in ["sphere", "a red cube is left of a gray sphere .", "2", "yes"]:
        ids = tok(answer, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        turn, said = tok.decode(prefix[-3:]), tok.decode(ids)  # one sequence each: a str each
        assert isinstance(turn, str) and isinstance(said, str)
        raw = turn + said  # the prompt's last turn, then the answer
        assert any(s in raw for s in specials)
        plain = tok.decode(ids, skip_special_tokens=True)
        assert isinstance(plain, str)
        assert clean_generated(raw).text == plain.strip()


def _q(kind: str | None = None, choices: tuple[str, ...] = ()) -> Sample:
    meta = {} if kind is None else {"answer_type": kind}
    return Sample("q", "i.png", question="?", choices=choices, answers=("x",), metadata=meta)


@pytest.mark.parametrize(
    ("sample", "answer", "ok"),
    [
        (_q("yes/no"), "Yes.", True),
        (_q("yes/no"), "maybe", False),
        (_q("number"), "two", True),
        (_q("number"), "12", True),
        (_q("number"), "many", False),
        (_q("color"), "Red", True),
        (_q("color"), "cube", False),
        (_q("shape"), "<|im_start|> assistantsphere", False),  # what an uncleaned served answer was
        (_q("other"), "on the table", True),
        (_q(None), "anything", True),
        (_q(None), " . ", False),
        (_q(None, ("a cat", "a dog")), "a dog", True),
        (_q(None, ("a cat", "a dog")), "C", False),
        (Sample("q", "i.png", question="?", answers=("x",), metadata={"question_type": "count"}), "3", True),
    ],
)
def test_an_answer_parses_to_its_questions_type(sample: Sample, answer: str, ok: bool) -> None:
    assert parses(sample, answer) is ok


N = 120
IDS = [f"s{i:03d}" for i in range(N)]


def _cell(
    model: str, dataset: str, p: float, seed: int, rate: float | None, condition: str = "clean"
) -> CellData:
    scores = (np.random.default_rng(seed).random(N) < p).astype(float)
    cell = mean_cell(cell_key(model, "reasoning", dataset, condition), IDS, scores)
    cell.format_rate = rate
    return cell


def test_a_cell_below_the_format_threshold_makes_no_claim() -> None:
    # A's answers are far better than B's and C's; B's second cell mostly lacks the asked-for form.
    cells = [
        _cell("A", "d1", 0.9, 1, 1.0),
        _cell("A", "d2", 0.9, 2, 0.95),
        _cell("B", "d1", 0.2, 3, 0.9),
        _cell("B", "d2", 0.0, 4, 0.1),
        _cell("C", "d1", 0.2, 5, None),  # not generative: no rate, never gated
        _cell("C", "d2", 0.2, 6, None),
        # under a perturbation a wrong answer type is what robustness measures: never gated
        _cell("A", "d1", 0.5, 7, 0.0, "text:typos@5"),
        _cell("C", "d1", 0.1, 8, None, "text:typos@5"),
    ]
    gated = bootstrap_scorecard(cells, {}, ScoringOptions(resamples=200))
    free = bootstrap_scorecard(cells, {}, ScoringOptions(resamples=200, min_format_rate=0.0))
    assert {"axis": "capability", "above": "A", "below": "B", "p": 1.0} in [
        c.model_dump() for c in free.comparison.claims
    ]
    pairs = {(c.above, c.below) for c in gated.comparison.claims}
    assert ("A", "B") not in pairs and ("B", "A") not in pairs and ("B", "C") not in pairs
    assert ("A", "C") in pairs  # a pair that reads no low cell keeps its claims
    withheld = gated.comparison.withheld
    assert [w.models for w in withheld] == [("A", "B"), ("B", "C")]
    assert withheld[0].reason == (
        "B reasoning/d2: answer-format rate 0.100 below 0.5 (scoring.min_format_rate), "
        "so the cell makes no claim"
    )
    assert not any(t.models == ("A", "B") for t in gated.comparison.ties)  # withheld is not a tie
    # A is above C but has no claim about B, whose cells it shares: it does not lead.
    assert "A leads overall" in str(free.gap.sentence)
    assert "leads overall" not in str(gated.gap.sentence)
    assert "No claim about A and B; B and C" in str(gated.gap.sentence)
    assert gated.rankings.ranks("capability")["B"] == 1  # nobody is claimed above it
    assert gated.scoring_options.min_format_rate == 0.5


def test_a_pair_both_incomplete_and_withheld_is_held_once_and_listed_under_each_gate() -> None:
    # B's d2 is below the format threshold and B scored only 100 of its 120 clean d1 samples
    b_short = mean_cell(cell_key("B", "reasoning", "d1", "clean"), IDS[:100], np.zeros(100))
    b_short.format_rate = 0.9
    cells = [
        _cell("A", "d1", 0.9, 1, 1.0),
        _cell("A", "d2", 0.9, 2, 0.95),
        b_short,
        _cell("B", "d2", 0.0, 4, 0.1),
    ]
    planned = {c.key: N for c in cells}
    sc = bootstrap_scorecard(cells, {}, ScoringOptions(resamples=200), planned=planned)
    block = sc.comparison
    assert [i.models for i in block.incomplete] == [("A", "B"), ("A", "B")]  # capability and overall
    assert [w.models for w in block.withheld] == [("A", "B")]  # once: the gate holds both axes
    assert block.claims == [] and block.ties == [] and block.not_comparable == []
    assert sc.rankings.share("P", "A", "B") == 1.0  # the share is still computed and shown
    assert sc.rankings.ranks("capability") == {"A": 1, "B": 1}
    sentence = str(sc.gap.sentence)
    assert "Incomplete (a model did not score its shared cells; no claim): A and B." in sentence
    assert "No claim about A and B (a cell's answers mostly lack the asked-for form)." in sentence
    assert block.no_claim("B", "A", "capability") == ("incomplete", block.incomplete[0].reason)
    # complete, the pair is still withheld; then the matrices mark the share "no claim"
    whole = [c for c in cells if c is not b_short] + [_cell("B", "d1", 0.2, 3, 0.9)]
    full = bootstrap_scorecard(whole, {}, ScoringOptions(resamples=200)).comparison
    assert full.incomplete == []
    assert full.no_claim("A", "B", "overall") == ("no claim", full.withheld[0].reason)


def _run_config(cache: Path, min_format_rate: float) -> dict[str, Any]:
    return format_run_config(cache, "format", 8, [], {"resamples": 200, "min_format_rate": min_format_rate})


def test_a_run_reports_the_rate_and_withholds_the_claims_of_a_low_cell(tmp_path: Path) -> None:
    from argus_eval.report.build import write_reports
    from argus_eval.runner.config import parse_config
    from argus_eval.runner.pipeline import run

    out = tmp_path / "out"
    first = run(parse_config(_run_config(tmp_path / "cache", 0.5), "t"), out, quiet=True)
    lines = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    results = json.loads((out / "results.json").read_text())
    cells = {c["model"]: c for c in results["cells"]}
    for model, cell in cells.items():
        mine = [ln for ln in lines if ln["model"] == model]
        parsed = [parses_line(ln) for ln in mine]
        assert [ln["answer_parsed"] for ln in mine] == parsed
        assert cell["answers_parsed"] == sum(parsed)
        assert cell["answer_format_rate"] == pytest.approx(sum(parsed) / len(mine))
    assert cells["zoo"]["answer_format_rate"] >= 0.5 > cells["random"]["answer_format_rate"]
    assert results["scoring_options"]["min_format_rate"] == 0.5
    (w,) = results["comparison"]["withheld"]
    assert w["models"] == ["random", "zoo"] and "random reasoning/studio:" in w["reason"]
    assert results["comparison"]["claims"] == []
    write_reports(out)
    summary = (out / "summary.md").read_text()
    rate = f"{cells['random']['answer_format_rate']:.3f} !"
    assert rate in summary and "random and zoo: no claim" in summary
    assert "(no claim)" in summary  # the P(beats) matrices show the share, with no claim from it

    # The same records scored without the gate (no model call): the zoo model is claimed above.
    again = run(parse_config(_run_config(tmp_path / "cache", 0.0), "t"), out, quiet=True)
    assert again.stats.forward_calls == 0 and first.stats.forward_calls > 0
    claims = json.loads((out / "results.json").read_text())["comparison"]["claims"]
    assert {(c["above"], c["below"]) for c in claims} == {("zoo", "random")}
