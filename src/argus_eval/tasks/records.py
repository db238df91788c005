"""Record: one sample's raw model output in one cell, as the store keeps it (before scoring)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Record:
    """One sample's raw model output in one cell (before scoring)."""

    sample_id: str
    output: dict[str, Any] | None
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0
