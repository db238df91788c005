"""Test-wide settings: offline hubs, deterministic threads."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # after the environment above, which must come before any other import

pytest_plugins = ["frcnn_fixtures"]  # fixtures shared by the frcnn run tests (detector, detected)

# The slow lane: modules whose tests took 3 s or more in all (`pytest --durations=0` of the full suite on
# a 2-core machine; Ray clusters, METEOR JVMs, served models, the zoo's batch invariance, browsers). They
# carry the `slow` marker, so `pytest -m "not slow"` is the quick lane (every wing still has tests
# there: the architecture checks, data, metrics, models, perturb, runner, scoring, report, advisor).
SLOW_MODULES = frozenset(
    {
        "test_batch_invariance_tiny",
        "test_batch_invariance_zoo",
        "test_composite_models",
        "test_efficiency_generation",
        "test_failures_loading",
        "test_failures_pipeline",
        "test_frcnn_config",
        "test_hardening_api",
        "test_hardening_errors",
        "test_hardening_fuzz",
        "test_hardening_ray",
        "test_hardening_strict",
        "test_hardening_transport",
        "test_hostile_meteor",
        "test_hostile_plugins",
        "test_judge",
        "test_metrics_caption",
        "test_metrics_meteor_pool",
        "test_metrics_meteor_server",
        "test_models_api",
        "test_perturb_image",
        "test_pipeline",
        "test_pipeline_families",
        "test_python_entry",
        "test_ray_executor",
        "test_ray_standalone",
        "test_report_browser",
        "test_report_build",
        "test_report_samples_pass",
        "test_served_in_flight",
        "test_served_models",
        "test_served_usage",
        "test_sizing",
        "test_sizing_profile",
        "test_threads",
        "test_timing_model_loads",
        "test_timing_trials",
        "test_zoo_blip_heads",
        "test_zoo_build",
        "test_zoo_isolation",
        "test_zoo_training",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of a SLOW_MODULES module slow."""
    for item in items:
        if (
            isinstance(item, pytest.Function)
            and item.module is not None
            and item.module.__name__ in SLOW_MODULES
        ):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _fresh_caption_parts() -> None:
    """Each test scores captions as a fresh process would: the PTB tokens and METEOR segment scores a
    process keeps (metrics/_ptb.py, metrics/meteor_segments.py) would otherwise let one test's captions
    change what another exercises."""
    from argus_eval.metrics import _ptb, meteor_segments

    _ptb.forget_tokens()
    meteor_segments.forget_segments()
