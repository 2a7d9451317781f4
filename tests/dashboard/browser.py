"""Headless Chromium for the browser tests: Debian's `chromium` and `chromium-driver`
packages driven by Selenium. `.ci/run` installs them when missing.

Outside CI, a machine without them skips the browser tests with the reason; under
`ROTA_REQUIRE_POSTGRES=1` (CI) that is a failure, so CI never passes without them.
Screenshots go to tests/output/screenshots/ (gitignored).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMEDRIVER = Path("/usr/bin/chromedriver")
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--window-size=1400,1000",
)
SCREENSHOTS = Path(__file__).resolve().parents[1] / "output" / "screenshots"


def chromium_binary() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


def missing_reason() -> str | None:
    if chromium_binary() is None or not CHROMEDRIVER.exists():
        return ("headless Chromium is not installed: apt-get install chromium "
                "chromium-driver (.ci/run does it)")
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (it is in the dev extra)"
    return None


def require_browser() -> None:
    reason = missing_reason()
    if reason is None:
        return
    if os.environ.get("ROTA_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"browser tests must run in CI: {reason}")
    pytest.skip(reason)


def open_driver() -> Iterator[object]:
    """A Selenium Chrome driver on headless Chromium with a fresh profile; quit after."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="rota-chromium-")
    options = webdriver.ChromeOptions()
    binary = chromium_binary()
    assert binary is not None
    options.binary_location = binary
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def screenshot_path(name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS / f"{name}.png"
