"""JupyterLab as ``make lab`` starts it: at the repository root, opening ``START.ipynb``.

One server (headless Chromium drives it), started like the Makefile's ``lab`` target: root
= a temporary copy of the repository's files, ``JUPYTER_CONFIG_PATH`` = ``jupyter/`` (the
course's contents manager), the course's ``overrides.json`` as the only admin settings, and
``--LabApp.default_url=/lab/tree/START.ipynb``. User settings are a fresh temporary folder
with **autosave every second**, so that a file JupyterLab would rewrite is rewritten during
the test. Checks:

1. the landing notebook opens by itself; no "Jupyter news" pop-up appears;
2. its link to a chapter opens the chapter's executed copy as a notebook: the prose shows
   the glued numbers (no ``{glue`` role, no raw MyST), the quick checks hide their answers
   behind a closed "Reveal the answer", saving it right after opening writes the same
   cells back, and Run All runs every cell (exercises included) without an error;
3. a chapter source ``book/*.md`` opens as a notebook (not in the text editor), read-only:
   after autosave had its chances and Ctrl+S, the file is byte-identical.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from labserver import jupyterlab

pytestmark = pytest.mark.jupyterlab

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = "why_interconnect"            # the chapter opened from the landing notebook
CHAPTER_TITLE = "Why Interconnect Is the Bottleneck"
SOURCE = "book/nvlink.md"               # a chapter source opened directly
RUN_ALL_TIMEOUT = 240  # s
SCREENSHOTS = ROOT / "_build" / "screenshots"

USER_SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin": {"autosave": True, "autosaveInterval": 1},
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
}


def repo_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                         cwd=ROOT, capture_output=True, check=True).stdout.decode()
    return [f for f in out.split("\0") if f and (ROOT / f).is_file()]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def root_lab(tmp_path_factory):
    """JupyterLab on a copy of the repository, started as `make lab` does."""
    if not shutil.which("git") or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout (the server root is a copy of the tracked files)")
    tmp = tmp_path_factory.mktemp("rootlab")
    root = tmp / "repo"
    for f in repo_files():
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, root / f)
    # what `make lab` does first (`make chapter-notebooks`), for the one chapter opened here
    sys.path.insert(0, str(ROOT / "jupyter"))
    try:
        import chapter_notebooks
    finally:
        sys.path.remove(str(ROOT / "jupyter"))
    chapter_notebooks.write_copy(root / "book" / f"{CHAPTER}.md", root / "_build" / "chapters")

    app_settings = tmp / "app-settings"        # as the Makefile's LAB_OVERRIDES
    (app_settings / "overrides.d").mkdir(parents=True)
    shutil.copy(ROOT / "jupyter" / "overrides.json",
                app_settings / "overrides.d" / "gpulab-course.json")
    with jupyterlab(root, tmp, user_settings=USER_SETTINGS,
                    env={"JUPYTER_CONFIG_PATH": str(root / "jupyter")},
                    args=("--LabApp.default_url=/lab/tree/START.ipynb",
                          f"--LabServerApp.app_settings_dir={app_settings}")) \
            as (base, token, log_path):
        yield base, token, root, log_path


def test_server_uses_the_course_contents_manager(root_lab):
    _base, _token, _root, log_path = root_lab
    # jupytext's server extension logs that the manager is a jupytext one already
    deadline = time.monotonic() + 10
    while "TextFileContentsManager already" not in log_path.read_text():
        assert time.monotonic() < deadline, log_path.read_text()
        time.sleep(0.5)


VISIBLE_NB = ".jp-NotebookPanel:not(.lm-mod-hidden)"

ALL_RUN_JS = """
() => {
  const panel = ".jp-NotebookPanel:not(.lm-mod-hidden) ";
  if (Array.from(document.querySelectorAll(panel + ".jp-OutputArea-output"))
      .some(o => /Traceback/.test(o.innerText))) return true;
  const prompts = Array.from(document.querySelectorAll(panel + ".jp-CodeCell .jp-InputArea .jp-InputPrompt"))
    .map(p => p.textContent.trim());
  if (prompts.some(t => t.includes("*"))) return false;
  return prompts.length > 0 && prompts.every(t => /\\[\\s*\\d+\\s*\\]/.test(t));
}
"""


def wait_kernel_idle(page, base, token, path, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{base}/api/sessions?token={token}", timeout=5) as r:
            for s in json.load(r):
                if s.get("path") == path and (s.get("kernel") or {}).get(
                        "execution_state") == "idle":
                    return
        page.wait_for_timeout(300)
    pytest.fail(f"{path}: kernel not idle after {timeout} s")


def test_chapter_opens_from_landing_with_numbers_and_runs(root_lab, page, make_offline):
    base, token, root, _log = root_lab
    page = make_offline(page)
    page.set_viewport_size({"width": 1400, "height": 1000})
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    copy = f"_build/chapters/{CHAPTER}.ipynb"
    # With autosave every second, a save can race the previous one and JupyterLab asks
    # whether the file "has changed on disk"; keep the disk version (the test compares
    # the disk's cells) instead of letting the dialog block the next click.
    page.add_locator_handler(
        page.locator(".jp-Dialog", has_text="has changed on disk"),
        lambda dialog: dialog.locator("button", has_text="Revert").click())
    try:
        page.goto(f"{base}/?token={token}", wait_until="domcontentloaded")
        start = page.locator(VISIBLE_NB)
        start.wait_for(state="visible", timeout=60_000)
        page.locator(".lm-TabBar-tab.lm-mod-current", has_text="START.ipynb").wait_for(
            timeout=30_000)
        link = start.locator(".jp-RenderedMarkdown a", has_text=CHAPTER_TITLE)
        link.first.click()
        page.locator(".lm-TabBar-tab.lm-mod-current",
                     has_text=f"{CHAPTER}.ipynb").wait_for(timeout=60_000)
        nb = page.locator(VISIBLE_NB)
        nb.locator(".jp-RenderedMarkdown").first.wait_for(timeout=60_000)
        prose = "\n".join(nb.locator(".jp-MarkdownCell .jp-RenderedMarkdown").all_inner_texts())
        assert CHAPTER_TITLE in prose
        assert "{glue" not in prose, "the chapter's prose shows raw glue roles"
        assert ":::" not in prose and "{admonition}" not in prose, "raw MyST in the prose"
        # the quick checks: question shown, answer behind a closed "Reveal the answer"
        reveals = nb.locator(".jp-RenderedMarkdown details")
        assert reveals.count() >= 2, "no quick-check reveals in the chapter notebook"
        assert reveals.first.evaluate("d => !d.open")
        assert "Reveal the answer" in reveals.first.locator("summary").inner_text()
        # opening changes no cell: after autosave had its chances and Ctrl+S, the cells are
        # what make lab wrote (JupyterLab flags the tab as modified once the saved widget
        # views render, and rewrites only notebook metadata: widget state, kernel info)
        def content(path):
            return json.loads(path.read_text(encoding="utf-8"))["cells"]

        before = content(root / copy)
        page.wait_for_timeout(3_000)
        nb.locator(".jp-Cell").first.click()
        page.keyboard.press("Escape")
        page.keyboard.press("Control+s")
        page.wait_for_timeout(2_000)
        assert content(root / copy) == before, \
            "opening the chapter notebook changed it"

        wait_kernel_idle(page, base, token, copy, timeout=90)
        nb.locator(".jp-Cell").first.click()
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-content .lm-Menu-itemLabel").get_by_text(
            "Run All Cells", exact=True).click()
        page.wait_for_function(ALL_RUN_JS, timeout=RUN_ALL_TIMEOUT * 1000, polling=1000)
        errors = [t for t in nb.locator(".jp-OutputArea-output").all_inner_texts()
                  if "Traceback" in t]
        assert not errors, "a chapter cell failed:\n" + errors[0][:2000]
        news = page.get_by_text("official Jupyter news")
        assert news.count() == 0, "JupyterLab's news pop-up is shown"
        assert page.external_requests == [], page.external_requests
    finally:
        try:
            page.screenshot(path=str(SCREENSHOTS / "start-chapter.png"))
        except Exception:
            pass


def test_chapter_source_opens_as_read_only_notebook(root_lab, page, make_offline):
    base, token, root, _log = root_lab
    page = make_offline(page)
    page.set_viewport_size({"width": 1400, "height": 1000})
    source = root / SOURCE
    before = digest(source)
    try:
        page.goto(f"{base}/lab/tree/{SOURCE}?token={token}", wait_until="domcontentloaded")
        nb = page.locator(VISIBLE_NB)
        nb.wait_for(state="visible", timeout=60_000)     # a notebook, not the text editor
        nb.locator(".jp-MarkdownCell").first.wait_for(timeout=60_000)
        assert page.locator(".jp-FileEditor:not(.lm-mod-hidden)").count() == 0
        page.wait_for_timeout(4_000)                     # autosave runs every second
        nb.locator(".jp-Cell").first.click()
        page.keyboard.press("Escape")
        page.keyboard.press("Control+s")
        page.wait_for_timeout(2_000)
        assert digest(source) == before, f"{SOURCE} was rewritten by JupyterLab"
        assert not (source.parent / ".ipynb_checkpoints").exists() or not any(
            (source.parent / ".ipynb_checkpoints").iterdir())
        assert page.get_by_text("read-only").count() >= 1, \
            "JupyterLab did not say the chapter source is read-only"
    finally:
        try:
            page.screenshot(path=str(SCREENSHOTS / "start-source.png"))
        except Exception:
            pass
