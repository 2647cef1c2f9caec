"""Blitted explorer images equal a full redraw.

Every explorer's view caches the static part of its figure (frame, grid, ticks,
labels, legend) and redraws only the data artists (gpulab.widgets.base.PNGView).
A stale background would show old ticks or an old legend under new data, so for
every explorer and control the image after an update is compared pixel by pixel
with a complete redraw of the same figure. A control test proves the comparison
catches a stale background.
"""
from __future__ import annotations

import io
import os

os.environ.setdefault("MPLBACKEND", "Agg")

import ipywidgets as W  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from gpulab import widgets  # noqa: E402
from gpulab.widgets import base  # noqa: E402


def _pixels(png):
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)


def stale_share(explorer):
    """Share of pixels where the widget's image and a full redraw differ by more
    than antialiasing noise (40 of 255 in some channel)."""
    shown = _pixels(explorer.view.image.value)
    full = _pixels(explorer.view.full_render())
    assert shown.shape == full.shape
    return float((np.abs(shown - full).max(axis=2) > 40).mean())


def _values(control):
    """Two values different from the current one, spanning the control's range."""
    if isinstance(control, (W.IntSlider, W.FloatSlider, W.FloatLogSlider)):
        lo, hi = control.min, control.max
        if isinstance(control, W.FloatLogSlider):
            lo, hi = control.base ** lo, control.base ** hi
            vals = [lo * (hi / lo) ** f for f in (0.15, 0.85)]
        else:
            vals = [lo + (hi - lo) * f for f in (0.15, 0.85)]
        if isinstance(control, W.IntSlider):
            vals = [int(round(v)) for v in vals]
        return [v for v in vals if v != control.value]
    if isinstance(control, W.Checkbox):
        return [not control.value]
    options = getattr(control, "options", None)
    if options:
        opts = [o[1] if isinstance(o, tuple) else o for o in options]
        return [o for o in (opts[0], opts[-1]) if o != control.value]
    return []                      # free text: covered by the explorers' own tests


#: The topology explorer does not blit: it keeps one finished image per topology
#: text (its figure's size follows the topology) and only re-colours a table.
BLITTED = sorted(set(widgets.explorers()) - {"topology"})


@pytest.mark.parametrize("name", BLITTED)
def test_blitted_image_equals_full_redraw(name):
    factory = widgets.explorers()[name]
    explorer = factory()
    assert stale_share(explorer) <= 1e-4, f"{name}: first image"
    checked = 0
    for cname in list(explorer.controls):
        explorer = factory()           # each control from the default state
        control = explorer.controls[cname]
        for value in _values(control):
            control.value = value
            share = stale_share(explorer)
            assert share <= 1e-4, f"{name}.{cname}={value!r}: {share:.3%} stale"
            checked += 1
    assert checked >= 2, f"{name}: too few controls exercised"


def test_a_stale_background_is_caught(monkeypatch):
    """The comparison fails when the cache key ignores what changed."""
    monkeypatch.setattr(base, "split_figure",
                        lambda fig, real=base.split_figure: ("one key", real(fig)[1]))
    explorer = widgets.explorers()["scaling"]()
    explorer.controls["n_gpus"].value = explorer.controls["n_gpus"].max
    explorer.controls["params"].value = "175B"       # other y limits and ticks
    assert stale_share(explorer) > 1e-3
