"""Browser tests of the built book (``_build/html``), fully offline.

Every page listed in ``_toc.yml`` is loaded once in headless Chromium, served from
127.0.0.1 with every other request aborted (fixtures in ``conftest.py``). Checks:

* the page loads, its title is "<h1> — <book title>", and no "Traceback" is shown;
* zero external requests, no JavaScript page errors, no HTTP errors on the local site;
* every internal link points at a file that exists, and every ``#anchor`` at an id in it;
* every image has loaded (``naturalWidth > 0``); MathJax typeset every math element from the
  vendored copy (no raw ``\\(`` left);
* embedded ipywidgets render from the vendored ``widgets/embed-amd.js`` (not a CDN);
* each chapter (toc parts other than ``NON_CHAPTER_PARTS``) has at least one figure in a
  cell output and at least one typeset equation.

The search page is opened twice: from disk (``file://``), where it must log no console
error (the browser refuses the fetch of each hit's page for a snippet, so none is made),
and served, where the hits keep their snippets.

Screenshots of every page go to ``_build/screenshots/book/``.
Run: ``make book`` then ``pytest tests/book/test_book_html.py`` (or ``-m browser``).
"""
from __future__ import annotations

import html.parser
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import yaml


pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]

NON_CHAPTER_PARTS = {"Start here", "Reference", "Teach this course"}
SCREENSHOTS = ROOT / "_build" / "screenshots" / "book"
# html-manager 1.x asks for font-awesome files relative to the page (toolchain guide, §2);
# sliders do not need them, so these 404s are tolerated.
TOLERATED_404 = re.compile(r"/@jupyter-widgets/html-manager/dist/[^/]+\.(woff2?|ttf|eot|svg)")


