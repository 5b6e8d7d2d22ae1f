"""Debian's headless Chromium, driven by selenium through chromium-driver: the one way the
tests (the Lab page, the MCP App page) and `bench/lab_first_draw.py` start a browser."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

CHROMIUM = shutil.which("chromium")
DRIVER = shutil.which("chromedriver")
INSTALL = "apt-get install chromium chromium-driver (as root; `make test` does it where it can)"
MISSING = CHROMIUM is None or DRIVER is None


@contextmanager
def headless_chromium(window: str = "1400,1000", prefix: str = "nbc-") -> Iterator[Any]:
    """A webdriver on a fresh headless Chromium with a profile of its own, quit on the way
    out."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    with tempfile.TemporaryDirectory(prefix=prefix) as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in (
            "--headless=new",
            "--no-sandbox",
            "--disable-dev-shm-usage",
            f"--window-size={window}",
            "--disable-crash-reporter",
            "--disable-breakpad",
            f"--user-data-dir={profile}",
        ):
            options.add_argument(flag)
        # The page's console, for a test to read (driver.get_log("browser")).
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        # Chromium keeps crash reports and caches under XDG dirs even with a profile dir.
        home = {"XDG_CONFIG_HOME": profile, "XDG_CACHE_HOME": profile}
        service = Service(DRIVER, env={**os.environ, **home})
        driver = webdriver.Chrome(service=service, options=options)
        try:
            yield driver
        finally:
            driver.quit()
