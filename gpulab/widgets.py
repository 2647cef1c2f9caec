"""Interactive explorers (ipywidgets). UI only: all math lives in the model modules.

Each explorer is a factory with no required argument that *returns* a widget (it
never displays it), so tests can drive it headless. Controls hold display units
(GB/s, GBd, billions of parameters); they are converted to SI here, at the edge,
before any model call. Invalid input shows a message inside the widget instead
of a traceback.

Figures are drawn on one persistent Agg figure per explorer and shipped as PNG
bytes into an :class:`ipywidgets.Image`: no new figure per update and no
dependence on the notebook's matplotlib backend (about 25 ms per update on two
cores, see ``benchmarks/widgets.py``).
"""
from __future__ import annotations

import html
import io
import re

import ipywidgets as W

from . import links, plotting, scaling, specs, units

__all__ = ["explorers", "scaling_explorer", "link_explorer", "parse_params",
           "parse_bandwidth"]

_MSG_STYLE = ("color:#8a1c1c;background:#fdecea;border:1px solid #f5c2c0;"
              "padding:4px 8px;border-radius:4px")


class _PNGView:
    """A persistent Agg figure rendered to PNG bytes into an Image widget."""

    def __init__(self, figsize=(6.4, 3.4), dpi=100):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        self.fig = Figure(figsize=figsize, dpi=dpi)
        self.fig.subplots_adjust(left=0.12, right=0.97, top=0.95, bottom=0.16)
        FigureCanvasAgg(self.fig)
        self.ax = self.fig.add_subplot()
        self.image = W.Image(format="png", layout=W.Layout(max_width="100%"))

    def render(self, draw):
        import matplotlib as mpl

        # "standard" bbox: a tight bbox would cost a second full draw per update
        with mpl.rc_context({**plotting._STYLE, "savefig.bbox": "standard"}):
            draw(self.ax)          # plot_* functions update their artists in place
            buf = io.BytesIO()
            # fixed layout and fast zlib level: ~2x faster than constrained + default
            self.fig.savefig(buf, format="png", dpi=self.fig.dpi,
                             pil_kwargs={"compress_level": 1})
        self.image.value = buf.getvalue()


class _Explorer(W.VBox):
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

    def _on_change(self, _change=None):
        if not self._hold:
            self.update()

    def show_message(self, text):
        self.message.value = f'<div style="{_MSG_STYLE}">{html.escape(text)}</div>'

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


# --- Chapter 1: scaling ------------------------------------------------------------------
_TOKEN_OPTIONS = [(f"{v // 1024}K" if v >= 1024 else str(v), v)
                  for v in (2 ** k for k in range(8, 21))]


class _ScalingExplorer(_Explorer):
    def __init__(self, gpus, n_gpus, params, tokens_per_gpu, overlap, mfu):
        self.gpus = list(gpus)
        style = {"description_width": "initial"}
        controls = {
            "n_gpus": W.IntSlider(value=n_gpus, min=2, max=64, description="GPUs",
                                  style=style),
            "params": W.Text(value=params, description="Model size",
                             placeholder="e.g. 7B", style=style,
                             layout=W.Layout(width="180px"), continuous_update=False),
            "tokens_per_gpu": W.SelectionSlider(
                options=_TOKEN_OPTIONS, value=tokens_per_gpu,
                description="Tokens per GPU per step", style=style),
            "overlap": W.FloatSlider(value=overlap, min=0, max=1, step=0.05,
                                     description="Overlap", readout_format=".0%",
                                     style=style),
            "mfu": W.FloatSlider(value=mfu, min=0.1, max=0.8, step=0.05,
                                 description="MFU", readout_format=".0%",
                                 style=style),
        }
        super().__init__(controls, _PNGView(figsize=(6.4, 3.0)))
        self.update()

    def _rows(self):
        c = self.controls
        return [(c["n_gpus"], c["params"]), (c["tokens_per_gpu"],),
                (c["overlap"], c["mfu"])]

    def _update(self):
        c = self.controls
        params = parse_params(c["params"].value)
        steps = [scaling.data_parallel_step(
            g, c["n_gpus"].value, params, c["tokens_per_gpu"].value,
            mfu=c["mfu"].value, overlap=c["overlap"].value) for g in self.gpus]
        self.view.render(lambda ax: plotting.plot_dp_steps(steps, ax=ax))
        worst = min(steps, key=lambda s: s.efficiency)
        self.summary.value = (
            f"Ring AllReduce of {units.fmt_bytes(params * scaling.assumption('gradient_bytes_per_param'), binary=False)}"
            f" of gradients over NVLink. Lowest efficiency: <b>{worst.gpu}</b>, "
            f"{worst.efficiency:.0%} ({worst.effective_gpus:.1f} of {worst.n_gpus} GPUs).")


def scaling_explorer(gpus=("V100", "A100", "H100", "B200"), *, n_gpus=8,
                     params="7B", tokens_per_gpu=4096, overlap=0.0, mfu=None):
    """Data-parallel step time per GPU generation: compute vs exposed AllReduce.

    Controls: GPUs, model size, tokens per GPU per step, overlap, MFU. Calls
    :func:`gpulab.scaling.data_parallel_step` and
    :func:`gpulab.plotting.plot_dp_steps`.
    """
    for g in gpus:
        specs.gpu(g)
    mfu = scaling.assumption("mfu") if mfu is None else mfu
    return _ScalingExplorer(gpus, n_gpus, params, tokens_per_gpu, overlap, mfu)


