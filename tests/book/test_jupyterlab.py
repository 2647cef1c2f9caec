"""Drive a real JupyterLab in headless Chromium: every lab runs and its explorers are live.

For each notebook in ``LAB_NOTEBOOKS`` (relative to ``labs/``), once:

1. start ``python -m jupyterlab`` on 127.0.0.1 (free port, random token) with every Jupyter /
   IPython user directory pointed at a temporary folder, so no user state leaks in or out;
   the server's root is a temporary copy of ``labs/`` so that running the lab cannot write
   outputs, checkpoints or files into the repository (autosave is off as well);
2. open the notebook, *Run → Run All Cells*, wait until every code cell has run and the
   kernel is idle; no output area may show a Traceback or a widget error;
3. wait until every explorer of the lab (``MAIN_CONTROLS``, in notebook order) is rendered,
   then ask the kernel itself (a second client on the notebook's kernel, through its
   connection file) whether each explorer's controls still hold the values a freshly built
   explorer has: a browser that rounds a slider (a step of 0.0001, a log slider) sends the
   rounded value back and silently changes the state the learner starts from;
4. for each explorer, move its main control (ArrowRight/ArrowLeft on a slider handle, or the
   next option of a drop-down) and require its figure (an ``img``) to change within a few
   seconds;
5. check that the headings the chapters link to carry those ids in the rendered notebook
   and that JupyterLab scrolls to each when the URL's fragment becomes
   ``#heading=<id>`` (as in the chapters' "Try it in the lab" links; JupyterLab looks the
   heading up once, so a link opened while the notebook still loads may land at its top),
   save a screenshot to ``_build/screenshots/<lab prefix>.png`` and
   shut the lab's kernel down.

One lab is run once for both tests (a module-scoped fixture): ``test_lab_explorers_are_live``
(steps 2, 4, 5) and ``test_kernel_state_equals_preset_after_render`` (step 3).
A missing lab is a skip, or a failure under ``GPULAB_REQUIRE_BOOK=1`` (``make test``).
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
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
    "lab02_read_your_server.ipynb",
    "lab03_ring_allreduce.ipynb",
    "lab04_accept_a_server.ipynb",
    "lab05_plan_70b.ipynb",
]

#: Per lab, its explorers in notebook order: (label of the main control, how to move it,
#: the kernel variable that holds the explorer and the expression that builds a fresh one
#: with the same arguments, or None for a widget that is not a gpulab explorer).
#: "right"/"left": arrow key on a slider handle; "select": the next drop-down option.
MAIN_CONTROLS = {
    "lab01_link_math.ipynb": [
        ("Symbol rate [GBd]", "right", ("link_x", "gl.widgets.link_explorer()")),
        ("Tokens per GPU per step", "right",
         ("scaling_x", "gl.widgets.scaling_explorer()")),
    ],
    "lab02_read_your_server.ipynb": [
        ("Sample", "select", ("topo_x", "gl.widgets.topology_explorer()")),
        ("Generation", "select", ("pcie_x", "gl.widgets.pcie_explorer()")),
        ("Micro-batch size", "right", ("pipe_x", "gl.widgets.pipeline_explorer()")),
    ],
    "lab03_ring_allreduce.ipynb": [
        ("ranks", "right", None),      # the lab's own ipywidgets.interactive ring
        ("Message size", "right", ("coll_x", "gl.widgets.collective_explorer()")),
        ("Message size", "right", ("fabric_x", "gl.widgets.fabric_explorer()")),
    ],
    "lab04_accept_a_server.ipynb": [
        ("Bucket", "right", ("bucket_x", "gl.widgets.bucket_explorer()")),
        ("Nodes", "right", ("net_x", 'gl.widgets.network_explorer("gcp-a3-mega", 2)')),
    ],
    "lab05_plan_70b.ipynb": [
        ("Project [billion tokens]", "right",
         ("roi", 'widgets.roi_explorer("70b", 8, "dgx-h100", "h100-pcie", '
                 "price_fast=EXAMPLE_PRICE_NVLINK, price_slow=EXAMPLE_PRICE_PCIE, "
                 "project_tokens=200e9)")),
        ("PP", "left", ("layout_x", "widgets.layout_explorer()")),
        ("Sequence length", "right", ("tp_x", "widgets.tp_explorer()")),
    ],
}


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


SCROLL_TOP_JS = """
() => { const s = document.querySelector(
          ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer");
        if (s) s.scrollTop = 0; }
"""

SCROLLED_TO_JS = """
(id) => {
  const h = Array.from(document.querySelectorAll(
      ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-MarkdownOutput :is(h1,h2,h3,h4,h5,h6)"))
    .find(e => (e.getAttribute("id") || e.getAttribute("data-jupyter-id")) === id);
  if (!h) return false;
  const r = h.getBoundingClientRect();
  return r.top >= 0 && r.top < window.innerHeight;
}
"""

HEADING_IDS_JS = """
() => Array.from(document.querySelectorAll(
    ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-MarkdownOutput :is(h1,h2,h3,h4,h5,h6)"))
  .map(h => h.getAttribute("id") || h.getAttribute("data-jupyter-id"))
  .filter(Boolean)
"""

# The kernel's side: each explorer's control values against a freshly built one.
STATE_CODE = """
import json as _json
def _gl_state(x):
    return {k: c.value for k, c in x.controls.items()}
_gl_drift = {}
for _gl_name, _gl_fresh in [%s]:
    _gl_now, _gl_want = _gl_state(globals()[_gl_name]), _gl_state(_gl_fresh)
    _gl_d = {k: [repr(_gl_now.get(k)), repr(v)] for k, v in _gl_want.items()
             if _gl_now.get(k) != v}
    if _gl_d:
        _gl_drift[_gl_name] = _gl_d
print("GPULAB-STATE " + _json.dumps(_gl_drift))
"""


def _kernel_state(runtime_dir: Path, kernel_id: str, explorers) -> dict:
    """Run STATE_CODE on the notebook's kernel through its connection file."""
    from jupyter_client import BlockingKernelClient

    pairs = ", ".join(f"({name!r}, {expr})" for name, expr in explorers)
    kc = BlockingKernelClient(connection_file=str(runtime_dir / f"kernel-{kernel_id}.json"))
    kc.load_connection_file()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=30)
        msg_id = kc.execute(STATE_CODE % pairs, store_history=False)
        out, error = [], None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            msg = kc.get_iopub_msg(timeout=120)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                out.append(content["text"])
            elif kind == "error":
                error = "\n".join(content["traceback"])
            elif kind == "status" and content["execution_state"] == "idle":
                break
    finally:
        kc.stop_channels()
    assert error is None, f"state query failed in the kernel:\n{error}"
    line = next((ln for ln in "".join(out).splitlines()
                 if ln.startswith("GPULAB-STATE ")), None)
    assert line, f"no state line from the kernel: {''.join(out)!r}"
    return json.loads(line.split(" ", 1)[1])


def _session_kernel(base: str, token: str, notebook: str) -> str:
    with urllib.request.urlopen(f"{base}/api/sessions?token={token}", timeout=5) as r:
        for sess in json.load(r):
            if sess.get("path") == notebook and sess.get("kernel"):
                return sess["kernel"]["id"]
    raise AssertionError(f"{notebook}: no kernel session")


def _explorer_areas(page, nb, specs):
    """The output area of each explorer, in notebook order: the next area after the
    previous one that holds an image and a control labelled as the spec says."""
    areas = nb.locator(".jp-OutputArea-output").filter(has=page.locator("img")) \
        .filter(has=page.locator(".widget-label"))
    found, start = [], 0
    for label, _how, _var in specs:
        for i in range(start, areas.count()):
            if _control(page, areas.nth(i), label).count():
                found.append(areas.nth(i))
                start = i + 1
                break
        else:
            return None
    return found


def _control(page, area, label):
    return area.locator(".widget-inline-hbox").filter(
        has=page.locator(".widget-label", has_text=re.compile(rf"^\s*{re.escape(label)}\s*$")))


def _move(page, area, label, how) -> str:
    """Move the control labelled ``label`` in ``area``; return what was done."""
    control = _control(page, area, label).first
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


@pytest.fixture(scope="module", params=LAB_NOTEBOOKS)
def lab_run(request, lab_server, browser, make_offline, skip_or_fail):
    """Run one lab in JupyterLab once; return what the two tests check."""
    notebook = request.param
    if not (LABS / notebook).is_file():
        skip_or_fail(f"labs/{notebook} does not exist yet")
    base, token, root = lab_server
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = make_offline(context.new_page())
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOTS / f"{notebook.split('_')[0]}.png"
    result = {"notebook": notebook, "problems": [], "moves": [], "drift": None,
              "heading_ids": [], "failure": None, "scrolled_to": [], "external": []}
    specs = MAIN_CONTROLS[notebook]
    try:
        # a workspace of its own: the labs run before are not reopened (nor their kernels)
        page.goto(f"{base}/lab/workspaces/{notebook.split('_')[0]}/tree/{notebook}"
                  f"?token={token}", wait_until="domcontentloaded")
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
        result["problems"] = page.evaluate(OUTPUT_PROBLEMS_JS)
        if result["problems"]:
            return result

        # widget views render after the kernel went idle (comm round trips): wait
        areas = None
        for _ in range(60):
            areas = _explorer_areas(page, nb, specs)
            if areas is not None:
                break
            page.wait_for_timeout(500)
        if areas is None:
            result["failure"] = (f"{notebook}: not every explorer rendered with its main "
                                 f"control and an image: {[s[0] for s in specs]}")
            return result
        for area in areas:
            area.scroll_into_view_if_needed()
            area.locator("img").first.wait_for(state="visible", timeout=15_000)
        page.wait_for_timeout(1000)          # let the views send back what they change
        _wait_for_kernel_idle(page, base, token, notebook, timeout=60)
        explorers = [var for _l, _h, var in specs if var is not None]
        result["drift"] = _kernel_state(
            root.parent / "runtime", _session_kernel(base, token, notebook), explorers)

        for (label, how, _var), area in zip(specs, areas):
            area.scroll_into_view_if_needed()
            before = area.evaluate(FIRST_IMG_SRC_JS)
            changed = False
            for _attempt in range(3):       # a key press can land before the focus
                what = _move(page, area, label, how)
                try:
                    page.wait_for_function(
                        "([area, before]) => { const i = area.querySelector('img');"
                        " return !!i && i.getAttribute('src') !== before; }",
                        arg=[area.element_handle(), before],
                        timeout=FIGURE_CHANGE_TIMEOUT * 1000 / 3)
                    changed = True
                    break
                except Exception:
                    pass
            result["moves"].append((what, changed))
        result["problems"] = page.evaluate(OUTPUT_PROBLEMS_JS)
        result["heading_ids"] = page.evaluate(HEADING_IDS_JS)
        # follow each chapter link's fragment from the top of the rendered notebook
        for anchor in sorted(_linked_anchors(notebook)):
            page.evaluate(SCROLL_TOP_JS)
            page.evaluate("(id) => { location.hash = 'heading=' + id; }", anchor)
            try:
                page.wait_for_function(SCROLLED_TO_JS, arg=anchor, timeout=10_000,
                                       polling=250)
                result["scrolled_to"].append(anchor)
            except Exception:
                pass
        result["external"] = list(page.external_requests)
        return result
    finally:
        try:
            page.screenshot(path=str(shot))
        except Exception:
            pass
        context.close()
        _shut_down_kernel(base, token, notebook)


def _shut_down_kernel(base: str, token: str, notebook: str) -> None:
    """End the lab's session and kernel, so the next lab runs on a quiet machine."""
    try:
        sid = next(s["id"] for s in json.load(urllib.request.urlopen(
            f"{base}/api/sessions?token={token}", timeout=5)) if s.get("path") == notebook)
        urllib.request.urlopen(urllib.request.Request(
            f"{base}/api/sessions/{sid}?token={token}", method="DELETE"), timeout=30)
    except (StopIteration, OSError):
        pass


def test_lab_explorers_are_live(lab_run):
    notebook = lab_run["notebook"]
    assert not lab_run["problems"], (f"{notebook}: errors in outputs:\n"
                                     + "\n---\n".join(lab_run["problems"]))
    assert lab_run["failure"] is None, lab_run["failure"]
    frozen = [what for what, changed in lab_run["moves"] if not changed]
    assert len(lab_run["moves"]) == len(MAIN_CONTROLS[notebook]) and not frozen, (
        f"{notebook}: moving these controls did not change their figure within "
        f"{FIGURE_CHANGE_TIMEOUT} s: {frozen}")
    assert lab_run["external"] == [], \
        f"{notebook}: requests to the outside world: {lab_run['external']}"
    # the headings the chapters' "Try it in the lab" boxes link to carry those ids, and
    # opening the lab at one of them shows that heading
    wanted = _linked_anchors(notebook)
    missing = sorted(wanted - set(lab_run["heading_ids"]))
    assert not missing, (f"{notebook}: JupyterLab rendered no heading with the ids "
                         f"{missing} that chapters link to")
    lost = sorted(wanted - set(lab_run["scrolled_to"]))
    assert not lost, (f"{notebook}: JupyterLab did not scroll to #heading=<id> for {lost}")


def _linked_anchors(notebook: str) -> set[str]:
    """The anchors of ``notebook`` that the chapters' "Try it in the lab" boxes use."""
    spec = importlib.util.spec_from_file_location(
        "_gpulab_lab_links", Path(__file__).with_name("test_lab_links.py"))
    links = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(links)
    return {m["anchor"] for ch in links.chapters() for m in links.chapter_links(ch)
            if m["lab"] == notebook}


def test_kernel_state_equals_preset_after_render(lab_run, request):
    notebook = lab_run["notebook"]
    if lab_run["drift"] is None:
        pytest.skip(f"{notebook}: the lab did not get as far as its explorers")
    assert lab_run["drift"] == {}, (
        f"{notebook}: after the browser rendered them, explorers hold other values than "
        f"the ones they were built with ([now, built]): {lab_run['drift']}")
