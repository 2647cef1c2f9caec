"""One teaching deck per track (half-day, one-day, serving), built by ``make slides`` with the
per-chapter decks (``scripts/build_slides.py`` calls :func:`build_tracks`).

The agenda comes from ``gpulab/data/course_tracks.yaml`` (:mod:`gpulab.course`); the
slide content from the built chapter pages, cut out of the sections each chapter block
runs: its figures, key equations and takeaway boxes (the per-chapter marks, see
``build_slides.py``; an equation that ``track_slides.yaml`` gives symbols for counts as
marked), its "What the source article gets wrong" boxes, and one quick check
of the chapter put to the vote. Titles, figure crops and the symbols of each equation come
from ``book/instructor/track_slides.yaml``.

A deck, in order: title; agenda (start, minutes, item); then every agenda item:

* chapter block: the discussion prompt (ask before showing anything); one slide per figure,
  equation (with its symbols), takeaway (when its section has nothing else to show) and
  article box; a quick-check vote; a summary of the block's statements;
* lab block: which notebook to open, which parts, how long, when it is done;
* break; discussion; assessment;
* a closing summary, one statement per chapter block.

Slide titles are statements. Captions, whole takeaway paragraphs, talking points, quick-check
answers and the minutes are speaker notes (``<aside class="notes">``, reveal.js's notes
plugin: press S for the presenter view). No text is set in capitals by CSS.

Output: ``<out>/track-<key>.html``, sharing ``_images/``, ``reveal/`` and ``mathjax/`` with
the chapter decks.
"""
from __future__ import annotations

import functools
import html
import re
import shutil
from pathlib import Path

import yaml
from bs4 import BeautifulSoup

from gpulab import course

ROOT = Path(__file__).resolve().parents[1]
SLIDE_TEXT = ROOT / "book" / "instructor" / "track_slides.yaml"
ARTICLE_BOX = "What the source article gets wrong"
esc = html.escape

#: Slide box of the decks [px]: the size a 720p projector shows one to one.
WIDTH, HEIGHT = 1280, 720
#: Where a figure may go on a slide [px], below a two-line title.
FIG_W, FIG_H = 1180, 560

DECK_CSS = """
.reveal { font-size: 28px; }
.reveal h1, .reveal h2, .reveal h3, .reveal .slide-kind { text-transform: none; }
.reveal h1 { font-size: 56px; line-height: 1.15; }
.reveal h2 { font-size: 38px; line-height: 1.2; margin-bottom: 12px; }
.reveal .slides section { text-align: left; }
.reveal .slide-kind { font-size: 22px; color: #555; letter-spacing: 0.02em; margin: 0 0 4px; }
.reveal .lead { font-size: 30px; line-height: 1.35; }
.reveal ul, .reveal ol { display: block; margin-left: 1.2em; }
.reveal li { margin: 6px 0; line-height: 1.3; }
.reveal .figure-box { text-align: center; }
.reveal img.figure { width: 1180px; height: 570px; max-width: none; max-height: none;
  object-fit: contain; margin: 4px auto; background: white; border: none; box-shadow: none; }
.reveal .crop { overflow: hidden; margin: 4px auto; }
.reveal .crop img { display: block; margin: 0; max-width: none; max-height: none;
  border: none; box-shadow: none; }
.reveal .symbols { font-size: 24px; color: #222; border-top: 2px solid #ddd;
  padding-top: 8px; margin-top: 8px; }
.reveal .symbols li { margin: 4px 0; }
.reveal mjx-container[display="true"] { font-size: 115%; margin: 8px 0; }
.reveal .takeaway li { font-size: 28px; }
.reveal .article li { font-size: 24px; }
.reveal .article .claim { color: #a12; }
.reveal table.agenda { font-size: 24px; border-collapse: collapse; margin: 0; }
.reveal table.agenda th, .reveal table.agenda td { padding: 4px 14px; border-bottom: 1px solid #ddd; }
.reveal table.agenda td.num { text-align: right; }
.reveal table.agenda tr.break td { color: #555; font-style: italic; }
.reveal .vote ol { list-style: none; margin-left: 0; font-size: 30px; }
.reveal .vote li { border: 2px solid #ccd; border-radius: 8px; padding: 8px 16px; margin: 10px 0; }
.reveal .big { font-size: 34px; line-height: 1.3; }
.reveal .lab-open code { font-size: 30px; }
.reveal .meta { font-size: 24px; color: #444; }
.reveal .done { font-size: 30px; color: #186a2e; }
.reveal aside.notes { display: none; }
"""


