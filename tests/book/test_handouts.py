"""The print products of ``make handouts`` (``_build/pdf``) and the CJK glyphs of
``make pdf``'s ``book.pdf``: page counts within stated ranges, page numbers that run on
(the footer of page k prints k), no text outside the page box, no web controls in print,
only the track's sections, answers in the appendix where the references say, and the
Chinese quotes printed with an embedded CJK font wherever the source has them.

Run ``make handouts`` (and ``make pdf`` for book.pdf) first; ``make test`` does."""
from __future__ import annotations

import functools
import json
import re
import unicodedata

import pytest

from instructor_kit import BUILD

from gpulab import collectives, course

OUT = BUILD / "pdf"
HTML = BUILD / "html"
#: Page counts each product must stay within (a handout that doubles or halves means
#: chapters were lost or a layout broke).
PAGE_RANGES = {
    "handout-half-day": (20, 60),
    "handout-one-day": (60, 160),
    "handout-serving": (12, 40),
    "instructor-pack": (15, 50),
    "cheatsheet": (1, 1),
}
PRODUCTS = list(PAGE_RANGES)
HANDOUTS = [f"handout-{t}" for t in course.track_names()]
#: Text that belongs to the web book's controls and must not print.
CONTROL_TEXT = ("Show code cell", "Hide code cell", "Reveal the answer",
                "Interactive chart: it renders", "Toggle hidden content",
                "Copy to clipboard")
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")
#: Embedded CJK fonts (``make fonts`` installs WenQuanYi Micro Hei).
CJK_FONT = re.compile(r"WenQuanYi|CJK")
FOOTER = re.compile(r"page (\d+) of (\d+)\s*$")


@functools.lru_cache(maxsize=None)
def reader(name):
    from pypdf import PdfReader

    return PdfReader(OUT / f"{name}.pdf")


@functools.lru_cache(maxsize=None)
def page_texts(name):
    return [p.extract_text() or "" for p in reader(name).pages]


def words(text):
    """Whitespace-normalised text, ligatures (ﬀ, ﬁ) as letters, typographic quotes as
    ASCII; a line broken after a hyphen ("All-" / "Reduce") joined again."""
    text = unicodedata.normalize("NFKC", text).replace("\u00ad", "").replace("\u2019", "'").replace("\u2018", "'")
    text = re.sub(r"(?<=\w)-[ \t]*\n\s*(?=\w)", "-", text)
    return " ".join(text.split())


def test_words_joins_a_line_broken_at_a_hyphen():
    assert words("the TP All-\nReduce") == "the TP All-Reduce"
    assert words("one -\n two") == "one - two"


@pytest.fixture(scope="module")
def index(skip_or_fail):
    path = OUT / "handouts.json"
    if not path.is_file() or not all((OUT / f"{p}.pdf").is_file() for p in PRODUCTS):
        skip_or_fail("print products not built: run `make handouts`")
    return json.loads(path.read_text(encoding="utf-8"))


def test_every_track_has_a_handout_with_a_page_range():
    """A track added to course_tracks.yaml gets a handout (build_handouts.py makes one per
    track) and needs its page range here."""
    assert HANDOUTS and set(HANDOUTS) <= set(PAGE_RANGES)
    assert "handout-serving" in HANDOUTS
    assert set(PRODUCTS) - set(HANDOUTS) == {"instructor-pack", "cheatsheet"}


@pytest.mark.parametrize("name", PRODUCTS)
def test_page_count_in_range(index, name):
    lo, hi = PAGE_RANGES[name]
    n = len(reader(name).pages)
    assert lo <= n <= hi, f"{name}: {n} pages, expected {lo}-{hi}"
    assert index[name]["pages"] == n


@pytest.mark.parametrize("name", [p for p in PRODUCTS if p != "cheatsheet"])
def test_page_numbers_run_on(index, name):
    texts = page_texts(name)
    for k, text in enumerate(texts, start=1):
        m = FOOTER.search(text.strip())
        assert m, f"{name}: page {k} prints no page number"
        assert (int(m[1]), int(m[2])) == (k, len(texts)), (
            f"{name}: page {k} prints 'page {m[1]} of {m[2]}'")


