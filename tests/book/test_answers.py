"""The answer keys of ``make answers`` (``_build/answers``): every lab ran with its
solutions filled in, every ✓ check cell passed, nothing raised; and the builder's
failure detection fails on a lab whose check fails.

Run ``make answers`` first (``make test`` does)."""
from __future__ import annotations

import json

import nbformat
import pytest

from instructor_kit import BUILD, ROOT, import_script

ANSWERS = BUILD / "answers"


@pytest.fixture(scope="module")
def summary(skip_or_fail):
    f = ANSWERS / "summary.json"
    if not f.is_file():
        skip_or_fail("answer keys not built: run `make answers` (_build/answers missing)")
    return {r["lab"]: r for r in json.loads(f.read_text(encoding="utf-8"))}


def test_every_lab_has_an_answer_key(summary):
    labs = [p.name for p in import_script("build_answers").lab_paths()]
    assert labs and sorted(summary) == sorted(labs)


@pytest.mark.parametrize("lab", sorted(p.name for p in (ROOT / "labs").glob("lab*.ipynb")))
def test_answer_key_is_complete(summary, lab):
    r = summary[lab]
    assert r["error"] is None
    assert r["check_cells"] > 0 and r["check_cells_passed"] == r["check_cells"]
    nb = nbformat.read(ANSWERS / lab, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code if c.source.strip()), "a cell did not run"
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for c in code for o in c.outputs)
    assert "solutions: on" in text and "not attempted yet" not in text
    assert text.count("✓ ") >= r["check_cells"]
    assert (ANSWERS / lab).with_suffix(".html").stat().st_size > 0


def test_a_failing_check_fails_the_answer_key(tmp_path, monkeypatch):
    build_answers = import_script("build_answers")
    # run_lab turns solutions on in this process's environment (its kernels inherit it);
    # restore it afterwards, or every later test would run the labs' checks strict
    monkeypatch.setenv("GPULAB_LAB_SOLUTIONS", "1")
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("from gpulab.labcheck import check, status_line\n"
                                  "print(status_line())"),
        nbformat.v4.new_code_cell("check('1', 2.0, 2.0)"),
        nbformat.v4.new_code_cell("# ✓ check (run me)\ncheck('2', 400.0, 50.0, "
                                  "unit='GB/s')")])
    lab = tmp_path / "lab99_broken.ipynb"
    nbformat.write(nb, lab)
    out = tmp_path / "out"
    out.mkdir()
    r = build_answers.run_lab(lab, out, timeout=120)
    assert r["error"] and "8x too large" in r["error"]
    assert (r["check_cells"], r["check_cells_passed"]) == (2, 1)
