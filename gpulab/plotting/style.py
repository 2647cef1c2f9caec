"""House style of the course's figures: colours, rcParams, axes helpers and the
artist cache that lets widgets redraw a figure in place.

Every ``plot_*`` takes ``ax=None``, draws from gpulab models or data, returns the
``Axes``, never calls ``plt.show()`` and sets no title.
"""
from __future__ import annotations

import numpy as np
from .._validate import check_choice
from .. import units


#: One colour per kind of path, used in every figure of the book.
COLORS = {
    "nvlink": "#5a9e1b",     # green
    "pcie": "#2f6db3",       # blue
    "ib": "#d9822b",         # orange
    "hbm": "#7b4fa0",        # purple
    "compute": "#555555",    # grey
    "comm": "#c0392b",       # red: exposed communication
    "model": "#222222",
    "accent": "#e0a100",
}

STYLE = {
    "figure.figsize": (6.4, 3.6),
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
    "font.size": 10,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
    "legend.fontsize": 9,
    "lines.linewidth": 1.8,
    "svg.fonttype": "none",
}


def use_book_style(*, svg=True):
    """Apply the course's matplotlib style (and SVG inline output in notebooks).

    Call it once at the top of a chapter or lab; importing gpulab changes nothing.

    Parameters
    ----------
    svg : bool, default True
        In IPython/Jupyter, ask the inline backend for SVG figures (crisp in the
        HTML book). Ignored outside IPython.
    """
    import matplotlib as mpl

    mpl.rcParams.update(STYLE)
    if svg:
        try:
            from IPython import get_ipython
            from matplotlib_inline.backend_inline import set_matplotlib_formats
        except ImportError:  # pragma: no cover - IPython always present in notebooks
            return
        if get_ipython() is not None:
            set_matplotlib_formats("svg")


def new_axes(ax=None, figsize=None):
    """Return ``ax`` or a fresh Axes on a new pyplot figure."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize)
    return ax


def bytes_axis(axis, *, binary=True):
    """Log-scale a byte axis (``ax.xaxis``) with binary-prefix tick labels."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    if axis is axis.axes.xaxis:
        axis.axes.set_xscale("log", base=2)
    else:
        axis.axes.set_yscale("log", base=2)
    # at most about 1.6 labels per inch of axis ("256 MiB" is ~0.45 in wide at 10 pt):
    # LogLocator then labels every 16x instead of every 4x on narrow panels
    ax = axis.axes
    bounds = ax.get_position().width if axis is ax.xaxis else ax.get_position().height
    inches = bounds * (ax.figure.get_size_inches()[0 if axis is ax.xaxis else 1])
    axis.set_major_locator(LogLocator(base=4, numticks=max(3, int(inches * 1.6))))
    axis.set_major_formatter(FuncFormatter(
        lambda v, _p: units.fmt_bytes(v, binary=binary) if v > 0 else ""))
    axis.set_minor_formatter(FuncFormatter(lambda v, _p: ""))
    return axis


def cached_artists(ax, kind, key):
    """Artists of an earlier call of plot ``kind`` on ``ax`` with the same ``key``.

    Widgets call the same ``plot_*`` on the same Axes at every update; updating
    the existing artists in place is about twice as fast as clearing and redrawing.
    """
    st = getattr(ax, "_gpulab_state", None)
    if not st or st["kind"] != kind or st["key"] != key:
        return None
    if st["sentinel"] not in ax.patches:      # the Axes was cleared since
        return None
    return st["artists"]


def remember_artists(ax, kind, key, artists, sentinel):
    ax._gpulab_state = {"kind": kind, "key": key, "artists": artists,
                        "sentinel": sentinel}


def sentinel_patch(ax):
    """An invisible patch whose presence tells :func:`cached_artists` the Axes is intact."""
    from matplotlib.patches import Rectangle

    p = Rectangle((0, 0), 0, 0, visible=False)
    ax.add_patch(p)
    return p


def check_rates(line_rates, name):
    out = []
    for item in line_rates or ():
        if not (isinstance(item, tuple) and len(item) == 3):
            raise ValueError(f"{name} must be (label, Bandwidth, kind) tuples; got "
                             f"{item!r}")
        label, bw, kind = item
        if not isinstance(bw, units.Bandwidth):
            raise ValueError(f"{name}: {label!r} needs a units.Bandwidth; got {bw!r}")
        if bw.direction != units.PER_DIRECTION:
            raise units.DirectionError(f"{name}: {label!r} must be per direction "
                                       f"(busbw is); got {bw}")
        check_choice("kind", kind, COLORS)
        out.append((str(label), bw, kind))
    return out


