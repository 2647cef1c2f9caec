"""The handout PDF of ``make pdf`` (``_build/pdf/book.pdf``): every page of the book in
book order, each chapter's title in its own page range, every figure of each chapter drawn
on its pages (counted in the tagged PDF against the figures its source names, at least
one) and its equations typeset (no raw TeX).

Run ``make pdf`` first (``make test`` does)."""
from __future__ import annotations

import json
import re

import pytest

from instructor_kit import BUILD, ROOT, chapters, source_title, toc

PDF = BUILD / "pdf" / "book.pdf"
RAW_TEX_PAGES = 4


@pytest.fixture(scope="module")
def book(skip_or_fail):
    if not PDF.is_file():
        skip_or_fail("handout not built: run `make pdf` (_build/pdf/book.pdf missing)")
    from pypdf import PdfReader

    reader = PdfReader(PDF)
    index = json.loads((PDF.parent / "pages.json").read_text(encoding="utf-8"))
    return reader, {e["doc"]: e for e in index}


def words(text):
    """Whitespace-normalised text; typographic quotes as ASCII (the theme prints
    an apostrophe of a title as U+2019)."""
    text = text.replace("\u00ad", "").replace("\u2019", "'").replace("\u2018", "'")
    return " ".join(text.replace("\u201c", '"').replace("\u201d", '"').split())


def page_range(reader, entry):
    return [reader.pages[i] for i in range(entry["first_page"],
                                           entry["first_page"] + entry["n_pages"])]


FIGURE_MARK = re.compile(rb"/Figure ?<<\s*/MCID")


def figures_drawn(page):
    """Images drawn on a page: the tagged PDF wraps each in a ``/Figure`` marked-content
    sequence (SVG figures are drawn as vector paths, so they are no image objects)."""
    return len(FIGURE_MARK.findall(page.get_contents().get_data()))


def source_figures(doc):
    """Figures the chapter's source names (``name: fig-...`` in a cell's metadata)."""
    return len(re.findall(r"(?m)^    name: fig-", (ROOT / f"{doc}.md").read_text(
        encoding="utf-8")))


def test_every_page_in_book_order(book):
    reader, index = book
    assert list(index) == [doc for doc, _ in toc()]
    firsts = [e["first_page"] for e in index.values()]
    assert firsts == sorted(firsts) and firsts[0] == 0
    last = list(index.values())[-1]
    assert last["first_page"] + last["n_pages"] == len(reader.pages)
    outline = [o.title for o in reader.outline if not isinstance(o, list)]
    assert outline == [e["title"] for e in index.values()]


@pytest.mark.parametrize("doc", [d for d, _ in toc()])
def test_title_is_in_its_pages(book, doc):
    reader, index = book
    text = words(page_range(reader, index[doc])[0].extract_text())   # the first page
    assert words(source_title(doc)) in text


@pytest.mark.parametrize("doc", chapters())
def test_chapter_has_figures_and_typeset_math(book, doc):
    reader, index = book
    pages = page_range(reader, index[doc])
    drawn = sum(figures_drawn(p) for p in pages)
    assert drawn >= max(1, source_figures(doc)), (
        f"{doc}: {drawn} figures drawn on its {len(pages)} pages, "
        f"{source_figures(doc)} in the source")
    # the first pages hold equations in every chapter (text extraction is slow); the
    # builder already refuses to print a page with an equation MathJax did not typeset
    text = " ".join(p.extract_text() for p in pages[:RAW_TEX_PAGES])
    assert not re.search(r"\\\(|\\\[|\\frac|\\text\{", text), f"{doc}: raw TeX in PDF"


@pytest.mark.parametrize("doc, headers", [
    ("book/reading_nccl_tests", ("Transport", "Median error", "Worst error", "Points within")),
    ("book/scale_out", ("Median error", "Worst error")),
])
def test_wide_tables_keep_their_right_hand_columns(book, doc, headers):
    """The public-run tables scroll sideways on screen; on paper they are zoomed to the
    text width, so their last columns (the errors) are printed, not cut off."""
    reader, index = book
    text = words(" ".join(p.extract_text() or "" for p in page_range(reader, index[doc])))
    missing = [h for h in headers if h not in text]
    assert not missing, f"{doc}: columns cut from book.pdf: {missing}"
