"""Build one reveal.js slide deck per chapter from the built book (``make slides``).

A deck is not a second copy of the chapter: it is cut out of the chapter's own HTML page
(``_build/html/<doc>.html``), taking what the chapter source marks for slides:

* figure cells tagged ``slide`` (``tags: [slide]`` in the cell's metadata), with their
  caption;
* takeaway admonitions with the class ``slide`` (``:class: tip slide``);
* key equations with the class ``slide`` (``:class: slide`` on the ``{math}`` directive).

The glued numbers are already filled in on the built page, and the figures are its own
images (``_build/html/_images``). Each deck opens with the chapter's title and its
"What you'll learn" list; every marked item is one slide, titled with its section, in
the chapter's order. Chapters with no marks get no deck.

Output in ``_build/slides/`` (works offline, also from ``file://``): ``<chapter>.html``
per deck, ``index.html`` listing them, ``_images/`` (the figures used), ``reveal/`` and
``mathjax/`` copied from ``_vendor/`` (``scripts/vendor_js.sh``), and one teaching deck per
track, ``track-<key>.html`` (``scripts/track_slides.py``).

Usage: ``python scripts/build_slides.py [--html _build/html] [--out _build/slides]``
"""
from __future__ import annotations

import argparse
import html
import re
import shutil
import sys
from pathlib import Path

from booktoc import toc_docs
from bs4 import BeautifulSoup
from track_slides import build_tracks, deck_page

ROOT = Path(__file__).resolve().parents[1]
MARK = "slide"
#: The reveal.js files a deck loads (copied from _vendor/reveal).
REVEAL_FILES = ("reveal.js", "reveal.css", "theme/white.css", "plugin/notes.js")

DECK_CSS = """
.reveal { font-size: 30px; }
.reveal h1, .reveal h2, .reveal h3 { text-transform: none; }
.reveal h1 { font-size: 1.6em; } .reveal h2 { font-size: 1.05em; }
.reveal .slide-kind { font-size: 0.55em; color: #666; letter-spacing: 0.04em;
  margin-bottom: 0.2em; }
.reveal section img.figure { height: 470px; max-width: 100%; object-fit: contain;
  margin: 0.2em auto; background: white; border: none; box-shadow: none; }
.reveal .caption { font-size: 0.5em; line-height: 1.3; text-align: left; color: #333; }
.reveal .takeaway { text-align: left; font-size: 0.8em; line-height: 1.45;
  border-left: 6px solid #28a745; padding: 0.4em 0.8em; background: #f3fbf4; }
.reveal ul.learn { font-size: 0.62em; text-align: left; }
.reveal .source { font-size: 0.45em; color: #777; margin-top: 1em; }
.reveal code { font-size: 0.9em; }
.reveal mjx-container[display="true"] { font-size: 110%; }
"""


def deck_name(doc):
    """``book/nvlink`` -> ``nvlink``."""
    return Path(doc).name


def _text(el):
    """Text of a heading without its ``#`` permalink."""
    for a in el.select("a.headerlink"):
        a.decompose()
    return " ".join(el.get_text(" ", strip=True).split())


def _clean(el):
    """Make a cut-out element stand alone: links become plain text, no permalinks."""
    for a in el.select("a.headerlink"):
        a.decompose()
    for a in el.find_all("a"):
        a.unwrap()
    for eqno in el.select("span.eqno"):
        eqno.decompose()
    return el


def _section_title(el):
    sec = el.find_parent("section")
    while sec is not None:
        h = sec.find(re.compile(r"^h[1-6]$"), recursive=False)
        if h is not None:
            return _text(BeautifulSoup(str(h), "html.parser"))
        sec = sec.find_parent("section")
    return ""


def _is_marked_figure(el):
    if el.name != "figure":
        return False
    cell = el.find_parent("div", class_="cell")
    return cell is not None and f"tag_{MARK}" in cell.get("class", [])


def _is_marked(el):
    classes = el.get("class", [])
    if el.name == "div" and "admonition" in classes and MARK in classes:
        return "takeaway"
    if el.name == "div" and "math" in classes and MARK in classes:
        return "equation"
    if _is_marked_figure(el):
        return "figure"
    return None


def extract(page_html):
    """The slide content of one built chapter page.

    Returns
    -------
    dict
        ``title``, ``learn`` (list of HTML ``<li>`` strings) and ``items``: a list of
        dicts with ``kind`` (``figure``, ``takeaway`` or ``equation``), ``section``,
        ``html`` (the element, cleaned) and, for figures, ``img`` (src as on the page)
        and ``id``.
    """
    soup = BeautifulSoup(page_html, "html.parser")
    article = soup.find("article") or soup
    h1 = article.find("h1")
    title = _text(BeautifulSoup(str(h1), "html.parser")) if h1 else ""
    learn = []
    for p in article.find_all("p"):
        if p.get_text(strip=True).startswith("What you"):
            ul = p.find_next_sibling("ul")
            if ul is not None:
                learn = [str(_clean(li)) for li in ul.find_all("li", recursive=False)]
            break
    items = []
    for el in article.find_all(["figure", "div"]):
        kind = _is_marked(el)
        if kind is None:
            continue
        item = {"kind": kind, "section": _section_title(el)}
        if kind == "figure":
            img = el.find("img")
            cap = el.find("span", class_="caption-text")
            num = el.find("span", class_="caption-number")
            item.update(img=img["src"] if img else "", id=el.get("id", ""),
                        caption=(num.get_text(strip=True) + " " if num else "")
                        + (cap.decode_contents() if cap else ""))
        elif kind == "takeaway":
            body = _clean(BeautifulSoup(str(el), "html.parser").div)
            t = body.find("p", class_="admonition-title")
            if t is not None:
                t.decompose()
            item["html"] = body.decode_contents()
        else:
            item["html"] = str(_clean(BeautifulSoup(str(el), "html.parser").div))
        items.append(item)
    return {"title": title, "learn": learn, "items": items}


