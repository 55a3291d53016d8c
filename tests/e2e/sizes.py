"""The two window sizes every page is walked at: a laptop and a phone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
SIZES = pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["1280x800", "390x844"])


def sized_page(browser, size: dict[str, int]) -> Iterator:
    """A fresh context at ``size`` (touch and mobile layout for the phone)."""
    phone = size["width"] < 500
    context = browser.new_context(
        viewport=size, is_mobile=phone, has_touch=phone, device_scale_factor=1
    )
    context.set_default_timeout(15_000)
    try:
        yield context.new_page()
    finally:
        context.close()
