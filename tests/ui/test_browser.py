"""The Chromium driver the UI tests and bench/tools/ui_screenshots.py share: a wait that a
navigation overtakes is asked again in the new document (a click that opens a page, then a wait
for it, failed the bench smoke test once with "Inspected target navigated or closed").
Skipped when no Chromium is installed."""

from __future__ import annotations

import pytest

from tests.ui.browser import Browser, find_chromium


def test_a_wait_overtaken_by_a_navigation_is_asked_again() -> None:
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium binary: install Debian's chromium package (or set POLYG_CHROMIUM) to run this")
    with Browser(chromium) as browser:
        page = browser.new_page()
        page.goto("data:text/html,<p>first</p>")
        # The first evaluation leaves the page and answers only after that: the navigation
        # always overtakes it. The second one runs in the new page, and is true there.
        leave_once = (
            "location.href === 'about:blank' || new Promise(() => setTimeout(() => location.replace('about:blank'), 0))"
        )
        assert page.wait_for(leave_once) is True
