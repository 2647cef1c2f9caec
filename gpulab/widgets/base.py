"""Shared parts of every explorer: the persistent PNG views, the explorer frame
(controls, message line, summary, figure), text parsing at the UI edge and the
system/ranks controls several explorers share.

UI only: controls in display units, converted to SI at the edge; every number
comes from the model layer. Factories return the widget (never display it).
"""
from __future__ import annotations

import html
import io
import re

import ipywidgets as W
from .. import plotting, systems, units
MSG_STYLE = ("color:#8a1c1c;background:#fdecea;border:1px solid #f5c2c0;"
              "padding:4px 8px;border-radius:4px")


def _text(t):
    return (t.get_text(), t.get_visible(), t.get_color())


def _handle_key(h):
    return tuple(str(getattr(h, f, lambda: None)())
                 for f in ("get_color", "get_facecolor", "get_edgecolor",
                           "get_linestyle", "get_marker"))


def _axes_key(ax):
    """What the static part of ``ax`` (frame, grid, ticks, labels, titles, legend)
    looks like: equal keys draw equal backgrounds."""
    leg = ax.get_legend()
    legend = None if leg is None else (
        leg.get_visible(), tuple(_text(t) for t in leg.get_texts()),
        tuple(_handle_key(h) for h in leg.legend_handles),
        _text(leg.get_title()), str(leg.get_bbox_to_anchor()),
        # where the legend sits (matplotlib has no public getter; plots that
        # move their legend, like the collective explorer's, change it)
        str(getattr(leg, "_loc", None)))
    return (ax.get_visible(), ax.axison, ax.get_position().bounds,
            ax.get_xlim(), ax.get_ylim(), ax.get_xscale(), ax.get_yscale(),
            ax.get_xlabel(), ax.get_ylabel(),
            tuple(ax.get_title(loc=loc) for loc in ("left", "center", "right")),
            tuple(ax.get_xticks()), tuple(map(_text, ax.get_xticklabels())),
            tuple(ax.get_yticks()), tuple(map(_text, ax.get_yticklabels())),
            tuple(g.get_visible() for g in ax.get_xgridlines()),
            tuple(g.get_visible() for g in ax.get_ygridlines()),
            ax.xaxis.get_visible(), ax.yaxis.get_visible(), legend)


def split_figure(fig):
    """Split a figure into its static key and its dynamic artists, for blitting.

    Static (drawn once per distinct key, cached): the axes' backgrounds, grids,
    ticks, tick and axis labels, titles, legends and figure texts; these cost
    most of a redraw (each text is a font layout and a glyph render). Dynamic
    (drawn every update, in z-order): the data artists (lines, bars, texts,
    collections) and the spines, which lie over the data.
    """
    from matplotlib.axis import Axis
    from matplotlib.legend import Legend
    from matplotlib.text import Text

    key = [tuple(fig.get_size_inches()),
           tuple((_text(t), t.get_position()) for t in fig.texts)]
    dynamic = []
    for ax in fig.axes:
        key.append(_axes_key(ax))
        texts = {id(t) for t in ax.texts}
        # static: frame, axes (grid, ticks, labels), legend, titles (the Text
        # children that are not ax.texts)
        static = {id(c) for c in ax.get_children()
                  if isinstance(c, (Axis, Legend)) or c is ax.patch
                  or (isinstance(c, Text) and id(c) not in texts)}
        arts = [c for c in ax.get_children() if id(c) not in static]
        dynamic.extend(sorted(arts, key=lambda a: a.get_zorder()))
    return tuple(key), dynamic