def load_text(path=SLIDE_TEXT):
    """The titles, crops and symbols of ``track_slides.yaml`` (a dict)."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    for key in ("headlines", "figures", "equations", "blocks", "closing"):
        data.setdefault(key, {})
    return data


@functools.lru_cache(maxsize=1)
def listed_equations():
    """The ids of the equations ``track_slides.yaml`` gives symbols for
    (``equation-<label>``): a track deck shows them even where the chapter does not mark
    the equation for slides."""
    return frozenset("equation-" + k.removeprefix("equation-")
                     for k in load_text()["equations"])


# --- what a chapter block shows -----------------------------------------------------
def _clean(el):
    for a in el.select("a.headerlink, span.eqno"):
        a.decompose()
    for a in el.find_all("a"):
        a.unwrap()
    return el


def _plain(el):
    """Text of an element on one line (inline TeX stays as ``\\( \\)`` for MathJax)."""
    return " ".join(el.get_text(" ", strip=True).split()).replace(" .", ".").replace(
        " ,", ",").replace("( ", "(").replace(" )", ")")


def sentences(text):
    """Split prose into sentences (not at decimal points or inside ``\\( \\)``)."""
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z“(\\])", text.strip())
    return [p for p in parts if p]


def _is_figure(el):
    if el.name != "figure":
        return False
    cell = el.find_parent("div", class_="cell")
    return cell is not None and "tag_slide" in cell.get("class", [])


def _box_title(el):
    t = el.find("p", class_="admonition-title", recursive=False)
    return t.get_text(" ", strip=True) if t else ""


def section_items(soup, label):
    """The slide material of the chapter section ``label``, in the chapter's order.

    A list of dicts with ``kind``: ``figure`` (``id``, ``img``, ``caption``),
    ``equation`` (``id``, ``html``), ``takeaway`` (``text``, ``html``) or ``article``
    (``points``: ``(claim, correction)`` pairs of plain text, ``html``: the whole box).
    """
    anchor = soup.find(id=label)
    if anchor is None:
        raise ValueError(f"label: no element with id {label!r} on the chapter page")
    sec = anchor if anchor.name == "section" else anchor.find_parent("section")
    items = []
    for el in sec.find_all(["figure", "div"]):
        classes = el.get("class", [])
        if _is_figure(el):
            img = el.find("img")
            cap = el.find("span", class_="caption-text")
            num = el.find("span", class_="caption-number")
            items.append({"kind": "figure", "id": el.get("id", ""),
                          "img": img["src"] if img else "",
                          "caption": ((num.get_text(strip=True) + " ") if num else "")
                          + (_plain(cap) if cap else "")})
        elif el.name == "div" and "math" in classes and (
                "slide" in classes or el.get("id", "") in listed_equations()):
            eq = _clean(BeautifulSoup(str(el), "html.parser").div)
            items.append({"kind": "equation", "id": el.get("id", ""), "html": str(eq)})
        elif el.name == "div" and "admonition" in classes and "slide" in classes:
            body = _clean(BeautifulSoup(str(el), "html.parser").div)
            body.find("p", class_="admonition-title").decompose()
            items.append({"kind": "takeaway", "text": _plain(body),
                          "html": body.decode_contents()})
        elif el.name == "div" and "admonition" in classes \
                and _box_title(el).startswith(ARTICLE_BOX):
            body = _clean(BeautifulSoup(str(el), "html.parser").div)
            body.find("p", class_="admonition-title").decompose()
            items.append({"kind": "article", "points": _article_points(body),
                          "html": body.decode_contents()})
    return items


def _article_points(body):
    points = []
    lis = body.find_all("li")
    if lis:
        for li in lis:
            strong = li.find("strong")
            claim = _plain(strong) if strong else ""
            if strong:
                strong.decompose()
            rest = sentences(_plain(li))
            points.append((claim, rest[0] if rest else ""))
        return points
    paras = [_plain(p) for p in body.find_all("p")]
    claim = next((p for p in paras if p.startswith("Claim")), "")
    correct = next((p for p in paras if p.startswith("Correct")), "")
    if claim or correct:
        c = sentences(re.sub(r"^Claim[^:.]*[:.]\s*", "", claim))
        r = sentences(re.sub(r"^Correct[^:.]*[:.]\s*", "", correct))
        points.append((c[0] if c else "", r[0] if r else ""))
    return points


def quick_checks(soup):
    """The chapter's quick checks: dicts ``title``, ``stem``, ``options``, ``answer``."""
    out = []
    for box in soup.select("div.quick-check"):
        box = _clean(BeautifulSoup(str(box), "html.parser").div)
        title = box.find("p", class_="admonition-title")
        details = box.find("details")
        answer = ""
        if details is not None:
            body = details.find("div", class_="sd-summary-content") or details
            answer = body.decode_contents()
            details.decompose()
        title_text = re.sub(r"^Quick check:\s*", "", title.get_text(" ", strip=True))
        title.decompose()
        text = " ".join(_plain(p) for p in box.find_all("p"))
        parts = re.split(r"\s*\(([a-e])\)\s+", text)
        stem, options = parts[0], []
        for i in range(1, len(parts) - 1, 2):
            options.append((parts[i], parts[i + 1].rstrip(".").strip()))
        out.append({"title": title_text, "stem": stem, "options": options,
                    "answer": answer})
    return out


