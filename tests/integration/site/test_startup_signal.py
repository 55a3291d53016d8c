"""Each app hooks its own start-up work; one failing step never stops the others."""

from __future__ import annotations

import logging

from core.signals import server_starting
from openprogram_site.startup import start_background_services


def test_every_app_connects_its_start_up_work_to_the_signal():
    uids = {lookup_key[0] for lookup_key, *_ in server_starting.receivers}
    assert {"tools_app.start", "chat_app.close_runs"} <= uids


def test_a_failing_start_up_step_is_logged_and_the_next_one_still_runs(caplog):
    ran = []

    def broken(**_signal):
        raise RuntimeError("catalog exploded")

    def after(**_signal):
        ran.append("after")

    server_starting.connect(broken, dispatch_uid="test.broken", weak=False)
    server_starting.connect(after, dispatch_uid="test.after", weak=False)
    # Only the two test receivers run: the real steps would start MCP servers.
    real = server_starting.receivers
    server_starting.receivers = [r for r in real if r[0][0] in ("test.broken", "test.after")]
    server_starting.sender_receivers_cache.clear()
    try:
        with caplog.at_level(logging.ERROR, logger="openprogram_site.startup"):
            start_background_services()
    finally:
        server_starting.receivers = real
        server_starting.disconnect(dispatch_uid="test.broken")
        server_starting.disconnect(dispatch_uid="test.after")
    assert ran == ["after"]
    assert "catalog exploded" in caplog.text