def _png(canvas):
    """The canvas as PNG bytes (RGB: the figure is opaque; zlib level 1)."""
    from PIL import Image

    w, h = canvas.get_width_height()
    img = Image.frombuffer("RGBA", (w, h), canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    buf = io.BytesIO()
    img.convert("RGB").save(buf, format="png", compress_level=1)
    return buf.getvalue()


class PNGView:
    """A persistent Agg figure rendered to PNG bytes into an Image widget.

    Updates are blitted: the static part of the figure (see
    :func:`split_figure`) is drawn once per distinct look and cached (at most
    ``_CACHE`` backgrounds, least recently used dropped); each update restores
    it and draws only the dynamic artists. The image equals a full redraw
    (tests/widgets/test_blit.py compares them for every explorer).
    """

    _CACHE = 24

    def __init__(self, figsize=(6.4, 3.4), dpi=100):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        self.fig = Figure(figsize=figsize, dpi=dpi)
        self.fig.subplots_adjust(left=0.12, right=0.97, top=0.95, bottom=0.16)
        FigureCanvasAgg(self.fig)
        self.ax = self.fig.add_subplot()
        self.image = W.Image(format="png", layout=W.Layout(max_width="100%"))
        self._backgrounds = {}

    def render(self, draw):
        import matplotlib as mpl

        canvas = self.fig.canvas
        with mpl.rc_context({**plotting.STYLE, "legend.loc": "upper right"}):
            draw(self.ax)          # plot_* functions update their artists in place
            for ax in self.fig.axes:
                ax.set_axisbelow(True)   # grid under the data, as the book draws it
            key, dynamic = split_figure(self.fig)
            restore_background(self, canvas, dynamic, key)
            renderer = canvas.get_renderer()
            for a in dynamic:
                if a.get_visible():
                    a.draw(renderer)
        self.image.value = _png(canvas)

    def full_render(self):
        """PNG bytes of a complete redraw of the current figure (no cache):
        the reference the blitted image must equal."""
        import matplotlib as mpl

        with mpl.rc_context({**plotting.STYLE, "legend.loc": "upper right"}):
            self.fig.canvas.draw()
        return _png(self.fig.canvas)


class Explorer(W.VBox):
    """Common frame: controls, an error line, a summary, the figure."""

    def __init__(self, controls, view, **kw):
        self.controls = controls
        self.view = view
        self.message = W.HTML(layout=W.Layout(min_height="0px"))
        self.summary = W.HTML()
        self.n_updates = 0
        self._hold = False
        boxes = [W.HBox(list(row)) for row in self._rows()]
        super().__init__(boxes + [self.message, self.summary, view.image], **kw)
        for c in controls.values():
            c.observe(self._on_change, names="value")

    def _rows(self):  # pragma: no cover - overridden
        return [self.controls.values()]

    def _on_change(self, change=None):
        if self._hold:
            return
        system = self.controls.get("system")
        if change is not None and system is not None and change.get("owner") is system:
            self._system_changed()
        self.update()

    def _system_changed(self):
        """Hook: the ``system`` control changed; re-bound the controls that depend on
        it (the GPU count) before the redraw. Nothing by default."""

    def show_message(self, text):
        self.message.value = f'<div style="{MSG_STYLE}">{html.escape(text)}</div>'

    def update(self):
        """Recompute and redraw from the current control values."""
        try:
            self._update()
        except ValueError as exc:
            self.show_message(str(exc))
        except Exception as exc:  # never a traceback in the UI
            self.show_message(f"Unexpected error ({type(exc).__name__}): {exc}")
        else:
            self.message.value = ""
            self.n_updates += 1


# --- parsing at the UI edge -----------------------------------------------------------
_PARAM_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmbt]?)\s*$", re.I)
_PARAM_SCALE = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}


def parse_params(text):
    """Parse a model size such as ``"7B"``, ``"175b"``, ``"70e9"`` into parameters.

    >>> parse_params("13B")
    13000000000.0
    """
    m = _PARAM_RE.match(str(text))
    if not m:
        raise ValueError(f"model size must look like '7B', '0.5T' or '70e9'; got {text!r}")
    value = float(m.group(1)) * _PARAM_SCALE[m.group(2).lower()]
    if not 1e6 <= value <= 1e14:
        raise ValueError(f"model size must be between 1M and 100T parameters; got {text!r}")
    return value


