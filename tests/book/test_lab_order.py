"""Every lab runs in order, top to bottom: its parts are lettered A, B, C, ... without a gap
or a jump back, and its wrap-up (or summary) is the last part, after every ✓ check.

Headings are the ``## `` lines of Markdown cells, outside fenced code blocks (a shell
comment ``# node B`` in a fenced block is not a heading).
"""
from __future__ import annotations

import json
import re
import string
from pathlib import Path

import pytest

LABS = Path(__file__).resolve().parents[2] / "labs"
LAB_FILES = sorted(LABS.glob("lab*.ipynb"))
PART_RE = re.compile(r"^Part ([A-Z]) — ")
WRAP_RE = re.compile(r"\b(wrap-up|summary)\b", re.I)
CHECK_RE = re.compile(r"^\s*check(?:_slips)?\(", re.M)


def outline(cells):
    """``[(kind, text)]`` in notebook order: ``("h2", heading)`` for each ``## `` heading
    and ``("check", "")`` for each code cell that calls a ✓ check."""
    out = []
    for cell in cells:
        text = "".join(cell["source"])
        if cell["cell_type"] == "code":
            if CHECK_RE.search(text):
                out.append(("check", ""))
            continue
        if cell["cell_type"] != "markdown":
            continue
        in_fence = False
        for line in text.splitlines():
            if line.lstrip().startswith(("```", "~~~")):
                in_fence = not in_fence
            elif not in_fence and line.startswith("## "):
                out.append(("h2", line[3:].strip()))
    return out


def order_problems(items):
    """What is out of order in an :func:`outline`; an empty list when nothing is."""
    problems = []
    heads = [t for kind, t in items if kind == "h2"]
    letters = [m.group(1) for m in map(PART_RE.match, heads) if m]
    want = list(string.ascii_uppercase[:len(letters)])
    if letters != want:
        problems.append(f"parts lettered {''.join(letters)}, expected {''.join(want)}")
    wraps = [i for i, t in enumerate(heads) if WRAP_RE.search(t)]
    if len(wraps) != 1:
        problems.append(f"{len(wraps)} wrap-up/summary headings, expected one")
    elif wraps[0] != len(heads) - 1:
        problems.append(f"wrap-up {heads[wraps[0]]!r} is followed by "
                        f"{heads[wraps[0] + 1:]}")
    else:
        at = max(i for i, (kind, t) in enumerate(items) if kind == "h2")
        if any(kind == "check" for kind, _ in items[at:]):
            problems.append("a ✓ check comes after the wrap-up")
    return problems


@pytest.mark.parametrize("lab", LAB_FILES, ids=lambda p: p.stem)
def test_parts_in_letter_order_and_wrap_up_last(lab):
    cells = json.loads(lab.read_text(encoding="utf-8"))["cells"]
    items = outline(cells)
    assert sum(kind == "check" for kind, _ in items) > 0, f"{lab.name}: no ✓ check found"
    assert order_problems(items) == [], lab.name


def test_the_checker_catches_a_wrap_up_before_later_parts():
    """The order lab 4 had: the wrap-up as Part I, then Parts J-L with their checks."""
    old = [("h2", "Setup"), ("h2", "Part A — Topology"), ("check", ""),
           ("h2", "Part B — Status"), ("h2", "Part C — Wrap-up"),
           ("h2", "Part D — Quick checks"), ("check", "")]
    assert any("followed by" in p for p in order_problems(old))
    assert order_problems([("h2", "Part A — x"), ("h2", "Part C — y"), ("h2", "Wrap-up")])
    assert order_problems([("h2", "Part A — x"), ("h2", "Summary"), ("check", "")])
    assert order_problems([("h2", "Part A — x"), ("h2", "Part B — y")])     # no wrap-up
    assert order_problems([("h2", "Part A — x"), ("check", ""),
                           ("h2", "Part B — Wrap-up")]) == []
