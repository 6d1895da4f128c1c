"""A real headless Chromium (Debian's package) driven by Playwright; no browser download.

Outside CI a machine without Chromium skips the suite; in CI (CI=true) it fails, because
`.ci/run` installs Chromium and a silent skip would hide a broken install.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM = os.environ.get("TAU_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        message = f"Chromium not found at {CHROMIUM}: apt-get install chromium (.ci/run does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        try:
            yield browser
        finally:
            browser.close()


class Watched:
    """A page with every request, console error and page error recorded."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.requests: list[str] = []
        self.console_errors: list[str] = []
        self.page_errors: list[str] = []
        self.dialogs: list[str] = []
        page.on("request", lambda r: self.requests.append(r.url))
        page.on(
            "console",
            lambda m: self.console_errors.append(m.text) if m.type == "error" else None,
        )
        page.on("pageerror", lambda e: self.page_errors.append(str(e)))
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))

    def assert_clean(self) -> None:
        assert self.page_errors == []
        assert self.console_errors == []


@pytest.fixture
def watched(browser: Any) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        yield Watched(context.new_page())
    finally:
        context.close()
