"""One minimum Python for the course: pyproject.toml's ``requires-python``, the
``gpulab doctor`` check (:data:`gpulab.doctor.MIN_PYTHON`) and the classroom page.

The page types no Python version: it glues the one of ``gpulab.doctor``. The test runs the
page's code cells (with a stand-in for ``myst_nb.glue`` that records what is glued) and
compares the glued text with ``requires-python``; it fails when the page, the doctor or
pyproject.toml names another version.
"""
from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import jupytext

from gpulab import doctor

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "book" / "instructor" / "classroom.md"


def requires_python() -> str:
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    spec = spec["project"]["requires-python"].strip()
    m = re.fullmatch(r">=\s*(\d+\.\d+)", spec)
    assert m, f"requires-python {spec!r}: expected '>=X.Y'"
    return m.group(1)


def run_page(monkeypatch):
    """Execute the page's code cells; returns ``({name: glued value}, namespace)``."""
    glued = {}

    def glue(name, value, display=True):
        glued[name] = value

    monkeypatch.setitem(sys.modules, "myst_nb", SimpleNamespace(glue=glue))
    nb = jupytext.read(PAGE)
    ns: dict = {}
    for cell in nb.cells:
        if cell.cell_type == "code":
            exec(compile(cell.source, str(PAGE), "exec"), ns)  # noqa: S102 - our own page
    return glued, ns


def test_doctor_page_and_pyproject_name_one_python(monkeypatch):
    want = requires_python()
    assert ".".join(map(str, doctor.MIN_PYTHON)) == want
    glued, ns = run_page(monkeypatch)
    assert glued["min_python"] == want
    assert f"--python-version {want}\"" in glued["wheelhouse_other_platform"].data
    assert f"Python {want} or newer" in ns["purpose"]["python"]


def test_page_glues_the_python_version_instead_of_typing_it():
    text = PAGE.read_text(encoding="utf-8")
    prose = "\n".join(c.source for c in jupytext.reads(text, fmt="md:myst").cells
                      if c.cell_type == "markdown")
    assert "{glue:text}`min_python`" in prose
    typed = re.findall(r"(?:Python|python-version)\s+3\.\d+", prose)
    assert typed == [], f"classroom.md types a Python version instead of gluing it: {typed}"
