"""The teaching decks of the two tracks (``_build/slides/track-<key>.html``, built by
``make slides`` through scripts/track_slides.py), checked against the track data and in
headless Chromium at 1280x720, fully offline.

Legibility: every rendered text element has a font size of at least ``MIN_PX`` CSS pixels
*on screen* (computed size times reveal.js's scale) in a 1280x720 window. 20 px is 1/36 of
the slide's height: projected at 1080p that is 30 px, about the size of 24-point type on a
standard 4:3 slide template, the floor most presentation guides give for text the back of
a room must read. Titles are larger (``MIN_TITLE_PX``).

Also checked on every slide: nothing outside the slide box, speaker notes present and
non-empty, no element with ``text-transform: uppercase`` (it turned "α–β models" into
"Α–Β MODELS"), images loaded, formulas typeset; and that each deck holds the agenda, a
lab transition, a quick-check vote, a break and summaries.
"""
from __future__ import annotations

import functools
import http.server
import re
import threading

import pytest
import yaml
from bs4 import BeautifulSoup

from gpulab import course
from instructor_kit import BUILD, ROOT, import_script

SLIDES = BUILD / "slides"
SCREENSHOTS = BUILD / "screenshots" / "slides"
TRACKS = course.track_names()
MIN_PX = 20
MIN_TITLE_PX = 30
#: A figure is shown at least this many times its own size (the size the book shows it at,
#: or smaller): its labels are set for reading on a screen at arm's length, not from the
#: back of a room.
MIN_FIGURE_SCALE = 1.3


def deck(key):
    return SLIDES / f"track-{key}.html"


@pytest.fixture(scope="module")
def built(skip_or_fail):
    if not all(deck(k).is_file() for k in TRACKS):
        skip_or_fail("track decks not built: run `make slides`")
    return {k: BeautifulSoup(deck(k).read_text(encoding="utf-8"), "html.parser")
            for k in TRACKS}


@pytest.fixture(scope="module")
def slides_url(built):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass
    srv = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(SLIDES)))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


# --- the slide text data (no book needed) ------------------------------------------
def test_every_section_a_track_runs_has_a_statement_headline():
    text = import_script("track_slides").load_text()
    for key in TRACKS:
        for it in course.track(key).items:
            for label in it.run if it.kind == "chapter" else ():
                headline = text["headlines"].get(label, "")
                assert headline and not headline.endswith("?"), (key, label)
    for key in TRACKS:
        assert text["closing"].get(key), key


def test_crop_bands_cover_the_image_in_order():
    text = import_script("track_slides").load_text()
    for fig, spec in text["figures"].items():
        crop = spec.get("crop")
        if not crop:
            continue
        assert len(spec["titles"]) == len(crop) * spec.get("columns", 1), fig
        assert crop[0][0] == 0 and crop[-1][1] == 1, fig
        for (a, b), (c, _d) in zip(crop, crop[1:]):
            assert a < b == c, fig


def test_quick_check_options_and_answer_are_split():
    ts = import_script("track_slides")
    page = BeautifulSoup(
        '<div class="quick-check admonition"><p class="admonition-title">Quick check: '
        "links</p><p>Where does the gain come from? (a) faster links (b) more links "
        '(c) both.</p><details><div class="sd-summary-content"><p><strong>(b)</strong>. '
        "More links.</p></div></details></div>", "html.parser")
    (qc,) = ts.quick_checks(page)
    assert qc["title"] == "links"
    assert qc["stem"] == "Where does the gain come from?"
    assert qc["options"] == [("a", "faster links"), ("b", "more links"), ("c", "both")]
    assert "More links" in qc["answer"] and "More links" not in qc["stem"]


@pytest.mark.parametrize("run,want", [(["Part A", "Part B"], "Parts A–B"),
                                      (["Part K"], "Part K"),
                                      (["Part A", "Part C"], "Parts A, C")])
def test_lab_parts_are_named_as_a_range(run, want):
    assert import_script("track_slides")._parts(run) == want


def test_no_uppercase_transform_in_any_deck_css():
    for name in ("track_slides", "build_slides"):
        css = import_script(name).DECK_CSS
        assert "uppercase" not in css
        assert "text-transform: none" in css   # overrides the white theme's headings


# --- the built decks ------------------------------------------------------------------
@pytest.mark.parametrize("key", TRACKS)
def test_deck_follows_the_track(built, key):
    soup = built[key]
    sections = soup.select(".slides > section")
    kinds = [s["data-kind"] for s in sections]
    for k in ("title", "agenda", "lab", "vote", "break", "summary", "prompt"):
        assert k in kinds, f"{key}: no {k} slide"
    assert kinds[0] == "title" and kinds[1] == "agenda" and kinds[-1] == "summary"
    agenda = " ".join(s.get_text(" ") for s in sections if s["data-kind"] == "agenda")
    for _start, minutes, it in course.agenda_rows(key):
        assert it.title in agenda
    # every chapter block ends with its summary; every lab block has its transition
    items = course.track(key).items
    assert kinds.count("lab") == sum(it.kind == "lab" for it in items)
    assert kinds.count("break") == sum(it.kind == "break" for it in items)
    assert kinds.count("prompt") == sum(it.kind == "chapter" for it in items)
    for s in sections:
        notes = s.find("aside", class_="notes")
        assert notes is not None and notes.get_text(strip=True), s["data-kind"]


