"""The kernel-free charts of the built book (``gpulab.charts``), in headless Chromium.

* every chart of :data:`gpulab.charts.CHART_NAMES` is on exactly one page of the book;
* no built page loads a script from http(s) (the book is fully offline);
* for every chart: it renders from the vendored vega/vega-lite/vega-embed, shows the
  precomputed summary of its initial point, and after a control is moved it shows the
  precomputed summary of the new point (read from the spec the page embeds), and its
  figure changes when that point's plot rows differ.

Run: build the book, then ``pytest tests/book/test_book_charts.py`` (or ``-m browser``).
"""
from __future__ import annotations

import json
import re

import pytest

from gpulab.charts import CHART_NAMES

pytestmark = pytest.mark.browser

SPEC_RE = re.compile(r'<script type="application/json" id="gpulab-chart-(\w+)-spec">')
SCRIPT_SRC_RE = re.compile(r"<script\b[^>]*\bsrc=[\"']?(https?:)?//", re.I)


def built_pages(html_dir):
    return sorted(p for p in html_dir.rglob("*.html")
                  if "_static" not in p.parts and "_sources" not in p.parts)


@pytest.fixture(scope="module")
def chart_pages(html_dir):
    """{chart name: [page paths relative to the HTML root]}."""
    found = {}
    for p in built_pages(html_dir):
        for name in SPEC_RE.findall(p.read_text(encoding="utf-8")):
            found.setdefault(name, []).append(p.relative_to(html_dir).as_posix())
    return found


def test_every_chart_is_in_the_book_once(chart_pages):
    assert sorted(chart_pages) == sorted(CHART_NAMES)
    twice = {n: pages for n, pages in chart_pages.items() if len(pages) != 1}
    assert not twice, f"charts on more than one page: {twice}"


def test_no_page_loads_a_script_from_the_network(html_dir):
    bad = {}
    for p in built_pages(html_dir):
        hits = SCRIPT_SRC_RE.findall(p.read_text(encoding="utf-8"))
        if hits:
            bad[p.relative_to(html_dir).as_posix()] = len(hits)
    assert not bad, f"pages with http(s) script src: {bad}"


def norm(text):
    """Compare texts without whitespace: SVG lays each line out as its own tspan."""
    return re.sub(r"\s+", "", text)


READ_JS = """
el => ({
  rendered: el.getAttribute("data-rendered") === "true",
  summary: (el.querySelector("g.summary_marks") || {}).textContent || null,
  figure: Array.from(el.querySelectorAll("svg g.role-mark"))
    .filter(g => !g.classList.contains("summary_marks"))
    .map(g => g.innerHTML).join("|"),
})
"""

MOVE_JS = """
([el, name, kind, index]) => {
  const input = el.querySelector(`.vega-bindings [name="${name}"]`);
  if (kind === "slider") {
    const v = Number(input.min) + index * Number(input.step);
    input.value = String(v);
    input.dispatchEvent(new Event("input", { bubbles: true }));
  } else if (kind === "select") {
    input.selectedIndex = index;
    input.dispatchEvent(new Event("change", { bubbles: true }));
  } else {
    const radio = el.querySelectorAll(`.vega-bindings input[name="${name}"]`)[index];
    radio.click();
  }
}
"""


def plan_move(spec, name):
    """(control, index, new point, old point) of the first control move that changes
    the summary text, the other controls held at their initial values."""
    params = spec["params"]
    start = {p["name"]: p["value"] for p in params}
    summary = spec["datasets"][f"{name}_summary"]

    def text_at(point):
        for r in summary:
            if all(r[k] == v or (isinstance(v, float) and abs(r[k] - v) < 1e-9)
                   for k, v in point.items()):
                return r["text"]
        raise AssertionError(f"{name}: no precomputed summary at {point}")

    first = text_at(start)
    for p in params:
        bind = p["bind"]
        if bind["input"] == "range":
            n = round((bind["max"] - bind["min"]) / bind["step"]) + 1
            values = [bind["min"] + i * bind["step"] for i in range(n)]
            kind = "slider"
        else:
            values, kind = bind["options"], bind["input"]
        for i in reversed(range(len(values))):
            new = {**start, p["name"]: values[i]}
            if values[i] != p["value"] and norm(text_at(new)) != norm(first):
                return p["name"], kind, i, new, start, text_at(new), first
    raise AssertionError(f"{name}: no single control move changes the summary")


def rows_at(spec, name, point):
    """The plot rows of ``point``, without the control columns (what is drawn)."""
    rows = spec["datasets"][f"{name}_rows"]
    return [{k: v for k, v in r.items() if k not in point} for r in rows
            if all(r[k] == v for k, v in point.items() if k in r)]


@pytest.mark.parametrize("name", CHART_NAMES)
def test_chart_moves_to_the_precomputed_point(name, chart_pages, browser, site_url,
                                              make_offline, html_dir):
    if name not in chart_pages:
        pytest.fail(f"chart {name!r} is not in the built book")
    doc = chart_pages[name][0]
    html = (html_dir / doc).read_text(encoding="utf-8")
    m = re.search(rf'id="gpulab-chart-{name}-spec">(.*?)</script>', html, re.S)
    spec = json.loads(m.group(1).replace("<\\/", "</"))
    control, kind, index, new, old, want, first = plan_move(spec, name)

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = make_offline(context.new_page())
    loaded = []
    page.on("requestfinished", lambda r: loaded.append(r.url))
    try:
        page.goto(f"{site_url}/{doc}", wait_until="load")
        el = page.locator(f"#gpulab-chart-{name}")
        # scrolled from the page's JavaScript: Playwright's own scroll first waits for two
        # rendered frames, which a headless page on a loaded machine may not produce
        el.evaluate("e => e.scrollIntoView({block: 'center'})")
        page.wait_for_selector(f"#gpulab-chart-{name}[data-rendered='true']",
                               timeout=20_000)
        before = el.evaluate(READ_JS)
        assert norm(before["summary"]) == norm(first), \
            f"{name}: initial text is not the precomputed one"
        page.evaluate(MOVE_JS, [el.element_handle(), control, kind, index])
        page.wait_for_function(
            "([id, want]) => { const g = document.querySelector(`#${id} g.summary_marks`);"
            " return g && g.textContent.replace(/\\s+/g, '') === want; }",
            arg=[f"gpulab-chart-{name}", norm(want)], timeout=10_000)
        after = el.evaluate(READ_JS)
        assert norm(after["summary"]) == norm(want) != norm(first)
        if rows_at(spec, name, new) != rows_at(spec, name, old):
            assert after["figure"] != before["figure"], \
                f"{name}: moving {control} changed the text but not the figure"
        for lib in ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js"):
            assert f"{site_url}/vega/{lib}" in loaded, f"{lib} not loaded from the book"
        assert page.external_requests == [], page.external_requests
        assert page.page_errors == [], page.page_errors
    finally:
        context.close()
