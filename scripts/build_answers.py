"""Answer keys: run every lab with its solutions filled in (``make answers``).

Each lab in ``labs/`` (minus those listed in ``labs/ignore_testing``) is executed in a
fresh kernel with ``GPULAB_LAB_SOLUTIONS=1`` (the labs' own solution switch,
:func:`gpulab.labcheck.solutions_on`) from the ``labs/`` folder, as a learner would run
it. The executed notebook is written to ``_build/answers/<lab>.ipynb`` (outputs and
widget state kept; never committed), with an HTML copy next to it.

The run fails (exit status 1) when a lab raises, including a ✓ check that fails (its
``AssertionError``), or when a cell that calls ``check(...)`` printed no ``✓`` line (a
check that did not run) or an exercise was skipped (an answer left ``None``).
``_build/answers/summary.json`` records, per lab, its check cells, how many of them
passed, the ``✓`` lines and the time.

Usage: ``python scripts/build_answers.py [--out _build/answers] [LAB.ipynb ...]``
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]
LABS = ROOT / "labs"
CHECK_CALL = re.compile(r"(?m)^[^#\n]*\bcheck\(")
PASS_LINE = re.compile(r"(?m)^✓ ")
SOLUTIONS_ENV = "GPULAB_LAB_SOLUTIONS"   # gpulab.labcheck.SOLUTIONS_ENV


def ignored(labs_dir=LABS):
    """Paths (relative to the repository) listed in ``labs/ignore_testing``."""
    f = labs_dir / "ignore_testing"
    if not f.is_file():
        return set()
    return {ln.split("#", 1)[0].strip() for ln in f.read_text().splitlines()} - {""}


def lab_paths(labs_dir=LABS):
    skip = ignored(labs_dir)
    return [p for p in sorted(labs_dir.glob("lab*.ipynb"))
            if str(p.relative_to(labs_dir.parent)) not in skip]


def check_cells(nb):
    """The code cells that call ``check(...)`` (the ✓ check cells)."""
    return [c for c in nb.cells if c.cell_type == "code" and CHECK_CALL.search(c.source)]


def stream_text(cell):
    """What a code cell printed (stdout and stderr streams)."""
    return "".join(o.get("text", "") for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream")


def run_lab(path, out_dir, timeout=600):
    """Execute one lab with solutions on; return its summary dict."""
    nb = nbformat.read(path, as_version=4)
    os.environ[SOLUTIONS_ENV] = "1"   # inherited by the kernel
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}},
                            store_widget_state=True)
    start = time.perf_counter()
    error = None
    try:
        client.execute()
    except CellExecutionError as exc:
        error = str(exc).strip().splitlines()[-1][:500]
    seconds = time.perf_counter() - start
    cells = check_cells(nb)
    passed = [c for c in cells if PASS_LINE.search(stream_text(c))]
    text = "".join(stream_text(c) for c in nb.cells if c.cell_type == "code")
    if error is None and "not attempted yet" in text:
        error = "an exercise was skipped (answer left None) with solutions on"
    if error is None and len(passed) < len(cells):
        error = f"{len(cells) - len(passed)} of {len(cells)} check cells printed no ✓"
    nbformat.write(nb, out_dir / path.name)
    _write_html(nb, out_dir / path.with_suffix(".html").name)
    return {"lab": path.name, "check_cells": len(cells), "check_cells_passed":
            len(passed), "pass_lines": len(PASS_LINE.findall(text)),
            "seconds": round(seconds, 1), "error": error}


def _write_html(nb, target):
    """A static HTML copy: MathJax and the widget manager from the built book's vendored
    copies (``../html/``) when they exist, so that it needs no network either."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab")
    vendor = ROOT / "_build" / "html"
    if (vendor / "mathjax" / "tex-chtml.js").is_file():
        exporter.mathjax_url = "../html/mathjax/tex-chtml.js"
        exporter.require_js_url = "../html/widgets/require.js"
        exporter.widget_renderer_url = "../html/widgets/embed-amd.js"
    body, _ = exporter.from_notebook_node(nb)
    target.write_text(body, encoding="utf-8")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("labs", nargs="*", type=Path, help="labs to run (default: all)")
    p.add_argument("--out", type=Path, default=ROOT / "_build" / "answers")
    args = p.parse_args(argv)
    labs = [lab.resolve() for lab in args.labs] or lab_paths()
    if not labs:
        print("build_answers: no lab found in labs/", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for lab in labs:
        r = run_lab(lab, args.out)
        results.append(r)
        status = "FAIL" if r["error"] else "ok"
        print(f"    {status:4}  {r['lab']}: {r['check_cells_passed']}/{r['check_cells']} "
              f"check cells passed ({r['pass_lines']} ✓), {r['seconds']:.0f} s"
              + (f": {r['error']}" if r["error"] else ""))
    (args.out / "summary.json").write_text(json.dumps(results, indent=2) + "\n",
                                           encoding="utf-8")
    failed = [r["lab"] for r in results if r["error"]]
    if failed:
        print(f"build_answers: FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    print(f"    answer keys in {args.out}: {len(results)} labs, "
          f"{sum(r['pass_lines'] for r in results)} ✓ checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