# --- rendering --------------------------------------------------------------------
def _svg_aspect(path):
    """Width over height of an SVG or raster image (1.0 when unknown)."""
    head = Path(path).read_text(encoding="utf-8", errors="ignore")[:3000]
    m = re.search(r'viewBox="[\d.]+ [\d.]+ ([\d.]+) ([\d.]+)"', head)
    return float(m.group(1)) / float(m.group(2)) if m else 1.0


_TEX_WORDS = {r"\times": "×", r"\cdot": "·", r"\approx": "≈", r"\alpha": "α",
              r"\beta": "β", r"\eta": "η", r"\epsilon": "ε", r"\Psi": "Ψ",
              r"\log": " log", r"\min": "min", r"\le": "≤", r"\ge": "≥",
              r"\infty": "∞", r"\sum": "Σ", r"\dots": "…", r"\ldots": "…"}


def tex_plain(text):
    """Inline TeX (``\\( \\)``) as plain text, for the speaker view, which has no
    MathJax: ``\\(r_\\text{lane} = f_\\text{sym} \\times b\\)`` -> ``r_lane = f_sym × b``.
    """
    def one(m):
        t = m.group(1)
        t = re.sub(r"\\(?:text|mathrm|operatorname)\{([^{}]*)\}", r"\1", t)
        t = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)", t)
        for k, v in _TEX_WORDS.items():
            t = re.sub(re.escape(k) + r"(?![A-Za-z])", v, t)
        t = re.sub(r"\\[,;!: ]", " ", t).replace("{", "").replace("}", "")
        return " ".join(t.split())
    return re.sub(r"\\\((.+?)\\\)", one, text, flags=re.S)


def _notes(*parts):
    return ('<aside class="notes">' + tex_plain("".join(p for p in parts if p))
            + "</aside>")


def _slide(kind, body, notes, extra=""):
    return f'<section data-kind="{kind}"{extra}>{body}{notes}</section>'


def _block_notes(block):
    """Notes every slide of an agenda item carries: prompt, talking points, minutes."""
    it, start, minutes, index, total = block
    out = (f"<p><b>{esc(it.title)}</b> — item {index} of {total}, {minutes} min "
           f"(starts at {start} into the session).</p>")
    if it.prompt:
        out += f"<p><b>Prompt:</b> {esc(it.prompt)}</p>"
    points = course.talking_points(it)
    if points:
        out += ("<p><b>Expected answer (talking points):</b></p><ul>"
                + "".join(f"<li>{esc(p)}</li>" for p in points) + "</ul>")
    return out


