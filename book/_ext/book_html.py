"""Local Sphinx extension of the book (registered in ``_config.yml``, ``local_extensions``).

* The ``lab`` role names a lab section without a server's address:
  ``{lab}`lab02_read_your_server.ipynb#PCIe-explorer``` is written as the lab's path in
  JupyterLab and its section, "``labs/lab02_read_your_server.ipynb``, section “PCIe
  explorer”". The published book cannot know where a reader's JupyterLab runs (any port,
  a JupyterHub), so it shows the path to open there; the chapter copies that ``make lab``
  opens turn the role into a relative link (``jupyter/chapter_notebooks.py``). The anchor
  is JupyterLab's id of the heading: its text with spaces as ``-``. The section's title is
  read from the lab's Markdown headings; a lab or an anchor that does not exist is an error.
* Every image of a figure gets an alt text from the figure's caption (:func:`figure_alt`):
  figures of cell outputs (myst-nb) and ``{figure}`` directives without ``:alt:`` would
  otherwise carry the image's path as alt text, which a screen reader spells out. The alt
  text is the caption's first sentence; the full caption stays below the image.
* One search field per page (:func:`one_search_field`): the sidebar's. pydata-sphinx-theme
  (0.16 and later) also puts a search button into the header unless ``navbar_persistent``
  is set, and Jupyter Book does not set it; the search page itself leaves the sidebar's
  out (``html_sidebars`` in ``_config.yml``), as it has its own field.
* The GitHub icon before links to github.com (:func:`github_icon_css`): pydata-sphinx-theme
  draws it with the Font Awesome brands webfont (0.12 MB) for this one glyph; the page gets
  the same mark as a 1 kB inline SVG (GitHub's Octicons ``mark-github``, MIT, as
  sphinx-design ships it) and never loads that font.
* When the HTML build has finished, :mod:`slim_assets` (next to this file) purges the
  theme CSS's unused icon rules, subsets the icon font to the glyphs left in use and
  minifies Matplotlib's SVG figures (page weight: tests/book/test_page_weight.py).
"""
from __future__ import annotations

import functools
import json
import re
from pathlib import Path

from docutils import nodes
from sphinx.util import logging

logger = logging.getLogger(__name__)

#: ``lab01_link_math.ipynb#Link-explorer``: a lab of labs/ and the anchor of a heading.
LAB_TARGET = re.compile(r"^(?P<lab>lab\d\d_\w+\.ipynb)#(?P<anchor>[^\s#]+)$")


HEADING = re.compile(r"^#{1,6}\s+(?P<text>.+?)\s*$")


def lab_headings(notebook: Path) -> dict[str, str]:
    """``{JupyterLab anchor: heading text}`` of a notebook's Markdown headings."""
    found = {}
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        in_fence = False
        for line in "".join(cell["source"]).splitlines():
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
            m = None if in_fence else HEADING.match(line)
            if m:
                found.setdefault(m["text"].replace(" ", "-"), m["text"])
    return found


def lab_section(target: str, labs: Path) -> tuple[str, str]:
    """``(path in JupyterLab, section title)`` of a ``lab`` role's target; ``labs`` is the
    folder of the lab notebooks."""
    m = LAB_TARGET.match(target.strip())
    if not m:
        raise ValueError(f"lab role: {target!r} is not '<labNN_name>.ipynb#<Heading-anchor>'")
    notebook = labs / m["lab"]
    if not notebook.is_file():
        raise ValueError(f"lab role: no lab {m['lab']} in {labs.name}/")
    headings = lab_headings(notebook)
    if m["anchor"] not in headings:
        raise ValueError(f"lab role: {m['lab']} has no heading with the anchor "
                         f"#{m['anchor']} (anchors: {sorted(headings)})")
    return f"labs/{m['lab']}", headings[m["anchor"]]


