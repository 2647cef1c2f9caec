"""Answer keys: run every lab with its solutions filled in (``make answers``).

Each lab in ``labs/`` (minus those listed in ``labs/ignore_testing``) is executed in a
fresh kernel with ``GPULAB_LAB_SOLUTIONS=1`` (the labs' own solution switch,
:func:`gpulab.labcheck.solutions_on`) from the ``labs/`` folder, as a learner would run
it. The executed notebook is written to ``_build/answers/<lab>.ipynb`` (outputs and
widget state kept; never committed), with an HTML copy next to it.

Each lab also gets a one-page **answer key**, ``_build/answers/<lab>_key.md`` and
``<lab>_key.html``: one row per ✓ check (in the order the lab runs them) with the
answer the check accepts, in a readable unit and rounding
(:func:`gpulab.labcheck.answer_text`: ``106.25 Gbit/s``, not ``1.0625e+11 bit/s``), and
the common slip, the typical wrong answer and what it comes from. The answers are read
from the kernel after the run (:func:`gpulab.labcheck.accepted`); the slips come from
``gpulab/data/lab_slips.yaml``, one entry per check. ``answer_keys.json`` holds every
row, with the check's unit and tolerance, and ``index.html`` links the keys and the
executed labs.

The run fails (exit status 1) when a lab raises, including a ✓ check that fails (its
``AssertionError``), or when a cell that calls ``check(...)`` printed no ``✓`` line (a
check that did not run) or an exercise was skipped (an answer left ``None``), or when a
✓ check has no slip in ``lab_slips.yaml`` (or the file names a check the lab does not
have). ``_build/answers/summary.json`` records, per lab, its check cells, how many of
them passed, the ``✓`` lines, the rows of its key and the time.

Usage: ``python scripts/build_answers.py [--out _build/answers] [LAB.ipynb ...]``
"""
from __future__ import annotations

import argparse
import html
import json
import numbers
import os
import re
import sys
import time
from pathlib import Path

import nbformat
import yaml
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from gpulab import units
from gpulab.labcheck import answer_text, markdown_table

ROOT = Path(__file__).resolve().parents[1]
LABS = ROOT / "labs"
CHECK_CALL = re.compile(r"(?m)^[^#\n]*\bcheck\(")
PASS_LINE = re.compile(r"(?m)^✓ ")
SOLUTIONS_ENV = "GPULAB_LAB_SOLUTIONS"   # gpulab.labcheck.SOLUTIONS_ENV
SLIPS_FILE = ROOT / "gpulab" / "data" / "lab_slips.yaml"
TICK_NAME = re.compile(r"(?m)^✓ (.+?): ")
KEY_MARK = "@@answer-key@@"
KEY_COLUMNS = ("Check", "Answer", "Common slip")
SLIP_FIELDS = {"why", "factor", "direction", "inverse", "value", "answer"}
# Run last in the lab's kernel (and removed before the notebook is written): what each
# check accepted, as JSON (a bandwidth with its direction, an exception class by name).
KEY_CELL = f"""\
import json as _key_json
import numbers as _key_numbers
from gpulab import labcheck as _key_labcheck, units as _key_units

def _key_plain(x):
    if isinstance(x, _key_units.Bandwidth):
        return {{"bandwidth": x.bytes_per_s, "direction": x.direction}}
    if isinstance(x, type):
        return {{"class": x.__name__}}
    if isinstance(x, (bool, str)):
        return x
    return int(x) if isinstance(x, _key_numbers.Integral) else float(x)

print({KEY_MARK!r} + _key_json.dumps({{
    name: {{"expected": _key_plain(a.expected), "rel": a.rel, "unit": a.unit}}
    for name, a in _key_labcheck.accepted().items()}}))
"""


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


