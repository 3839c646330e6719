"""The Chromium driver the UI tests and bench/tools/ui_screenshots.py share: a wait that a
navigation overtakes is asked again in the new document (a click that opens a page, then a wait
for it, failed the bench smoke test once with "Inspected target navigated or closed"); each page
keeps the exceptions its own scripts throw (the tests share one browser and assert that their
page threw none). The browser and the page come from tests/ui/conftest.py; skipped when no
Chromium is installed."""

from __future__ import annotations

from tests.ui.browser import Browser, Page


def test_a_wait_overtaken_by_a_navigation_is_asked_again(page: Page) -> None:
    page.goto("data:text/html,<p>first</p>")
    # The first evaluation leaves the page and answers only after that: the navigation
    # always overtakes it. The second one runs in the new page, and is true there.
    leave_once = (
        "location.href === 'about:blank' || new Promise(() => setTimeout(() => location.replace('about:blank'), 0))"
    )
    assert page.wait_for(leave_once) is True


def test_a_page_keeps_the_exceptions_it_throws_and_no_other_pages(browser: Browser) -> None:
    thrower, bystander = browser.new_page(), browser.new_page()
    try:
        # The throw runs in a timer queued before the one that answers the evaluation, and the
        # browser reports it on the pipe before that answer: it is in the list when this returns.
        thrower.evaluate(
            "setTimeout(() => { throw new Error('thrown by the page') }, 0); new Promise((done) => setTimeout(done, 0))"
        )
        assert len(thrower.exceptions) == 1 and "thrown by the page" in thrower.exceptions[0]
        assert bystander.exceptions == []
    finally:
        thrower.close()
        bystander.close()
