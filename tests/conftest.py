"""Shared fixtures for the browser tests (toolchain guide section 5).

* ``site_url``: serves ``_build/html`` on 127.0.0.1 (a random free port) for the session.
* ``browser_type_launch_args``: pytest-playwright uses the Debian Chromium
  (``/usr/bin/chromium`` or ``$CHROMIUM``); ``playwright install`` is never needed.
* ``offline_page``: a Playwright page on which every non-loopback request is aborted and
  recorded in ``page.external_requests``; page errors go to ``page.page_errors`` and
  loopback responses with status >= 400 to ``page.bad_responses``.

Set ``GPULAB_REQUIRE_BOOK=1`` (``make test`` does) to turn "book not built" or "lab
missing" skips into failures.
"""
from __future__ import annotations

import functools
import http.server
import os
import shutil
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--no-first-run",
    "--no-default-browser-check", "--metrics-recording-only", "--mute-audio",
]
LOOPBACK_PREFIXES = ("http://127.0.0.1", "ws://127.0.0.1", "http://localhost",
                     "ws://localhost", "file://", "data:", "blob:", "about:")

# Browser-console noise that is known and harmless (toolchain guide sections 2 and 5).
# Empty: every page error fails the browser tests. (The duplicated sphinx-thebe tag that
# threw "Identifier 'THEBE_JS_URL' has already been declared" is written once since
# book/_templates/layout.html.)
KNOWN_PAGE_ERRORS: tuple[str, ...] = ()


def require_book() -> bool:
    return os.environ.get("GPULAB_REQUIRE_BOOK", "") not in ("", "0")


def skip_or_fail(reason: str):
    """Skip, or fail when GPULAB_REQUIRE_BOOK=1 (as under `make test`)."""
    if require_book():
        pytest.fail(f"{reason} (GPULAB_REQUIRE_BOOK=1, so this is a failure, not a skip)")
    pytest.skip(reason)


def pytest_configure(config):
    config.addinivalue_line("markers", "browser: needs the built book and headless Chromium")
    config.addinivalue_line(
        "markers", "jupyterlab: starts a real JupyterLab server and drives it with Chromium")
    # pytest-playwright 0.10 (via pytest-base-url) under pytest 9: harmless, see toolchain §5
    config.addinivalue_line(
        "filterwarnings",
        "ignore:Session-scoped fixtures defined as instance methods:pytest.PytestRemovedIn10Warning")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def html_dir() -> Path:
    if not (HTML / "index.html").exists():
        skip_or_fail("book not built: run `make book` first (_build/html/index.html missing)")
    return HTML


@pytest.fixture(scope="session")
def site_url(html_dir):
    handler = functools.partial(_QuietHandler, directory=str(html_dir))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):  # pytest-playwright hook
    if not Path(CHROMIUM).exists():
        skip_or_fail(f"Chromium not found at {CHROMIUM}: `apt-get install chromium`")
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


def make_offline(page):
    """Abort and record every non-loopback request; record page errors and HTTP errors."""
    page.external_requests = []
    page.page_errors = []
    page.bad_responses = []

    def route(r):
        url = r.request.url
        if url.startswith(LOOPBACK_PREFIXES):
            return r.continue_()
        page.external_requests.append(url)
        return r.abort()

    def on_error(err):
        text = str(err)
        if not any(k in text for k in KNOWN_PAGE_ERRORS):
            page.page_errors.append(text)

    def on_response(resp):
        if resp.status >= 400:
            page.bad_responses.append((resp.status, resp.url))

    page.route("**/*", route)
    page.on("pageerror", on_error)
    page.on("response", on_response)
    return page


@pytest.fixture(scope="session", name="skip_or_fail")
def _skip_or_fail_fixture():
    """The :func:`skip_or_fail` helper (skip, or fail under GPULAB_REQUIRE_BOOK=1)."""
    return skip_or_fail


@pytest.fixture(scope="session", name="make_offline")
def _make_offline_fixture():
    """The :func:`make_offline` helper, for tests that open their own pages."""
    return make_offline


@pytest.fixture
def offline_page(page):
    """A Playwright page with no network beyond 127.0.0.1 (see module docstring)."""
    return make_offline(page)


@pytest.fixture(autouse=True)
def _close_figures():
    """Close every matplotlib figure a test left open (only if pyplot is in use)."""
    yield
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")
