"""The repository builds with repo2docker as it is, and the book can carry a hub launch button.

* ``binder/requirements.txt`` pins exactly what ``requirements.txt`` pins, minus the
  browser-test and lint tools, plus nbgitpuller (the hub's ``git-pull`` link needs it);
* ``binder/runtime.txt`` names the Python that ``pyproject.toml``'s ``requires-python``
  starts at, and every pinned package installed here accepts that Python;
* ``binder/postBuild`` installs gpulab with its widgets extra and the course's JupyterLab
  settings, as ``make lab`` does;
* ``_config.yml`` has the JupyterHub launch button off by default; switched on (in a scratch
  copy of a one-page book), Jupyter Book renders a JupyterHub ``git-pull`` link that opens
  the page in JupyterLab.
"""
from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"
#: Browser tests, lint and the handout PDF (pypdf, beautifulsoup4): not needed on a hub.
TEST_ONLY = {"playwright", "pytest-playwright", "ruff", "pypdf", "beautifulsoup4"}
#: in the hub image only
HUB_ONLY = {"nbgitpuller"}


def pins(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s;]+)", line)
        assert m, f"{path.name}: not an exact pin: {line!r}"
        out[re.sub(r"[-_.]+", "-", m.group(1)).lower()] = m.group(2)
    return out


def min_python() -> tuple[int, int]:
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    m = re.fullmatch(r">=\s*(\d+)\.(\d+)", spec.strip())
    assert m, f"requires-python {spec!r}: expected '>=X.Y'"
    return int(m.group(1)), int(m.group(2))


def test_binder_pins_equal_requirements():
    req, hub = pins(ROOT / "requirements.txt"), pins(BINDER / "requirements.txt")
    assert TEST_ONLY <= set(req), "TEST_ONLY names a package requirements.txt no longer has"
    expected = {k: v for k, v in req.items() if k not in TEST_ONLY}
    assert {k: v for k, v in hub.items() if k not in HUB_ONLY} == expected
    assert HUB_ONLY <= set(hub)


def test_runtime_is_the_minimum_python_and_the_pins_accept_it():
    from packaging.specifiers import SpecifierSet

    major, minor = min_python()
    assert (BINDER / "runtime.txt").read_text().strip() == f"python-{major}.{minor}"
    floor = f"{major}.{minor}.0"
    for name in pins(ROOT / "requirements.txt"):
        try:
            needs = importlib.metadata.metadata(name)["Requires-Python"]
        except importlib.metadata.PackageNotFoundError:
            continue
        if needs:
            assert floor in SpecifierSet(needs), (
                f"{name} needs Python {needs}: requires-python must not start below it")


def test_the_pins_need_the_python_the_docs_name():
    """README and setup page name the same Python as requires-python (not 3.10+)."""
    major, minor = min_python()
    for doc in ("README.md", "book/setup.md"):
        text = (ROOT / doc).read_text(encoding="utf-8")
        assert f"Python {major}.{minor}" in text, doc
        assert f"Python {major}.{minor - 1}" not in text, doc


def test_post_build_sets_up_the_lab_like_make_lab():
    post = BINDER / "postBuild"
    text = post.read_text(encoding="utf-8")
    assert os.access(post, os.X_OK), "binder/postBuild must be executable"
    assert "-e '.[widgets]'" in text
    assert "jupyter/overrides.json" in text and "overrides.d" in text
    assert "jupyter/jupyter_server_config.py" in text and "course_contents.py" in text
    assert "jupyter/chapter_notebooks.py" in text
    for f in re.findall(r"(?<![\w/])jupyter/[\w.]+", text):
        assert (ROOT / f).is_file(), f"postBuild uses a missing file: {f}"
    # repo2docker ignores root-level files once binder/ exists: nothing else may be needed
    assert not (BINDER / "environment.yml").exists()


def test_launch_button_is_off_by_default():
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert cfg["launch_buttons"]["jupyterhub_url"] == ""
    assert cfg["launch_buttons"]["notebook_interface"] == "jupyterlab"
    assert "repository" in cfg and "url" in cfg["repository"]


PAGE = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# A page

```{code-cell} ipython3
1 + 1
```
"""


def build_scratch_book(tmp_path: Path, hub: str, repo: str) -> str:
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    scratch = {
        "title": "scratch", "only_build_toc_files": True,
        "execute": {"execute_notebooks": "off"},
        "launch_buttons": {**cfg["launch_buttons"], "jupyterhub_url": hub},
        "repository": {**cfg["repository"], "url": repo},
    }
    (tmp_path / "_config.yml").write_text(yaml.safe_dump(scratch), encoding="utf-8")
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: page\n", encoding="utf-8")
    (tmp_path / "page.md").write_text(PAGE, encoding="utf-8")
    jb = Path(sys.executable).with_name("jupyter-book")
    if not jb.exists():
        pytest.skip("jupyter-book is not installed next to this Python")
    run = subprocess.run([str(jb), "build", "-W", "-n", "--quiet", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return (tmp_path / "_build" / "html" / "page.html").read_text(encoding="utf-8")


def test_launch_button_renders_when_a_hub_is_set(tmp_path):
    html = build_scratch_book(tmp_path, "https://hub.example.org",
                              "https://github.com/example/course")
    links = re.findall(r'href="(https://hub\.example\.org/hub/user-redirect/git-pull\?[^"]+)"',
                       html)
    assert links, "no JupyterHub launch link in the page"
    query = parse_qs(urlsplit(links[0].replace("&amp;", "&")).query)
    assert query["repo"] == ["https://github.com/example/course"]
    assert query["urlpath"] == ["lab/tree/course/page.md"]     # JupyterLab, not classic
    assert query["branch"] == ["main"]
