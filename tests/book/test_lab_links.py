"""The labs and the book point at each other correctly.

* Every "Try it in the lab" reference in a chapter (the ``{lab}`<lab>.ipynb#Anchor``` role
  of ``book/_ext/book_html.py``) names a lab that exists and a heading of it: JupyterLab's
  anchor of a Markdown heading is its text with each space turned into ``-``. The role
  writes the lab's path as ``labs/<lab>.ipynb``, which agrees with the folder that
  ``make lab`` serves. No chapter hard-codes a JupyterLab address (a host and port): the
  published book cannot know where the reader's JupyterLab runs.
* Every explorer a chapter builds (``<name>_explorer(``) is linked from that chapter to a
  lab section that builds the same explorer and holds a ✓ check; every explorer of
  ``gpulab.widgets`` has such a section in some lab.
* Each lab's time is one value: its introduction, ``book/labs.md`` and ``labs/README.md``
  give the same number of minutes; the chapters a lab follows (``book/labs.md``) are
  named in the lab's prerequisites, and none of them is said to build on the lab.
* Solution cells are tagged ``solution`` and collapsed, and ✓ check cells are collapsed,
  in every lab: learners do not see answers by default.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LABS = ROOT / "labs"
BOOK = ROOT / "book"

# a reference to a lab section: {lab}`lab02_read_your_server.ipynb#PCIe-explorer`
LINK_RE = re.compile(r"\{lab\}`(?P<lab>lab\d\d_\w+\.ipynb)#(?P<anchor>[^`\s]+)`")
# a JupyterLab address typed into a page (http://localhost:8888/lab/tree/..., any host or port)
LAB_ADDRESS_RE = re.compile(r"https?://[\w.-]+(:\d+)?/(lab|tree|notebooks)(/|\b)[^)\s`]*")
EXPLORER_RE = re.compile(r"\b(?P<name>[a-z]+)_explorer\(")
HEADING_RE = re.compile(r"^(?P<hashes>#{1,6})\s+(?P<text>.+?)\s*$")


def jupyterlab_anchor(heading: str) -> str:
    """JupyterLab's id of a rendered Markdown heading: spaces become ``-``."""
    return heading.replace(" ", "-")


def cells(lab: str) -> list[dict]:
    return json.loads((LABS / lab).read_text(encoding="utf-8"))["cells"]


def source(cell: dict) -> str:
    return "".join(cell["source"])


def sections(lab: str) -> dict[str, list[dict]]:
    """``{anchor: cells from its heading to the next heading of the same or a higher
    level}``; a cell may open several nested sections."""
    found, open_ = {}, []          # open_: (level, anchor)
    for cell in cells(lab):
        if cell["cell_type"] == "markdown":
            in_fence = False
            for line in source(cell).splitlines():
                if line.lstrip().startswith("```"):
                    in_fence = not in_fence
                m = None if in_fence else HEADING_RE.match(line)
                if m:
                    level = len(m["hashes"])
                    open_ = [(lv, a) for lv, a in open_ if lv < level]
                    anchor = jupyterlab_anchor(m["text"])
                    found.setdefault(anchor, [])
                    open_.append((level, anchor))
        for _, anchor in open_:
            found[anchor].append(cell)
    return found


def lab_notebooks() -> list[str]:
    return sorted(p.name for p in LABS.glob("lab*.ipynb"))


def chapters() -> list[Path]:
    return sorted(p for p in BOOK.glob("*.md") if p.name != "labs.md")


def served_prefix() -> str:
    """The path of labs/ under JupyterLab's root as ``make lab`` starts it."""
    m = re.search(r"--ServerApp\.root_dir=(\S+)", (ROOT / "Makefile").read_text())
    root = (m[1] if m else ".").strip("/")
    return "" if root == "labs" else "labs/"


def chapter_links(path: Path) -> list[re.Match]:
    return list(LINK_RE.finditer(path.read_text(encoding="utf-8")))


def explorer_sections() -> dict[str, list[tuple[str, str]]]:
    """``{explorer name: [(lab, anchor), ...]}`` of the sections that build it and
    hold a ✓ check."""
    out: dict[str, list[tuple[str, str]]] = {}
    for lab in lab_notebooks():
        for anchor, cs in sections(lab).items():
            code = [source(c) for c in cs if c["cell_type"] == "code"]
            if not any(re.search(r"\bcheck\(", s) for s in code):
                continue
            for name in {m["name"] for s in code for m in EXPLORER_RE.finditer(s)}:
                out.setdefault(name, []).append((lab, anchor))
    return out


def test_anchor_rule():
    assert jupyterlab_anchor("PCIe explorer") == "PCIe-explorer"
    assert jupyterlab_anchor("Part D — Explore") == "Part-D-—-Explore"


def test_sections_are_found():
    secs = sections("lab01_link_math.ipynb")
    assert "Link-explorer" in secs and "Setup" in secs
    assert any("link_explorer(" in source(c) for c in secs["Link-explorer"])
    assert not any("link_explorer(" in source(c) for c in secs["Setup"])