def _parts(run):
    letters = [p.removeprefix("Part ") for p in run]
    if len(letters) > 1 and all(len(x) == 1 for x in letters) and \
            [ord(x) for x in letters] == list(range(ord(letters[0]), ord(letters[0]) + len(letters))):
        return f"Parts {letters[0]}–{letters[-1]}"
    return ("Part " if len(letters) == 1 else "Parts ") + ", ".join(letters)


def _figure_slides(item, title, text, images, out_dir, notes):
    spec = text["figures"].get(item["id"], {})
    src = images[item["img"]]
    cap = f"<p><b>Caption:</b> {esc(item['caption'])}</p>"
    crop = spec.get("crop")
    if not crop:
        body = (f'<h2>{esc(spec.get("title", title))}</h2><div class="figure-box">'
                f'<img class="figure" src="{esc(src)}" alt="{esc(item["caption"])}" '
                f'data-figure="{esc(item["id"])}"></div>')
        return [_slide("figure", body, _notes(cap, notes))]
    cols = int(spec.get("columns", 1))
    panels = [(top, bottom, c / cols, (c + 1) / cols)
              for top, bottom in crop for c in range(cols)]
    titles = spec.get("titles", [])
    if len(titles) != len(panels):
        raise SystemExit(f"track_slides: figure {item['id']}: {len(panels)} panels "
                         f"but {len(titles)} titles")
    aspect = _svg_aspect(out_dir / src)
    extra = f"<p>{esc(spec['note'])}</p>" if spec.get("note") else ""
    shown = [(p, t) for p, t in zip(panels, titles) if t]
    slides = []
    for n, ((top, bottom, left, right), t) in enumerate(shown, start=1):
        ratio = aspect * (right - left) / (bottom - top)   # width over height shown
        w = min(FIG_W, FIG_H * ratio)
        h, full_w = w / ratio, w / (right - left)
        full_h = full_w / aspect
        body = (f'<h2>{esc(t)}</h2><div class="crop" style="width:{w:.0f}px;'
                f'height:{h:.0f}px"><img src="{esc(src)}" alt="{esc(item["caption"])} '
                f'(part {n} of {len(shown)})" data-figure="{esc(item["id"])}" '
                f'style="width:{full_w:.0f}px;height:{full_h:.0f}px;'
                f'margin-top:{-top * full_h:.0f}px;margin-left:{-left * full_w:.0f}px">'
                f"</div>")
        slides.append(_slide("figure", body, _notes(
            f"<p>Part {n} of {len(shown)} of one figure.</p>", extra, cap, notes)))
    return slides


def per_block(value, occurrence):
    """A ``track_slides.yaml`` entry for one block of a chapter: a list gives one value per
    block of that chapter in the track, in agenda order (the last one repeats); a single
    value serves every block.

    >>> per_block([2, 1], 1), per_block(3, 1), per_block(["a"], 2)
    (1, 3, 'a')
    """
    if isinstance(value, list):
        return value[min(occurrence, len(value) - 1)]
    return value


