"""Page weight of the built book (``_build/html``), measured in headless Chromium.

The weight of a page is the sum of the body sizes of every resource it loads (HTML, CSS,
scripts, fonts, images, the scripts that load others), after MathJax and the charts have
finished and every image has been scrolled into view, served from 127.0.0.1 with no
compression (fixtures in ``tests/conftest.py``). Checks:

* every chapter (a toc part other than ``NON_CHAPTER_PARTS`` of test_book_html.py) loads
  under 3 MB, every other page (front page, setup, reference, instructor pages) under 1 MB;
  the weights of all pages are written to ``_build/page_weight.txt``;
* MathJax is written only into a page with math of its own (or a widget), and is loaded as
  components without the context menu (``tex-chtml.js`` brings 0.43 MB of menu);
* no page loads Font Awesome's brands font or the full solid font (``book/_ext/slim_assets.py``
  subsets it to the icons the book shows);
* no page loads the ipywidgets embed manager (``widgets/embed-amd.js``, 3.6 MB) or embeds
  widget state unless it displays a widget (a widget-view output);
* no page loads pydata-sphinx-theme's ``fontawesome.js`` (1.5 MB; the theme's CSS already
  carries the icon webfonts).

Run: ``make book`` then ``pytest tests/book/test_page_weight.py``.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
import instructor_kit

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
MB = 1e6

# Limits in bytes (1 MB = 1e6 B, uncompressed): what a reader's browser downloads for a page.
CHAPTER_LIMIT = 3.0 * MB
TEXT_PAGE_LIMIT = 1.0 * MB
# A text page with math (the notation page's symbol tables) also loads MathJax (its core,
# TeX input, CHTML output and font: about 0.73 MB), and no more than that.
MATHJAX_ALLOWANCE = 0.75 * MB
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_JS = re.compile(r"/widgets/(embed-amd|require|offline-shim)\.js")


def _toc_docs():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                yield re.sub(r"\.(md|ipynb|rst)$", "", entry["file"])
            yield from walk(entry.get("sections"))
            yield from walk(entry.get("chapters"))

    yield re.sub(r"\.(md|ipynb|rst)$", "", toc["root"])
    yield from walk(toc.get("chapters"))
    for part in toc.get("parts") or []:
        yield from walk(part.get("chapters"))


PAGES = list(dict.fromkeys(_toc_docs()))
CHAPTERS = {doc for doc, caption in instructor_kit.toc()
            if caption is not None and caption not in instructor_kit.NON_CHAPTER_PARTS}
MATHJAX_TAG = re.compile(r"<script\b[^>]*src=\"[^\"]*/mathjax/|window\.MathJax\s*=")
REPORT = ROOT / "_build" / "page_weight.txt"


def limit(doc: str, sizes: dict | None = None) -> float:
    if doc in CHAPTERS:
        return CHAPTER_LIMIT
    mathjax = sizes and any("/mathjax/" in u for u in sizes)
    return TEXT_PAGE_LIMIT + (MATHJAX_ALLOWANCE if mathjax else 0.0)

WAIT_READY_JS = r"""
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  const charts = Array.from(document.querySelectorAll("div.gpulab-chart[data-spec]"));
  const t0 = Date.now();
  while (charts.some(c => c.getAttribute("data-rendered") !== "true") && Date.now() - t0 < 15000) {
    await new Promise(r => setTimeout(r, 100));
  }
  return true;
}
"""


@pytest.fixture(scope="module")
def weigh(browser, site_url, make_offline, page_weights, record_sizes, scroll_images):
    """Return a function doc -> (bytes, {url: bytes}, page_errors); each page loaded once
    in the session (test_book_html's visits fill ``page_weights`` first)."""
    cache = page_weights
    context = browser.new_context(viewport={"width": 1280, "height": 900})

    def _weigh(doc: str):
        if doc in cache:
            return cache[doc]
        page = make_offline(context.new_page())
        sizes: dict[str, int] = {}
        record_sizes(page, sizes)
        page.goto(f"{site_url}/{doc}.html", wait_until="load")
        page.wait_for_load_state("networkidle")
        page.evaluate(WAIT_READY_JS)
        scroll_images(page)
        page.wait_for_load_state("networkidle")
        page.close()
        assert not page.external_requests, f"{doc}: external requests {page.external_requests}"
        cache[doc] = (sum(sizes.values()), sizes, list(page.page_errors))
        return cache[doc]

    yield _weigh
    context.close()
    if cache:
        REPORT.parent.mkdir(exist_ok=True)
        REPORT.write_text("".join(
            f"{doc:34s} {'chapter' if doc in CHAPTERS else 'text':8s} {cache[doc][0] / MB:6.2f} MB"
            f"  (limit {limit(doc, cache[doc][1]) / MB:.2f} MB)\n" for doc in PAGES if doc in cache),
            encoding="utf-8")


def _top(sizes: dict, n: int = 8) -> str:
    return "\n".join(f"  {s / MB:6.3f} MB  {u}" for u, s in sorted(sizes.items(), key=lambda x: -x[1])[:n])


def test_chapters_are_known():
    assert "book/nvlink" in CHAPTERS and "book/notation" not in CHAPTERS, CHAPTERS
    assert len(CHAPTERS) >= 8, CHAPTERS


@pytest.mark.parametrize("doc", PAGES)
def test_page_weight_within_limit(weigh, doc):
    total, sizes, errors = weigh(doc)
    assert not errors, f"{doc}: page errors {errors}"
    kind = "chapter" if doc in CHAPTERS else "text page"
    assert total <= limit(doc, sizes), (
        f"{doc} ({kind}) loads {total / MB:.2f} MB, limit {limit(doc, sizes) / MB:.2f} MB; "
        f"largest:\n{_top(sizes)}")


@pytest.mark.parametrize("doc", PAGES)
def test_mathjax_only_where_there_is_math(html_dir, doc):
    text = (html_dir / f"{doc}.html").read_text(encoding="utf-8")
    has_math = 'class="math' in text or WIDGET_VIEW in text
    tags = MATHJAX_TAG.findall(text)
    if has_math:
        assert len(tags) == 2, f"{doc}: has math but MathJax's config and script are {tags}"
    else:
        assert not tags, f"{doc}: no math on the page, but it writes MathJax: {tags}"


@pytest.mark.parametrize("doc", PAGES)
def test_no_mathjax_menu_nor_full_icon_fonts(weigh, doc):
    _, sizes, _ = weigh(doc)
    heavy = [u for u in sizes if re.search(
        r"/mathjax/(tex-chtml\.js|ui/menu\.js)|fa-brands-400|fa-solid-900\.(woff2|ttf)", u)]
    assert not heavy, f"{doc}: loads {heavy}"


@pytest.mark.parametrize("doc", PAGES)
def test_widget_js_only_where_a_widget_is_displayed(html_dir, weigh, doc):
    text = (html_dir / f"{doc}.html").read_text(encoding="utf-8")
    if WIDGET_VIEW in text:
        return  # a displayed widget needs the manager (tests/book/test_book_html.py)
    assert WIDGET_STATE not in text, f"{doc}: widget state embedded but no widget displayed"
    assert not WIDGET_JS.search(text), f"{doc}: widget manager script tag but no widget displayed"
    _, sizes, _ = weigh(doc)
    loaded = [u for u in sizes if WIDGET_JS.search(u)]
    assert not loaded, f"{doc}: loads {loaded} but displays no widget"


@pytest.mark.parametrize("doc", PAGES)
def test_no_fontawesome_js(html_dir, doc):
    text = (html_dir / f"{doc}.html").read_text(encoding="utf-8")
    assert "scripts/fontawesome.js" not in text, f"{doc}: loads the 1.5 MB fontawesome.js"


@pytest.mark.parametrize("doc", PAGES)
def test_each_script_tag_once(html_dir, doc):
    """Duplicate inline scripts redeclare constants (e.g. sphinx-thebe's THEBE_JS_URL)."""
    text = (html_dir / f"{doc}.html").read_text(encoding="utf-8")
    tags = re.findall(r"<script\b[^>]*>.*?</script>", text, flags=re.S)
    dup = sorted({t[:120] for t in tags if tags.count(t) > 1})
    assert not dup, f"{doc}: script tags written more than once: {dup}"
