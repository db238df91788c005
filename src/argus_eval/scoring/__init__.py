"""The ARGUS axes (P, CDC, RR, E), the overall score, rankings and bootstrap statistics."""

from argus_eval.scoring.axes import cdc, cdc_cv
from argus_eval.scoring.cells import mean_cell, ratio_cell, ratio_of_sums
from argus_eval.scoring.options import AxisWeights, EfficiencyBudgets, ScoringOptions
from argus_eval.scoring.ranking import RankingComparison, compare_rankings, gap_sentence, rank_models
from argus_eval.scoring.scorecard import bootstrap_scorecard, compute_scorecard
from argus_eval.scoring.types import AxisValue, CellData, CellKey

__all__ = [
    "AxisValue",
    "AxisWeights",
    "CellData",
    "CellKey",
    "EfficiencyBudgets",
    "RankingComparison",
    "ScoringOptions",
    "bootstrap_scorecard",
    "cdc",
    "cdc_cv",
    "compare_rankings",
    "compute_scorecard",
    "gap_sentence",
    "mean_cell",
    "rank_models",
    "ratio_cell",
    "ratio_of_sums",
]
