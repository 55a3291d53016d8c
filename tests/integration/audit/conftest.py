"""The chat tests' fixtures (sockets, session cookies, deterministic tools), shared here."""

from tests.integration.chat_app.conftest import (  # noqa: F401 - fixtures
    alice_cookie,
    asgi_application,
    chat_tools,
    fresh_channel_layer,
    no_leftover_turns,
)
