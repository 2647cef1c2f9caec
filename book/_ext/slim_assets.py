"""Lighter theme assets and figures for the built book (run by ``book_html`` when the HTML
build has finished). Every page loads pydata-sphinx-theme's CSS and, for the icons it shows,
the Font Awesome "solid" webfont; the book uses a few dozen of the font's 1,400 icons.

* :func:`purge_icon_rules`: the theme's CSS without the ``.fa-NAME:before{content:…}`` rules
  of icons that no built page and no script of ``_static/`` names (0.09 MB of 0.40 MB).
* :func:`subset_solid_font`: a copy of the solid font with only the glyphs that the CSS left
  still draws (the purged icon rules and every other ``content`` of the theme's CSS, such as
  the admonition icons), written as WOFF; the CSS's ``@font-face`` points at it (about
  0.01 MB instead of 0.16 MB). Without fontTools the font is left whole.
* :func:`minify_svg`: Matplotlib's SVG figures without their metadata block, with
  coordinates rounded to 0.01 pt and without the indentation (about 15 % smaller; 0.01 pt
  is far below a screen pixel).

The theme's CSS is read from the theme's package every time, not from the output, so an
incremental build that adds an icon gets its rule back.
"""
from __future__ import annotations

import re
from pathlib import Path

THEME_CSS = "styles/pydata-sphinx-theme.css"
SOLID_TTF = "vendor/fontawesome/webfonts/fa-solid-900.ttf"
SOLID_WOFF2 = "vendor/fontawesome/webfonts/fa-solid-900.woff2"
SOLID_SUBSET = "vendor/fontawesome/webfonts/fa-solid-900-subset.woff"

ICON_NAME = re.compile(r"\bfa-[a-z0-9]+(?:-[a-z0-9]+)*")
#: a rule that only sets the glyph of one or more icon classes: .fa-a:before,.fa-b:before{content:"\f00c"}
ICON_RULE = re.compile(r'(?<=[}\n])((?:\.fa-[a-z0-9-]+:before,)*\.fa-[a-z0-9-]+:before)'
                       r'\{content:"[^"]*"\}')
SOLID_FACE = re.compile(r'@font-face\{[^}]*font-weight:900;src:url\([^)]*fa-solid-900\.woff2\)'
                        r' format\("woff2"\)[^}]*\}')
CSS_ESCAPE = re.compile(r"\\([0-9a-fA-F]{1,6}) ?")
PRIVATE_USE = re.compile(r"[\ue000-\uf8ff]")


def used_icon_names(texts) -> set[str]:
    """Every ``fa-…`` word in the given texts (pages, scripts).

    >>> sorted(used_icon_names(['<i class="fa-solid fa-bars"></i>', 'x fa-arrow-up']))
    ['fa-arrow-up', 'fa-bars', 'fa-solid']
    """
    return {name for text in texts for name in ICON_NAME.findall(text)}


def purge_icon_rules(css: str, used: set[str]) -> str:
    """``css`` without the icon-glyph rules none of whose classes is in ``used``.

    >>> css = '}.fa-bars:before{content:"\\\\f0c9"}.fa-x:before,.fa-y:before{content:"\\\\f00d"}a{b:c}'
    >>> purge_icon_rules(css, {"fa-y"})
    '}.fa-x:before,.fa-y:before{content:"\\\\f00d"}a{b:c}'
    """
    def keep(m):
        names = re.findall(r"\.(fa-[a-z0-9-]+):before", m.group(1))
        return m.group(0) if used.intersection(names) else ""
    return ICON_RULE.sub(keep, css)


def css_codepoints(css: str) -> set[int]:
    """The code points a CSS text names as escapes (``\\f0c9``, ``\\30``) and the
    private-use characters it holds as they are: every glyph it can ask an icon font for.

    >>> sorted(hex(c) for c in css_codepoints('a{content:"\\\\f0c9"} b{--i:"\\uf058"} c{content:"\\\\30 "}'))
    ['0x30', '0xf058', '0xf0c9']
    """
    points = {int(h, 16) for h in CSS_ESCAPE.findall(css)}
    points |= {ord(c) for c in PRIVATE_USE.findall(css)}
    return {p for p in points if 0x20 <= p <= 0x10FFFF}


