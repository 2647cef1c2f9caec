"""Every chapter, opened from START in JupyterLab, shows what the book shows -- unrun.

A learner's first hour: ``make lab`` writes the executed chapter copies
(``jupyter/chapter_notebooks.py``) and START links them. Opened without running a cell,
each copy must show its figures (images or SVG, not ``<Figure size ...>`` text), no raw
cross-reference label, role or ``{glue`` in its prose, and no explorer object's repr.
A chapter's "Try it in the lab" link (the ``{lab}`` role, made relative in the copy) opens
the lab, on any port, at the section it names.
One JupyterLab server (as ``make lab`` starts it, on a copy of the repository) is driven
by headless Chromium; the copies are signed in that server's own trust database, as
``make lab`` signs them in the learner's.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from labserver import jupyterlab

pytestmark = pytest.mark.jupyterlab

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "_build" / "screenshots"
USER_SETTINGS = {"@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"}}
VISIBLE_NB = ".jp-NotebookPanel:not(.lm-mod-hidden)"
RAW = re.compile(r"\{(?:ref|numref|eq|doc|lab|glue[:\w]*)\}`|(?<![\w/.#-])(?:fig|eq|ch)-[a-z0-9]+"
                 r"(?:-[a-z0-9]+)+(?![\w.-]*\.(?:ipynb|md))")


def start_links() -> list[str]:
    nb = json.loads((ROOT / "START.ipynb").read_text(encoding="utf-8"))
    text = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    return re.findall(r"\]\((_build/chapters/[\w-]+\.ipynb)\)", text)


@pytest.fixture(scope="module")
def chapters_lab(tmp_path_factory):
    if not shutil.which("git") or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout (the server root is a copy of the tracked files)")
    if not (ROOT / ".jupyter_cache").is_dir():
        pytest.skip("needs the book's execution cache (make book)")
    tmp = tmp_path_factory.mktemp("chapterlab")
    root = tmp / "repo"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for f in filter(None, files):
        if (ROOT / f).is_file():
            (root / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, root / f)
    sys.path.insert(0, str(ROOT / "jupyter"))
    try:
        import chapter_notebooks
    finally:
        sys.path.remove(str(ROOT / "jupyter"))
    chapter_notebooks.CACHE = ROOT / ".jupyter_cache"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_DATA_DIR", str(tmp / "data"))    # the server's trust database
        for link in start_links():
            chapter_notebooks.write_copy(root / "book" / f"{Path(link).stem}.md",
                                         root / "_build" / "chapters")
    with jupyterlab(root, tmp, user_settings=USER_SETTINGS,
                    env={"JUPYTER_CONFIG_PATH": str(root / "jupyter")},
                    args=("--LabApp.default_url=/lab/tree/START.ipynb",
                          "--LabApp.expose_app_in_browser=True")) \
            as (base, token, _log):
        yield base, token


@pytest.fixture(scope="module")
def lab_page(browser, chapters_lab):
    """One JupyterLab page for the chapter checks: the app starts once and each chapter is
    opened in it (``docmanager:open``) after the previous one is closed, as a learner
    opens them one after the other from START."""
    base, token = chapters_lab
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.goto(f"{base}/lab?reset&token={token}", wait_until="domcontentloaded")
    page.wait_for_function("() => window.jupyterapp !== undefined", timeout=60_000)
    page.evaluate("async () => { await window.jupyterapp.started; await window.jupyterapp.restored; }")
    yield page
    context.close()


SHOWN_JS = """
(sel) => {
  const nb = document.querySelector(sel);
  const outs = Array.from(nb.querySelectorAll(".jp-OutputArea-output"));
  const images = outs.filter(o => o.querySelector("img, svg")).length;
  const text = outs.map(o => o.innerText).join("\\n");
  const prose = Array.from(nb.querySelectorAll(".jp-MarkdownOutput"))
    .map(m => m.innerText).join("\\n");
  return {images, text, prose, cells: nb.querySelectorAll(".jp-Cell").length};
}
"""


FIGURES_SHOWN_JS = """
([sel, n]) => {
  const nb = document.querySelector(sel);
  if (!nb) return false;
  const outs = Array.from(nb.querySelectorAll(".jp-OutputArea-output"));
  return outs.filter(o => o.querySelector("img, svg")).length >= n;
}
"""


def test_start_links_every_chapter_copy():
    assert len(start_links()) >= 10


@pytest.mark.parametrize("link", start_links())
def test_chapter_shows_its_figures_and_titles_without_running(lab_page, link):
    page = lab_page
    name = Path(link).name
    page.evaluate("""async (path) => {
        const app = window.jupyterapp;
        await app.commands.execute("application:close-all");
        await app.commands.execute("docmanager:open", {path});
    }""", link)
    page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current",
                 has_text=name).wait_for(timeout=60_000)
    page.locator(VISIBLE_NB + " .jp-Cell").first.wait_for(timeout=60_000)
    source = (ROOT / "book" / f"{Path(link).stem}.md").read_text(encoding="utf-8")
    figures = source.count("\n    name: fig-")
    try:   # until the figures have rendered (the assertions below report a shortfall)
        page.wait_for_function(FIGURES_SHOWN_JS, arg=[VISIBLE_NB, figures], timeout=15_000,
                               polling=200)
    except PlaywrightTimeout:
        pass
    page.wait_for_timeout(300)
    got = page.evaluate(SHOWN_JS, VISIBLE_NB)
    current = page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current").inner_text()
    assert name in current, f"opened {current!r}, not {name}"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"lab-chapter-{Path(link).stem}.png"))
    assert "<Figure size" not in got["text"], f"{link}: a figure shows as text (untrusted?)"
    assert not re.search(r"_\w+Explorer\(children=", got["text"]), link
    raw = RAW.search(got["prose"])
    assert raw is None, f"{link}: raw label {raw.group(0)!r} in the prose"
    if figures:
        assert got["images"] >= figures, (
            f"{link}: {got['images']} outputs with an image for {figures} figures")


def test_lab_link_opens_the_lab_at_its_section(chapters_lab, page):
    """pcie's first "Try it in the lab" box: ``labs/lab02_read_your_server.ipynb``, section
    "PCIe explorer". The copy's relative link opens that lab in the same JupyterLab, whatever
    its address, and once the lab is open the link scrolls it to the heading. (JupyterLab
    4.6 asks a notebook it is still opening to scroll before its headings are rendered, so
    the first click may leave the lab at its top.)"""
    base, token = chapters_lab
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{base}/lab/tree/_build/chapters/pcie.ipynb?reset&token={token}",
              wait_until="domcontentloaded")
    page.locator(VISIBLE_NB + " .jp-Cell").first.wait_for(timeout=60_000)
    link = page.locator(VISIBLE_NB + " .jp-MarkdownOutput a",
                        has_text="labs/lab02_read_your_server.ipynb").first
    href = link.get_attribute("href") or ""
    assert "localhost" not in href and ":8888" not in href, href
    link.scroll_into_view_if_needed()
    link.click()
    page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current",
                 has_text="lab02_read_your_server.ipynb").wait_for(timeout=60_000)
    heading = page.locator(VISIBLE_NB + " .jp-MarkdownOutput h3", has_text="PCIe explorer")
    heading.first.wait_for(timeout=30_000)
    page.locator("#jp-main-dock-panel .lm-TabBar-tab", has_text="pcie.ipynb").click()
    link.wait_for(timeout=10_000)
    link.click()
    page.wait_for_timeout(2000)
    box = heading.first.bounding_box()
    assert box is not None and 0 <= box["y"] <= 1000, (
        f"the lab is open, but the link did not scroll it to 'PCIe explorer': {box}")
