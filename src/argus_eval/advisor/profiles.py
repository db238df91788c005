"""Standard deployment profiles for a report section: a server GPU, an edge GPU and a CPU board.

The limits are interactive-use budgets chosen for this project (not from the paper): a server answers
well inside a web request, an edge GPU inside half a second, a CPU board inside two seconds; the memory
limits are the devices' own memory sizes, so a model that cannot be loaded there is excluded.
"""

from __future__ import annotations

from argus_eval.advisor.constraints import Constraints


def standard_profiles() -> list[Constraints]:
    """Server GPU (H100 SXM), edge GPU (Jetson Nano) and CPU board (Raspberry Pi 5), run's own weights."""
    return [
        Constraints(label="server GPU (H100)", device="h100-sxm", max_latency_ms=100.0, max_memory_gb=80.0),
        Constraints(
            label="edge GPU (Jetson Nano)", device="jetson-nano", max_latency_ms=500.0, max_memory_gb=4.0
        ),
        Constraints(
            label="CPU board (Raspberry Pi 5)",
            device="raspberry-pi-5",
            max_latency_ms=2000.0,
            max_memory_gb=8.0,
        ),
    ]