def curve_arrays(name, label, x, y):
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    if x.size == 0 or x.shape != y.shape:
        raise ValueError(f"{name}: {label!r} needs sizes and values of the same "
                         f"non-zero length; got {x.size} and {y.size}")
    if not (np.all(np.isfinite(x)) and np.all(x > 0) and np.all(np.isfinite(y))
            and np.all(y >= 0)):
        raise ValueError(f"{name}: {label!r} needs sizes > 0 [B] and finite "
                         "values >= 0")
    return x, y


def check_prediction(prediction, name="prediction"):
    """Refuse anything but a :class:`gpulab.collectives.Prediction` over two sizes or more."""
    from .. import collectives

    if not isinstance(prediction, collectives.Prediction) \
            or prediction.message_bytes.size < 2:
        raise ValueError(f"{name} must be a gpulab.collectives.Prediction "
                         "over at least two sizes")
    return prediction


# === reference lines: keep texts and legends off them ====================================
def _renderer(fig):
    try:
        return fig.canvas.get_renderer()
    except AttributeError:  # pragma: no cover - every backend the book uses has one
        return None


def reference_lines(ax):
    """``(line, horizontal, position [px])`` of each reference line of ``ax``.

    A reference line is a visible, straight horizontal or vertical ``Line2D`` with a
    line style that spans at least 90 % of the Axes (``axhline``, ``axvline``).
    """
    box = ax.bbox
    out = []
    for line in ax.lines:
        if not line.get_visible() or line.get_linestyle() in ("None", "none", " ", ""):
            continue
        xy = np.column_stack([np.asarray(line.get_xdata(), dtype=float),
                              np.asarray(line.get_ydata(), dtype=float)])
        with np.errstate(all="ignore"):
            pts = line.get_transform().transform(xy)
        pts = pts[np.all(np.isfinite(pts), axis=1)]
        if len(pts) < 2:
            continue
        (x0, y0), (x1, y1) = pts.min(axis=0), pts.max(axis=0)
        if y1 - y0 <= 1.0 and x1 - x0 >= 0.9 * box.width:
            out.append((line, True, y0))
        elif x1 - x0 <= 1.0 and y1 - y0 >= 0.9 * box.height:
            out.append((line, False, x0))
    return out


def crossed_by_reference_line(ax, box, pad=1.0):
    """Whether a reference line of ``ax`` passes through ``box`` (display px)."""
    for _line, flat, at in reference_lines(ax):
        lo, hi = (box.y0, box.y1) if flat else (box.x0, box.x1)
        if lo - pad < at < hi + pad:
            return True
    return False


def legend_clear_of_lines(ax, places, **kwargs):
    """``ax.legend(**kwargs)`` at the first of ``places`` that no reference line crosses.

    ``places`` holds ``loc`` strings or ``(loc, bbox_to_anchor)`` pairs, in order of
    preference; the first is kept where every one is crossed. Call it after the
    axis limits are set.
    """
    renderer = _renderer(ax.figure)
    leg = None
    for i, place in enumerate(places):
        loc, anchor = place if isinstance(place, tuple) else (place, None)
        kw = dict(kwargs, loc=loc)
        if anchor is not None:
            kw["bbox_to_anchor"] = anchor
        leg = ax.legend(**kw)
        if renderer is None or not crossed_by_reference_line(
                ax, leg.get_window_extent(renderer), pad=3.0):
            return leg
    first = places[0]
    loc, anchor = first if isinstance(first, tuple) else (first, None)
    kw = dict(kwargs, loc=loc)
    if anchor is not None:
        kw["bbox_to_anchor"] = anchor
    return ax.legend(**kw)


def end_labels_clear_of_lines(ax, labels, pad_pt=4.0):
    """Move bar-end labels (annotations at the bar's end, offset ``pad_pt`` points to
    the right) past every vertical reference line they would cross.

    Call it after the x limits are set; the label keeps its row and starts
    ``pad_pt`` points right of the last line it would have touched.
    """
    lines = sorted(at for _l, flat, at in reference_lines(ax) if not flat)
    if not lines:
        return
    renderer = _renderer(ax.figure)
    px_pt = ax.figure.dpi / 72.0
    to_data = ax.transData.inverted()
    for txt in labels:
        if not txt.get_visible() or not txt.get_text():
            continue
        x_end, y = txt.xy
        if renderer is not None:
            width = txt.get_window_extent(renderer).width
        else:  # pragma: no cover
            width = 0.62 * txt.get_fontsize() * px_pt * len(txt.get_text())
        start = ax.transData.transform((x_end, y))[0]
        for at in lines:
            left = start + pad_pt * px_pt
            if left - 2.0 <= at <= left + 1.1 * width + 2.0:
                start = at
        txt.xy = (float(to_data.transform((start, 0.0))[0]), y)