@pytest.mark.parametrize("key", TRACKS)
def test_lab_slides_say_what_to_open_for_how_long(built, key):
    labs = [s for s in built[key].select('section[data-kind="lab"]')]
    for s, it in zip(labs, [it for it in course.track(key).items if it.kind == "lab"]):
        shown = s.get_text(" ")
        assert f"labs/{it.doc}.ipynb" in shown
        assert f"{it.duration / 60:.0f} min" in shown and "✓" in shown


@pytest.mark.parametrize("key", TRACKS)
def test_answers_and_talking_points_only_in_the_notes(built, key):
    for s in built[key].select(".slides > section"):
        notes = s.find("aside", class_="notes").extract()
        shown = s.get_text(" ")
        if s["data-kind"] == "vote":
            assert "Answer" in notes.get_text()
        if s["data-kind"] == "figure":
            # the caption is in the notes; the slide shows the title and the image only
            assert "Caption:" in notes.get_text()
            assert " ".join(shown.split()) == " ".join(s.h2.get_text().split())
        for li in notes.find_all("li"):
            point = li.get_text(" ", strip=True)
            if len(point) > 60:
                assert point not in shown, point[:60]


@pytest.mark.parametrize("key", TRACKS)
def test_every_equation_has_its_symbols(built, key):
    eqs = built[key].select('section[data-kind="equation"]')
    assert eqs
    for s in eqs:
        symbols = s.select("ul.symbols li")
        assert symbols, s.h2.get_text()
        tex = s.find("div", class_="math").get_text()
        named = " ".join(li.get_text() for li in symbols)
        # every subscripted symbol of the equation is defined under it
        for sym, sub in set(re.findall(r"(\\?[A-Za-z]+)_\\text\{(\w+)\}", tex)):
            if sym.startswith("\\") or len(sym) == 1:
                assert f"{sym}_\\text{{{sub}}}" in named, (s.h2.get_text(), sym, sub)


def test_headlines_restate_no_typed_numbers():
    data = yaml.safe_load((ROOT / "book" / "instructor" / "track_slides.yaml").read_text(
        encoding="utf-8"))
    for label, h in data["headlines"].items():
        assert not re.search(r"(?<![A-Za-z])\d", h), (label, h)


# --- in the browser ---------------------------------------------------------------------
MEASURE = """() => {
  const s = Reveal.getCurrentSlide(), scale = Reveal.getScale();
  const box = document.querySelector('.reveal .slides').getBoundingClientRect();
  const small = [], outside = [], upper = [];
  for (const el of s.querySelectorAll('*')) {
    if (el.closest('aside.notes') || el.closest('.crop img')) continue;
    const cs = getComputedStyle(el), r = el.getBoundingClientRect();
    if (cs.textTransform === 'uppercase') upper.push(el.tagName);
    if (r.width === 0 || r.height === 0 || el.closest('mjx-container') && el.tagName !== 'MJX-CONTAINER') continue;
    const own = Array.from(el.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
    const px = parseFloat(cs.fontSize) * scale;
    if ((own || el.tagName === 'MJX-CONTAINER') && px < 19.5)
      small.push(`${el.tagName} ${px.toFixed(1)}px "${el.textContent.trim().slice(0, 40)}"`);
    if (r.left < box.left - 1 || r.top < box.top - 1 || r.right > box.right + 1 || r.bottom > box.bottom + 1)
      outside.push(`${el.tagName} "${(el.textContent || el.getAttribute('src') || '').trim().slice(0, 40)}" ${Math.round(r.bottom - box.bottom)}px below, ${Math.round(r.right - box.right)}px right`);
    // a display formula wider than its box spills over the slide's edge, where the
    // boxes of its own parts are not measured
    if (el.tagName === 'MJX-CONTAINER' && el.scrollWidth > el.clientWidth + 1)
      outside.push(`formula ${Math.round(el.scrollWidth - el.clientWidth)}px wider than the slide`);
  }
  // figures: on-screen size over the image's own size (the book shows it at most at 1x)
  const figs = Array.from(s.querySelectorAll('img[data-figure]')).map(im => (im.closest('.crop')
      ? im.width / im.naturalWidth
      : Math.min(im.width / im.naturalWidth, im.height / im.naturalHeight)) * scale);
  const h = s.querySelector('h1, h2');
  return {kind: s.dataset.kind, small, outside, upper, figs,
          title_px: h ? parseFloat(getComputedStyle(h).fontSize) * scale : null,
          notes: (s.querySelector('aside.notes') || {textContent: ''}).textContent.trim().length,
          imgs: Array.from(s.querySelectorAll('img')).map(im => im.complete && im.naturalWidth > 0),
          math_errors: s.querySelectorAll('mjx-merror').length,
          raw_tex: /\\\\\\(|\\\\\\[/.test(s.innerText)};
}"""


