"""JupyterLab at the repository root: landing notebook, chapter copies, course settings.

* ``START.ipynb`` links every lab and every chapter notebook of ``_toc.yml``;
* ``jupyter/overrides.json`` opens Markdown and MyST files as notebooks and turns the news
  pop-up and the update check off, with plugin ids and values that JupyterLab's own schemas
  accept;
* the course's contents manager serves a text file opened as a notebook read-only and refuses
  to save it, so a tracked chapter source is never rewritten (jupytext would: see
  ``test_jupytext_round_trip_is_not_identity``), while ``.ipynb`` files save normally;
* ``jupyter/chapter_notebooks.py`` writes an executed copy whose prose shows the glued numbers.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import importlib.util
import json
import re
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
JUPYTER = ROOT / "jupyter"
START = ROOT / "START.ipynb"


def _load(name: str):
    """Import a module of jupyter/ (a folder of course tooling, not a package)."""
    if str(JUPYTER) not in sys.path:
        sys.path.insert(0, str(JUPYTER))
    spec = importlib.util.spec_from_file_location(name, JUPYTER / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


chapter_notebooks = _load("chapter_notebooks")


def toc_notebook_chapters() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    return [f for f in files if chapter_notebooks.is_chapter_notebook(ROOT / f"{f}.md")]


def start_links() -> list[str]:
    nb = nbformat.read(START, as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    return re.findall(r"\]\(([^)\s]+)\)", text)


# ---- landing notebook ---------------------------------------------------------------------

def test_start_links_every_lab_and_every_chapter():
    links = start_links()
    labs = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "labs").glob("lab*.ipynb"))
    assert labs, "no labs found"
    for lab in labs:
        assert lab in links, f"START.ipynb does not link {lab}"
    chapters = toc_notebook_chapters()
    assert len(chapters) >= 9
    for f in chapters:
        assert f"_build/chapters/{Path(f).name}.ipynb" in links, (
            f"START.ipynb does not link the notebook copy of {f}.md")


def test_start_links_point_at_real_files():
    sources = {Path(f).name for f in toc_notebook_chapters()}
    for link in start_links():
        if link.startswith("_build/chapters/"):
            assert Path(link).stem in sources, f"{link}: no chapter {Path(link).stem}.md"
        else:
            assert (ROOT / link).is_file(), f"START.ipynb links a missing file: {link}"


def test_start_is_committed_clean():
    nb = nbformat.read(START, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


# ---- JupyterLab settings -------------------------------------------------------------------

def _schema(plugin_id: str) -> dict:
    package, plugin = plugin_id.split(":")
    import jupyterlab
    app_dir = Path(jupyterlab.__file__).resolve().parents[4] / "share" / "jupyter" / "lab"
    path = app_dir / "schemas" / package / f"{plugin}.json"
    if not path.is_file():
        pytest.skip(f"JupyterLab schema {path} not installed")
    return json.loads(path.read_text(encoding="utf-8"))


def test_overrides_open_markdown_as_notebooks_and_silence_news():
    overrides = json.loads((JUPYTER / "overrides.json").read_text(encoding="utf-8"))
    viewers = overrides["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]
    # a chapter is a .md file: JupyterLab's file type for it is "markdown", not "myst"
    assert viewers["markdown"] == "Jupytext Notebook"
    assert viewers["myst"] == "Jupytext Notebook"
    notification = overrides["@jupyterlab/apputils-extension:notification"]
    assert notification["fetchNews"] == "false"
    assert notification["checkForUpdates"] is False


def test_overrides_match_jupyterlab_schemas():
    import jsonschema

    overrides = json.loads((JUPYTER / "overrides.json").read_text(encoding="utf-8"))
    for plugin_id, values in overrides.items():
        schema = _schema(plugin_id)
        for key in values:
            assert key in schema["properties"], f"{plugin_id}: no setting {key!r}"
        jsonschema.validate(values, {**schema, "required": []})


def test_jupytext_knows_markdown_files():
    """The "markdown" file type holds .md (what the defaultViewers key above relies on)."""
    import jupytext

    assert ".md" in jupytext.NOTEBOOK_EXTENSIONS


# ---- contents manager: chapter sources are never rewritten ---------------------------------

def test_server_config_installs_the_course_contents_manager():
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("jupyter_server_config.py", path=str(JUPYTER)).load_config()
    name = config.ServerApp.contents_manager_class
    assert name == "course_contents.CourseContentsManager"
    module, _, cls = name.rpartition(".")
    assert hasattr(_load(module), cls)


@pytest.mark.parametrize("chapter", ["book/nvlink.md", "book/why_interconnect.md"])
def test_jupytext_round_trip_is_not_identity(chapter):
    """Why the sources are read-only: jupytext writes a chapter back differently."""
    import jupytext

    text = (ROOT / chapter).read_text(encoding="utf-8")
    again = jupytext.writes(jupytext.reads(text, fmt="md:myst"), fmt="md:myst")
    assert again != text


@pytest.fixture
def manager(tmp_path):
    course_contents = _load("course_contents")
    for f in ("book/nvlink.md", "README.md", "START.ipynb"):
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_bytes((ROOT / f).read_bytes())
    return course_contents.CourseContentsManager(root_dir=str(tmp_path))


def run(coro):
    """Run a coroutine to completion, also when this thread already has a running loop
    (Playwright's sync API leaves one behind in the browser tests of the same session)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("path", ["book/nvlink.md", "README.md"])
def test_text_notebook_is_read_only_and_never_saved(manager, path):
    from tornado.web import HTTPError

    file = Path(manager.root_dir) / path
    before = _digest(file)
    model = run(manager.get(path, type="notebook"))
    assert model["type"] == "notebook" and model["writable"] is False
    # what JupyterLab's autosave or Ctrl+S would send back
    with pytest.raises(HTTPError) as err:
        run(manager.save({"type": "notebook", "format": "json",
                                  "content": model["content"]}, path))
    assert err.value.status_code == 403 and path in err.value.log_message
    assert _digest(file) == before


def test_text_file_stays_editable_as_text(manager):
    model = run(manager.get("book/nvlink.md", type="file", format="text"))
    assert model["type"] == "file" and model["writable"] is True


def test_ipynb_saves_normally(manager):
    (Path(manager.root_dir) / "labs").mkdir()
    (Path(manager.root_dir) / "labs" / "mine.ipynb").write_bytes(START.read_bytes())
    model = run(manager.get("labs/mine.ipynb"))
    assert model["writable"] is True
    model["content"]["cells"][0]["source"] += "\nmy note"
    run(manager.save({"type": "notebook", "format": "json",
                              "content": model["content"]}, "labs/mine.ipynb"))
    saved = nbformat.read(Path(manager.root_dir) / "labs" / "mine.ipynb", as_version=4)
    assert saved.cells[0].source.endswith("my note")


def test_landing_notebook_is_read_only(manager):
    from tornado.web import HTTPError

    before = _digest(Path(manager.root_dir) / "START.ipynb")
    model = run(manager.get("START.ipynb"))
    assert model["writable"] is False
    with pytest.raises(HTTPError):
        run(manager.save({"type": "notebook", "format": "json",
                                  "content": model["content"]}, "START.ipynb"))
    assert _digest(Path(manager.root_dir) / "START.ipynb") == before


# ---- executed chapter copies ---------------------------------------------------------------

@pytest.mark.parametrize("role,bundle,expected", [
    ("{glue:text}`x:.1f`", {"text/plain": "3.14159"}, "3.1"),
    ("{glue:text}`x:.0%`", {"text/plain": "0.256"}, "26%"),
    ("{glue:text}`x`", {"text/plain": "'H200'"}, "H200"),
    ("{glue:text}`x:,.0f`", {"text/plain": "np.float64(1234567.8)"}, None),
    ("{glue:md}`x`", {"text/plain": "'a'", "text/markdown": "**7** GB/s"}, "**7** GB/s"),
    ("{glue:text}`missing:.1f`", {}, "{glue:text}`missing:.1f`"),
])
def test_render_glue(role, bundle, expected):
    values = {"x": bundle} if bundle else {}
    text = chapter_notebooks.render_glue(f"is {role} here", values)
    if expected is None:       # not a plain number: the role is kept, never a wrong value
        assert text == f"is {role} here"
    else:
        assert text == f"is {expected} here"


def test_every_glue_role_form_in_the_chapters_is_recognised():
    for f in toc_notebook_chapters():
        text = (ROOT / f"{f}.md").read_text(encoding="utf-8")
        roles = re.findall(r"\{glue[^}]*\}`[^`]*`", text)
        matched = chapter_notebooks.GLUE_ROLE.findall(text)
        assert len(matched) == len(roles), f"{f}.md: a glue role form the copies miss"


MINI_CHAPTER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# A small chapter

```{code-cell} ipython3
from myst_nb import glue
glue("three", 1 + 2, display=False)
glue("ratio", 2 / 3, display=False)
```

One and two make {glue:text}`three`, a ratio of {glue:text}`ratio:.1%`.

::::{admonition} Quick check: a sum
:class: quick-check
What is one plus two?

:::{dropdown} Reveal the answer
It is {glue:text}`three`.
:::
::::
"""


def test_copy_is_executed_and_shows_numbers(tmp_path):
    src = tmp_path / "mini.md"
    src.write_text(MINI_CHAPTER, encoding="utf-8")
    before = src.read_bytes()
    out, how = chapter_notebooks.write_copy(src, tmp_path / "out")
    assert how == "executed"
    nb = nbformat.read(out, as_version=4)
    prose = nb.cells[-1].source
    assert prose.startswith("One and two make 3, a ratio of 66.7%.")
    # the quick check's reveal is a closed <details> element that JupyterLab renders
    assert ("**Quick check: a sum**\n\nWhat is one plus two?\n\n"
            "<details><summary>Reveal the answer</summary>\n\nIt is 3.\n\n</details>") in prose
    assert ":::" not in prose and "{admonition}" not in prose
    assert "{glue" not in prose
    assert nb.metadata["gpulab_course"]["source_sha256"] == hashlib.sha256(before).hexdigest()
    assert "jupytext" not in nb.metadata
    assert src.read_bytes() == before          # the source is never written
    assert chapter_notebooks.write_copy(src, tmp_path / "out")[1] == "up to date"
    src.write_text(MINI_CHAPTER.replace("1 + 2", "1 + 3"), encoding="utf-8")
    out, how = chapter_notebooks.write_copy(src, tmp_path / "out")
    assert how == "executed"
    assert nbformat.read(out, as_version=4).cells[-1].source.startswith("One and two make 4,")


@pytest.mark.parametrize("myst,markdown", [
    (":::{dropdown} Reveal\nx\n:::", "<details><summary>Reveal</summary>\n\nx\n\n</details>"),
    ("```{admonition} Takeaway\n:class: tip\nSo it is.\n```", "**Takeaway**\n\nSo it is."),
    ("```{exercise} Ring time\n:label: ex-1\nCompute it.\n```", "**Exercise: Ring time**\n\nCompute it."),
    ("```{math}\n:label: eq-a\nt = a + b\n```", "$$\nt = a + b\n$$"),
    ("```{solution-start} ex-1\n:class: dropdown\n```", "**Solution**"),
    ("```{include} _includes/x.md\n```", ""),
    ("see {ref}`the table <tab-x>`, {eq}`eq-a`, {numref}`fig-b` and {kbd}`Ctrl+C`",
     "see the table, the equation, the figure and `Ctrl+C`"),
    ("```bash\nmake lab\n```", "```bash\nmake lab\n```"),
    ("(ch-x)=\n# Title", "# Title"),
    ("{glue:text}`k:.1f` stays", "{glue:text}`k:.1f` stays"),
])
def test_myst_to_markdown(myst, markdown):
    assert chapter_notebooks.myst_to_markdown(myst) == markdown


def test_chapter_notebooks_cli_refuses_a_non_notebook(capsys):
    with pytest.raises(SystemExit) as err:
        chapter_notebooks.main([str(ROOT / "README.md")])
    assert err.value.code == 2
    assert "chapters:" in capsys.readouterr().err


# ---- Makefile -----------------------------------------------------------------------------

def makefile_rules() -> dict[str, tuple[list[str], str]]:
    """target -> (prerequisites, recipe text) for the plain rules of the Makefile."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    rules = {}
    for m in re.finditer(r"^([\w.-]+):(?!=)[ \t]*([^\n]*)\n((?:\t[^\n]*\n)*)", text, re.M):
        rules[m.group(1)] = (m.group(2).split(), m.group(3))
    return rules


def test_only_the_browser_tests_install_chromium():
    rules = makefile_rules()
    assert "chromium" in rules["test-browser"][0]
    for target in ("book", "lab", "venv", "test-unit", "test-notebooks", "chapter-notebooks"):
        assert "chromium" not in rules[target][0], f"make {target} should not need Chromium"


def test_make_lab_serves_the_learners_copies_with_the_course_config():
    prereqs, recipe = makefile_rules()["lab"]
    assert "chapter-notebooks" in prereqs and "lab-work" in prereqs
    assert "--ServerApp.root_dir=$(CURDIR)/$(LAB_WORK)" in recipe
    assert "JUPYTER_CONFIG_PATH=$(CURDIR)/jupyter" in recipe
    assert "default_url=/lab/tree/START.ipynb" in recipe
    assert "jupyter/chapter_notebooks.py" in makefile_rules()["chapter-notebooks"][1]


# ---- documentation: the sample files it names exist -----------------------------------------

@pytest.mark.parametrize("doc", ["README.md", "book/setup.md"])
def test_sample_files_named_in_the_docs_exist(doc):
    text = (ROOT / doc).read_text(encoding="utf-8")
    paths = set(re.findall(r"(?<![\w/.])((?:tests/data|gpulab/data)/[\w./-]+)", text))
    assert any(p.startswith("tests/data/") for p in paths), f"{doc} names no tests/data/ file"
    for path in paths:
        assert (ROOT / path.rstrip(".")).exists(), f"{doc} names a missing path: {path}"
    assert "source .venv/bin/activate" in text, f"{doc} does not say to activate .venv"
    assert "pip install -e '.[widgets]'" in text
