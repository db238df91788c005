"""The null model (models/null.py): deterministic, name-dependent, free, and its sleep is counted."""

from __future__ import annotations

import numpy as np

from argus_eval.models.loading import load_model
from argus_eval.models.null import NullModel
from argus_eval.models.protocols import EMBED, GENERATE
from argus_eval.models.spec import ModelConfig


def _images() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.integers(0, 256, (12, 16, 3), dtype=np.uint8) for _ in range(3)]


def test_null_model_is_deterministic_and_differs_by_name() -> None:
    a1 = load_model(ModelConfig(name="a", spec="null:a"))
    a2 = load_model(ModelConfig(name="a", spec="null:a"))
    b = load_model(ModelConfig(name="b", spec="null:b"))
    assert isinstance(a1, NullModel) and isinstance(a2, NullModel) and isinstance(b, NullModel)
    assert a1.info.capabilities == frozenset({EMBED, GENERATE})
    ims = _images()
    ea, eb = a1.embed_images(ims), b.embed_images(ims)
    np.testing.assert_array_equal(ea, a2.embed_images(ims))
    assert not np.array_equal(ea, eb)
    np.testing.assert_allclose(np.linalg.norm(ea, axis=1), 1.0, rtol=1e-6)
    t = a1.embed_texts(["a red cube", "two spheres"])
    assert t.shape == (2, ea.shape[1])
    assert a1.generate(ims, ["q1", "q2", "q3"], 2) == a2.generate(ims, ["q1", "q2", "q3"], 2)
    assert all(len(s.split()) == 1 for s in a1.generate(ims, ["q1", "q2", "q3"], 2))


def test_null_model_sleep_is_counted() -> None:
    m = load_model(ModelConfig(name="s", spec="null:s", options={"sleep_ms": 5}))
    assert isinstance(m, NullModel)
    m.embed_images(_images())
    m.embed_texts(["x"])
    assert m.forward_calls == 2
    assert m.sleep_s_total >= 0.009
