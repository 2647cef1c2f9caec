"""Unit tests of ``book/_ext/slim_assets.py`` (lighter theme CSS, icon font and SVG figures
of the built book); no build needed. The built pages' weights: test_page_weight.py."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import slim_assets as S  # noqa: E402

THEME_STATIC = None
try:
    import pydata_sphinx_theme

    THEME_STATIC = (Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme"
                    / "static")
except ImportError:  # pragma: no cover
    pass


def test_purge_keeps_used_and_shared_rules_and_everything_else():
    css = ('a{color:red}.fa-bars:before{content:"\\f0c9"}'
           '.fa-x:before,.fa-close:before{content:"\\f00d"}.fa-spin{animation:x}')
    out = S.purge_icon_rules(css, {"fa-close"})
    assert out == 'a{color:red}.fa-x:before,.fa-close:before{content:"\\f00d"}.fa-spin{animation:x}'
    assert S.purge_icon_rules(css, set()) == "a{color:red}.fa-spin{animation:x}"


def test_icon_names_are_whole_words():
    assert S.used_icon_names(['class="fa-solid fa-file-pdf"']) == {"fa-solid", "fa-file-pdf"}
    assert "fa-file" not in S.used_icon_names(['class="fa-file-pdf"'])


def test_minify_svg_rounds_numbers_not_ids_or_colours():
    svg = ('<svg>\n <metadata>\n  <dc:date>2026-12-02T14:03:06.711211</dc:date>\n </metadata>\n'
           ' <path id="m8304c33cdb" d="M 52.160938 173.52 \nL 255.070028 -0.004 \nz\n"'
           ' style="fill: #1f77b4; stroke-width: 0.8"/>\n</svg>\n')
    out = S.minify_svg(svg)
    assert "metadata" not in out and "711211" not in out
    assert 'id="m8304c33cdb"' in out and "#1f77b4" in out and "stroke-width: 0.8" in out
    assert 'd="M 52.16 173.52 L 255.07 0 z' in out


@pytest.mark.skipif(THEME_STATIC is None, reason="pydata-sphinx-theme not installed")
def test_theme_css_purge_and_font_subset(tmp_path):
    css = (THEME_STATIC / S.THEME_CSS).read_text(encoding="utf-8")
    assert S.SOLID_FACE.search(css), "the theme's @font-face of the solid font has changed"
    slim = S.purge_icon_rules(css, {"fa-bars", "fa-download"})
    assert len(slim) < len(css) - 50_000
    assert re.search(r'\.fa-bars:before[,{]', slim)
    assert not re.search(r'\.fa-yelp:before', slim)
    points = S.css_codepoints(slim)
    assert 0xF0C9 in points and 0xF019 in points       # bars, download
    assert 0xF0EB in points                             # lightbulb: the tip admonition
    out = tmp_path / "sub.woff"
    if not S.subset_font(THEME_STATIC / S.SOLID_TTF, points, out):
        pytest.skip("fontTools not installed")
    from fontTools.ttLib import TTFont

    cmap = TTFont(str(out)).getBestCmap()
    assert {0xF0C9, 0xF019, 0xF0EB} <= set(cmap)
    assert 0xF1E9 not in cmap                           # an icon the book does not show
    assert out.stat().st_size < 20_000
