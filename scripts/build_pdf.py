"""Handout PDF of the whole book from the built HTML (``make pdf``).

Every page of ``_toc.yml``, in book order, is opened in headless Chromium (Debian's
``chromium``, driven by Playwright; no browser download) from a local server on
127.0.0.1 with every other request refused, printed with the theme's print style
(``page.pdf``) once MathJax has typeset and every image has loaded, and the page PDFs are
merged with pypdf into ``_build/pdf/book.pdf``. The PDF is tagged (Chromium marks every
image as a ``/Figure`` in the page content, which screen readers and the tests use).
The PDF's outline (bookmarks) has one
entry per page, titled with its H1; ``_build/pdf/pages.json`` lists, per page, its
title and first PDF page (0-based) and page count.

Exercise solutions stay folded (a handout for learners); no TeX is needed. Chinese text
prints with WenQuanYi Micro Hei (``make fonts``), embedded as a named TrueType font.

Usage: ``python scripts/build_pdf.py [--html _build/html] [--out _build/pdf/book.pdf]``
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import io
import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

from booktoc import toc_docs
from pypdf import PdfReader, PdfWriter

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--no-default-browser-check"]
LOCAL = ("http://127.0.0.1", "data:", "blob:", "about:")
FOOTER = ('<div style="font-size:8px;width:100%;padding:0 12mm;color:#666;'
          'display:flex;justify-content:space-between"><span class="title"></span>'
          '<span><span class="pageNumber"></span>/<span class="totalPages"></span>'
          '</span></div>')

#: Chinese in the pages (the source article's quotes) printed with the CJK font that
#: ``make fonts`` installs: after the theme's fonts, so only the glyphs they lack use it.
CJK_CSS = """
body, .bd-article { font-family: var(--pst-font-family-base), "WenQuanYi Micro Hei"; }
code, pre, kbd { font-family: var(--pst-font-family-monospace), "WenQuanYi Micro Hei Mono"; }
:lang(zh), [lang^="zh"] { font-family: "WenQuanYi Micro Hei", sans-serif; }
"""

READY_JS = """async () => {
  for (const img of document.images) { img.loading = "eager"; }
  await Promise.all(Array.from(document.images).map(img => img.complete ? null :
      new Promise(r => { img.onload = img.onerror = r; })));
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      await MathJax.startup.promise;
  }
  await document.fonts.ready;
  const broken = Array.from(document.images).filter(
      img => !(img.complete && img.naturalWidth > 0)).map(img => img.src);
  const raw = Array.from(document.querySelectorAll("article .math")).filter(
      el => !el.querySelector("mjx-container")).length;
  return {broken, raw};
}"""


#: The printable width of an A4 page with 12 mm side margins (186 mm at 96 px per
#: inch): the article's width is measured with the window that wide.
PRINT_WIDTH_PX = round(186 / 25.4 * 96)
#: Share of that width a wide element is fitted to: the article prints a little narrower
#: than it measures (the last column of a table fitted to the whole width was still cut).
FIT_MARGIN = 0.92
#: ``(target) => {shrunk, clipped}``: zoom every table whose narrowest layout (its
#: columns at their min-content widths) is wider than ``target`` px, and every display
#: equation or code block wider than it, to fit (at least 0.45); a sideways-scrolling table
#: would lose its right-hand columns on paper. Tables that can wrap to the width are left
#: alone.
FIT_JS = """(target) => {
  const article = document.querySelector("article") || document.body;
  let shrunk = 0, clipped = 0;
  for (const el of article.querySelectorAll("table, mjx-container[display='true'], pre")) {
    let w = el.scrollWidth;
    if (el.tagName === "TABLE") {
      const prev = el.style.width;
      el.style.width = "1px";
      w = el.scrollWidth;
      el.style.width = prev;
    }
    if (w > target + 1) {
      const z = Math.max(0.45, target / w);
      el.style.zoom = z.toFixed(3);
      // a zoomed table's rows stay whole across a page break
      for (const tr of el.querySelectorAll("tr")) tr.style.breakInside = "avoid";
      shrunk += 1;
      if (w * z > target + 1) clipped += 1;
    }
  }
  return {shrunk, clipped};
}"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(directory):
    handler = functools.partial(_Quiet, directory=str(directory))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def chromium_path():
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        raise SystemExit(f"build_pdf: Chromium not found at {path}: apt-get install "
                         "chromium (or set CHROMIUM)")
    return path