def lab_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    env = inliner.document.settings.env
    try:
        path, section = lab_section(text, Path(env.srcdir) / "labs")
    except ValueError as err:
        msg = inliner.reporter.error(str(err), line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    env.note_dependency(str(Path(env.srcdir) / path))   # a renamed heading rebuilds the page
    return [nodes.literal(path, path), nodes.Text(f", section “{section}”")], []


#: an alt text that is only a file name or a path (what docutils writes when alt is missing)
PATH_LIKE = re.compile(r"^\S*([/\\]\S*|\.(png|svg|jpe?g|gif|webp|pdf))$", re.IGNORECASE)


def first_sentence(text: str, limit: int = 160) -> str:
    """The caption's first sentence, at most ``limit`` characters (cut at a word).

    >>> first_sentence("Ring AllReduce on 8 GPUs. Each step moves 1/8 of the data.")
    'Ring AllReduce on 8 GPUs.'
    >>> first_sentence("Bandwidth vs. message size (log axes)")
    'Bandwidth vs. message size (log axes)'
    """
    text = " ".join(text.split())
    m = re.search(r"(?<!\bvs)(?<!\be\.g)(?<!\bi\.e)[.!?](\s|$)", text)
    short = text[:m.end()].strip() if m else text
    if len(short) > limit:
        short = short[:limit].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return short


def needs_alt(image: nodes.image) -> bool:
    alt = (image.get("alt") or "").strip()
    return not alt or alt == image.get("uri") or bool(PATH_LIKE.match(alt))


def figure_alt(app, doctree, docname) -> None:
    """Give the images of each captioned figure the caption's first sentence as alt text
    where they have none, or only their path."""
    for figure in doctree.findall(nodes.figure):
        caption = next(iter(figure.findall(nodes.caption)), None)
        legend = next(iter(figure.findall(nodes.legend)), None)
        source = caption if caption is not None and caption.astext().strip() else legend
        if source is None:
            continue
        alt = first_sentence(source.astext())
        for image in figure.findall(nodes.image):
            if needs_alt(image):
                image["alt"] = alt


def one_search_field(app, config) -> None:
    """No header search button (the sidebar has the search field), unless the book's
    configuration asks for one."""
    config.html_theme_options.setdefault("navbar_persistent", [])


#: pydata-sphinx-theme's rule is ``a.github:before{font:var(--fa-font-brands);...}``
GITHUB_ICON_CSS = (
    "a.github:before{content:\"\";font:inherit;display:inline-block;width:1em;height:1em;"
    "vertical-align:-.125em;background-color:var(--pst-color-text-muted);"
    "-webkit-mask:url(\"{url}\") center/contain no-repeat;"
    "mask:url(\"{url}\") center/contain no-repeat}"
)


@functools.lru_cache(maxsize=1)
def github_icon_css() -> str:
    """CSS that draws ``a.github:before`` from Octicons' ``mark-github`` (via sphinx-design's
    copy) instead of the Font Awesome brands webfont; "" if that copy cannot be read."""
    try:
        import sphinx_design

        octicons = Path(sphinx_design.__file__).parent / "compiled" / "octicons.json"
        d = json.loads(octicons.read_text(encoding="utf-8"))["mark-github"]["heights"]["16"]
        path = d["ast"]["children"][0]["attributes"]["d"]
    except (ImportError, OSError, KeyError, IndexError, ValueError):
        return ""
    svg = (f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'>"
           f"<path d='{path}'/></svg>")
    url = "data:image/svg+xml," + svg.replace("<", "%3C").replace(">", "%3E").replace("#", "%23")
    return GITHUB_ICON_CSS.replace("{url}", url)


def page_context(app, pagename, templatename, context, doctree) -> None:
    """``github_icon_css`` for book/_templates/layout.html."""
    context["github_icon_css"] = github_icon_css()


def slim_build(app, exception) -> None:
    """Lighter theme CSS, icon font and SVG figures in the HTML output (:mod:`slim_assets`)."""
    if exception is not None or app.builder.format != "html":
        return
    import pydata_sphinx_theme
    import slim_assets

    theme_static = (Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme"
                    / "static")
    saved = slim_assets.slim(Path(app.outdir), theme_static)
    logger.info("slim assets: %s kB less (theme CSS, icon font, SVG figures)",
                {k: v // 1000 for k, v in saved.items()})


def setup(app):
    app.connect("html-page-context", page_context)
    app.connect("build-finished", slim_build)
    app.add_role("lab", lab_role)
    app.connect("config-inited", one_search_field)
    app.connect("doctree-resolved", figure_alt)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