def _chapter_slides(block, pages, text, images, out_dir, headlines_seen, occurrence=0):
    """The slides of one chapter block; ``occurrence`` counts the earlier blocks of the
    same chapter in the track (0 for the first)."""
    it = block[0]
    soup = pages[it.doc]
    notes = _block_notes(block)
    chapter = _plain(soup.find("h1")) if soup.find("h1") else it.doc
    slides = [_slide("prompt",
                     f'<p class="slide-kind">Chapter block · {block[2]} min · from '
                     f'<em>{esc(chapter)}</em></p><h2>{esc(it.title)}</h2>'
                     f'<p class="slide-kind">Ask first, show after:</p>'
                     f'<p class="big">{esc(it.prompt)}</p>',
                     _notes("<p>Let two or three people commit to an answer before the "
                            "next slide.</p>", notes))]
    statements = []
    for label in it.run:
        items = section_items(soup, label)
        headline = text["headlines"].get(label)
        if not headline:
            raise SystemExit(f"track_slides: no headline for section {label!r} in "
                             f"{SLIDE_TEXT.name}")
        statements.append(headline)
        headlines_seen.add(label)
        takeaway = next((i for i in items if i["kind"] == "takeaway"), None)
        tk_notes = (f"<p><b>Takeaway of the section:</b></p>{takeaway['html']}"
                    if takeaway else "")
        visual = [i for i in items if i["kind"] != "takeaway"]
        if not visual and takeaway:
            bullets = sentences(takeaway["text"])
            slides.append(_slide(
                "takeaway", f"<h2>{esc(headline)}</h2><ul class='takeaway'>"
                + "".join(f"<li>{esc(s)}</li>" for s in bullets[:4]) + "</ul>",
                _notes(tk_notes, notes)))
        for item in visual:
            if item["kind"] == "figure":
                slides += _figure_slides(item, headline, text, images, out_dir,
                                         tk_notes + notes)
            elif item["kind"] == "equation":
                spec = text["equations"].get(item["id"].removeprefix("equation-"),
                                             text["equations"].get(item["id"], {}))
                symbols = spec.get("symbols", [])
                if not symbols:
                    raise SystemExit(f"track_slides: equation {item['id']} has no "
                                     f"symbols in {SLIDE_TEXT.name}")
                scale = float(spec.get("scale", 1.0))
                if not 0.6 <= scale <= 1.0:
                    raise SystemExit(f"track_slides: equation {item['id']}: scale must be "
                                     f"in [0.6, 1]; got {scale}")
                formula = (item["html"] if scale == 1.0 else
                           f'<div style="font-size:{100 * scale:.0f}%">{item["html"]}</div>')
                body = (f"<h2>{esc(spec.get('title', headline))}</h2>{formula}"
                        f'<p class="slide-kind">where</p><ul class="symbols">'
                        + "".join(f"<li>{esc(s)}</li>" for s in symbols) + "</ul>")
                slides.append(_slide("equation", body, _notes(tk_notes, notes)))
            else:
                points = item["points"]
                body = (f'<p class="slide-kind">{ARTICLE_BOX}</p>'
                        f"<h2>{esc(headline)}</h2><ul class='article'>"
                        + "".join(f"<li><span class='claim'>{esc(c)}</span> {esc(r)}</li>"
                                  for c, r in points[:3]) + "</ul>")
                slides.append(_slide("article", body, _notes(
                    f"<p><b>The whole box:</b></p>{item['html']}", notes)))
    checks = quick_checks(soup)
    if checks:
        pick = int(per_block(text.get("quick_check", {}).get(it.doc, 1), occurrence))
        qc = checks[pick - 1]
        opts = "".join(f"<li><b>({k})</b> {esc(v)}</li>" for k, v in qc["options"])
        body = (f'<p class="slide-kind">Quick check · hands up for each option</p>'
                f"<h2>Vote: {esc(qc['title'])}</h2>"
                f'<p class="lead">{esc(qc["stem"])}</p>'
                + (f'<ol class="options">{opts}</ol>' if opts else
                   '<p class="lead">Everyone writes a number down first.</p>'))
        slides.append(_slide("vote", f'<div class="vote">{body}</div>', _notes(
            f"<p><b>Answer (reveal after the vote):</b></p>{qc['answer']}", notes)))
    point = per_block(text["blocks"].get(it.doc, it.title), occurrence)
    slides.append(_slide("summary", f'<p class="slide-kind">Summary of the block '
                                    f'“{esc(it.title)}”</p><h2>{esc(point)}</h2><ul>'
                         + "".join(f"<li>{esc(s)}</li>" for s in statements) + "</ul>",
                         _notes(notes)))
    return slides, point


