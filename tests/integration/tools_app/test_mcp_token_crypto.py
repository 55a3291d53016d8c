"""MCP OAuth tokens are sealed under a key derived from SECRET_KEY, and only it opens them."""

from __future__ import annotations

import pytest
from django.test import override_settings

from tools_app.mcp.token_crypto import TokenSealError, seal, unseal

OLD = "o" * 40
NEW = "n" * 40


def test_a_sealed_value_opens_to_what_was_sealed_and_does_not_show_it() -> None:
    sealed = seal({"access_token": "tok-123", "refresh_token": "ref-456"})

    assert "tok-123" not in sealed and "ref-456" not in sealed
    assert unseal(sealed) == {"access_token": "tok-123", "refresh_token": "ref-456"}


def test_another_deployments_secret_cannot_open_it() -> None:
    with override_settings(SECRET_KEY=OLD, SECRET_KEY_FALLBACKS=[]):
        sealed = seal({"access_token": "tok"})
    with (
        override_settings(SECRET_KEY=NEW, SECRET_KEY_FALLBACKS=[]),
        pytest.raises(TokenSealError, match="cannot be opened"),
    ):
        unseal(sealed)


def test_a_rotated_secret_still_opens_old_seals_through_the_fallbacks() -> None:
    with override_settings(SECRET_KEY=OLD, SECRET_KEY_FALLBACKS=[]):
        sealed = seal({"access_token": "tok"})
    with override_settings(SECRET_KEY=NEW, SECRET_KEY_FALLBACKS=[OLD]):
        assert unseal(sealed) == {"access_token": "tok"}


@pytest.mark.parametrize("garbage", ["", "not-a-seal", "gAAAAA" + "x" * 40])
def test_garbage_is_refused_with_a_clear_error(garbage: str) -> None:
    with pytest.raises(TokenSealError):
        unseal(garbage)