def text_origins(page):
    """``(x, y, text)`` of every text run drawn on ``page``, in page coordinates."""
    out = []

    def visit(text, cm, tm, font, size):
        # MathJax draws a stretched delimiter as one glyph scaled hundreds of times in y;
        # pypdf's origin for it is not where it is drawn, and such a glyph is no text
        stretched = abs(cm[3]) > 10 * abs(cm[0]) or abs(cm[0]) > 10 * abs(cm[3])
        if text.strip() and not stretched:
            x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
            y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
            out.append((x, y, text))
    page.extract_text(visitor_text=visit)
    return out


@pytest.mark.parametrize("name", PRODUCTS)
def test_no_text_outside_the_page(index, name):
    for k, page in enumerate(reader(name).pages, start=1):
        box = page.mediabox
        x0, y0, x1, y1 = (float(v) for v in (box.left, box.bottom, box.right, box.top))
        outside = [(round(x), round(y), t[:30]) for x, y, t in text_origins(page)
                   if not (x0 - 1 <= x <= x1 - 2 and y0 - 1 <= y <= y1 + 1)]
        assert not outside, f"{name}: page {k}: text outside the page box: {outside[:3]}"


@pytest.mark.parametrize("name", PRODUCTS)
def test_no_web_controls(index, name):
    for k, text in enumerate(page_texts(name), start=1):
        found = [c for c in CONTROL_TEXT if c in text]
        assert not found, f"{name}: page {k} prints {found}"


@pytest.mark.parametrize("name", HANDOUTS)
def test_contents_page_numbers(index, name):
    """Every contents entry names a page on which its title is printed, in order."""
    texts = [words(t) for t in page_texts(name)]
    toc = index[name]["toc"]
    assert toc and toc[-1]["title"].startswith("Appendix")
    pages = [e["page"] for e in toc]
    assert pages == sorted(pages)
    for e in toc:
        assert words(e["title"]) in texts[e["page"] - 1], (
            f"{name}: '{e['title']}' not on page {e['page']}")
    contents = texts[1]
    assert "Contents" in contents and words(toc[0]["title"]) in contents


@pytest.mark.parametrize("name", HANDOUTS)
def test_only_the_tracks_sections(index, name):
    track = name.removeprefix("handout-")
    chapters = [it for it in course.track(track).items if it.kind == "chapter"]
    titles = [words(h) for h in index[name]["headings"]]
    parts = [e["id"] for e in index[name]["toc"] if e["level"] == 1]
    assert parts == [f"p-{d}" for d in dict.fromkeys(it.doc for it in chapters)] + [
        "appendix"]
    run = {(it.doc, s) for it in chapters for s in it.run}
    for it in chapters:
        for label in it.skip:
            if (it.doc, label) in run:
                continue
            title = words(course.section_title(it.doc, label))
            assert title not in titles, f"{name}: skipped section '{title}' printed"
    for it in chapters:
        for label in it.run:
            assert words(course.section_title(it.doc, label)) in titles, (
                f"{name}: {it.doc}#{label} missing")


@pytest.mark.parametrize("name", HANDOUTS)
def test_answers_in_the_appendix(index, name):
    """No answer is open under its question: each is referenced as A.n on page p, and
    page p, in the appendix, prints A.n."""
    texts = [words(t) for t in page_texts(name)]
    appendix = next(e["page"] for e in index[name]["toc"] if e["id"] == "appendix")
    refs = {}
    for k, text in enumerate(texts[:appendix - 1], start=1):
        for n, p in re.findall(r"(?:Answer|Solution): A\.(\d+), page (\d+)", text):
            refs[int(n)] = int(p)
    assert len(refs) == index[name]["answers"] > 0
    for n, p in refs.items():
        assert p >= appendix and f"A.{n} " in texts[p - 1], f"{name}: A.{n} not on page {p}"


# ---- CJK: every product whose source has Chinese prints it with an embedded font ---------
def product_sources():
    """``(pdf name, [built HTML files])`` of every product, book.pdf included."""
    out = []
    book = OUT / "pages.json"
    if book.is_file():
        docs = [e["doc"] for e in json.loads(book.read_text(encoding="utf-8"))]
        out.append(("book", [HTML / f"{d}.html" for d in docs]))
    idx = OUT / "handouts.json"
    if idx.is_file():
        for name, info in json.loads(idx.read_text(encoding="utf-8")).items():
            out.append((name, [BUILD / url for url in info.get("sources", [])]))
    return out


