"""The built book's pages (``_build/html``), read as HTML without a browser.

* Every image in a figure has an alt text that says something: not empty, not the image's
  file name or path (what docutils writes when a figure has no ``:alt:``; myst-nb's cell
  output figures never have one). ``book/_ext/book_html.py`` copies the caption's first
  sentence.
* A page is titled once: the intro, whose heading is the book's title, is not
  "<title> — <title>".
* Each page has exactly one search field: the sidebar's button on a page, the page's own
  input on the search page (the header's button and the sidebar's on the search page are
  left out; the Ctrl+K dialog's input and the small screens' icon in the article header are
  not fields on the page).
* At most ``MAX_VISIBLE_CODE_LINES`` lines of code are shown in the whole book: the non-blank
  lines of every code cell whose input is on the page (not tagged ``hide-input``, which
  folds it away, nor ``remove-input``). Setup, glue and table assembly are hidden (STYLE
  §5.2); the model and figure cells a reader learns from stay visible.

Run: ``make book`` then ``pytest tests/book/test_built_pages.py``.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parents[2]
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
BOOK_TITLE = CONFIG["title"]
# one word with a slash or an image's extension: a path or a file name, not a description
PATH_LIKE = re.compile(r"^\S*([/\\]\S*|\.(png|svg|jpe?g|gif|webp|pdf))$", re.IGNORECASE)


def toc_pages() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                yield re.sub(r"\.(md|ipynb)$", "", entry["file"])
            yield from walk(entry.get("sections"))
            yield from walk(entry.get("chapters"))

    return [toc["root"], *walk(toc.get("chapters")),
            *(doc for part in toc.get("parts") or [] for doc in walk(part.get("chapters")))]


PAGES = toc_pages()


def soup(html_dir: Path, doc: str) -> BeautifulSoup:
    return BeautifulSoup((html_dir / f"{doc}.html").read_text(encoding="utf-8"), "html.parser")


MAX_VISIBLE_CODE_LINES = 700
HIDDEN_INPUT = {"tag_hide-input", "tag_remove-input"}


def visible_code_lines(page: BeautifulSoup) -> int:
    """Non-blank lines in the inputs of the page's code cells that are shown unfolded."""
    n = 0
    for cell in page.select("div.cell"):
        if HIDDEN_INPUT & set(cell.get("class", [])):
            continue
        for pre in cell.select("div.cell_input pre"):
            n += sum(1 for line in pre.get_text().splitlines() if line.strip())
    return n


def test_visible_code_lines_rule():
    page = BeautifulSoup(
        '<div class="cell docutils container"><div class="cell_input"><pre>a = 1\n\nb = 2\n'
        '</pre></div><div class="cell_output"><pre>out\n</pre></div></div>'
        '<div class="cell tag_hide-input docutils container"><div class="cell_input">'
        '<pre>import x\n</pre></div></div>'
        '<div class="cell tag_remove-input docutils container"><div class="cell_output">'
        '<pre>42\n</pre></div></div>', "html.parser")
    assert visible_code_lines(page) == 2


def test_visible_code_lines_at_most_700(html_dir):
    counts = {doc: visible_code_lines(soup(html_dir, doc)) for doc in PAGES}
    total = sum(counts.values())
    assert total > 0, "no visible code cell found: has the cell markup changed?"
    shown = ", ".join(f"{doc}: {n}" for doc, n in sorted(counts.items(), key=lambda x: -x[1]) if n)
    assert total <= MAX_VISIBLE_CODE_LINES, (
        f"{total} visible code lines, at most {MAX_VISIBLE_CODE_LINES} ({shown}); hide "
        f"bookkeeping cells (imports, glue, helpers) with hide-input or remove-input")


def bad_alt(img) -> str | None:
    """Why an image's alt text says nothing, or None."""
    alt = " ".join((img.get("alt") or "").split())
    if not alt:
        return "no alt text"
    if alt == img.get("src") or PATH_LIKE.search(alt):
        return f"alt text is a path: {alt[:80]!r}"
    return None


def test_bad_alt_rule():
    assert bad_alt(BeautifulSoup('<img src="a.png">', "html.parser").img) == "no alt text"
    path = '<img src="../_images/ab12.svg" alt="../_images/ab12.svg">'
    assert bad_alt(BeautifulSoup(path, "html.parser").img).startswith("alt text is a path")
    name = '<img src="x/fig.png" alt="fig.png">'
    assert bad_alt(BeautifulSoup(name, "html.parser").img)
    good = '<img src="x.svg" alt="Ring AllReduce time against message size on 8 GPUs.">'
    assert bad_alt(BeautifulSoup(good, "html.parser").img) is None
    units = '<img src="x.svg" alt="Per-rail bandwidth of eight 200 Gb/s NICs.">'
    assert bad_alt(BeautifulSoup(units, "html.parser").img) is None


@pytest.mark.parametrize("doc", PAGES)
def test_figure_images_have_alt_text(html_dir, doc):
    page = soup(html_dir, doc)
    bad = [f"{img.get('src', '')[-40:]}: {why}" for fig in page.find_all("figure")
           for img in fig.find_all("img") if (why := bad_alt(img))]
    assert not bad, f"{doc}: figure images without a useful alt text:\n  " + "\n  ".join(bad)


def test_some_figures_were_checked(html_dir):
    n = sum(len(fig.find_all("img")) for doc in PAGES for fig in soup(html_dir, doc)("figure"))
    assert n >= 20, f"only {n} figure images in the built book: is the figure markup the same?"


@pytest.mark.parametrize("doc", PAGES)
def test_page_is_titled_once(html_dir, doc):
    title = " ".join(soup(html_dir, doc).title.get_text().split())
    parts = [p.strip() for p in title.split("—")]
    assert len(parts) == len(set(parts)), f"{doc}: <title> repeats itself: {title!r}"
    assert parts[-1] == BOOK_TITLE, f"{doc}: <title> {title!r} does not end with the book's title"


def search_fields(page: BeautifulSoup) -> list[str]:
    """The search fields a reader sees on a wide screen, as short descriptions."""
    found = []
    for el in page.select("button.search-button-field"):
        where = el.find_parent(["header", "nav", "aside", "div"], id=True)
        found.append(f"button in #{where['id'] if where else '?'}")
    for el in page.select('input[type="search"], input[name="q"]'):
        if el.find_parent("dialog") is None:
            found.append("input")
    return found


@pytest.mark.parametrize("doc", [*PAGES, "search"])
def test_one_search_field_per_page(html_dir, doc):
    fields = search_fields(soup(html_dir, doc))
    assert len(fields) == 1, f"{doc}: {len(fields)} search fields: {fields}"
