"""Print products of the course (``make handouts``), from the built book and answer keys.

* ``handout-<track>.pdf``: a learner handout per teaching track of
  ``gpulab/data/course_tracks.yaml``: cover (title, track, date built, the schedule),
  printed contents with page numbers, only the track's chapters and, of each, the sections
  the track does not skip (with the exercises and quick checks that link into a skipped
  section); quick-check answers and exercise solutions in an appendix at the end; code toggles and interactive explorers replaced by what prints (the static figure
  and a note); wide tables and code shrunk to the text width.
* ``instructor-pack.pdf``: the agenda with talking points, the one-page answer key of
  every lab (``make answers``), the assessment with its scoring guide and the misconception
  vote cards.
* ``cheatsheet.html`` and ``cheatsheet.pdf``: one page of units, busbw factors, the
  alpha-beta model, path classes, link rates and acceptance thresholds, every number
  computed by gpulab (``scripts/cheatsheet.py``).

Each product is one HTML document assembled in headless Chromium (``scripts/handouts.js``
inside a built page, so the theme's style and MathJax apply) and printed once, so page
numbers run on across chapters. The contents and the answer references get their page
numbers from a first printing (the PDF's named destinations), then the document is printed
again. ``_build/pdf/handouts.json`` lists each product's pages and parts.

Usage: ``python scripts/build_handouts.py [--build _build] [--out _build/pdf]``
"""
from __future__ import annotations

import argparse
import datetime as dt
import html
import io
import json
import sys
import time
from pathlib import Path

from build_pdf import print_session
from pypdf import PdfReader

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from gpulab import course  # noqa: E402

BOOK_TITLE = "Multi-GPU Interconnects for LLM Training"
MARGIN = {"top": "14mm", "bottom": "16mm", "left": "14mm", "right": "14mm"}
FOOTER = ('<div style="font-size:8px;width:100%;padding:0 14mm;color:#555;'
          'display:flex;justify-content:space-between"><span>{label}</span>'
          '<span>page <span class="pageNumber"></span> of <span class="totalPages">'
          '</span></span></div>')
HOST = "html/book/nvlink.html"   # any built chapter: its head brings the theme and MathJax
PAGEREF_JS = """(pages) => {
  for (const el of document.querySelectorAll("[data-pageref]")) {
    const n = pages[el.dataset.pageref];
    el.textContent = n === undefined ? "?" : String(n);
  }
}"""


def track_parts(name):
    """The chapters of a track in agenda order, each with the union of its skip labels."""
    parts = {}
    for it in course.track(name).items:
        if it.kind != "chapter":
            continue
        entry = parts.setdefault(it.doc, {"url": f"html/book/{it.doc}.html",
                                          "slug": it.doc, "skip": []})
        entry["skip"] += [s for s in it.skip if s not in entry["skip"]]
    # a section one block runs is never skipped by another block of the same chapter
    for it in course.track(name).items:
        if it.kind == "chapter":
            parts[it.doc]["skip"] = [s for s in parts[it.doc]["skip"] if s not in it.run]
    return list(parts.values())


def schedule_html(name):
    """The learner's schedule: start, minutes, activity (labs with their parts)."""
    rows = []
    for start, minutes, it in course.agenda_rows(name):
        what = html.escape(it.title)
        if it.kind == "lab":
            what += (f" <small>(<code>labs/{html.escape(it.doc)}.ipynb</code>: "
                     f"{html.escape(', '.join(it.run))})</small>")
        rows.append(f"<tr><td>{start}</td><td>{minutes}</td><td>{what}</td></tr>")
    return ('<table class="table"><thead><tr><th>Start</th><th>Min.</th><th>Activity</th>'
            f'</tr></thead><tbody>{"".join(rows)}</tbody></table>')


def cover_html(title, subtitle, built, body="", foot=""):
    return (f'<section class="print-cover"><div class="cover-title">{html.escape(title)}'
            f'</div><div class="cover-track">{html.escape(subtitle)}</div>'
            f'<div class="cover-meta">Built {built}</div>{body}'
            f'<div class="cover-foot">{foot}</div></section>')


def products(build, built):
    """The print products: ``{name: spec}`` for ``scripts/handouts.js``."""
    out = {}
    for name in course.track_names():
        t = course.track(name)
        body = (f'<p class="cover-meta">{html.escape(t.audience)}</p>'
                f'<h3>Schedule</h3>{schedule_html(name)}')
        foot = ("Answers to the quick checks and solutions to the exercises are in the "
                "appendix at the end. The web book has every chapter in full, with "
                "interactive figures.")
        out[f"handout-{name}"] = {
            "title": BOOK_TITLE, "subtitle": t.title, "built": built,
            "cover_html": cover_html(BOOK_TITLE, f"Learner handout: {t.title}", built,
                                     body, foot),
            "parts": track_parts(name), "appendix": True, "open_details": False,
            "footer": f"{BOOK_TITLE}: {t.title}"}
    keys = sorted((build / "answers").glob("*_key.html"))
    if not keys:
        raise SystemExit("build_handouts: no answer keys in "
                         f"{build / 'answers'}: run `make answers`")
    parts = [{"url": "html/book/instructor/tracks.html", "slug": "tracks", "skip": []}]
    parts += [{"url": f"answers/{k.name}", "slug": k.stem, "skip": [],
               "page_class": "answer-key"} for k in keys]
    parts += [{"url": "html/book/instructor/assessment.html", "slug": "assessment",
               "skip": []},
              {"url": "html/book/instructor/misconceptions.html", "slug": "misconceptions",
               "skip": []}]
    out["instructor-pack"] = {
        "title": BOOK_TITLE, "subtitle": "Instructor pack", "built": built,
        "cover_html": cover_html(BOOK_TITLE, "Instructor pack", built,
                                 "<p>The agenda of every track with talking points, the "
                                 "answer key of every lab, the assessment with its "
                                 "scoring guide and the misconception vote cards.</p>",
                                 "For instructors: contains every answer."),
        "parts": parts, "appendix": False, "open_details": True,
        "footer": f"{BOOK_TITLE}: instructor pack"}
    return out