def embedded_fonts(r):
    names = set()
    for page in r.pages:
        fonts = (page.get("/Resources") or {}).get("/Font") or {}
        for f in fonts.values():
            f = f.get_object()
            names.add(str(f.get("/BaseFont", "")))
            for d in f.get("/DescendantFonts") or []:
                d = d.get_object()
                fd = d.get("/FontDescriptor")
                if fd and any(k in fd.get_object() for k in ("/FontFile", "/FontFile2",
                                                             "/FontFile3")):
                    names.add(str(d.get("/BaseFont", "")))
    return names


def test_chinese_prints_with_an_embedded_cjk_font(index, skip_or_fail):
    checked = 0
    for name, files in product_sources():
        absent = [f for f in files if not f.is_file()]
        if absent:
            skip_or_fail(f"built page {absent[0]} missing: run `make book`")
        source = "".join(f.read_text(encoding="utf-8") for f in files)
        quotes = set(CJK.findall(re.sub(r"<script.*?</script>", "", source, flags=re.S)))
        if not quotes:
            continue
        from pypdf import PdfReader

        r = PdfReader(OUT / f"{name}.pdf")
        fonts = embedded_fonts(r)
        assert any(CJK_FONT.search(f) for f in fonts), (
            f"{name}.pdf: no CJK font among {sorted(fonts)}")
        text = "".join("".join(p.extract_text().split()) for p in r.pages)
        lost = [q for q in quotes if "".join(q.split()) not in text]
        assert not lost, f"{name}.pdf: Chinese text not printed: {lost[:3]}"
        checked += 1
    if (OUT / "pages.json").is_file():
        assert checked, "book.pdf has Chinese quotes in its sources, none was checked"


# ---- cheat sheet: numbers from gpulab ------------------------------------------------------
def test_cheatsheet_numbers_come_from_gpulab(index):
    sheet = (OUT / "cheatsheet.html").read_text(encoding="utf-8")
    text = words(page_texts("cheatsheet")[0])
    for op in ("all_reduce", "all_gather"):
        row = re.search(rf"<code>{op}</code></td>((?:<td>[^<]*</td>)+)", sheet)
        assert row, f"cheat sheet has no busbw row for {op}"
        got = [float(v) for v in re.findall(r"<td>([^<]*)</td>", row[1])]
        want = [collectives.busbw_factor(op, n) for n in (2, 4, 8, 16)]
        assert got == pytest.approx(want, rel=2e-3)
    for needle in ("GiB", "busbw", "α", "PXB", "ConnectX-7", "PCIe Gen5", "NVLink4",
                   "Acceptance thresholds"):
        assert needle in text, f"cheat sheet PDF lacks {needle!r}"


@pytest.mark.parametrize("name", HANDOUTS)
def test_exercises_about_skipped_sections_left_out(index, name):
    """An exercise that links into a section the track skips is not printed."""
    text = words(" ".join(page_texts(name)))
    for entry in index[name]["dropped_exercises"]:
        title = words(entry.split(": ", 1)[1])
        assert title not in text, f"{name}: '{title}' printed, its section is skipped"


def test_instructor_pack_parts(index):
    """Agenda, one page per lab's answer key, assessment with its scoring guide, the
    misconception cards, in that order."""
    parts = [e for e in index["instructor-pack"]["toc"] if e["level"] == 1]
    ids = [e["id"] for e in parts]
    keys = sorted(p.stem for p in (BUILD / "answers").glob("*_key.html"))
    assert ids == ["p-tracks"] + [f"p-{k}" for k in keys] + ["p-assessment",
                                                             "p-misconceptions"]
    for this, nxt in zip(parts, parts[1:]):
        if this["id"].endswith("_key"):
            assert nxt["page"] - this["page"] == 1, f"{this['title']}: not one page"
    text = words(" ".join(page_texts("instructor-pack")))
    for needle in ("Talking points", "Scoring guide", "Vote: agree / disagree"):
        assert needle in text, f"instructor pack lacks {needle!r}"
