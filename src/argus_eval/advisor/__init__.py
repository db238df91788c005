"""Deployment advisor: from a results.json to a model choice under stated constraints."""

from __future__ import annotations

from argus_eval.advisor.advice import Advice, advise
from argus_eval.advisor.constraints import Constraints, parse_weights
from argus_eval.advisor.profiles import standard_profiles

__all__ = ["Advice", "Constraints", "advise", "parse_weights", "standard_profiles"]