# ---------------------------------------------------------------------------------------
# Pages from the table of contents
# ---------------------------------------------------------------------------------------
def _toc_entries():
    """Yield (docname, part caption) for every file in _toc.yml (jb-book format)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))

    def strip(name):
        return re.sub(r"\.(md|ipynb|rst)$", "", name)

    def walk(entries, caption):
        for entry in entries or []:
            if "file" in entry:
                yield strip(entry["file"]), caption
            yield from walk(entry.get("sections"), caption)
            yield from walk(entry.get("chapters"), caption)

    yield strip(toc["root"]), None
    yield from walk(toc.get("chapters"), None)
    for part in toc.get("parts") or []:
        yield from walk(part.get("chapters"), part.get("caption"))


TOC = list(_toc_entries())
PAGES = [doc for doc, _ in TOC]
CHAPTERS = [doc for doc, caption in TOC if caption is not None and caption not in NON_CHAPTER_PARTS]
BOOK_TITLE = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["title"]


def test_toc_is_not_trivial():
    assert "book/why_interconnect" in CHAPTERS and "book/nvlink" in CHAPTERS, CHAPTERS
    assert len(PAGES) == len(set(PAGES)), "a file is listed twice in _toc.yml"


def test_every_toc_page_was_built(html_dir):
    missing = [doc for doc in PAGES if not (html_dir / f"{doc}.html").is_file()]
    assert not missing, f"pages in _toc.yml without HTML output: {missing}"


# ---------------------------------------------------------------------------------------
# Visiting a page once, collecting everything the tests look at
# ---------------------------------------------------------------------------------------
@dataclass
class PageReport:
    doc: str
    title: str = ""
    h1: str = ""
    text: str = ""
    prose_text: str = ""
    links: list = field(default_factory=list)
    images: list = field(default_factory=list)  # [src, complete, naturalWidth, in_cell_output]
    n_math: int = 0
    n_math_typeset: int = 0
    n_mjx: int = 0
    has_widget_state: bool = False
    n_widget_views: int = 0
    n_widgets_rendered: int = 0
    widget_scripts: list = field(default_factory=list)
    loaded_urls: list = field(default_factory=list)
    external: list = field(default_factory=list)
    page_errors: list = field(default_factory=list)
    bad_responses: list = field(default_factory=list)


COLLECT_JS = r"""
() => {
  const article = document.querySelector("main article") || document.body;
  const h1 = article.querySelector("section h1") || article.querySelector("h1");
  const prose = article.cloneNode(true);
  prose.querySelectorAll("pre, code, script, style, mjx-container, .MathJax").forEach(e => e.remove());
  const math = Array.from(article.querySelectorAll("span.math, div.math"));
  return {
    title: document.title,
    h1: h1 ? h1.innerText.replace(/[#¶]\s*$/, "").trim() : "",
    text: document.body.innerText,
    prose_text: prose.textContent,
    links: Array.from(document.querySelectorAll("a[href]")).map(a => a.href),
    images: Array.from(article.querySelectorAll("img")).map(
      i => [i.currentSrc || i.src, i.complete, i.naturalWidth, !!i.closest(".cell_output")]),
    n_math: math.length,
    n_math_typeset: math.filter(m => m.querySelector("mjx-container")).length,
    n_mjx: article.querySelectorAll("mjx-container").length,
    has_widget_state: !!document.querySelector('script[type="application/vnd.jupyter.widget-state+json"]'),
    n_widget_views: document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length,
    n_widgets_rendered: document.querySelectorAll(".jupyter-widgets").length,
    widget_scripts: Array.from(document.querySelectorAll("script[src]")).map(s => s.src)
                      .filter(s => /require(\.min)?\.js|embed-amd\.js/.test(s)),
  };
}
"""

WAIT_READY_JS = r"""
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  return true;
}
"""


def _settle(page, timeout_ms=60_000):
    """Wait for the network to go quiet (500 ms without a request), at most
    ``timeout_ms``. On a loaded machine some pages never see such a pause within
    Playwright's limit; the checks that follow test what loaded (images complete,
    MathJax typeset, widgets rendered, HTTP and JavaScript errors), so a page that
    stays busy is checked as it is rather than failed for its pace."""
    try:
        page.wait_for_load_state("networkidle", timeout=timeout_ms)
    except Exception as err:               # playwright's TimeoutError
        if "Timeout" not in type(err).__name__:
            raise


@pytest.fixture(scope="module")
def visit(browser, site_url, make_offline, page_weights, record_sizes, scroll_images):
    """Return a function doc -> PageReport; each page is loaded once per module (and the
    bytes it loaded are kept in ``page_weights`` for test_page_weight)."""
    cache: dict[str, PageReport] = {}
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    # a loaded 2-core machine (JupyterLab tests run beside these) can take longer than
    # Playwright's 30 s default to settle a long page; this checks that pages load
    # cleanly, not how fast (speed lives in benchmarks)
    context.set_default_timeout(120_000)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def _visit(doc: str) -> PageReport:
        if doc in cache:
            return cache[doc]
        page = make_offline(context.new_page())
        loaded, sizes = [], {}
        page.on("requestfinished", lambda r: loaded.append(r.url))
        record_sizes(page, sizes)
        page.goto(f"{site_url}/{doc}.html", wait_until="load")
        _settle(page)
        page.evaluate(WAIT_READY_JS)
        if page.locator('script[type="application/vnd.jupyter.widget-view+json"]').count():
            try:  # html-manager renders asynchronously after require.js has loaded it
                page.wait_for_selector(".jupyter-widgets", timeout=15_000)
            except Exception:
                pass
        scroll_images(page)       # so lazily loaded images are fetched too
        _settle(page)
        page.evaluate("window.scrollTo(0, 0)")
        data = page.evaluate(COLLECT_JS)
        report = PageReport(doc=doc, **data, loaded_urls=list(loaded),
                            external=list(page.external_requests),
                            page_errors=list(page.page_errors),
                            bad_responses=[(s, u) for s, u in page.bad_responses
                                           if not (s == 404 and TOLERATED_404.search(u))])
        page.screenshot(path=str(SCREENSHOTS / (doc.replace("/", "__") + ".png")))
        page.close()
        if not page.external_requests:
            page_weights[doc] = (sum(sizes.values()), sizes, list(page.page_errors))
        cache[doc] = report
        return report

    yield _visit
    context.close()


# ---------------------------------------------------------------------------------------
# Per-page checks
# ---------------------------------------------------------------------------------------
def test_scroll_images_fetches_an_image_far_below(browser, site_url, make_offline, html_dir,
                                                  scroll_images):
    """The page visits above rely on scroll_images to fetch lazily loaded images: a lazy
    image 20,000 px down is not loaded before it and is loaded after it."""
    src = sorted(html_dir.glob("_images/*.svg"))[0].name
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = make_offline(context.new_page())
    try:
        page.goto(f"{site_url}/{PAGES[0]}.html", wait_until="load")
        page.evaluate("""src => {
            const gap = document.createElement("div"); gap.style.height = "20000px";
            const img = document.createElement("img");
            img.className = "lazy-probe"; img.loading = "lazy"; img.src = src;
            document.body.append(gap, img);
        }""", f"{site_url}/_images/{src}")
        page.wait_for_timeout(300)
        state = "() => { const i = document.querySelector('img.lazy-probe');" \
                " return [i.complete, i.naturalWidth]; }"
        assert page.evaluate(state)[1] == 0, "the probe image loaded before any scrolling"
        assert scroll_images(page, "img.lazy-probe") == 1
        complete, width = page.evaluate(state)
        assert complete and width > 0, "scroll_images did not get the lazy image loaded"
    finally:
        context.close()


@pytest.mark.parametrize("doc", PAGES)
def test_page_loads_cleanly(visit, doc):
    r = visit(doc)
    assert r.h1, f"{doc}: no <h1> in the article"
    assert r.title == f"{r.h1} — {BOOK_TITLE}" or r.title == BOOK_TITLE, \
        f"{doc}: unexpected <title> {r.title!r} (h1 {r.h1!r})"
    assert "Traceback" not in r.text, f"{doc}: a Traceback is shown on the page"
    assert r.external == [], f"{doc}: requests to the outside world: {r.external}"
    assert r.page_errors == [], f"{doc}: JavaScript errors: {r.page_errors}"
    assert r.bad_responses == [], f"{doc}: HTTP errors: {r.bad_responses}"


@pytest.mark.parametrize("doc", PAGES)
def test_images_load(visit, doc):
    r = visit(doc)
    broken = [src for src, complete, width, _ in r.images if not (complete and width > 0)]
    assert not broken, f"{doc}: images that did not load: {broken}"


@pytest.mark.parametrize("doc", PAGES)
def test_math_is_typeset_offline(visit, doc):
    r = visit(doc)
    assert r.n_math_typeset == r.n_math, \
        f"{doc}: {r.n_math - r.n_math_typeset} of {r.n_math} math elements not typeset by MathJax"
    raw = re.findall(r"\\\(|\\\[|\$\$", r.prose_text)
    assert not raw, f"{doc}: raw TeX delimiters left in the text: {raw[:5]}"
    if r.n_math:
        mathjax = [u for u in r.loaded_urls if "/mathjax/" in u]
        for part in ("startup.js", "core.js", "input/tex.js", "output/chtml.js"):
            assert any(f"/mathjax/{part}" in u for u in mathjax), \
                f"{doc}: MathJax's {part} was not loaded from the vendored /mathjax/ copy"


@pytest.mark.parametrize("doc", PAGES)
def test_widgets_render_from_vendored_js(visit, doc, site_url):
    r = visit(doc)
    if not r.has_widget_state:
        assert r.n_widget_views == 0, f"{doc}: widget views without widget state"
        return
    assert r.widget_scripts, f"{doc}: embeds widget state but loads no widget manager"
    foreign = [s for s in r.widget_scripts if not s.startswith(site_url)]
    assert not foreign, f"{doc}: widget JS not served by the book itself: {foreign}"
    for name in ("/widgets/require.js", "/widgets/embed-amd.js"):
        assert any(name in u for u in r.loaded_urls), f"{doc}: {name} did not load"
    if r.n_widget_views:
        assert r.n_widgets_rendered >= r.n_widget_views, \
            f"{doc}: {r.n_widget_views} widget views but {r.n_widgets_rendered} rendered"


# ---------------------------------------------------------------------------------------
# Internal links (checked on disk: every target file exists, every #anchor exists in it)
# ---------------------------------------------------------------------------------------
class _IdCollector(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for key, value in attrs:
            if key == "id" or (key == "name" and tag == "a"):
                self.ids.add(value)


@lru_cache(maxsize=None)
def _ids_in(path: Path) -> frozenset:
    parser = _IdCollector()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return frozenset(parser.ids)


@pytest.mark.parametrize("doc", PAGES)
def test_internal_links(visit, doc, site_url, html_dir):
    r = visit(doc)
    problems = []
    for href in sorted(set(r.links)):
        if not href.startswith(site_url + "/"):
            continue  # external links are not followed (offline); mailto:, javascript: etc.
        parts = urlsplit(href)
        rel = unquote(parts.path).lstrip("/")
        target = html_dir / rel
        if rel == "" or rel.endswith("/"):
            target = target / "index.html"
        if not target.is_file():
            problems.append(f"{href} -> missing file {target.relative_to(html_dir)}")
            continue
        frag = unquote(parts.fragment)
        if frag and target.suffix == ".html" and frag not in _ids_in(target):
            problems.append(f"{href} -> no id {frag!r} in {target.relative_to(html_dir)}")
    assert not problems, f"{doc}: broken internal links:\n  " + "\n  ".join(problems)


# ---------------------------------------------------------------------------------------
# Chapters: figures and equations
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("doc", CHAPTERS)
def test_chapter_has_rendered_figure(visit, doc):
    r = visit(doc)
    figures = [src for src, complete, width, in_output in r.images
               if in_output and complete and width > 0]
    assert figures, f"{doc}: no rendered image in any cell output"


@pytest.mark.parametrize("doc", CHAPTERS)
def test_chapter_has_typeset_math(visit, doc):
    r = visit(doc)
    assert r.n_mjx >= 1, f"{doc}: no MathJax-rendered equation (mjx-container) on the page"


# ---------------------------------------------------------------------------------------
# The search page, opened from disk and served
# ---------------------------------------------------------------------------------------
SEARCH_DONE_JS = "() => /found \\d+ page/.test(document.querySelector('#search-results')?.innerText || '')"


def _search(page, url: str) -> list[str]:
    """Open the search page for one common word; return the console errors it logged."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{url}?q=nvlink", wait_until="load")
    page.wait_for_function(SEARCH_DONE_JS, timeout=15_000)
    assert page.locator("#search-results ul.search li").count() > 0, "no hit for 'nvlink'"
    page.wait_for_timeout(1_000)       # the snippets' fetches, had they been made
    return errors


def test_search_page_from_disk_logs_no_error(browser, html_dir):
    """Over file:// a browser refuses searchtools.js's fetch of each hit's page (CORS) and
    logs an error per hit: there the hits are listed without snippets (layout.html)."""
    context = browser.new_context()
    page = context.new_page()
    try:
        errors = _search(page, (html_dir / "search.html").as_uri())
    finally:
        context.close()
    assert errors == [], f"search.html over file:// logged errors: {errors[:3]}"


def test_search_page_served_shows_snippets(browser, site_url, make_offline):
    context = browser.new_context()
    page = make_offline(context.new_page())
    try:
        errors = _search(page, f"{site_url}/search.html")
        page.wait_for_selector("#search-results ul.search li p.context", timeout=10_000)
    finally:
        context.close()
    assert errors == [], f"search.html over http logged errors: {errors[:3]}"