# --- Chapter 2: link calculator --------------------------------------------------------------
class _LinkExplorer(_Explorer):
    def __init__(self, generation, compare):
        style = {"description_width": "initial"}
        gens = specs.nvlink_generations()
        controls = {
            "preset": W.Dropdown(options=[(f"NVLink{g.generation} ({g.first_gpu})",
                                           g.generation) for g in gens]
                                 + [("custom", 0)], value=generation,
                                 description="Preset", style=style),
            "modulation": W.ToggleButtons(options=[("NRZ", 1), ("PAM4", 2)], value=1,
                                          description="Modulation", style=style),
            "symbol_rate_gbaud": W.FloatSlider(value=25.0, min=1, max=120, step=0.125,
                                               description="Symbol rate [GBd]",
                                               readout_format=".3f", style=style),
            "lanes": W.IntSlider(value=8, min=1, max=16,
                                 description="Lanes per direction", style=style),
            "coding": W.FloatSlider(value=1.0, min=0.8, max=1.0, step=0.0001,
                                    description="Coding efficiency",
                                    readout_format=".4f", style=style),
            "links": W.IntSlider(value=6, min=1, max=36, description="Links per GPU",
                                 style=style),
            "compare": W.Text(value=compare, description="Check a spec figure",
                              placeholder="e.g. 900 GB/s bidirectional", style=style,
                              continuous_update=False,
                              layout=W.Layout(width="360px")),
        }
        super().__init__(controls, _PNGView(figsize=(7.0, 3.0)))
        controls["preset"].observe(self._on_preset, names="value")
        self._apply_preset(generation)

    def _rows(self):
        c = self.controls
        return [(c["preset"], c["modulation"]), (c["symbol_rate_gbaud"], c["lanes"]),
                (c["coding"], c["links"]), (c["compare"],)]

    def _apply_preset(self, generation):
        c = self.controls
        if generation:
            g = specs.nvlink(generation)
            self._hold = True
            try:
                c["modulation"].value = g.bits_per_symbol
                c["symbol_rate_gbaud"].value = g.symbol_rate / 1e9
                c["lanes"].value = g.lanes_per_direction
                c["coding"].value = g.coding_efficiency   # exact, e.g. 16/17
                c["links"].value = g.links_per_gpu
            finally:
                self._hold = False
        self.update()

    def _on_preset(self, change):
        if not self._hold:
            self._apply_preset(change["new"])

    def _on_change(self, change=None):
        if self._hold:
            return
        owner = change["owner"] if change else None
        preset = self.controls["preset"]
        if owner is preset:
            return                                # handled by _on_preset
        if owner is not None and owner is not self.controls["compare"] \
                and preset.value:
            self._hold = True
            preset.value = 0                      # edited by hand: now custom
            self._hold = False
        self.update()

    def _update(self):
        c = self.controls
        link = links.link_bandwidth(c["symbol_rate_gbaud"].value * 1e9,
                                    c["modulation"].value, c["lanes"].value,
                                    c["coding"].value)
        gpu = links.gpu_bandwidth(link, c["links"].value)
        raw_lane = links.lane_rate(c["symbol_rate_gbaud"].value * 1e9,
                                   c["modulation"].value)
        label = "custom" if not c["preset"].value else "preset"
        self.view.render(lambda ax: plotting.plot_link_vs_generations(
            gpu, label=label, ax=ax))
        lines = [
            f"Lane: {raw_lane / 1e9:.6g} Gb/s raw",
            f"Link: {units.fmt_bandwidth(link)}",
            f"GPU ({c['links'].value} links): {units.fmt_bandwidth(gpu)} = "
            f"{units.fmt_bandwidth(gpu.to_bidirectional())}",
        ]
        text = c["compare"].value.strip()
        if text:
            spec = parse_bandwidth(text)
            ratio = spec.to_per_direction() / gpu
            lines.append(f"Spec figure {html.escape(text)} is "
                         f"{units.fmt_bandwidth(spec.to_per_direction())}: "
                         f"{ratio:.2f}× this GPU's per-direction rate")
        self.summary.value = "<br>".join(lines)


def link_explorer(generation=4, *, compare=None):
    """NVLink calculator: modulation, symbol rate, lanes, coding and links -> GB/s.

    Calls :func:`gpulab.links.link_bandwidth` and :func:`gpulab.links.gpu_bandwidth`
    with SI values (baud, not GBd). ``generation`` picks the starting preset
    (0 for custom); ``compare`` is a spec figure to check against the result
    (default: the preset's spec-sheet total, e.g. "900 GB/s bidirectional").
    """
    if generation:
        specs.nvlink(generation)
    if compare is None:
        total = links.nvlink_gpu_bandwidth(generation or 4).to_bidirectional()
        compare = f"{total.gb_per_s:g} GB/s bidirectional"
    return _LinkExplorer(generation, compare)


def explorers():
    """All explorers by name: ``{name: factory}``; each factory needs no argument."""
    return {"scaling": scaling_explorer, "link": link_explorer}
