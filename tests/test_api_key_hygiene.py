"""An API key as users keep it: one read from a file ends in a newline (sent without it), and one holding a
character no HTTP header can carry fails its samples with a line naming the variable, never the key."""

from __future__ import annotations

import numpy as np
import pytest

from api_server import ServerState, serve
from argus_eval.errors import ModelCallError
from argus_eval.models.api import OpenAICompatibleModel
from argus_eval.models.spec import ModelConfig

SECRET = "sk-SECRET123"


def _model(url: str) -> OpenAICompatibleModel:
    cfg = ModelConfig(
        name="m", spec=f"api:{url}#tiny", options={"adaptive": False, "api_key_env": "ARGUS_TEST_KEY"}
    )
    return OpenAICompatibleModel(cfg, f"{url}#tiny", "fp")


def _image() -> np.ndarray:
    return np.zeros((8, 8, 3), np.uint8)


def test_a_key_ending_in_a_newline_is_sent_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_TEST_KEY", SECRET + "\n")
    with serve(ServerState()) as url:
        model = _model(url)
        try:
            [answer] = model.generate([_image()], ["what?"], 8)
        finally:
            model.close()
    # the server echoes the Authorization it received; the adapter masks the key in what it keeps
    assert "Bearer ***" in answer and SECRET not in answer and "\\n" not in answer


@pytest.mark.parametrize("bad", [SECRET[:5] + "\n" + SECRET[5:], SECRET + "\x7f", SECRET + "é"])
def test_a_key_a_header_cannot_carry_is_named_by_its_variable_only(
    monkeypatch: pytest.MonkeyPatch, bad: str
) -> None:
    monkeypatch.setenv("ARGUS_TEST_KEY", bad)
    state = ServerState()
    with serve(state) as url:
        model = _model(url)
        try:
            with pytest.raises(ModelCallError) as err:
                model.generate([_image()], ["what?"], 8)
        finally:
            model.close()
    text = str(err.value)
    assert "$ARGUS_TEST_KEY" in text and "cannot carry" in text
    assert SECRET not in text and SECRET[5:] not in text
    assert state.requests == 0  # never sent