def subset_font(ttf: Path, codepoints: set[int], out: Path) -> bool:
    """Write a WOFF of ``ttf`` with only ``codepoints``; False without fontTools."""
    try:
        from fontTools import subset
    except ImportError:
        return False
    options = subset.Options()
    options.flavor = "woff"
    options.layout_features = ["*"]
    font = subset.load_font(str(ttf), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(codepoints))
    subsetter.subset(font)
    subset.save_font(font, str(out), options)
    return True


#: a Matplotlib SVG's creator line, so only generated figures are rewritten
MATPLOTLIB_SVG = re.compile(r"<dc:title>Matplotlib v")
LONG_NUMBER = re.compile(r"(?<![\w#.-])(-?\d+\.\d{3,})(?![\w.])")


def _round(m) -> str:
    text = f"{round(float(m.group(1)), 2):.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def minify_svg(text: str) -> str:
    """A Matplotlib SVG without metadata, numbers rounded to 2 decimals, no indentation.

    >>> minify_svg('<svg>\\n <metadata>x</metadata>\\n <path d="M 52.160938 173.52 \\nL 1.000001 -0.0001 \\nz"/>\\n</svg>')
    '<svg>\\n<path d="M 52.16 173.52 L 1 0 z"/>\\n</svg>'
    """
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)
    text = LONG_NUMBER.sub(_round, text)
    text = re.sub(r"[ \t]*\n\s*", "\n", text)
    return re.sub(r"\n(?=[LMCQz][ \"\n])", " ", text)


def slim(outdir: Path, theme_static: Path) -> dict[str, int]:
    """Rewrite the theme CSS, the solid font and the Matplotlib SVGs under ``outdir``;
    return the bytes saved per kind."""
    static = outdir / "_static"
    saved = {"css": 0, "font": 0, "svg": 0}
    source_css = theme_static / THEME_CSS
    if source_css.is_file() and (static / THEME_CSS).is_file():
        pages = [p.read_text(encoding="utf-8", errors="replace")
                 for p in outdir.rglob("*.html") if "_static" not in p.parts]
        scripts = [p.read_text(encoding="utf-8", errors="replace")
                   for p in static.rglob("*.js") if p.name != "fontawesome.js"]
        css = source_css.read_text(encoding="utf-8")
        slim_css = purge_icon_rules(css, used_icon_names(pages + scripts))
        other_css = "".join(p.read_text(encoding="utf-8", errors="replace")
                            for p in static.rglob("*.css") if p.name != Path(THEME_CSS).name)
        if (static / SOLID_TTF).is_file() and SOLID_FACE.search(slim_css):
            points = css_codepoints(slim_css) | css_codepoints(other_css)
            if points and subset_font(static / SOLID_TTF, points, static / SOLID_SUBSET):
                face = SOLID_FACE.search(slim_css).group(0)
                new_face = re.sub(r'url\([^)]*fa-solid-900\.woff2\) format\("woff2"\)',
                                  'url(../vendor/fontawesome/webfonts/fa-solid-900-subset.woff)'
                                  ' format("woff")', face)
                slim_css = slim_css.replace(face, new_face)
                saved["font"] = ((static / SOLID_WOFF2).stat().st_size
                                 - (static / SOLID_SUBSET).stat().st_size)
        saved["css"] = len(css.encode()) - len(slim_css.encode())
        (static / THEME_CSS).write_text(slim_css, encoding="utf-8")
    for svg in (outdir / "_images").glob("*.svg"):
        text = svg.read_text(encoding="utf-8")
        if MATPLOTLIB_SVG.search(text):
            small = minify_svg(text)
            if small != text:
                saved["svg"] += len(text.encode()) - len(small.encode())
                svg.write_text(small, encoding="utf-8")
    return saved
