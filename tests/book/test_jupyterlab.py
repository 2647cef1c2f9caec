"""Drive a real JupyterLab in headless Chromium: the labs' widgets must be live.

For each notebook in ``LAB_NOTEBOOKS`` (relative to ``labs/``):

1. start ``python -m jupyterlab`` on 127.0.0.1 (free port, random token) with every Jupyter /
   IPython user directory pointed at a temporary folder, so no user state leaks in or out;
   the server's root is a temporary copy of ``labs/`` so that running the lab cannot write
   outputs, checkpoints or files into the repository (autosave is off as well);
2. open the notebook, *Run → Run All Cells*, wait until every code cell has run and the
   kernel is idle; no output area may show a Traceback or a widget error;
3. find the first output that holds an ipywidgets slider *and* an image (the widget draws its
   figure as an ``img``: an ipywidgets ``Image`` or an ``Output`` holding a figure), press
   ArrowRight on the slider handle and require the image to change within a few seconds
   (labs whose explorer has drop-downs only: pick another option of the first drop-down);
4. save a screenshot to ``_build/screenshots/<lab prefix>.png``.

A missing lab is a skip, or a failure under ``GPULAB_REQUIRE_BOOK=1`` (``make test``).
Add later labs to ``LAB_NOTEBOOKS`` (Lab 4 has no widget; Lab 5's explorer has drop-downs
and number boxes, listed in ``SELECT_LABS``).
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.jupyterlab

ROOT = Path(__file__).resolve().parents[2]
LABS = ROOT / "labs"
SCREENSHOTS = ROOT / "_build" / "screenshots"

LAB_NOTEBOOKS = [
    "lab01_link_math.ipynb",
    "lab03_ring_allreduce.ipynb",
    "lab05_plan_70b.ipynb",
]
#: Labs driven through their first drop-down instead of a slider.
SELECT_LABS = {"lab05_plan_70b.ipynb"}

SERVER_START_TIMEOUT = 90  # s
RUN_ALL_TIMEOUT = 180  # s
FIGURE_CHANGE_TIMEOUT = 15  # s

# JupyterLab user settings for the test session.
LAB_SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    # render every cell (JupyterLab 4 virtualises long notebooks otherwise)
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false",
                                                     "checkForUpdates": False},
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory):
    """A JupyterLab server on a temporary copy of labs/; yields (base_url, token, root)."""
    tmp = tmp_path_factory.mktemp("jupyterlab")
    root = tmp / "labs"
    shutil.copytree(LABS, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    settings = tmp / "lab-settings"
    for plugin, values in LAB_SETTINGS.items():
        f = settings / f"{plugin}.jupyterlab-settings"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(values), encoding="utf-8")
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp / "config"),
        "JUPYTER_DATA_DIR": str(tmp / "data"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "workspaces"),
        "IPYTHONDIR": str(tmp / "ipython"),
        "JUPYTER_PLATFORM_DIRS": "1",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
    env.pop("JUPYTER_PATH", None)
    # other test modules set MPLBACKEND=Agg for themselves at import; a kernel that
    # inherits it draws no inline figures (Lab 3's interactive() plot stays empty)
    env.pop("MPLBACKEND", None)
    env.pop("JUPYTER_CONFIG_PATH", None)
    port, token = _free_port(), secrets.token_hex(16)
    log = (tmp / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
         "--ServerApp.port_retries=0", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.token={token}", f"--ServerApp.root_dir={root}",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         "--LanguageServerManager.autodetect=False",
         *(["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else [])],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while True:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited with {proc.returncode}:\n"
                            + (tmp / "server.log").read_text())
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("JupyterLab did not start:\n" + (tmp / "server.log").read_text())
            time.sleep(0.5)
        yield base, token, root
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # the server and the kernels it started
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()


def _wait_for_kernel_idle(page, base: str, token: str, notebook: str, timeout: float) -> None:
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

FIRST_IMG_SRC_JS = """
(area) => { const i = area.querySelector("img"); return i ? i.getAttribute("src") : null; }
"""


@pytest.mark.parametrize("notebook", LAB_NOTEBOOKS)
def test_lab_widget_is_live(notebook, lab_server, page, make_offline, skip_or_fail):
    if not (LABS / notebook).is_file():
        skip_or_fail(f"labs/{notebook} does not exist yet")
    base, token, _root = lab_server
    page = make_offline(page)
    page.set_viewport_size({"width": 1400, "height": 1000})
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOTS / f"{notebook.split('_')[0]}.png"
    try:
        page.goto(f"{base}/lab/tree/{notebook}?token={token}", wait_until="domcontentloaded")
        nb = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook")
        nb.wait_for(state="visible", timeout=60_000)
        # the UI reports "idle" before the kernel exists: ask the server, then the UI
        _wait_for_kernel_idle(page, base, token, notebook, timeout=60)
        page.wait_for_function(KERNEL_IDLE_JS, timeout=60_000)

        # Run → Run All Cells
        nb.locator(".jp-Cell").first.click()
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-content .lm-Menu-itemLabel").get_by_text(
            "Run All Cells", exact=True).click()
        page.wait_for_function(ALL_RUN_JS, timeout=RUN_ALL_TIMEOUT * 1000, polling=500)
        _wait_for_kernel_idle(page, base, token, notebook, timeout=RUN_ALL_TIMEOUT)
        page.wait_for_function(KERNEL_IDLE_JS, timeout=RUN_ALL_TIMEOUT * 1000, polling=500)

        problems = page.evaluate(OUTPUT_PROBLEMS_JS)
        assert not problems, f"{notebook}: errors in outputs:\n" + "\n---\n".join(problems)

        # first output holding both a slider (or drop-down) and an image
        control_css = ("select" if notebook in SELECT_LABS else
                       ".widget-slider, .jupyter-widgets.widget-slider, .noUi-target")
        areas = nb.locator(".jp-OutputArea-output").filter(
            has=page.locator(control_css)).filter(has=page.locator("img"))
        # widget views render after the kernel went idle (comm round trips): wait
        for _ in range(60):
            if areas.count() >= 1:
                break
            page.wait_for_timeout(500)
        assert areas.count() >= 1, \
            f"{notebook}: no widget output with both a {control_css} and an image (img)"
        area = areas.first
        area.scroll_into_view_if_needed()
        area.locator("img").first.wait_for(state="visible", timeout=15_000)
        before = area.evaluate(FIRST_IMG_SRC_JS)
        assert before, f"{notebook}: the widget image has no src"

        if notebook in SELECT_LABS:
            select = area.locator("select").first
            options = select.locator("option").all_inner_texts()
            current = select.evaluate("s => s.options[s.selectedIndex].text")
            select.select_option(label=next(o for o in options if o != current))
        else:
            handle = area.locator(".noUi-handle, .widget-slider [role='slider'], "
                                  ".widget-slider input[type='range']").first
            handle.focus()
            for _ in range(3):
                page.keyboard.press("ArrowRight")
                page.wait_for_timeout(150)
        try:
            page.wait_for_function(
                "([area, before]) => { const i = area.querySelector('img');"
                " return !!i && i.getAttribute('src') !== before; }",
                arg=[area.element_handle(), before], timeout=FIGURE_CHANGE_TIMEOUT * 1000)
        except Exception:
            pytest.fail(f"{notebook}: moving the slider did not change the figure "
                        f"within {FIGURE_CHANGE_TIMEOUT} s")
        problems = page.evaluate(OUTPUT_PROBLEMS_JS)
        assert not problems, f"{notebook}: errors after moving the slider:\n" + "\n".join(problems)
        assert page.external_requests == [], \
            f"{notebook}: requests to the outside world: {page.external_requests}"
    finally:
        try:
            page.screenshot(path=str(shot))
        except Exception:
            pass