def named_pages(pdf):
    """``{destination name: 1-based page}`` of a PDF printed by Chromium."""
    reader = PdfReader(io.BytesIO(pdf))
    out = {}
    for name, dest in reader.named_destinations.items():
        try:
            out[str(name).lstrip("/")] = reader.get_destination_page_number(dest) + 1
        except Exception:   # a destination without a page
            continue
    return out, len(reader.pages)


def print_product(page, base, spec):
    page.goto(f"{base}/{HOST}", wait_until="load")
    page.evaluate("async () => { if (window.MathJax && MathJax.startup) "
                  "await MathJax.startup.promise; }")
    page.add_style_tag(content=(HERE / "handouts.css").read_text(encoding="utf-8"))
    spec = dict(spec, parts=[dict(p, url=f"{base}/{p['url']}") for p in spec["parts"]])
    state = page.evaluate((HERE / "handouts.js").read_text(encoding="utf-8"), spec)
    if state["missing"] or state["broken"] or state["raw"]:
        raise SystemExit(f"build_handouts: {spec['subtitle']}: sections not found "
                         f"{state['missing']}, images not loaded {state['broken'][:3]}, "
                         f"{state['raw']} equations not typeset")
    footer = FOOTER.format(label=html.escape(spec["footer"]))

    def pdf():
        return page.pdf(format="A4", print_background=True, tagged=True, outline=True,
                        margin=MARGIN, display_header_footer=True,
                        header_template="<span></span>", footer_template=footer)
    first = pdf()
    pages, n = named_pages(first)
    wanted = page.evaluate("() => Array.from(document.querySelectorAll('[data-pageref]'),"
                           " el => el.dataset.pageref)")
    lost = sorted({w for w in wanted if w not in pages})
    if lost:
        raise SystemExit(f"build_handouts: {spec['subtitle']}: no page found for "
                         f"{lost[:5]} (named destinations of the first printing)")
    page.evaluate(PAGEREF_JS, pages)
    final = pdf()
    pages2, n2 = named_pages(final)
    if n2 != n or any(pages2.get(k) != v for k, v in pages.items() if k in wanted):
        raise SystemExit(f"build_handouts: {spec['subtitle']}: page numbers moved "
                         "between the two printings")
    toc = [dict(e, page=pages.get(e["id"])) for e in state["toc"]]
    return final, {"pages": n2, "toc": toc, "headings": state["headings"],
                   "dropped_exercises": state["dropped"],
                   "answers": state["answers"],
                   "shrunk": state["shrunk"]}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", type=Path, default=ROOT / "_build")
    p.add_argument("--out", type=Path, default=ROOT / "_build" / "pdf")
    p.add_argument("--only", nargs="*", help="product names to build (default: all)")
    args = p.parse_args(argv)
    if not (args.build / "html" / "index.html").is_file():
        raise SystemExit(f"build_handouts: no built book in {args.build / 'html'}: "
                         "run `make book`")
    import cheatsheet

    start = time.perf_counter()
    built = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")
    specs = products(args.build, built)
    args.out.mkdir(parents=True, exist_ok=True)
    sheet = args.out / "cheatsheet.html"
    sheet.write_text(cheatsheet.sheet_html(built), encoding="utf-8")
    index = {}
    # the layout width is the printed text width (A4 less the side margins)
    with print_session(args.build, {"width": 688, "height": 1000},
                       who="build_handouts") as (page, base):
        for name, spec in specs.items():
            if args.only and name not in args.only:
                continue
            pdf, info = print_product(page, base, spec)
            (args.out / f"{name}.pdf").write_bytes(pdf)
            index[name] = dict(info, title=spec["subtitle"], built=built,
                               sources=[p["url"] for p in spec["parts"]])
            print(f"    {args.out / name}.pdf: {info['pages']} pages, "
                  f"{len(spec['parts'])} parts, {info['answers']} answers in the "
                  f"appendix, {info['shrunk']} wide elements shrunk, "
                  f"{len(info['dropped_exercises'])} exercises about skipped "
                  "sections left out")
        if not args.only or "cheatsheet" in args.only:
            page.goto(f"{base}/pdf/{sheet.name}" if args.out == args.build / "pdf"
                      else sheet.as_uri(), wait_until="load")
            page.evaluate("document.fonts.ready")
            pdf = page.pdf(format="A4", print_background=True, tagged=True,
                           margin={"top": "8mm", "bottom": "8mm", "left": "8mm",
                                   "right": "8mm"})
            (args.out / "cheatsheet.pdf").write_bytes(pdf)
            n = len(PdfReader(io.BytesIO(pdf)).pages)
            index["cheatsheet"] = {"pages": n, "title": "Cheat sheet", "built": built}
            print(f"    {args.out / 'cheatsheet.pdf'}: {n} page(s)")
    old = {}
    if (args.out / "handouts.json").is_file():
        old = json.loads((args.out / "handouts.json").read_text(encoding="utf-8"))
    old.update(index)
    (args.out / "handouts.json").write_text(json.dumps(old, indent=2) + "\n",
                                            encoding="utf-8")
    print(f"    print products built in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
