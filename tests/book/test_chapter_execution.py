"""The chapters run once per ``make test``: in the book build, whose results are reused.

nbval with ``--nbval-lax`` on a MyST chapter (no stored outputs to compare) checks one
thing: every code cell runs without an error. The book build runs the same cells in a
fresh kernel (``execute_notebooks: cache``, ``allow_errors: false``, ``-W``) and keeps
each executed notebook in ``.jupyter_cache``, so ``make test`` does not run the chapters a
second time under nbval (``make test-notebooks`` still does, for every notebook). This
module makes nbval's check on the book build's executed notebooks: every MyST notebook
under ``book/`` is in the cache with its current code cells, every code cell ran (it has
an execution count) and no output is an error. The labs run in ``make answers`` (checked
by ``test_answers.py``); ``START.ipynb`` stays under nbval.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_spec = importlib.util.spec_from_file_location("_gpulab_root_conftest_exec",
                                               ROOT / "conftest.py")
_root_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_root_conftest)


def book_notebooks() -> list[Path]:
    """Every MyST notebook under book/ (what nbval collects there), sorted."""
    return sorted(p for p in (ROOT / "book").rglob("*.md")
                  if _root_conftest.is_myst_notebook(p))


def executed(path: Path):
    """The book build's executed notebook of ``path`` from .jupyter_cache, or None."""
    import jupytext

    sys.path.insert(0, str(ROOT / "jupyter"))
    try:
        import chapter_notebooks
    finally:
        sys.path.remove(str(ROOT / "jupyter"))
    return chapter_notebooks.from_cache(jupytext.read(path, fmt="md:myst"))


def problems(nb) -> list[str]:
    """What nbval --nbval-lax would report for an executed notebook: cells that did not
    run, and error outputs."""
    found = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        if cell.get("execution_count") is None:
            found.append(f"cell {i} did not run")
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                found.append(f"cell {i}: {out.get('ename')}: {out.get('evalue')}")
    return found


def test_the_book_has_chapters_to_check():
    names = {p.stem for p in book_notebooks()}
    assert {"nvlink", "pcie", "serving_decode"} <= names and len(names) >= 13, names


@pytest.mark.parametrize("path", book_notebooks(), ids=lambda p: str(p.relative_to(ROOT)))
def test_chapter_ran_in_the_book_build_without_error(path, skip_or_fail):
    if not (ROOT / ".jupyter_cache").is_dir():
        skip_or_fail("no .jupyter_cache: run `make book`")
    nb = executed(path)
    assert nb is not None, (
        f"{path.relative_to(ROOT)}: no executed notebook with its current code in "
        ".jupyter_cache (the book build did not run it, or the cache is stale)")
    assert not problems(nb), f"{path.relative_to(ROOT)}: {problems(nb)}"


def test_problems_finds_an_error_and_a_cell_that_did_not_run():
    import nbformat

    nb = nbformat.v4.new_notebook()
    ok = nbformat.v4.new_code_cell("1", execution_count=1)
    skipped = nbformat.v4.new_code_cell("2")
    failed = nbformat.v4.new_code_cell("1/0", execution_count=3, outputs=[
        nbformat.v4.new_output("error", ename="ZeroDivisionError",
                               evalue="division by zero", traceback=[])])
    nb.cells = [ok, nbformat.v4.new_markdown_cell("text"), skipped, failed]
    assert problems(nb) == ["cell 2 did not run",
                            "cell 3: ZeroDivisionError: division by zero"]
