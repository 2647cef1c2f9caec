"""Shared set-up of the JupyterLab browser tests (test_jupyterlab.py, test_lab_values.py).

* ``lab_server`` (module scope): a JupyterLab server on 127.0.0.1 (free port, random token)
  whose root is a temporary copy of ``labs/``, with every Jupyter / IPython user directory
  pointed at a temporary folder (no user state leaks in or out; autosave off); yields
  ``(base_url, token, root)`` and stops the server and its kernels afterwards.
* ``lab_ui`` (session scope): the helpers that drive a notebook in that server: wait for its
  kernel to be idle, *Run → Run All Cells*, find a control of an explorer by its label and move
  it, shut the notebook's kernel down; and the JavaScript predicates they use.
* ``scroll_images`` (session scope): scroll a built-book page through its images and wait,
  bounded, for them to finish loading (test_book_html.py, test_page_weight.py).
"""
from __future__ import annotations

import json
import re
import shutil
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest
from labserver import jupyterlab

LABS = Path(__file__).resolve().parents[2] / "labs"

LAB_SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    # render every cell (JupyterLab 4 virtualises long notebooks otherwise)
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false",
                                                     "checkForUpdates": False},
}


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory):
    """A JupyterLab server on a temporary copy of labs/; yields (base_url, token, root)."""
    tmp = tmp_path_factory.mktemp("jupyterlab")
    root = tmp / "labs"
    shutil.copytree(LABS, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    with jupyterlab(root, tmp, user_settings=LAB_SETTINGS) as (base, token, _log):
        yield base, token, root


def wait_for_kernel_idle(page, base: str, token: str, notebook: str, timeout: float) -> None:
    """Wait until the server has a kernel for ``notebook`` and that kernel is idle.

    Sleeps with ``page.wait_for_timeout``: Playwright's sync API serves the page's routed
    requests only while one of its calls runs, so ``time.sleep`` would stall the page.
    """
    deadline = time.monotonic() + timeout
    state = "no session"
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{base}/api/sessions?token={token}", timeout=5) as r:
            sessions = json.load(r)
        for sess in sessions:
            if sess.get("path") == notebook and sess.get("kernel"):
                state = sess["kernel"].get("execution_state")
                if state == "idle":
                    return
        page.wait_for_timeout(300)
    pytest.fail(f"{notebook}: kernel not idle after {timeout} s (last state: {state})")


# Run All has finished: no cell is queued or running ("[*]") and the last code cell with a
# visible prompt has an execution count (cells whose source is hidden show an empty prompt);
# or an error output appeared (Run All stops there; the caller reports it).
ALL_RUN_JS = """
() => {
  const panel = ".jp-NotebookPanel:not(.lm-mod-hidden) ";
  const errors = Array.from(document.querySelectorAll(panel + ".jp-OutputArea-output"))
    .some(o => /Traceback/.test(o.innerText));
  if (errors) return true;
  const prompts = Array.from(document.querySelectorAll(panel + ".jp-CodeCell .jp-InputPrompt"))
    .map(p => p.textContent.trim());
  if (prompts.some(t => t.includes("*"))) return false;
  const shown = prompts.filter(t => t !== "");
  return shown.length > 0 && /\\[\\s*\\d+\\s*\\]/.test(shown[shown.length - 1]);
}
"""

KERNEL_IDLE_JS = """
() => {
  const ind = document.querySelector(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator");
  if (ind && ind.dataset && ind.dataset.status) return ind.dataset.status === "idle";
  const s = document.querySelector(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-KernelStatus, .jp-Toolbar-kernelStatus");
  return !s || /idle/i.test(s.getAttribute("title") || s.textContent || "idle");
}
"""

OUTPUT_PROBLEMS_JS = """
() => Array.from(document.querySelectorAll(".jp-OutputArea-output"))
  .map(o => o.innerText)
  .filter(t => /Traceback|Error displaying widget|Failed to load model class|Error rendering/.test(t))
  .map(t => t.slice(0, 2000))
"""


def find_control(page, area, label):
    return area.locator(".widget-inline-hbox").filter(
        has=page.locator(".widget-label", has_text=re.compile(rf"^\s*{re.escape(label)}\s*$")))


def move(page, area, label, how) -> str:
    """Move the control labelled ``label`` in ``area``; return what was done."""
    control = find_control(page, area, label).first
    if how == "select":
        select = control.locator("select").first
        n = select.locator("option").count()
        current = select.evaluate("s => s.selectedIndex")
        select.select_option(index=(current + 1) % n)
        return f"{label}: option {current} -> {(current + 1) % n}"
    handle = control.locator(".noUi-handle, [role='slider'], input[type='range']").first
    handle.focus()
    key = "ArrowRight" if how == "right" else "ArrowLeft"
    handle.press(key)
    return f"{label}: {key}"


def shut_down_kernel(base: str, token: str, notebook: str) -> None:
    """End the lab's session and kernel, so the next lab runs on a quiet machine."""
    try:
        sid = next(s["id"] for s in json.load(urllib.request.urlopen(
            f"{base}/api/sessions?token={token}", timeout=5)) if s.get("path") == notebook)
        urllib.request.urlopen(urllib.request.Request(
            f"{base}/api/sessions/{sid}?token={token}", method="DELETE"), timeout=30)
    except (StopIteration, OSError):
        pass


def run_all(page, base: str, token: str, notebook: str, timeout: float) -> list[str]:
    """Open ``notebook`` (in a workspace of its own), run all its cells and wait until the
    kernel is idle; return the texts of output areas that show a Traceback or widget error."""
    page.goto(f"{base}/lab/workspaces/{notebook.split('_')[0]}/tree/{notebook}"
              f"?token={token}", wait_until="domcontentloaded")
    nb = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook")
    nb.wait_for(state="visible", timeout=60_000)
    # the UI reports "idle" before the kernel exists: ask the server, then the UI
    wait_for_kernel_idle(page, base, token, notebook, timeout=60)
    page.wait_for_function(KERNEL_IDLE_JS, timeout=60_000)
    nb.locator(".jp-Cell").first.click()
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-content .lm-Menu-itemLabel").get_by_text(
        "Run All Cells", exact=True).click()
    page.wait_for_function(ALL_RUN_JS, timeout=timeout * 1000, polling=500)
    wait_for_kernel_idle(page, base, token, notebook, timeout=timeout)
    page.wait_for_function(KERNEL_IDLE_JS, timeout=timeout * 1000, polling=500)
    return page.evaluate(OUTPUT_PROBLEMS_JS)