@contextlib.contextmanager
def print_session(directory, viewport, who="build_pdf"):
    """``(page, base)``: one headless Chromium page in print media, on a local server of
    ``directory`` (``base`` is its URL), every request off 127.0.0.1 refused; the
    server and browser are closed after, and a page that asked for the network stops
    the build (``who`` names the script in the message)."""
    from playwright.sync_api import sync_playwright

    srv = serve(directory)
    base = f"http://127.0.0.1:{srv.server_address[1]}"
    external = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(),
                                         args=CHROMIUM_ARGS)
            page = browser.new_page(viewport=viewport)

            def route(r):
                if r.request.url.startswith(LOCAL):
                    return r.continue_()
                external.append(r.request.url)
                return r.abort()
            page.route("**/*", route)
            page.emulate_media(media="print")
            yield page, base
            browser.close()
    finally:
        srv.shutdown()
        srv.server_close()
    if external:
        raise SystemExit(f"{who}: pages asked for the network: {external[:5]}")


def print_width(browser, base, url):
    """The article's width [px] of ``url`` laid out in print media in a window as wide
    as the printable part of the page (a second page: the printing one keeps its layout;
    requests outside ``base`` are refused)."""
    probe = browser.new_page(viewport={"width": PRINT_WIDTH_PX, "height": 1400})
    try:
        probe.route("**/*", lambda r: r.continue_() if r.request.url.startswith(base)
                    else r.abort())
        probe.emulate_media(media="print")
        probe.goto(url, wait_until="load")
        return probe.evaluate("() => (document.querySelector('article') "
                              "|| document.body).getBoundingClientRect().width")
    finally:
        probe.close()


def print_pages(html_dir, docs):
    """``[(doc, title, pdf bytes)]`` for every doc, printed by one headless Chromium."""
    out = []
    width = None
    with print_session(html_dir, {"width": 1100, "height": 1400}) as (page, base):
        for doc in docs:
            page.goto(f"{base}/{doc}.html", wait_until="load")
            page.add_style_tag(content=CJK_CSS)
            state = page.evaluate(READY_JS)
            if state["broken"] or state["raw"]:
                raise SystemExit(f"build_pdf: {doc}: {len(state['broken'])} images "
                                 f"not loaded {state['broken'][:3]}, {state['raw']} "
                                 "equations not typeset")
            if width is None:
                width = print_width(page.context.browser, base, f"{base}/{doc}.html")
            fit = page.evaluate(FIT_JS, width * FIT_MARGIN)
            if fit["clipped"]:
                raise SystemExit(f"build_pdf: {doc}: {fit['clipped']} tables or equations "
                                 "wider than the page even at the smallest zoom")
            title = page.locator("article h1").first.inner_text().strip().rstrip("#")
            pdf = page.pdf(format="A4", print_background=True, tagged=True,
                           margin={"top": "14mm", "bottom": "16mm", "left": "12mm",
                                   "right": "12mm"},
                           display_header_footer=True,
                           header_template="<span></span>", footer_template=FOOTER)
            out.append((doc, title.strip(), pdf))
    return out


def print_parallel(html_dir, docs, jobs):
    """:func:`print_pages` split over ``jobs`` processes (one Chromium each), in order."""
    if jobs <= 1 or len(docs) < 2:
        return print_pages(html_dir, docs)
    from concurrent.futures import ProcessPoolExecutor

    chunks = [docs[i::jobs] for i in range(jobs)]
    with ProcessPoolExecutor(jobs) as pool:
        parts = list(pool.map(print_pages, [html_dir] * jobs, chunks))
    by_doc = {doc: (doc, title, pdf) for part in parts for doc, title, pdf in part}
    return [by_doc[d] for d in docs]


def merge(pages, target):
    """Merge page PDFs into ``target`` with one outline entry each; return the index."""
    writer = PdfWriter()
    index, first = [], 0
    for doc, title, pdf in pages:
        reader = PdfReader(io.BytesIO(pdf))
        n = len(reader.pages)
        writer.append(reader, outline_item=title)
        index.append({"doc": doc, "title": title, "first_page": first, "n_pages": n})
        first += n
    writer.add_metadata({"/Title": "Multi-GPU Interconnects for LLM Training (handout)"})
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as fh:
        writer.write(fh)
    return index


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--html", type=Path, default=ROOT / "_build" / "html")
    p.add_argument("--out", type=Path, default=ROOT / "_build" / "pdf" / "book.pdf")
    p.add_argument("--jobs", type=int, default=min(3, os.cpu_count() or 1),
                   help="Chromium processes printing in parallel (default: up to 3)")
    args = p.parse_args(argv)
    if not (args.html / "index.html").is_file():
        raise SystemExit(f"build_pdf: no built book in {args.html}: run `make book`")
    start = time.perf_counter()
    pages = print_parallel(args.html, toc_docs(), max(1, args.jobs))
    index = merge(pages, args.out)
    (args.out.parent / "pages.json").write_text(json.dumps(index, indent=2) + "\n",
                                                encoding="utf-8")
    total = sum(e["n_pages"] for e in index)
    print(f"    {args.out}: {len(index)} chapters and pages, {total} PDF pages, "
          f"{args.out.stat().st_size / 2**20:.1f} MiB in "
          f"{time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
