"""Every chapter, opened from START in JupyterLab, shows what the book shows -- unrun.

A learner's first hour: ``make lab`` writes the executed chapter copies
(``jupyter/chapter_notebooks.py``) and START links them. Opened without running a cell,
each copy must show its figures (images or SVG, not ``<Figure size ...>`` text), no raw
cross-reference label, role or ``{glue`` in its prose, and no explorer object's repr.
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
from labserver import jupyterlab

pytestmark = pytest.mark.jupyterlab

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "_build" / "screenshots"
USER_SETTINGS = {"@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"}}
VISIBLE_NB = ".jp-NotebookPanel:not(.lm-mod-hidden)"
RAW = re.compile(r"\{(?:ref|numref|eq|doc|glue[:\w]*)\}`|(?<![\w/.#-])(?:fig|eq|ch)-[a-z0-9]+"
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
                    args=("--LabApp.default_url=/lab/tree/START.ipynb",)) \
            as (base, token, _log):
        yield base, token


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


def test_start_links_every_chapter_copy():
    assert len(start_links()) >= 10


@pytest.mark.parametrize("link", start_links())
def test_chapter_shows_its_figures_and_titles_without_running(chapters_lab, page, link):
    base, token = chapters_lab
    page.set_viewport_size({"width": 1400, "height": 1000})
    name = Path(link).name
    page.goto(f"{base}/lab/tree/{link}?reset&token={token}", wait_until="domcontentloaded")
    page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current",
                 has_text=name).wait_for(timeout=60_000)
    page.locator(VISIBLE_NB + " .jp-Cell").first.wait_for(timeout=60_000)
    page.wait_for_timeout(1500)
    got = page.evaluate(SHOWN_JS, VISIBLE_NB)
    current = page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current").inner_text()
    assert name in current, f"opened {current!r}, not {name}"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"lab-chapter-{Path(link).stem}.png"))
    assert "<Figure size" not in got["text"], f"{link}: a figure shows as text (untrusted?)"
    assert not re.search(r"_\w+Explorer\(children=", got["text"]), link
    raw = RAW.search(got["prose"])
    assert raw is None, f"{link}: raw label {raw.group(0)!r} in the prose"
    source = (ROOT / "book" / f"{Path(link).stem}.md").read_text(encoding="utf-8")
    figures = source.count("\n    name: fig-")
    if figures:
        assert got["images"] >= figures, (
            f"{link}: {got['images']} outputs with an image for {figures} figures")
