"""The slide decks of ``make slides`` (``_build/slides``), checked against the chapter
sources and in headless Chromium, fully offline.

* one deck per chapter, holding exactly the figures, takeaways and equations that the
  chapter marks for slides (counted in the ``.md`` source, not by the builder);
* every slide of every deck shown in turn: visible, every image loaded, every formula
  typeset by the vendored MathJax (no raw ``\\(``, no MathJax error);
* no request leaves 127.0.0.1, no page error, no missing file; a deck opened from
  ``file://`` works too.

Run ``make slides`` first (``make test`` does).
"""
from __future__ import annotations

import functools
import http.server
import re
import threading

import pytest
from bs4 import BeautifulSoup

from instructor_kit import BUILD, chapters, import_script, slide_marks, source_title

SLIDES = BUILD / "slides"
SCREENSHOTS = BUILD / "screenshots" / "slides"
DECKS = [d for d in chapters() if sum(slide_marks(d).values())]


def deck_path(doc):
    return SLIDES / f"{doc.rsplit('/', 1)[-1]}.html"


@pytest.fixture(scope="module")
def slides_dir(skip_or_fail):
    if not (SLIDES / "index.html").is_file():
        skip_or_fail("slides not built: run `make slides` (_build/slides/index.html missing)")
    return SLIDES


@pytest.fixture(scope="module")
def slides_url(slides_dir):
    """``_build/slides`` served on 127.0.0.1 (a free port) for this module."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass
    srv = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(slides_dir)))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_every_chapter_marks_something():
    # the markers exist: a chapter without any would silently get no deck
    assert DECKS == chapters()
    for doc in DECKS:
        marks = slide_marks(doc)
        assert marks["figure"] >= 1 and marks["takeaway"] >= 1, (doc, marks)


@pytest.mark.parametrize("doc", DECKS)
def test_deck_holds_what_the_chapter_marks(slides_dir, doc):
    path = deck_path(doc)
    assert path.is_file(), f"no deck for {doc}"
    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    kinds = [s["data-kind"] for s in soup.select(".slides > section")]
    counts = {k: kinds.count(k) for k in ("figure", "takeaway", "equation")}
    assert counts == slide_marks(doc)
    assert kinds[0] == "title"
    assert source_title(doc) in soup.select_one(".title-slide h1").get_text()
    for img in soup.select("section img"):
        assert (slides_dir / img["src"]).is_file(), img["src"]
    # glued numbers arrive filled in, never as glue roles
    assert "glue:" not in path.read_text(encoding="utf-8")


@pytest.mark.browser
@pytest.mark.parametrize("doc", DECKS)
def test_every_slide_renders_offline(slides_url, offline_page, doc):
    page = offline_page
    page.goto(f"{slides_url}/{deck_path(doc).name}")
    page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=20_000)
    page.evaluate("() => MathJax.startup.promise")
    total = page.evaluate("() => Reveal.getTotalSlides()")
    assert total == 1 + sum(slide_marks(doc).values())
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for i in range(total):
        page.evaluate(f"() => Reveal.slide({i})")
        state = page.evaluate("""() => {
            const s = Reveal.getCurrentSlide(), r = s.getBoundingClientRect();
            return {w: r.width, h: r.height, kind: s.dataset.kind,
                    imgs: Array.from(s.querySelectorAll('img')).map(
                        im => im.complete && im.naturalWidth > 0),
                    raw: /\\\\\\(|\\\\\\[/.test(s.innerText),
                    errors: s.querySelectorAll('mjx-merror').length,
                    math: s.querySelectorAll('mjx-container').length,
                    text: s.innerText.trim().length};
        }""")
        where = f"{doc} slide {i + 1}/{total} ({state['kind']})"
        assert state["w"] > 0 and state["h"] > 0 and state["text"] > 0, where
        assert all(state["imgs"]), f"{where}: an image did not load"
        if state["kind"] == "figure":
            assert state["imgs"] == [True], where
        if state["kind"] == "equation":
            assert state["math"] >= 1, f"{where}: the equation was not typeset"
        assert not state["raw"] and state["errors"] == 0, f"{where}: raw or broken TeX"
        if i in (0, total - 1):
            page.screenshot(path=str(SCREENSHOTS / f"{deck_path(doc).stem}-{i + 1}.png"))
    assert page.external_requests == []
    assert page.page_errors == []
    assert page.bad_responses == []


@pytest.mark.browser
def test_deck_opens_from_file_url(slides_dir, page, make_offline):
    page = make_offline(page)
    page.goto(deck_path(DECKS[0]).as_uri())
    page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=20_000)
    page.evaluate("() => MathJax.startup.promise")
    assert page.evaluate("() => Array.from(document.images).every("
                         "im => im.complete && im.naturalWidth > 0)")
    assert page.locator("mjx-container").count() >= 1
    assert page.external_requests == [] and page.page_errors == []


# --- the builder on a made-up page (no book needed) -----------------------------------
PAGE = """<html><body><article><section id="s1"><h1>A Chapter<a class="headerlink"
href="#s1">#</a></h1><p><strong>What you'll learn</strong></p><ul><li><p>one</p></li>
<li><p>two <a href="#x">link</a></p></li></ul>
<section id="s2"><h2>First part<a class="headerlink" href="#s2">#</a></h2>
<div class="cell tag_slide docutils container"><div class="cell_output">
<figure id="fig-a"><img src="../_images/a.svg"/><figcaption><p>
<span class="caption-number">Fig. 1 </span><span class="caption-text">Cap A</span>
</p></figcaption></figure></div></div>
<div class="cell docutils container"><figure id="fig-b"><img src="../_images/b.svg"/>
</figure></div>
<div class="math notranslate nohighlight slide" id="equation-e1"><span class="eqno">(1)
<a class="headerlink" href="#equation-e1">#</a></span>\\[x = 1\\]</div>
<div class="math notranslate nohighlight" id="equation-e2">\\[y\\]</div>
<div class="tip slide admonition"><p class="admonition-title">Takeaway</p>
<p>The number is <span class="pasted-text">42</span>, see <a href="#s2">here</a>.</p></div>
<div class="tip admonition"><p class="admonition-title">Takeaway</p><p>not marked</p></div>
</section></section></article></body></html>"""


def test_extract_takes_only_marked_items_in_order():
    build_slides = import_script("build_slides")
    got = build_slides.extract(PAGE)
    assert got["title"] == "A Chapter"
    assert len(got["learn"]) == 2 and "<a" not in got["learn"][1]
    assert [i["kind"] for i in got["items"]] == ["figure", "equation", "takeaway"]
    fig, eq, take = got["items"]
    assert (fig["id"], fig["img"], fig["section"]) == ("fig-a", "../_images/a.svg",
                                                       "First part")
    assert re.search(r"Fig\. 1\s+Cap A", fig["caption"])
    assert "\\[x = 1\\]" in eq["html"] and "eqno" not in eq["html"]
    assert "42" in take["html"] and "<a" not in take["html"] and "Takeaway" not in \
        take["html"]