def _lab_slide(block, root):
    it = block[0]
    sections = course.lab_sections(root / "labs" / f"{it.doc}.ipynb")
    titles = [next(s.title for s in sections if s.matches(p)) for p in it.run]
    estimate = course.lab_estimate(it.doc, list(it.run), opening=False, root=root) / 60
    body = (f'<p class="slide-kind">Lab block · {block[2]} min</p>'
            f"<h2>{esc(it.title)}</h2>"
            f'<p class="lab-open big">Open <code>labs/{esc(it.doc)}.ipynb</code>, '
            f"{esc(_parts(it.run))}, {block[2]} min</p><ul class='meta'>"
            + "".join(f"<li>{esc(t)}</li>" for t in titles) + "</ul>"
            '<p class="done">Done = every ✓ check of these parts passes.</p>')
    return _slide("lab", body, _notes(
        f"<p>Measured size of these parts: about {estimate:.0f} min (without the lab's "
        f"opening). Walk round; when most of the room has every ✓, move on.</p>",
        _block_notes(block)))


def _runs(it, root):
    """What an agenda item runs, for the agenda's notes: section titles or lab parts."""
    if it.kind == "chapter":
        names = [course.section_title(it.doc, label, root) for label in it.run]
    elif it.kind == "lab":
        names = [f"labs/{it.doc}.ipynb, {_parts(it.run)}"]
    else:
        return ""
    return " — " + "; ".join(esc(n) for n in names)


def render_track(key, pages, text, images, out_dir, root=ROOT):
    """The HTML of the deck of track ``key``; ``pages`` maps a chapter to its parsed page."""
    t = course.track(key)
    rows = course.agenda_rows(key)
    total = len(rows)
    end_minutes = int(round(course.track_total(key) / 60))
    slides = [_slide("title",
                     f'<p class="slide-kind">Teaching deck</p><h1>{esc(t.title)}</h1>'
                     f'<p class="lead">{esc(t.audience[:1].upper() + t.audience[1:])}.</p>'
                     f'<p class="meta">{end_minutes // 60} h {end_minutes % 60:02d} min planned '
                     f"of a {t.budget / 3600:.1f} h session. Press S for the speaker "
                     f"notes.</p>",
                     _notes(f"<p>{total} agenda items, {end_minutes} min planned. Every "
                            "slide's notes hold its block's prompt, talking points and "
                            "minutes.</p>"))]
    per = 10
    for n in range(0, total, per):
        chunk = rows[n:n + per]
        part = f" ({n // per + 1} of {(total + per - 1) // per})" if total > per else ""
        trs = "".join(
            f'<tr class="{it.kind}"><td class="num">{s}</td><td class="num">{m}</td>'
            f"<td>{esc(it.title)}</td></tr>" for s, m, it in chunk)
        slides.append(_slide(
            "agenda", f"<h2>Agenda{part}: {esc(t.title.lower())}, "
                      f"{end_minutes // 60} h {end_minutes % 60:02d} min</h2>"
                      f'<table class="agenda"><thead><tr><th>Start</th><th>Min.</th>'
                      f"<th>Item</th></tr></thead><tbody>{trs}</tbody></table>",
            _notes("<p>Start is the clock time into the session; breaks included.</p>"
                   + "".join(f"<p>{s} · {m} min · {esc(it.title)}{_runs(it, root)}</p>"
                             for s, m, it in chunk))))
    seen, points, blocks_of = set(), [], {}
    for i, (start, minutes, it) in enumerate(rows):
        block = (it, start, minutes, i + 1, total)
        nxt = rows[i + 1][2].title if i + 1 < total else "the end"
        if it.kind == "chapter":
            s, point = _chapter_slides(block, pages, text, images, out_dir, seen,
                                       blocks_of.get(it.doc, 0))
            blocks_of[it.doc] = blocks_of.get(it.doc, 0) + 1
            slides += s
            points.append((it.title, point))
        elif it.kind == "lab":
            slides.append(_lab_slide(block, root))
        elif it.kind == "break":
            back = rows[i + 1][0] if i + 1 < total else ""
            slides.append(_slide(
                "break", f'<p class="slide-kind">Break</p><h2>{esc(it.title)}: '
                         f"{minutes} min</h2><p class='big'>Back at {back} on the session "
                         f"clock, with: {esc(nxt)}</p>",
                _notes(_block_notes(block), f"<p>Next: {esc(nxt)}.</p>")))
        else:
            kind = "discussion" if it.kind == "discussion" else "assessment"
            body = (f'<p class="slide-kind">{kind.capitalize()} · {minutes} min</p>'
                    f"<h2>{esc(it.title)}</h2>")
            if it.prompt:
                body += f'<p class="big">{esc(it.prompt)}</p>'
            elif kind == "assessment":
                body += ('<p class="big">The same questions as at the start: answer them '
                         "again, then compare with the note you kept.</p>")
            slides.append(_slide(kind, body, _notes(_block_notes(block))))
    per = 5
    for n in range(0, len(points), per):
        chunk = points[n:n + per]
        part = (f" ({n // per + 1} of {(len(points) + per - 1) // per})"
                if len(points) > per else "")
        slides.append(_slide(
            "summary", f'<p class="slide-kind">Summary of the session{part}</p>'
                       f"<h2>{esc(text['closing'].get(key, t.title))}</h2><ul>"
                       + "".join(f"<li>{esc(p)}</li>" for _title, p in chunk) + "</ul>",
            _notes("<p>One statement per chapter block:</p><ul>"
                   + "".join(f"<li>{esc(title)}: {esc(p)}</li>" for title, p in chunk)
                   + "</ul>")))
    return deck_page(f"{t.title} (teaching deck)", slides)


