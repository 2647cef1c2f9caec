"""The chapter copies that JupyterLab opens (``jupyter/chapter_notebooks.py``).

Opened from START without running a cell, a copy must show what the book shows: its
figures (the copy is signed, so JupyterLab trusts its SVG and HTML outputs), its
cross-references as titles and links rather than raw labels, and the book's bookkeeping
cells collapsed.
"""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import nbformat
import pytest
from nbformat.sign import NotebookNotary

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("chapter_notebooks",
                                              ROOT / "jupyter" / "chapter_notebooks.py")
cn = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cn)

LABELS = cn.label_index()
RAW = re.compile(r"\{(ref|numref|eq|doc|download)\}`|(?<![\w/.-])(fig|eq|ch|tab)-[a-z0-9]+"
                 r"(-[a-z0-9]+)+(?![\w.-]*\.(ipynb|md|png|svg))")


def test_every_reference_of_the_book_resolves():
    missing = []
    for path in sorted((ROOT / "book").glob("*.md")):
        for m in cn.ROLE.finditer(path.read_text(encoding="utf-8")):
            name, body = m.group("name"), m.group("text")
            if name not in ("ref", "numref", "eq", "doc"):
                continue
            target = body[body.index("<") + 1:-1] if body.endswith(">") else body
            if name == "doc" and not target.startswith("/"):
                target = f"/book/{target}"
            if target not in LABELS:
                missing.append(f"{path.name}: {m.group(0)}")
    assert not missing, missing[:10]


@pytest.mark.parametrize("myst,expected", [
    ("{numref}`fig-tp-fp8`", "[the figure “How much faster one layer shard runs in FP8 "
                             "than…”](tensor_parallel.ipynb)"),
    ("{eq}`eq-tp-fp8`", "[the equation in “FP8: faster GEMMs, slightly lighter communication”]"
                        "(tensor_parallel.ipynb#FP8:-faster-GEMMs,-slightly-lighter-communication)"),
    ("{ref}`ch-why-interconnect`", "[Why Interconnect Is the Bottleneck]"
                                   "(why_interconnect.ipynb#Why-Interconnect-Is-the-Bottleneck)"),
    ("{doc}`/book/labs`", "[Labs](../../book/labs.md)"),
    ("{lab}`lab05_plan_70b.ipynb#TP-explorer`",
     "[`labs/lab05_plan_70b.ipynb`, section “TP explorer”]"
     "(../../labs/lab05_plan_70b.ipynb#heading=TP-explorer)"),
    ("{lab}`lab04_accept_a_server.ipynb#Scale-out-explorer`",
     "[`labs/lab04_accept_a_server.ipynb`, section “Scale-out explorer”]"
     "(../../labs/lab04_accept_a_server.ipynb#heading=Scale-out-explorer)"),
    ("[Lab 5](http://localhost:8888/lab/tree/labs/lab05_plan_70b.ipynb#heading=TP-explorer)",
     "[Lab 5](../../labs/lab05_plan_70b.ipynb)"),
])
def test_references_become_titles_and_links(myst, expected):
    assert cn.myst_to_markdown(myst, LABELS) == expected


def test_a_copy_is_trusted_collapsed_and_free_of_raw_labels(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    src = ROOT / "book" / "notation.md"
    if not cn.is_chapter_notebook(src):
        src = cn.chapter_sources()[0]
    out, _ = cn.write_copy(src, tmp_path / "out")
    nb = nbformat.read(out, as_version=4)
    assert NotebookNotary().check_signature(nb), "JupyterLab would not show its figures"
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert not RAW.search(prose), RAW.search(prose).group(0)
    for cell in nb.cells:
        tags = set(cell.metadata.get("tags", []))
        if cell.cell_type == "code" and tags & {"remove-cell", "remove-input"}:
            assert cell.metadata["jupyter"]["source_hidden"] is True
        if cell.cell_type == "code" and not tags:
            assert not cell.metadata.get("jupyter", {}).get("source_hidden")
