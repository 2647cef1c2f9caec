"""No notebook escapes testing, and labs are committed clean.

* The notebooks that ``make test`` executes with nbval are found by running pytest's own
  collection with exactly the Makefile's arguments (``make print-nbval-args``): the same
  directories, the same ``--ignore`` list, the root ``conftest.py`` that adds MyST ``.md``
  notebooks. That set must equal every notebook in the repository (``*.ipynb``, and ``.md``
  files with a jupytext ``format_name: myst`` header and a ``kernelspec``) minus the entries
  of ``labs/ignore_testing``, each of which needs a reason.
* Lab notebooks are committed without outputs, execution counts or saved widget state.
* Every lab is listed on the book's Labs page and in ``labs/README.md``; every page under
  ``book/`` is in ``_toc.yml`` (only files in the toc are published).
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
IGNORE_FILE = ROOT / "labs" / "ignore_testing"

# The predicate the nbval collection uses (root conftest.py), loaded under its own name.
_spec = importlib.util.spec_from_file_location("_gpulab_root_conftest", ROOT / "conftest.py")
_root_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_root_conftest)
is_myst_notebook = _root_conftest.is_myst_notebook

SKIP_DIRS = {".git", ".venv", "venv", "_build", "_work", "_vendor", "node_modules", ".jupyter_cache",
             ".pytest_cache", ".hypothesis", ".ipynb_checkpoints", "__pycache__"}


def repo_files() -> list[str]:
    """Files in the repository: tracked plus untracked-but-not-ignored (git), else a walk."""
    if shutil.which("git") and (ROOT / ".git").exists():
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=ROOT, capture_output=True, check=True).stdout.decode()
        return sorted({f for f in out.split("\0") if f and (ROOT / f).is_file()})
    found = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info")]
        found += [str((Path(dirpath) / f).relative_to(ROOT)) for f in filenames]
    return sorted(found)


def notebooks_in_repo() -> set[str]:
    nbs = set()
    for f in repo_files():
        if ".ipynb_checkpoints" in Path(f).parts:
            continue
        if f.endswith(".ipynb") or (f.endswith(".md") and is_myst_notebook(ROOT / f)):
            nbs.add(f)
    return nbs


def ignore_entries() -> dict[str, str]:
    """Parse labs/ignore_testing: ``path/from/repo/root  # reason`` per line."""
    entries = {}
    if not IGNORE_FILE.exists():
        return entries
    for n, line in enumerate(IGNORE_FILE.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        path, _, reason = line.partition("#")
        entries[path.strip()] = (reason.strip(), n)
    return entries


def nbval_args() -> list[str]:
    make = shutil.which("make")
    assert make, "`make` is needed: the nbval arguments live in the Makefile"
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    out = subprocess.run([make, "-s", "--no-print-directory", "print-nbval-args"],
                         cwd=ROOT, capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_ignore_file_entries_have_reasons():
    for path, (reason, line) in ignore_entries().items():
        assert reason, f"labs/ignore_testing:{line}: {path!r} needs a reason ('path  # reason')"
        assert (ROOT / path).is_file(), f"labs/ignore_testing:{line}: no such file {path!r}"


def test_nbval_runs_every_notebook():
    args = nbval_args()
    assert "--nbval-lax" in args or "--nbval" in args, f"nbval is not enabled: {args}"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 5), f"nbval collection failed:\n{proc.stdout}\n{proc.stderr}"
    collected = {line.split("::", 1)[0] for line in proc.stdout.splitlines()
                 if re.match(r"^\S+::Cell \d+$", line.strip())}

    expected = notebooks_in_repo() - set(ignore_entries())
    missing = sorted(expected - collected)
    extra = sorted(collected - notebooks_in_repo())
    assert not missing, (
        "notebooks that `make test` does not execute (put them under a folder of "
        "NBVAL_PATHS in the Makefile, or list them in labs/ignore_testing with a reason; "
        f"a notebook without code cells is not collected either): {missing}")
    assert not extra, f"nbval collects files that are not notebooks of this repo: {extra}"
    ignored_but_run = sorted(collected & set(ignore_entries()))
    assert not ignored_but_run, f"listed in labs/ignore_testing but still executed: {ignored_but_run}"


def _lab_notebooks() -> list[str]:
    return sorted(f for f in notebooks_in_repo() if f.startswith("labs/") and f.endswith(".ipynb"))


@pytest.mark.parametrize("lab", _lab_notebooks() or [pytest.param(None, marks=pytest.mark.skip(
    reason="no lab notebooks yet"))])
def test_lab_committed_without_outputs(lab):
    nb = json.loads((ROOT / lab).read_text(encoding="utf-8"))
    dirty = []
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        if cell.get("outputs"):
            dirty.append(f"cell {i}: {len(cell['outputs'])} output(s)")
        if cell.get("execution_count") is not None:
            dirty.append(f"cell {i}: execution_count {cell['execution_count']}")
    if "widgets" in nb.get("metadata", {}):
        dirty.append("notebook metadata holds saved widget state ('widgets')")
    assert not dirty, (f"{lab} must be committed without outputs "
                       f"(Edit > Clear Outputs of All Cells, then save): {dirty}")


def test_every_lab_is_listed():
    pages = {p: (ROOT / p).read_text(encoding="utf-8") for p in ("book/labs.md", "labs/README.md")}
    unlisted = [(Path(lab).name, page) for lab in _lab_notebooks()
                for page, text in pages.items() if Path(lab).name not in text]
    assert not unlisted, f"labs missing from their index pages: {unlisted}"


def test_every_book_page_is_in_toc():
    toc_text = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    toc = yaml.safe_load(toc_text)
    listed = set()

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("file", "root") and isinstance(value, str):
                    listed.add(re.sub(r"\.(md|ipynb)$", "", value))
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(toc)
    pages = [f for f in repo_files()
             if f.startswith("book/") and f.endswith((".md", ".ipynb"))
             and "/_" not in f and Path(f).name != "README.md"]
    orphans = sorted(p for p in pages if re.sub(r"\.(md|ipynb)$", "", p) not in listed)
    assert not orphans, f"pages under book/ that are not in _toc.yml (never published): {orphans}"
