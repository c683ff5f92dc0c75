"""What ``/v1`` answers while no valid config is loaded."""

import pytest

from inference.neutral.errors import ApiError
from inference.turn.preparation import live_config


def test_v1_without_a_valid_config_never_echoes_its_problems() -> None:
    problems = ["providers.openai.api_key: sk-secret-0123456789abcdef is broken"]

    with pytest.raises(ApiError) as raised:
        live_config(None, problems)

    assert raised.value.status == 503
    assert "sk-secret" not in str(raised.value.message) and "api_key" not in raised.value.message
    assert "server log" in raised.value.message
