"""Drive a real JupyterLab in headless Chromium: every lab runs and its explorers are live.

For each notebook in ``LAB_NOTEBOOKS`` (relative to ``labs/``), once:

1. start ``python -m jupyterlab`` on 127.0.0.1 (fixture ``lab_server`` in ``conftest.py``;
   free port, random token) with every Jupyter / IPython user directory pointed at a
   temporary folder, so no user state leaks in or out; the server's root is a temporary
   copy of ``labs/`` so that running the lab cannot write outputs, checkpoints or files
   into the repository (autosave is off as well);
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
    "lab06_serve_70b.ipynb",
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
    "lab06_serve_70b.ipynb": [
        ("Batch", "right", ("decode_x", "widgets.decode_explorer()")),
        # the model, not the TPOT target: one millisecond often keeps the same best layouts
        ("Model", "select", ("serving_x", "widgets.serving_explorer()")),
    ],
}


RUN_ALL_TIMEOUT = 180  # s
FIGURE_CHANGE_TIMEOUT = 15  # s


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


def _explorer_areas(page, nb, specs, lab_ui):
    """The output area of each explorer, in notebook order: the next area after the
    previous one that holds an image and a control labelled as the spec says."""
    areas = nb.locator(".jp-OutputArea-output").filter(has=page.locator("img")) \
        .filter(has=page.locator(".widget-label"))
    found, start = [], 0
    for label, _how, _var in specs:
        for i in range(start, areas.count()):
            if lab_ui.find_control(page, areas.nth(i), label).count():
                found.append(areas.nth(i))
                start = i + 1
                break
        else:
            return None
    return found


@pytest.fixture(scope="module", params=LAB_NOTEBOOKS)
def lab_run(request, lab_server, lab_ui, browser, make_offline, skip_or_fail):
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
        # a workspace of its own: the labs run before are not reopened (nor their kernels);
        # Run → Run All Cells, then wait for the kernel to be idle
        result["problems"] = lab_ui.run_all(page, base, token, notebook, RUN_ALL_TIMEOUT)
        nb = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook")
        if result["problems"]:
            return result

        # widget views render after the kernel went idle (comm round trips): wait
        areas = None
        for _ in range(60):
            areas = _explorer_areas(page, nb, specs, lab_ui)
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
        lab_ui.wait_for_kernel_idle(page, base, token, notebook, timeout=60)
        explorers = [var for _l, _h, var in specs if var is not None]
        result["drift"] = _kernel_state(
            root.parent / "runtime", _session_kernel(base, token, notebook), explorers)

        for (label, how, _var), area in zip(specs, areas):
            area.scroll_into_view_if_needed()
            before = area.evaluate(FIRST_IMG_SRC_JS)
            changed = False
            for _attempt in range(3):       # a key press can land before the focus
                what = lab_ui.move(page, area, label, how)
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
        result["problems"] = page.evaluate(lab_ui.OUTPUT_PROBLEMS_JS)
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
        lab_ui.shut_down_kernel(base, token, notebook)


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