@pytest.mark.parametrize("chapter", chapters(), ids=lambda p: p.stem)
def test_chapter_lab_links_resolve(chapter):
    prefix = served_prefix()
    for m in chapter_links(chapter):
        assert (LABS / m["lab"]).is_file(), f"{chapter.name}: no lab {m['lab']}"
        anchors = sections(m["lab"])
        assert m["anchor"] in anchors, (
            f"{chapter.name}: {m['lab']} has no heading with the anchor #{m['anchor']} "
            f"(headings: {sorted(anchors)})")
        assert prefix == "labs/", (
            f"{chapter.name}: the lab role writes labs/{m['lab']}, but `make lab` serves "
            f"the lab as {prefix + m['lab']!r}")


@pytest.mark.parametrize("page", [*chapters(), BOOK / "labs.md", LABS / "README.md"],
                         ids=lambda p: p.stem)
def test_no_jupyterlab_address_is_typed(page):
    """A typed address works for one port on one machine only; a page names the lab's path
    (the ``lab`` role) instead. ``book/labs.md`` may show what ``make lab`` prints, as code."""
    text = page.read_text(encoding="utf-8")
    if page.name == "labs.md":
        text = re.sub(r"`[^`\n]*`", "", text)     # an example of the URL `make lab` prints
    found = [m.group(0) for m in LAB_ADDRESS_RE.finditer(text)]
    assert not found, f"{page.name}: JupyterLab addresses typed into the page: {found}"


@pytest.mark.parametrize("chapter", chapters(), ids=lambda p: p.stem)
def test_every_chapter_explorer_links_to_its_lab_section(chapter):
    text = chapter.read_text(encoding="utf-8")
    used = {m["name"] for m in EXPLORER_RE.finditer(text)}
    if not used:
        pytest.skip(f"{chapter.name} builds no explorer")
    linked = {(m["lab"], m["anchor"]) for m in chapter_links(chapter)}
    where = explorer_sections()
    for name in sorted(used):
        assert set(where.get(name, [])) & linked, (
            f"{chapter.name} builds the {name} explorer but links to none of its "
            f"checked lab sections {where.get(name, [])}; its lab links: {sorted(linked)}")


def test_every_explorer_is_in_a_lab_with_a_check():
    widgets = pytest.importorskip("gpulab.widgets")
    where = explorer_sections()
    missing = [n for n in widgets.EXPLORER_NAMES if n not in where]
    assert not missing, f"explorers in no lab section with a ✓ check: {missing}"


def _minutes(text: str, lab: str) -> set[int]:
    rows = [ln for ln in text.splitlines() if lab in ln and ln.startswith("|")]
    return {int(x) for row in rows for x in re.findall(r"about (\d+) min", row)}


@pytest.mark.parametrize("lab", lab_notebooks())
def test_lab_time_is_one_value(lab):
    intro = source(cells(lab)[0])
    own = {int(x) for x in re.findall(r"[Aa]bout (\d+) minutes", intro)}
    assert len(own) == 1, f"{lab}: its introduction must give one time ('about N minutes')"
    for page in ("book/labs.md", "labs/README.md"):
        listed = _minutes((ROOT / page).read_text(encoding="utf-8"), lab)
        assert listed == own, f"{lab}: {sorted(own)} min in the lab, {sorted(listed)} in {page}"


def _chapter_names(stem: str) -> list[str]:
    text = (BOOK / f"{stem}.md").read_text(encoding="utf-8")
    title = re.search(r"^# (.+)$", text, re.M)[1]
    return [f"book/{stem}.md", title.casefold()]


@pytest.mark.parametrize("lab", lab_notebooks())
def test_lab_prerequisites_match_its_placement(lab):
    row = next(ln for ln in (BOOK / "labs.md").read_text(encoding="utf-8").splitlines()
               if ln.startswith("|") and lab in ln)
    follows = re.findall(r"\{doc\}`(\w+)`", row.split("|")[2])
    assert follows, f"book/labs.md names no chapter that {lab} follows"
    intro = source(cells(lab)[0])
    prereq = intro[intro.index("**Prerequisites.**"):].split("\n\n", 1)[0]
    flat = " ".join(prereq.split()).casefold()
    for stem in follows:
        path, title = _chapter_names(stem)
        assert path in prereq or title in flat, (
            f"{lab} follows {stem} (book/labs.md) but its prerequisites do not name it: "
            f"{prereq!r}")
    assert "build on this lab" not in flat, (
        f"{lab}: its prerequisites say a chapter builds on the lab, but book/labs.md "
        "places the lab after its chapters")


@pytest.mark.parametrize("lab", lab_notebooks())
def test_solutions_and_checks_are_collapsed(lab):
    bad = []
    for i, cell in enumerate(cells(lab)):
        s = source(cell)
        meta = cell.get("metadata", {})
        hidden = meta.get("jupyter", {}).get("source_hidden") is True
        if s.startswith("# Solution"):
            if not hidden or "solution" not in meta.get("tags", []):
                bad.append(f"cell {i}: solution not tagged 'solution' and collapsed")
        elif s.startswith(("# ✓ check", "# Reveal")) and not hidden:
            bad.append(f"cell {i}: check not collapsed")
    assert not bad, f"{lab}: {bad}"


@pytest.mark.parametrize("lab", lab_notebooks())
def test_lab_has_quick_checks(lab):
    quick = [source(c) for c in cells(lab) if c["cell_type"] == "code"
             and re.search(r'\bcheck\("Q\d', source(c))]
    assert 2 <= len(quick) <= 4, f"{lab}: {len(quick)} ✓-checked quick checks, want 2-4"
