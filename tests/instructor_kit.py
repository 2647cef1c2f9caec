"""Shared helpers of the instructor-kit tests: the book's pages from _toc.yml and the
slide markers counted in the chapter sources (independently of scripts/build_slides.py)."""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "_build"


def _non_chapter_parts():
    """The toc parts that hold no chapters, as the book's browser tests define them
    (``NON_CHAPTER_PARTS`` in tests/book/test_book_html.py), so that both agree."""
    tree = ast.parse((ROOT / "tests" / "book" / "test_book_html.py").read_text(
        encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                getattr(t, "id", None) == "NON_CHAPTER_PARTS" for t in node.targets):
            return set(ast.literal_eval(node.value))
    raise AssertionError("NON_CHAPTER_PARTS not found in tests/book/test_book_html.py")


NON_CHAPTER_PARTS = _non_chapter_parts()


def toc():
    """[(doc, part caption)] in book order; the root has caption None."""
    t = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    out = [(re.sub(r"\.md$", "", t["root"]), None)]

    def walk(entries, caption):
        for e in entries or []:
            if "file" in e:
                out.append((re.sub(r"\.(md|ipynb)$", "", e["file"]), caption))
            walk(e.get("sections"), caption)
            walk(e.get("chapters"), caption)
    for part in t.get("parts") or []:
        walk(part.get("chapters"), part.get("caption"))
    return out


def chapters():
    return [d for d, c in toc() if c is not None and c not in NON_CHAPTER_PARTS]


def source_title(doc):
    """The H1 of a page's source file."""
    for line in (ROOT / f"{doc}.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    raise AssertionError(f"{doc}.md has no H1")


_FIG = re.compile(r"(?m)^tags: \[[^\]]*\bslide\b[^\]]*\]$")
_TAKEAWAY = re.compile(r"(?m)^```\{admonition\} Takeaway\n:class: [^\n]*\bslide\b")
_MATH = re.compile(r"(?m)^```\{math\}\n((?::[a-z]+:[^\n]*\n)*)")


def slide_marks(doc):
    """{"figure": n, "takeaway": n, "equation": n} marked for slides in ``doc``.md."""
    text = (ROOT / f"{doc}.md").read_text(encoding="utf-8")
    eqs = sum(1 for m in _MATH.finditer(text)
              if re.search(r"(?m)^:class: [^\n]*\bslide\b", m.group(1)))
    return {"figure": len(_FIG.findall(text)), "takeaway": len(_TAKEAWAY.findall(text)),
            "equation": eqs}


def import_script(name):
    """Import scripts/<name>.py (the scripts folder is not a package)."""
    folder = str(ROOT / "scripts")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return __import__(name)