@pytest.fixture(scope="session")
def lab_ui():
    """The helpers above, for the test modules (a conftest is not imported by name)."""
    return SimpleNamespace(
        wait_for_kernel_idle=wait_for_kernel_idle, run_all=run_all, find_control=find_control,
        move=move, shut_down_kernel=shut_down_kernel, ALL_RUN_JS=ALL_RUN_JS,
        KERNEL_IDLE_JS=KERNEL_IDLE_JS, OUTPUT_PROBLEMS_JS=OUTPUT_PROBLEMS_JS)


# Each image is scrolled into view from the page's own JavaScript, a timer apart. Playwright's
# scroll_into_view_if_needed first waits for the element to be "stable" over two animation
# frames; a headless page on a loaded machine can go on without rendering a frame, and
# that wait then outlasts any timeout although nothing on the page moves (it failed a CI
# run that way on a page whose images' boxes do not change once loaded). Timers always run.
SCROLL_IMAGES_JS = r"""
async (selector) => {
  const imgs = Array.from(document.querySelectorAll(selector));
  for (const img of imgs) {
    img.scrollIntoView({block: "center"});
    await new Promise(r => setTimeout(r, 25));
  }
  return imgs.length;
}
"""
IMAGES_DONE_JS = "sel => Array.from(document.querySelectorAll(sel)).every(i => i.complete)"


def scroll_images(page, selector: str = "main article img", timeout_ms: int = 30_000) -> int:
    """Scroll ``page`` through every image matching ``selector`` (so lazily loaded ones are
    fetched) and wait up to ``timeout_ms`` for all of them to be complete (loaded or
    failed), polling on a timer; return how many images there are. An image still loading
    after that is left for the caller's checks to report, not hidden here."""
    n = page.evaluate(SCROLL_IMAGES_JS, selector)
    try:
        page.wait_for_function(IMAGES_DONE_JS, arg=selector, polling=100, timeout=timeout_ms)
    except Exception as err:               # playwright's TimeoutError
        if "Timeout" not in type(err).__name__:
            raise
    return n


@pytest.fixture(scope="session", name="scroll_images")
def _scroll_images_fixture():
    """The :func:`scroll_images` helper, for the page-loading test modules."""
    return scroll_images


@pytest.fixture(scope="session")
def page_weights():
    """{doc: (total bytes, {url: bytes}, page errors)} of the book pages loaded so far.

    test_book_html's page visits fill it (one load of each page serves both modules);
    test_page_weight loads a page itself only when it is not there (e.g. run alone).
    """
    return {}


def record_sizes(page, sizes: dict) -> None:
    """Record the body size of every finished request of ``page`` into ``sizes``."""
    def on_finished(request):
        resp = request.response()
        if resp is None:
            return
        try:
            sizes[request.url] = len(resp.body())
        except Exception:  # redirects and aborted requests have no body
            pass
    page.on("requestfinished", on_finished)


@pytest.fixture(scope="session", name="record_sizes")
def _record_sizes_fixture():
    """The :func:`record_sizes` helper, for the page-loading test modules."""
    return record_sizes
