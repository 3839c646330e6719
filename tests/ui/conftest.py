"""One headless Chromium for every browser test of tests/ui (each start cost ~1 s of CPU; a run
started four), and a fresh page in a browser context of its own for each test, closed after it.
Under xdist the package's modules are one scope (tests/conftest.py), so one worker starts it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.ui.browser import Browser, Page, find_chromium


@pytest.fixture(scope="package")
def chromium() -> str:
    found = find_chromium()
    if found is None:
        pytest.skip("no Chromium binary: install Debian's chromium package (or set POLYG_CHROMIUM) to run these")
    return found


@pytest.fixture(scope="package")
def browser(chromium: str) -> Iterator[Browser]:
    with Browser(chromium) as b:
        yield b


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    # A browser that died in an earlier test fails the rest at once, not after a command timeout each.
    if browser.proc.poll() is not None:
        pytest.fail(f"the shared Chromium exited (status {browser.proc.returncode}) in an earlier test")
    fresh = browser.new_page()
    yield fresh
    fresh.close()