@pytest.mark.browser
@pytest.mark.parametrize("key", TRACKS)
def test_every_slide_is_legible_at_720p(slides_url, offline_page, key):
    page = offline_page
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"{slides_url}/{deck(key).name}")
    page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=20_000)
    page.evaluate("() => MathJax.startup.promise")
    assert page.evaluate("() => Reveal.hasPlugin('notes')"), "notes plugin not loaded"
    total = page.evaluate("() => Reveal.getTotalSlides()")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    problems, kinds = [], set()
    for i in range(total):
        page.evaluate(f"() => Reveal.slide({i})")
        st = page.evaluate(MEASURE.replace("19.5", str(MIN_PX - 0.5)))
        kinds.add(st["kind"])
        where = f"{key} slide {i + 1}/{total} ({st['kind']})"
        if st["small"]:
            problems.append(f"{where}: text below {MIN_PX} px: {st['small'][:3]}")
        if st["outside"]:
            problems.append(f"{where}: outside the slide: {st['outside'][:3]}")
        if st["upper"]:
            problems.append(f"{where}: text-transform uppercase on {st['upper'][:3]}")
        if st["title_px"] is not None and st["title_px"] < MIN_TITLE_PX:
            problems.append(f"{where}: title {st['title_px']:.1f} px")
        if any(f < MIN_FIGURE_SCALE for f in st["figs"]):
            problems.append(f"{where}: figure at {min(st['figs']):.2f}x its own size")
        if st["notes"] == 0:
            problems.append(f"{where}: no speaker notes")
        if not all(st["imgs"]) or st["math_errors"] or st["raw_tex"]:
            problems.append(f"{where}: image not loaded or formula not typeset")
        page.screenshot(path=str(SCREENSHOTS / f"track-{key}-{i + 1:02d}.png"))
    assert problems == []
    assert {"agenda", "lab", "vote", "break", "summary"} <= kinds
    assert page.external_requests == [] and page.page_errors == []
    assert page.bad_responses == []


@pytest.mark.browser
def test_presenter_view_shows_the_notes_offline(slides_url, offline_page):
    # press S: reveal.js's notes plugin opens the speaker view with the current slide's notes
    page = offline_page
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"{slides_url}/{deck(TRACKS[0]).name}#/3")
    page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=20_000)
    want = page.evaluate("() => Reveal.getSlideNotes().replace(/<[^>]+>/g, ' ')")
    assert "Prompt:" in want
    with page.expect_popup() as popup_info:
        page.keyboard.press("s")
    popup = popup_info.value
    popup.wait_for_function(
        "() => { const n = document.querySelector('.speaker-controls-notes .value');"
        " return n && n.textContent.includes('Prompt:'); }", timeout=20_000)
    shown = popup.inner_text(".speaker-controls-notes .value")
    assert "Expected answer" in shown and "min" in shown
    assert page.external_requests == [] and page.page_errors == []


@pytest.fixture(scope="module")
def chapter_pages(skip_or_fail):
    pages = {}
    for key in TRACKS:
        for it in course.track(key).items:
            if it.kind == "chapter" and it.doc not in pages:
                path = BUILD / "html" / "book" / f"{it.doc}.html"
                if not path.is_file():
                    skip_or_fail(f"book not built: {path.name} missing")
                pages[it.doc] = BeautifulSoup(path.read_text(encoding="utf-8"),
                                              "html.parser")
    return pages


@pytest.mark.parametrize("key", TRACKS)
def test_deck_shows_every_figure_and_equation_of_the_sections_it_runs(built, chapter_pages,
                                                                      key):
    ts = import_script("track_slides")
    want_figs, want_eqs = set(), set()
    for it in course.track(key).items:
        for label in it.run if it.kind == "chapter" else ():
            for item in ts.section_items(chapter_pages[it.doc], label):
                if item["kind"] == "figure":
                    want_figs.add(item["id"])
                elif item["kind"] == "equation":
                    want_eqs.add(item["id"])
    soup = built[key]
    assert {img["data-figure"] for img in soup.select("img[data-figure]")} == want_figs
    assert {d["id"] for d in soup.select('section[data-kind="equation"] div.math')} == want_eqs


def test_notes_carry_no_tex_the_speaker_view_cannot_typeset():
    ts = import_script("track_slides")
    assert ts.tex_plain(r"so \(r_\text{lane} = f_\text{sym} \times b\) per lane") == \
        "so r_lane = f_sym × b per lane"
    assert ts.tex_plain(r"\(\frac{S}{t}\)") == "(S)/(t)"


@pytest.mark.parametrize("key", TRACKS)
def test_built_notes_are_plain_text(built, key):
    for notes in built[key].select("aside.notes"):
        assert "\\(" not in notes.get_text() and "\\text" not in notes.get_text()