def load_slips(path=SLIPS_FILE):
    """``{lab: {check: entry}}`` from ``lab_slips.yaml``, each entry checked."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of lab -> check -> slip")
    for lab, checks in data.items():
        if not isinstance(checks, dict):
            raise ValueError(f"{path}: {lab}: expected a mapping of check -> slip")
        for name, entry in checks.items():
            where = f"{path}: {lab}: check {name!r}"
            if not isinstance(entry, dict) or not isinstance(entry.get("why"), str) \
                    or not entry["why"].strip():
                raise ValueError(f"{where}: needs a non-empty 'why'")
            unknown = set(entry) - SLIP_FIELDS
            if unknown:
                raise ValueError(f"{where}: unknown field(s) {sorted(unknown)}; "
                                 f"allowed: {sorted(SLIP_FIELDS)}")
            if sum(k in entry for k in ("factor", "inverse", "value")) > 1:
                raise ValueError(f"{where}: give one of factor, inverse, value")
            if "factor" in entry:
                factor_value(entry["factor"], where)
            if "direction" in entry and entry["direction"] not in units.DIRECTIONS:
                raise ValueError(f"{where}: direction must be one of {units.DIRECTIONS}")
    return data


def factor_value(factor, where="factor"):
    """A slip's factor: a number or ``"a/b"``."""
    if isinstance(factor, numbers.Real) and not isinstance(factor, bool):
        return float(factor)
    m = re.fullmatch(r"\s*([0-9.]+)\s*/\s*([0-9.]+)\s*", str(factor))
    if not m or float(m.group(2)) == 0:
        raise ValueError(f"{where}: factor must be a number or 'a/b', got {factor!r}")
    return float(m.group(1)) / float(m.group(2))


def expected_value(plain):
    """The expected answer back from the kernel's JSON."""
    if isinstance(plain, dict) and "bandwidth" in plain:
        return units.Bandwidth(plain["bandwidth"], plain["direction"])
    if isinstance(plain, dict) and "class" in plain:
        return type(plain["class"], (Exception,), {})
    return plain


def slip_text(entry, accepted=None):
    """The "Common slip" cell: the slipped answer (when the entry gives one) and why."""
    why = entry["why"].strip()
    if accepted is None or not any(k in entry for k in ("factor", "inverse", "value")):
        return why
    want, unit, rel = expected_value(accepted["expected"]), accepted["unit"], \
        accepted["rel"]
    unit = "" if unit.startswith("(fraction") else unit    # a slip is no fraction
    if "value" in entry:
        wrong = entry["value"]
        if isinstance(wrong, (bool, str)) or not isinstance(wrong, numbers.Real):
            return f"{wrong}: {why}"
    elif isinstance(want, units.Bandwidth):
        if "inverse" in entry:
            raise ValueError("inverse of a bandwidth has no meaning")
        wrong = units.Bandwidth(want.bytes_per_s * factor_value(entry["factor"]),
                                entry.get("direction", want.direction))
    elif isinstance(want, numbers.Real) and not isinstance(want, bool):
        wrong = 1 / want if entry.get("inverse") else want * factor_value(entry["factor"])
    else:
        raise ValueError(f"a factor or inverse needs a number or a bandwidth, "
                         f"not {want!r}")
    return f"{answer_text(wrong, unit, rel)}: {why}"


def tick_names(nb):
    """The names of the ✓ lines the lab printed, in order, each once."""
    names = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            for name in TICK_NAME.findall(stream_text(cell)):
                if name not in names:
                    names.append(name)
    return names


def key_rows(lab, ticks, accepted, slips):
    """The rows of a lab's answer key: one per ✓ check, in the order it ran.

    ``ticks``: names of the ✓ lines; ``accepted``: ``{name: {"expected", "rel",
    "unit"}}`` from the kernel; ``slips``: the lab's entries of ``lab_slips.yaml``.
    Raises ValueError naming a check without a slip, a slip without a check, or a check
    with neither an accepted answer nor an ``answer`` text.
    """
    missing = [n for n in ticks if n not in slips]
    if missing:
        raise ValueError(f"{lab}: no slip in {SLIPS_FILE.name} for check(s) {missing}")
    stale = [n for n in slips if n not in ticks]
    if stale:
        raise ValueError(f"{lab}: {SLIPS_FILE.name} names check(s) {stale} that "
                         "printed no ✓ line")
    rows = []
    for name in ticks:
        entry, acc = slips[name], accepted.get(name)
        if "answer" in entry:
            answer = entry["answer"]
        elif acc is not None:
            answer = answer_text(expected_value(acc["expected"]), acc["unit"], acc["rel"])
        else:
            raise ValueError(f"{lab}: check {name!r} records no answer (it runs the "
                             f"learner's code?): give an 'answer' text in "
                             f"{SLIPS_FILE.name}")
        rows.append({"check": name, "answer": answer, "slip": slip_text(entry, acc),
                     "written": "answer" in entry,
                     **({"accepted": acc} if acc is not None else {})})
    return rows