_BW_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(GB/s|Gb/s|TB/s|GiB/s)\s*"
                    r"((?i:per[ _-]?direction|bidirectional|bidir|"
                    r"uni(?:directional)?))?\s*$")
_BW_UNITS = {"GB/s": units.GB, "Gb/s": units.Gbit, "TB/s": units.TB,
             "GiB/s": units.GiB}


def parse_bandwidth(text):
    """Parse ``"900 GB/s bidirectional"`` or ``"400 Gb/s per direction"``.

    The direction is required: a figure without one is exactly the ambiguity the
    course warns about.

    >>> parse_bandwidth("900 GB/s bidirectional").to_per_direction().gb_per_s
    450.0
    """
    m = _BW_RE.match(str(text))
    if not m:
        raise ValueError("spec figure must look like '900 GB/s bidirectional' or "
                         f"'400 Gb/s per direction'; got {text!r}")
    if not m.group(3):
        raise ValueError(f"spec figure {text!r} has no direction: add 'per direction' "
                         "or 'bidirectional'")
    value = float(m.group(1)) * _BW_UNITS[m.group(2)]
    direction = units.BIDIRECTIONAL if m.group(3).lower().startswith("bidir") \
        else units.PER_DIRECTION
    return units.Bandwidth(value, direction)


def gpu_label(node):
    return "GPU" + node[3:]


def restore_background(view, canvas, dynamic, key):
    """Blitting: put back the figure's static background for ``key`` (drawn
    once without the ``dynamic`` artists, then cached, most recently used last,
    at most ``view._CACHE`` of them) so only the dynamic artists need drawing."""
    bg = view._backgrounds.pop(key, None)
    if bg is None:
        shown = [a.get_visible() for a in dynamic]
        for a in dynamic:
            a.set_visible(False)
        canvas.draw()
        bg = canvas.copy_from_bbox(view.fig.bbox)
        for a, v in zip(dynamic, shown):
            a.set_visible(v)
        if len(view._backgrounds) >= view._CACHE:
            view._backgrounds.pop(next(iter(view._backgrounds)))
    else:
        canvas.restore_region(bg)
    view._backgrounds[key] = bg


def set_ranks(explorer, n_gpus, value):
    """Re-bound ``explorer``'s ranks slider to ``n_gpus`` and set it to ``value``
    without triggering an update per change (the caller updates once)."""
    slider = explorer.controls["n_ranks"]
    explorer._hold = True
    try:
        if slider.max < n_gpus:
            slider.max = n_gpus
        slider.value = value
        slider.max = n_gpus
    finally:
        explorer._hold = False


def system_ranks_controls(system, n_ranks, ranks_label, style):
    """A system drop-down and a ranks slider bounded by that system's GPUs."""
    return {"system": W.Dropdown(options=systems.names(), value=system,
                                 description="System", style=style),
            "n_ranks": W.IntSlider(value=n_ranks, min=2,
                                   max=systems.get(system).n_gpus,
                                   description=ranks_label, style=style)}


class TwoPanelView(PNGView):
    """Two stacked Axes (memory on top, step time below), blitted like any
    :class:`PNGView` (``ax`` is the upper one; ``ax_step`` the lower)."""

    def __init__(self, figsize=(7.2, 4.4), dpi=100):
        super().__init__(figsize=figsize, dpi=dpi)
        import matplotlib as mpl

        self.fig.delaxes(self.ax)
        with mpl.rc_context(plotting.STYLE):       # the book's look
            self.ax_memory, self.ax_step = self.fig.subplots(2, 1)
        self.ax = self.ax_memory
        self.fig.subplots_adjust(left=0.13, right=0.66, top=0.92, bottom=0.11,
                                 hspace=0.75)