def deck_page(title, slides, *, css=None, width=WIDTH, height=HEIGHT):
    """One reveal.js deck page (offline: reveal.js, its notes plugin and MathJax from
    the deck folder) holding the ``<section>`` strings ``slides``; shared by the track
    decks and the per-chapter decks of ``build_slides.py``."""
    esc = html.escape
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>{esc(title)}</title>
<link rel="stylesheet" href="reveal/reveal.css">
<link rel="stylesheet" href="reveal/theme/white.css">
<style>{DECK_CSS if css is None else css}</style>
<script>
window.MathJax = {{
  tex: {{ inlineMath: [["\\\\(", "\\\\)"]], displayMath: [["\\\\[", "\\\\]"]],
          tags: "none" }},
  options: {{ processHtmlClass: "math|reveal", ignoreHtmlClass: "tex2jax_ignore" }},
  startup: {{ typeset: true }}
}};
</script>
<script defer src="mathjax/tex-chtml.js"></script>
</head>
<body>
<div class="reveal"><div class="slides">
{chr(10).join(slides)}
</div></div>
<script src="reveal/reveal.js"></script>
<script src="reveal/plugin/notes.js"></script>
<script>
Reveal.initialize({{ hash: true, slideNumber: "c/t", center: false, transition: "none",
                    width: {width}, height: {height}, margin: 0.04,
                    plugins: [RevealNotes] }});
</script>
</body>
</html>
"""


def build_tracks(html_dir, out_dir, root=ROOT, text_path=SLIDE_TEXT):
    """Write ``track-<key>.html`` for every track; return ``{key: (title, slides)}``.

    ``out_dir`` must already hold ``_images/``, ``reveal/`` and ``mathjax/``.
    """
    html_dir, out_dir = Path(html_dir), Path(out_dir)
    text = load_text(text_path)
    decks = {}
    for key in course.track_names():
        t = course.track(key)
        pages, images = {}, {}
        for it in t.items:
            if it.kind != "chapter" or it.doc in pages:
                continue
            page = html_dir / "book" / f"{it.doc}.html"
            pages[it.doc] = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
            for fig in pages[it.doc].find_all("figure"):
                img = fig.find("img")
                if not _is_figure(fig) or img is None:
                    continue
                src = (page.parent / img["src"]).resolve()
                if not src.is_file():
                    raise SystemExit(f"track_slides: {it.doc}: image {img['src']} not found")
                shutil.copy2(src, out_dir / "_images" / src.name)
                images[img["src"]] = f"_images/{src.name}"
        doc = render_track(key, pages, text, images, out_dir, root)
        (out_dir / f"track-{key}.html").write_text(doc, encoding="utf-8")
        decks[key] = (t.title, doc.count("<section "))
    return decks