def lab_title(nb):
    """The lab's H1."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return "Lab"


def write_key(stem, title, rows, out_dir):
    """``<stem>_key.md`` and ``<stem>_key.html``: the answer key, one table."""
    cells = [(r["check"], r["answer"], r["slip"]) for r in rows]
    note = ("Answers as the ✓ checks accept them, rounded within each check's "
            "tolerance; the common slip is the typical wrong answer and where it "
            "comes from.")
    (out_dir / f"{stem}_key.md").write_text(
        f"# Answer key: {title}\n\n{note}\n\n{markdown_table(cells, KEY_COLUMNS)}\n",
        encoding="utf-8")
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row)
                   + "</tr>\n" for row in cells)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in KEY_COLUMNS)
    (out_dir / f"{stem}_key.html").write_text(f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Answer key: {html.escape(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; font-size: 10pt; margin: 1.5em; }}
table {{ border-collapse: collapse; width: 100%; }}
th, td {{ border: 1px solid #999; padding: 3px 6px; text-align: left; vertical-align: top; }}
th {{ background: #eee; }} td:first-child {{ white-space: nowrap; }}
@page {{ size: A4 landscape; margin: 12mm; }}
</style></head><body>
<h1>Answer key: {html.escape(title)}</h1>
<p>{html.escape(note)}</p>
<table><thead><tr>{head}</tr></thead><tbody>
{body}</tbody></table>
</body></html>
""", encoding="utf-8")


def write_index(results, out_dir):
    """``index.html``: each lab's key and executed notebook."""
    items = "".join(
        f'<li>{html.escape(r["title"])}: <a href="{Path(r["lab"]).stem}_key.html">'
        f'answer key</a> ({r["key_rows"]} checks), <a href="{Path(r["lab"]).stem}.html">'
        "the lab with its solutions</a></li>\n" for r in results if r.get("key_rows"))
    (out_dir / "index.html").write_text(
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>Answer keys</title></head><body>\n<h1>Answer keys</h1>\n<ul>\n"
        f"{items}</ul>\n</body></html>\n", encoding="utf-8")


def run_lab(path, out_dir, timeout=600, slips=None):
    """Execute one lab with solutions on, write it and its answer key; return its
    summary dict (``slips``: the lab's entries of ``lab_slips.yaml``; None: no key)."""
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(KEY_CELL))
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
    key_cell = nb.cells.pop()
    marked = [ln for ln in stream_text(key_cell).splitlines() if ln.startswith(KEY_MARK)]
    accepted = json.loads(marked[0][len(KEY_MARK):]) if marked else {}
    cells = check_cells(nb)
    passed = [c for c in cells if PASS_LINE.search(stream_text(c))]
    text = "".join(stream_text(c) for c in nb.cells if c.cell_type == "code")
    if error is None and "not attempted yet" in text:
        error = "an exercise was skipped (answer left None) with solutions on"
    if error is None and len(passed) < len(cells):
        error = f"{len(cells) - len(passed)} of {len(cells)} check cells printed no ✓"
    nbformat.write(nb, out_dir / path.name)
    _write_html(nb, out_dir / path.with_suffix(".html").name)
    rows = []
    if error is None and slips is not None:
        try:
            rows = key_rows(path.stem, tick_names(nb), accepted, slips)
        except ValueError as exc:
            error = f"answer key: {exc}"
        else:
            write_key(path.stem, lab_title(nb), rows, out_dir)
    return {"lab": path.name, "title": lab_title(nb), "check_cells": len(cells),
            "check_cells_passed": len(passed), "pass_lines": len(PASS_LINE.findall(text)),
            "key_rows": len(rows), "rows": rows, "seconds": round(seconds, 1),
            "error": error}


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
    slips = load_slips()
    results = []
    for lab in labs:
        r = run_lab(lab, args.out, slips=slips.get(lab.stem, {}))
        results.append(r)
        status = "FAIL" if r["error"] else "ok"
        print(f"    {status:4}  {r['lab']}: {r['check_cells_passed']}/{r['check_cells']} "
              f"check cells passed ({r['pass_lines']} ✓), {r['seconds']:.0f} s"
              + (f": {r['error']}" if r["error"] else ""))
    keys = {r["lab"]: r.pop("rows") for r in results}
    (args.out / "summary.json").write_text(json.dumps(results, indent=2) + "\n",
                                           encoding="utf-8")
    (args.out / "answer_keys.json").write_text(json.dumps(keys, indent=2,
                                                          ensure_ascii=False) + "\n",
                                               encoding="utf-8")
    write_index(results, args.out)
    failed = [r["lab"] for r in results if r["error"]]
    if failed:
        print(f"build_answers: FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    print(f"    answer keys in {args.out}: {len(results)} labs, "
          f"{sum(r['pass_lines'] for r in results)} ✓ checks passed, "
          f"{sum(r['key_rows'] for r in results)} rows in the key tables (index.html)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