KIND_LABEL = {"figure": "Figure", "takeaway": "Takeaway", "equation": "Key equation"}


def render_deck(content, doc, images):
    """The deck's HTML. ``images`` maps a page's img src to the deck's copy."""
    esc = html.escape
    slides = [f'<section class="title-slide" data-kind="title">'
              f'<h1>{esc(content["title"])}</h1>'
              + ('<p class="slide-kind">What you\'ll learn</p><ul class="learn">'
                 + "".join(content["learn"]) + "</ul>" if content["learn"] else "")
              + f'<p class="source">From the chapter <em>{esc(content["title"])}</em> '
              f'({esc(doc)}.md)</p></section>']
    for item in content["items"]:
        head = (f'<p class="slide-kind">{KIND_LABEL[item["kind"]]}</p>'
                f'<h2>{esc(item["section"])}</h2>')
        if item["kind"] == "figure":
            body = (f'<img class="figure" src="{esc(images[item["img"]])}" '
                    f'alt="{esc(item["id"])}" data-figure="{esc(item["id"])}">'
                    f'<p class="caption">{item["caption"]}</p>')
        elif item["kind"] == "takeaway":
            body = f'<div class="takeaway">{item["html"]}</div>'
        else:
            body = item["html"]
        slides.append(f'<section data-kind="{item["kind"]}">{head}{body}</section>')
    return deck_page(f"{content['title']} (slides)", slides, css=DECK_CSS,
                     width=1280, height=800)


def build(html_dir, out_dir, vendor_dir, root=ROOT):
    """Build every deck; return ``{chapter name: number of slides}``."""
    html_dir, out_dir, vendor_dir = Path(html_dir), Path(out_dir), Path(vendor_dir)
    if not (html_dir / "index.html").is_file():
        raise SystemExit(f"build_slides: no built book in {html_dir}: run `make book`")
    missing = [f for f in REVEAL_FILES if not (vendor_dir / "reveal" / f).is_file()]
    if missing or not (vendor_dir / "mathjax" / "tex-chtml.js").is_file():
        raise SystemExit(f"build_slides: reveal.js/MathJax missing in {vendor_dir}: "
                         "run `bash scripts/vendor_js.sh`")
    if out_dir.exists():
        shutil.rmtree(out_dir)
    (out_dir / "_images").mkdir(parents=True)
    shutil.copytree(vendor_dir / "reveal", out_dir / "reveal")
    shutil.copytree(vendor_dir / "mathjax", out_dir / "mathjax")
    decks = {}
    for doc in toc_docs(root):
        page = html_dir / f"{doc}.html"
        content = extract(page.read_text(encoding="utf-8"))
        if not content["items"]:
            continue
        images = {}
        for item in content["items"]:
            if item["kind"] != "figure":
                continue
            src = (page.parent / item["img"]).resolve()
            if not src.is_file():
                raise SystemExit(f"build_slides: {doc}: figure {item['id']} image "
                                 f"{item['img']} not found")
            shutil.copy2(src, out_dir / "_images" / src.name)
            images[item["img"]] = f"_images/{src.name}"
        name = deck_name(doc)
        (out_dir / f"{name}.html").write_text(render_deck(content, doc, images),
                                              encoding="utf-8")
        decks[name] = (content["title"], 1 + len(content["items"]))
    tracks = build_tracks(html_dir, out_dir, root=root)
    rows = "\n".join(f'<li><a href="{n}.html">{html.escape(t)}</a> ({k} slides)</li>'
                     for n, (t, k) in decks.items())
    track_rows = "\n".join(f'<li><a href="track-{n}.html">{html.escape(t)}</a> '
                           f"({k} slides)</li>" for n, (t, k) in tracks.items())
    (out_dir / "index.html").write_text(
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Slides</title></head><body><h1>Slides, one deck per chapter</h1>"
        f"<p>Arrow keys move between slides; <kbd>F</kbd> is full screen, "
        f"<kbd>Esc</kbd> the overview, <kbd>S</kbd> the speaker notes.</p>"
        f"<h2>Teaching decks, one per track</h2><ul>\n{track_rows}\n</ul>"
        f"<h2>Chapter decks</h2><ul>\n{rows}\n</ul></body></html>\n",
        encoding="utf-8")
    return {n: k for n, (_t, k) in decks.items()}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--html", default=str(ROOT / "_build" / "html"))
    p.add_argument("--out", default=str(ROOT / "_build" / "slides"))
    p.add_argument("--vendor", default=str(ROOT / "_vendor"))
    args = p.parse_args(argv)
    decks = build(args.html, args.out, args.vendor)
    tracks = sorted(Path(args.out).glob("track-*.html"))
    size = sum(f.stat().st_size for f in Path(args.out).rglob("*") if f.is_file())
    print(f"    {len(decks)} decks, {sum(decks.values())} slides in {args.out} "
          f"({size / 2**20:.1f} MiB): " + ", ".join(f"{n} {k}" for n, k in decks.items()))
    print(f"    {len(tracks)} track decks: " + ", ".join(
        f"{t.stem} {t.read_text(encoding='utf-8').count('<section ')}" for t in tracks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
