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

import functools
import html
import io
import re

import ipywidgets as W

from . import links, plotting, scaling, specs, units

__all__ = ["explorers", "scaling_explorer", "link_explorer", "parse_params",
           "parse_bandwidth", "pcie_explorer", "pipeline_explorer",
           "topology_explorer", "topology_samples", "PIPELINE_LAYOUTS",
           "PIPELINE_REFERENCES"]

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
        with mpl.rc_context({**plotting.STYLE, "savefig.bbox": "standard"}):
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


# --- Chapter 3: PCIe link budget ------------------------------------------------------
def _h200_pinned_h2d():
    """Measured pinned host-to-device peak of our 2x H200 run (per direction)."""
    from . import measurements

    return measurements.copy_bandwidth().peak("h2d_pinned")


_MEASURED_LABEL = "measured pinned H2D, 2× H200"


def _gbs(bw):
    """'63.0 GB/s' (3 significant digits below 10 GB/s): display only."""
    v = bw.gb_per_s
    return f"{v:.3g} GB/s" if v < 10 else f"{v:.1f} GB/s"


class _PCIeExplorer(_Explorer):
    def __init__(self, generation, lanes, max_payload_bytes, header_bytes, ecrc):
        from . import pcie

        style = {"description_width": "initial"}
        gens = specs.pcie_generations()
        controls = {
            "generation": W.Dropdown(
                options=[(f"Gen{g.generation} ({g.transfer_rate_gt_per_s:g} GT/s)",
                          g.generation) for g in gens],
                value=generation, description="Generation", style=style),
            "lanes": W.Dropdown(options=[(f"x{n}", n) for n in (1, 2, 4, 8, 16)],
                                value=lanes, description="Lanes", style=style,
                                layout=W.Layout(width="150px")),
            "max_payload_bytes": W.Dropdown(
                options=[(f"{p} B", p)
                         for p in pcie.protocol_constant("max_payload_bytes")],
                value=max_payload_bytes, description="Max payload size",
                style=style, layout=W.Layout(width="230px")),
            "header_bytes": W.ToggleButtons(
                options=[("3 DW (12 B)", 12), ("4 DW (16 B)", 16)],
                value=header_bytes, description="TLP header", style=style),
            "ecrc": W.Checkbox(value=ecrc, description="ECRC (+4 B per TLP)",
                               indent=False),
        }
        super().__init__(controls, _PNGView(figsize=(7.0, 3.0)))
        self.view.fig.subplots_adjust(left=0.31, right=0.97, top=0.97, bottom=0.16)
        self.update()

    def _rows(self):
        c = self.controls
        return [(c["generation"], c["lanes"], c["max_payload_bytes"]),
                (c["header_bytes"], c["ecrc"])]

    def _update(self):
        from . import pcie

        c = self.controls
        gen, lanes = c["generation"].value, c["lanes"].value
        mps, hdr, ecrc = (c["max_payload_bytes"].value, c["header_bytes"].value,
                          c["ecrc"].value)
        raw = pcie.raw_bandwidth(gen, lanes)
        enc = pcie.encoded_bandwidth(gen, lanes)
        eff = pcie.effective_bandwidth(gen, lanes, mps, header_bytes=hdr, ecrc=ecrc)
        measured = _h200_pinned_h2d() if (gen, lanes) == (5, 16) else None
        self.view.render(lambda ax: plotting.plot_pcie_budget(
            gen, lanes, mps, header_bytes=hdr, ecrc=ecrc, measured=measured,
            measured_label=_MEASURED_LABEL, ax=ax))
        bidir = raw.to_bidirectional()
        lines = [
            f"PCIe Gen{gen} x{lanes}, max payload {mps} B, "
            f"{hdr // 4}-DW headers{', ECRC' if ecrc else ''}: "
            f"{_gbs(raw)} raw → {_gbs(enc)} encoded → "
            f"<b>{_gbs(eff)} effective, per direction</b> "
            f"({eff / raw:.0%} of raw).",
            f"Spec sheets add both directions: {_gbs(bidir)} raw bidirectional "
            "(NVIDIA's “128 GB/s” is this figure for Gen5 x16).",
        ]
        if measured is not None:
            lines.append(f"Measured pinned H2D on 2× H200: {_gbs(measured)} per "
                         f"direction, {measured / eff:.0%} of this ceiling.")
        else:
            lines.append("The measured 2× H200 line appears for Gen5 x16 only.")
        self.summary.value = "<br>".join(lines)


def pcie_explorer(generation=5, lanes=16, max_payload_bytes=256, *,
                  header_bytes=16, ecrc=False):
    """PCIe link budget: raw → encoded → after TLPs → effective, per direction.

    Controls: generation (1-6), lanes, max payload size, TLP header (3 or 4
    DW) and ECRC. Calls :func:`gpulab.pcie.raw_bandwidth`,
    :func:`gpulab.pcie.encoded_bandwidth`, :func:`gpulab.pcie.effective_bandwidth`
    and :func:`gpulab.plotting.plot_pcie_budget`. For Gen5 x16 the measured
    pinned host-to-device peak of our 2x H200 run is drawn as a reference line.
    """
    from . import pcie

    specs.pcie(generation)
    pcie.effective_bandwidth(generation, lanes, max_payload_bytes,
                             header_bytes=header_bytes, ecrc=ecrc)    # validates
    if lanes not in (1, 2, 4, 8, 16):
        raise ValueError(f"lanes must be one of 1, 2, 4, 8, 16; got {lanes!r}")
    return _PCIeExplorer(generation, lanes, max_payload_bytes, header_bytes, ecrc)


# --- Chapter 3: pipeline-stage placement ----------------------------------------------
#: Servers of the pipeline explorer: key -> label.
PIPELINE_LAYOUTS = {
    "A": "layout A: 2 CPUs, 1 switch each",
    "B": "layout B: 1 CPU, cascaded switches",
    "nvswitch": "NVSwitch node (HGX H200)",
}
#: Reference placements of two consecutive stages: (label, layout, (src, dst)).
PIPELINE_REFERENCES = (
    ("(a) same switch", "A", ("gpu0", "gpu1")),
    ("(b) 2 switches, 1 CPU", "B", ("gpu1", "gpu2")),
    ("(c) across CPUs", "A", ("gpu3", "gpu4")),
    ("(d) NVLink", "nvswitch", ("gpu3", "gpu4")),
)
_TRANSPORT_KIND = {"P2P/NVLink": "nvlink", "P2P/PCIe": "pcie", "SHM": "compute"}
_TRANSPORT_SHORT = {"P2P/NVLink": "P2P", "P2P/PCIe": "P2P", "SHM": "via host"}
_LAYOUT_SHORT = {"A": "A", "B": "B", "nvswitch": "HGX"}
_TRANSPORT_WORDS = {"P2P/NVLink": "P2P over NVLink",
                    "P2P/PCIe": "P2P over PCIe",
                    "SHM": "through host memory (SHM)"}


@functools.lru_cache(maxsize=None)
def _pipeline_topology(layout):
    from . import topology

    return {"A": topology.layout_a, "B": topology.layout_b,
            "nvswitch": lambda: topology.nvswitch_node("H200")}[layout]()


def _transport_efficiency():
    """Achieved share of a path's line rate per NCCL transport, from the data.

    P2P/NVLink: our 2x H200 copies (``hgx-h200`` preset, 0.885 of 18 NVLink4
    links); P2P/PCIe: the ``h100-pcie`` preset (0.836 of the encoded Gen5 x16
    rate, from a published same-switch Gen4 measurement); SHM: our GPU -> pinned
    host -> GPU copies (27.7 GB/s, 0.44 of the encoded Gen5 x16 rate).
    """
    return dict(_transport_efficiency_table())


@functools.lru_cache(maxsize=None)
def _transport_efficiency_table():
    from . import measurements, pcie

    enc = pcie.encoded_bandwidth(5, 16)
    return tuple({
        "P2P/NVLink": pcie.copy_bandwidth("p2p", system="hgx-h200")
        / links.nvlink_gpu_bandwidth(4),
        "P2P/PCIe": pcie.copy_bandwidth("p2p", system="h100-pcie") / enc,
        "SHM": measurements.copy_bandwidth().peak("p2p_via_host") / enc,
    }.items())


def _gpu_label(node):
    return "GPU" + node[3:]


def _same_path(p, q):
    """Whether two placements have the same class, transport and rates."""
    return (p["class"], p["transport"], p["time"]) == (q["class"], q["transport"],
                                                       q["time"])


def _stage_row(label, layout, a, b, p):
    """(label, time per micro-batch, colour kind) of one bar of the pipeline plot."""
    text = (f"{label}\n{_LAYOUT_SHORT[layout]}: {_gpu_label(a)} → {_gpu_label(b)}, "
            f"{p['class']}, {_TRANSPORT_SHORT[p['transport']]}")
    return text, 2 * p["time"], _TRANSPORT_KIND[p["transport"]]


class _PipelineExplorer(_Explorer):
    def __init__(self, hidden, seq_len, micro_batch, dtype_bytes, layout, pair,
                 n_micro_batches, compute_ms):
        style = {"description_width": "initial"}
        controls = {
            "hidden": W.Dropdown(options=[1024, 2048, 4096, 5120, 8192, 12288, 16384],
                                 value=hidden, description="Hidden size",
                                 style=style, layout=W.Layout(width="200px")),
            "seq_len": W.Dropdown(options=[2 ** k for k in range(9, 16)],
                                  value=seq_len, description="Sequence length",
                                  style=style, layout=W.Layout(width="230px")),
            "micro_batch": W.IntSlider(value=micro_batch, min=1, max=16,
                                       description="Micro-batch size", style=style),
            "dtype_bytes": W.ToggleButtons(
                options=[("FP32", 4), ("BF16/FP16", 2), ("FP8", 1)],
                value=dtype_bytes, description="Activations", style=style),
            "layout": W.Dropdown(options=[(v, k) for k, v in PIPELINE_LAYOUTS.items()],
                                 value=layout, description="Server", style=style,
                                 layout=W.Layout(width="360px")),
            "pair": W.Dropdown(options=self._pair_options(layout), value=tuple(pair),
                               description="Stage k → k+1 on", style=style,
                               layout=W.Layout(width="300px")),
            "n_micro_batches": W.IntSlider(value=n_micro_batches, min=1, max=64,
                                           description="Micro-batches per step",
                                           style=style),
            "compute_ms": W.FloatSlider(value=compute_ms, min=1, max=1000, step=0.1,
                                        description="Compute per micro-batch [ms]",
                                        readout_format=".1f", style=style,
                                        layout=W.Layout(width="420px")),
        }
        self._paths = {}
        self.highlighted = None
        super().__init__(controls, _PNGView(figsize=(7.0, 3.0), dpi=90))
        self.view.fig.subplots_adjust(left=0.37, right=0.98, top=0.97, bottom=0.17)
        controls["layout"].observe(self._on_layout, names="value")
        self.update()

    @staticmethod
    def _pair_options(layout):
        from . import topology

        topo = _pipeline_topology(layout)
        gpus = topo.gpus
        out = []
        for i, a in enumerate(gpus):
            for b in gpus[i + 1:]:
                cls = topology.path_class(topo, a, b)
                out.append((f"{_gpu_label(a)} → {_gpu_label(b)} ({cls})", (a, b)))
        return out

    def _rows(self):
        c = self.controls
        return [(c["hidden"], c["seq_len"]), (c["micro_batch"], c["dtype_bytes"]),
                (c["layout"], c["pair"]), (c["n_micro_batches"],),
                (c["compute_ms"],)]

    def _on_layout(self, change):
        pair = self.controls["pair"]
        keep = pair.value
        self._hold = True
        try:
            pair.options = self._pair_options(change["new"])
            pair.value = keep
        finally:
            self._hold = False
        self.update()

    def _on_change(self, change=None):
        if change is not None and change["owner"] is self.controls["layout"]:
            return                                   # handled by _on_layout
        super()._on_change(change)

    def _path(self, layout, a, b):
        """Class, transport, line rate, latency and achieved rate of a path."""
        from . import topology

        key = (layout, a, b)
        if key not in self._paths:        # the topology queries, once per path
            topo = _pipeline_topology(layout)
            transport, _why = topology.nccl_transport(topo, a, b)
            line = topology.bottleneck_bandwidth(topo, a, b)
            self._paths[key] = {
                "class": topology.path_class(topo, a, b), "transport": transport,
                "line": line, "latency": topology.path_latency(topo, a, b),
                "achieved": line * _transport_efficiency()[transport]}
        return self._paths[key]

    def _placement(self, layout, a, b, message_bytes):
        p = dict(self._path(layout, a, b))
        p["time"] = links.transfer_time(message_bytes, p["latency"], p["achieved"])
        return p

    def _update(self):
        c = self.controls
        message_bytes = (c["micro_batch"].value * c["seq_len"].value
                         * c["hidden"].value * c["dtype_bytes"].value)
        compute = c["compute_ms"].value * units.MS
        m = c["n_micro_batches"].value
        a, b = c["pair"].value
        layout = c["layout"].value
        mine = self._placement(layout, a, b, message_bytes)
        rows, same = [], None
        for i, (label, lay, (x, y)) in enumerate(PIPELINE_REFERENCES):
            p = self._placement(lay, x, y, message_bytes)
            rows.append(_stage_row(label, lay, x, y, p))
            if same is None and _same_path(p, mine):
                same = i
        if same is None:                # not like any reference: a bar of its own
            rows.append(_stage_row("your placement", layout, a, b, mine))
            same = len(rows) - 1
        self.highlighted = same
        self.view.render(lambda ax: plotting.plot_stage_transfers(
            rows, compute, highlight=same, ax=ax))
        per_mb = 2 * mine["time"]
        self.summary.value = "<br>".join([
            f"Activation per micro-batch: {c['micro_batch'].value} × "
            f"{c['seq_len'].value} × {c['hidden'].value} × "
            f"{c['dtype_bytes'].value} B = "
            f"{units.fmt_bytes(message_bytes)}; its gradient comes back, the "
            "same size.",
            f"Your placement ({PIPELINE_LAYOUTS[layout]}, {_gpu_label(a)} → "
            f"{_gpu_label(b)}): {mine['class']}, "
            f"{_TRANSPORT_WORDS[mine['transport']]}, "
            f"{_gbs(mine['achieved'])} per direction achieved "
            f"(line rate {_gbs(mine['line'])}).",
            f"<b>Per micro-batch: {units.fmt_time(per_mb)}, "
            f"{per_mb / compute:.1%} of {units.fmt_time(compute)} compute; "
            f"per step ({m} micro-batches): {units.fmt_time(m * per_mb)}</b> "
            "if not overlapped.",
        ])


def pipeline_explorer(hidden=4096, seq_len=4096, micro_batch=1, dtype_bytes=2,
                      layout="A", pair=("gpu3", "gpu4"), n_micro_batches=8,
                      compute_ms=None, *, gpu="H100", stage_params=1.75e9):
    """Cost of the activation transfer between two consecutive pipeline stages.

    Per micro-batch, stage k sends ``micro_batch x seq_len x hidden x
    dtype_bytes`` of activations to stage k+1 and receives their gradient back.
    The time of one transfer is :func:`gpulab.links.transfer_time` with the
    path's :func:`gpulab.topology.path_latency` and its
    :func:`gpulab.topology.bottleneck_bandwidth` times the achieved share of the
    transport NCCL picks (:func:`gpulab.topology.nccl_transport`; shares from
    the course data, see ``_transport_efficiency``). Bars: your placement and
    four references, (a) same switch, (b) across switches under one CPU,
    (c) across CPUs, (d) NVLink; the one that behaves like your placement is
    outlined (a fifth bar is added if none does).

    ``compute_ms`` (forward + backward of one micro-batch through one stage)
    defaults to :func:`gpulab.scaling.data_parallel_step` for ``stage_params``
    parameters and ``micro_batch x seq_len`` tokens on ``gpu`` (a 7B-parameter
    model in four stages on H100 by default).
    """
    if layout not in PIPELINE_LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(PIPELINE_LAYOUTS)}; "
                         f"got {layout!r}")
    if compute_ms is None:
        step = scaling.data_parallel_step(gpu, 1, stage_params,
                                          micro_batch * seq_len)
        compute_ms = step.compute_time / units.MS
    return _PipelineExplorer(hidden, seq_len, micro_batch, dtype_bytes, layout,
                             tuple(pair), n_micro_batches, compute_ms)


# --- Chapter 3: read your own server --------------------------------------------------
_MEASURED_SAMPLE = "h200-x2 (measured)"
_CAPTURE = ("h200-x2-2026-11-30", "topo-m.txt")


def topology_samples():
    """Sample ``nvidia-smi topo -m`` outputs: ``{name: text}``.

    The hand-written files of ``gpulab/data/topologies`` (by file stem) and the
    real capture of our 2x H200 machine, ``"h200-x2 (measured)"``.
    """
    from importlib import resources

    from . import measurements

    folder = resources.files("gpulab").joinpath("data", "topologies")
    out = {p.name[:-4]: p.read_text(encoding="utf-8")
           for p in sorted(folder.iterdir(), key=lambda p: p.name)
           if p.name.endswith(".txt")}
    out[_MEASURED_SAMPLE] = measurements.raw_capture(*_CAPTURE)
    return out


class _TopologyExplorer(_Explorer):
    _CACHE_SIZE = 8

    def __init__(self, text, sample, acs_enabled, iommu):
        from . import topology

        style = {"description_width": "initial"}
        self.samples = topology_samples()
        controls = {
            "sample": W.Dropdown(options=list(self.samples), value=sample,
                                 description="Sample", style=style),
            "text": W.Textarea(value=text, continuous_update=False,
                               placeholder="Paste the output of `nvidia-smi topo -m` "
                                           "here (it replaces the sample)",
                               layout=W.Layout(width="100%", height="110px")),
            "acs": W.Checkbox(value=acs_enabled, indent=False,
                              description="ACS P2P redirect on"),
            "iommu": W.Dropdown(options=list(topology.IOMMU_MODES), value=iommu,
                                description="IOMMU", style=style,
                                layout=W.Layout(width="200px")),
        }
        self.table = W.HTML()
        self.source = None               # "sample <name>" or "pasted text"
        self.topology = None
        self._drawn = {}                 # text -> (Figure, Axes, PNG bytes)
        self.draw_ms = {}                # text -> time to draw it the first time
        super().__init__(controls, _PNGView(figsize=(6.4, 3.4), dpi=90))
        self.children = (*self.children, self.table)
        self.update()

    def _rows(self):
        c = self.controls
        return [(c["sample"], c["acs"], c["iommu"]), (c["text"],)]


    def _draw(self, text, topo, source):
        """Draw ``topo`` on a figure of its own, once per text (cached)."""
        import time

        import matplotlib as mpl
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        if text in self._drawn:
            self._drawn[text] = self._drawn.pop(text)     # most recently used
            return self._drawn[text]
        t0 = time.perf_counter()
        with mpl.rc_context(plotting.STYLE):
            fig = Figure(dpi=self.view.fig.dpi)
            FigureCanvasAgg(fig)
            ax = fig.add_subplot()
            plotting.plot_topology(topo, ax=ax)
            (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
            width = max(6.4, 0.56 * (x1 - x0 - 0.6))
            height = 2.2 + 0.7 * (y1 - y0)
            fig.set_size_inches(width, height)
            fig.subplots_adjust(left=0.01, right=0.99, top=0.99,
                                bottom=0.75 / height)
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=fig.dpi, bbox_inches="tight",
                        pil_kwargs={"compress_level": 1})
        self.draw_ms[source] = (time.perf_counter() - t0) * 1e3
        if len(self._drawn) >= self._CACHE_SIZE:
            self._drawn.pop(next(iter(self._drawn)))
        self._drawn[text] = (fig, ax, buf.getvalue())
        return self._drawn[text]

    def _update(self):
        c = self.controls
        pasted = c["text"].value
        if pasted.strip():
            text, source = pasted, "your pasted text"
        else:
            text, source = self.samples[c["sample"].value], \
                f"sample {c['sample'].value}"
        topo = _parse_topology(text)    # TopoParseError (a ValueError) -> message
        groups = _pair_groups(topo, c["acs"].value, c["iommu"].value)
        fig, ax, png = self._draw(text, topo, source)
        self.view.fig, self.view.ax = fig, ax
        if self.view.image.value != png:
            self.view.image.value = png
        self.topology, self.source = topo, source
        self.table.value = _pair_table_html(groups)
        parts = []
        for k, word in (("cpus", "CPU"), ("switches", "PCIe switch"),
                        ("gpus", "GPU"), ("nics", "NIC"),
                        ("nvswitches", "NVSwitch fabric")):
            n = len(getattr(topo, k))
            if n:
                plural = "es" if word.endswith("h") else "s"
                parts.append(f"{n} {word}{plural if n > 1 else ''}")
        self.summary.value = (f"Read from {html.escape(source)}: "
                              f"{', '.join(parts)}. Bandwidths are line rates "
                              "per direction (PCIe Gen5 x16, NVLink4 assumed: "
                              "the matrix does not say).")


@functools.lru_cache(maxsize=32)
def _parse_topology(text):
    """``topology.parse_topo_matrix``, cached per text (errors are not cached)."""
    from . import topology

    return topology.parse_topo_matrix(text)


def _pair_groups(topo, acs_enabled, iommu):
    """GPU pairs of ``topo`` grouped by (class, P2P, transport, bandwidth)."""
    from . import topology

    groups = {}
    gpus = topo.gpus
    for i, a in enumerate(gpus):
        for b in gpus[i + 1:]:
            cls = topology.path_class(topo, a, b)
            ok, why = topology.p2p_possible(topo, a, b, acs_enabled=acs_enabled,
                                            iommu=iommu)
            transport, why_t = topology.nccl_transport(
                topo, a, b, acs_enabled=acs_enabled, iommu=iommu)
            bw = topology.bottleneck_bandwidth(topo, a, b)
            key = (cls, ok, why, transport, why_t, round(bw.gb_per_s, 6))
            groups.setdefault(key, []).append(f"{_gpu_label(a)}–{_gpu_label(b)}")
    return groups


def _pair_table_html(groups):
    head = ("<tr><th>GPU pairs</th><th>Path</th><th>P2P DMA</th>"
            "<th>NCCL transport</th><th>Bottleneck<br>[GB/s per direction]</th>"
            "</tr>")
    body = []
    for (cls, ok, why, transport, why_t, bw), pairs in groups.items():
        shown = ", ".join(pairs[:6]) + (f", … ({len(pairs)} pairs)"
                                        if len(pairs) > 6 else "")
        body.append(
            f"<tr><td>{html.escape(shown)}</td><td><b>{cls}</b></td>"
            f"<td>{'yes' if ok else '<b>no</b>'}<br><small>{html.escape(why)}"
            f"</small></td><td>{transport}<br><small>{html.escape(why_t)}"
            f"</small></td><td>{bw:.1f}</td></tr>")
    return ('<table class="table" style="font-size:90%"><thead>' + head
            + "</thead><tbody>" + "".join(body) + "</tbody></table>")


def topology_explorer(text=None, *, sample="dgx-h100", acs_enabled=False,
                      iommu="off"):
    """Read an ``nvidia-smi topo -m`` output: drawing, path classes, P2P, NCCL.

    Controls: a sample (the files of ``gpulab/data/topologies`` and the real
    2x H200 capture), a text area for your own output (non-empty text wins over
    the sample), the ACS P2P redirect and the IOMMU mode. Shows
    :func:`gpulab.plotting.plot_topology` of
    :func:`gpulab.topology.parse_topo_matrix` and, in ``.table``, the GPU pairs
    grouped by path class, :func:`gpulab.topology.p2p_possible`,
    :func:`gpulab.topology.nccl_transport` and
    :func:`gpulab.topology.bottleneck_bandwidth`. A parse error shows its
    message, naming the line. Drawings are cached per text: the ACS and IOMMU
    controls only rebuild the table.
    """
    from . import topology

    samples = topology_samples()
    if sample not in samples:
        raise ValueError(f"sample must be one of {', '.join(samples)}; "
                         f"got {sample!r}")
    if not isinstance(acs_enabled, bool):
        raise ValueError(f"acs_enabled must be True or False; got {acs_enabled!r}")
    if iommu not in topology.IOMMU_MODES:
        raise ValueError(f"iommu must be one of {', '.join(topology.IOMMU_MODES)}; "
                         f"got {iommu!r}")
    if text is not None and not isinstance(text, str):
        raise ValueError(f"text must be a str or None; got {type(text).__name__}")
    return _TopologyExplorer(text or "", sample, acs_enabled, iommu)


#: Explorer names in book order; ``<name>_explorer`` is the factory.
_EXPLORER_NAMES = ("scaling", "link", "pcie", "pipeline", "topology", "collective",
                   "fabric", "bucket", "layout", "tp", "roi")


def explorers():
    """All explorers by name: ``{name: factory}``; each factory needs no argument."""
    found = globals()
    return {n: found[f"{n}_explorer"] for n in _EXPLORER_NAMES
            if f"{n}_explorer" in found}


# --- Chapter 4: in-network reduction (collective explorer) ------------------------------
# (section owned by the Chapter 4 author)
__all__ += ["collective_explorer", "COLLECTIVE_SIZES", "COLLECTIVE_LAUNCH"]

#: Message sizes of the collective explorer: powers of two, 8 B to 16 GiB. [B]
COLLECTIVE_SIZES = tuple(2 ** k for k in range(3, 35))


def _restore_background(view, canvas, dynamic, key):
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


class _BlitPNGView(_PNGView):
    """A :class:`_PNGView` that caches the static part of the figure.

    Axes, ticks, labels, legend and reference lines are drawn once per
    distinct state (a small LRU cache of backgrounds); each update restores
    the background and draws only the data artists, then encodes the PNG
    from the canvas buffer. About three times faster than a full draw.
    """

    _CACHE = 16

    def __init__(self, parts, **kw):
        super().__init__(**kw)
        self._parts = parts              # ax -> (dynamic artists, key) or None
        self._backgrounds = {}

    def render(self, draw):
        import matplotlib as mpl
        from PIL import Image

        canvas = self.fig.canvas
        with mpl.rc_context({**plotting.STYLE, "savefig.bbox": "standard"}):
            draw(self.ax)
            # fixed label positions: no tick-label layout pass to place them
            self.ax.xaxis.set_label_coords(0.5, -0.115)
            self.ax.yaxis.set_label_coords(-0.085, 0.5)
            parts = self._parts(self.ax)
            if parts is None:                       # not the expected plot
                return super().render(lambda ax: None)
            dynamic, key = parts
            _restore_background(self, canvas, dynamic, key)
            for a in dynamic:
                if a.get_visible():
                    self.ax.draw_artist(a)
            w, h = canvas.get_width_height()
            buf = io.BytesIO()
            Image.frombuffer("RGBA", (w, h), canvas.buffer_rgba(), "raw",
                             "RGBA", 0, 1).save(buf, format="png",
                                                compress_level=1)
        self.image.value = buf.getvalue()


def _set_ranks(explorer, n_gpus, value):
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


#: Launch options of the collective explorer: who issues the calls.
COLLECTIVE_LAUNCH = (("one process for a node's GPUs (nccl-tests -g N)", "node"),
                     ("one process per GPU (MPI, torchrun)", "gpu"))


class _CollectiveExplorer(_Explorer):
    def __init__(self, message_bytes, n_ranks, system, collective, algorithm,
                 transport, metric, launch):
        import numpy as np

        from . import collectives, systems

        style = {"description_width": "initial"}
        n_max = systems.get(system).n_gpus
        controls = {
            "message_bytes": W.SelectionSlider(
                options=[(units.fmt_bytes(s), s) for s in COLLECTIVE_SIZES],
                value=message_bytes, description="Message size",
                style=style, layout=W.Layout(width="420px")),
            "n_ranks": W.IntSlider(value=n_ranks, min=2, max=max(2, n_max),
                                   description="GPUs", style=style),
            "system": W.Dropdown(options=systems.names(), value=system,
                                 description="System", style=style,
                                 layout=W.Layout(width="250px")),
            "collective": W.Dropdown(options=collectives.COLLECTIVES,
                                     value=collective, description="Collective",
                                     style=style, layout=W.Layout(width="250px")),
            "algorithm": W.Dropdown(options=("auto",) + collectives.ALGORITHMS,
                                    value=algorithm, description="Algorithm",
                                    style=style, layout=W.Layout(width="230px")),
            "transport": W.ToggleButtons(options=collectives.TRANSPORTS,
                                         value=transport, description="Transport",
                                         style=style),
            "metric": W.ToggleButtons(options=[("busbw", "busbw"),
                                               ("time", "time")],
                                      value=metric, description="Plot",
                                      style=style),
            "launch": W.Dropdown(options=COLLECTIVE_LAUNCH, value=launch,
                                 description="Launch", style=style,
                                 layout=W.Layout(width="420px")),
        }
        self.sizes = np.array(COLLECTIVE_SIZES, dtype=float)
        self.prediction = None
        super().__init__(controls, _BlitPNGView(
            plotting.prediction_blit_parts, figsize=(6.4, 3.4)))
        controls["system"].observe(self._on_system, names="value")
        self.update()

    def _rows(self):
        c = self.controls
        return [(c["message_bytes"], c["n_ranks"]), (c["system"], c["collective"]),
                (c["algorithm"], c["transport"]), (c["metric"],), (c["launch"],)]

    def _on_system(self, change):
        from . import systems

        n_max = max(2, systems.get(change["new"]).n_gpus)   # the GPU slider follows
        _set_ranks(self, n_max, min(self.controls["n_ranks"].value, n_max))
        self.update()

    def _on_change(self, change=None):
        if change is not None and change["owner"] is self.controls["system"]:
            return                                  # handled by _on_system
        super()._on_change(change)

    def _update(self):
        from . import collectives

        c = self.controls
        size, n = c["message_bytes"].value, c["n_ranks"].value
        system, transport = c["system"].value, c["transport"].value
        try:
            pred = collectives.predict(
                c["collective"].value, self.sizes, n, system,
                transport=transport, algorithm=c["algorithm"].value,
                gpus_per_process=1 if c["launch"].value == "gpu" else None)
            line = collectives.fabric_bandwidth(system, transport)
        except ValueError:
            self.summary.value = ""
            raise
        self.prediction = pred
        self.view.render(lambda ax: plotting.plot_collective_prediction(
            pred, message_bytes=size, metric=c["metric"].value, line_rate=line,
            ax=ax))
        i = COLLECTIVE_SIZES.index(size)
        busbw = pred.busbw[i]
        factor = busbw / pred.algbw[i]
        lines = [
            f"{c['collective'].value} of {units.fmt_bytes(size)} on {n} GPUs "
            f"of {html.escape(system)} ({transport}): "
            f"<b>{units.fmt_time(pred.time[i])} per call</b>, "
            f"algbw {pred.algbw[i] / units.GB:.1f} GB/s, "
            f"<b>busbw {busbw / units.GB:.1f} GB/s</b> "
            f"(= algbw × {factor:.3g}).",
            f"NCCL's choice in the model: <b>{pred.algorithm[i]}</b> with the "
            f"<b>{pred.protocol[i]}</b> protocol. Line rate per GPU: "
            f"{line.gb_per_s:.0f} GB/s per direction.",
            "Calls issued by one process per GPU." if c["launch"].value == "gpu" else
            "Calls issued by one process for all GPUs of a node: small messages "
            "pay every GPU's launch.",
        ]
        if busbw > line.bytes_per_s:
            lines.append("busbw above the line rate: the switch does the "
                         "additions, so busbw counts traffic a ring would "
                         "have sent; algbw stays below the line rate.")
        self.summary.value = "<br>".join(lines)


def collective_explorer(message_bytes=64 * units.MiB, n_ranks=8, system="hgx-h200",
                        collective="all_reduce", algorithm="auto", transport="p2p",
                        *, metric="busbw", launch="node"):
    """Predicted nccl-tests curve of one collective: size x GPUs x algorithm.

    Controls: message size (powers of two, 8 B-16 GiB), GPUs (2 up to the
    system's), system preset, collective, algorithm (``auto`` = NCCL's choice
    in the model), transport (``p2p`` or ``shm``), what to plot (busbw or
    time per call) and who launches the calls (``node``: one process for the
    GPUs of a node, as nccl-tests ``-g N``; ``gpu``: one process per GPU). Calls :func:`gpulab.collectives.predict` over
    :data:`COLLECTIVE_SIZES` (bytes, SI) and
    :func:`gpulab.plotting.plot_collective_prediction`; the summary gives
    time, algbw, busbw and the chosen algorithm and protocol at the marked
    size. Combinations the model refuses (``nvls`` without an NVLS switch,
    ``tree`` for all_gather...) show its message.
    """
    from . import collectives, systems

    if message_bytes not in COLLECTIVE_SIZES:
        raise ValueError("message_bytes must be a power of two from 8 B to 16 GiB; "
                         f"got {message_bytes!r}")
    if system not in systems.names():
        raise ValueError(f"system must be one of {', '.join(systems.names())}; "
                         f"got {system!r}")
    n_max = max(2, systems.get(system).n_gpus)
    if isinstance(n_ranks, bool) or not isinstance(n_ranks, int) \
            or not 2 <= n_ranks <= n_max:
        raise ValueError(f"n_ranks must be an integer from 2 to {n_max} for "
                         f"{system}; got {n_ranks!r}")
    for name, value, choices in (
            ("collective", collective, collectives.COLLECTIVES),
            ("algorithm", algorithm, ("auto",) + collectives.ALGORITHMS),
            ("transport", transport, collectives.TRANSPORTS),
            ("metric", metric, ("busbw", "time")),
            ("launch", launch, tuple(v for _, v in COLLECTIVE_LAUNCH))):
        if value not in choices:
            raise ValueError(f"{name} must be one of {', '.join(choices)}; "
                             f"got {value!r}")
    return _CollectiveExplorer(int(message_bytes), n_ranks, system, collective,
                               algorithm, transport, metric, launch)


# --- Chapter 5: NVSwitch and scaling out (fabric explorer) ------------------------------
# (section owned by the Chapter 5 author)
__all__ += ["fabric_explorer", "FABRIC_LABELS", "FABRIC_SIZES"]

#: Row labels of the fabric explorer's figure, one per collectives.ALGORITHMS entry.
FABRIC_LABELS = {"ring": "ring", "tree": "tree", "direct": "direct (one-shot)",
                 "nvls": "NVLS (in-switch)", "hierarchical": "hierarchical"}
#: Message sizes of the fabric explorer: 1 KiB to 16 GiB, powers of two. [B]
FABRIC_SIZES = tuple(2 ** k for k in range(10, 35))


def _fabric_domain(system):
    """GPUs one rank group reaches without the network: a node or an NVLink domain."""
    return max(system.nvlink_domain, system.gpus_per_node)


def _fabric_ranks_ok(system, n_ranks):
    """Whether the collective model can place ``n_ranks``: inside one NVLink domain,
    or spread evenly over the domains they fill (the model's assumption)."""
    d = _fabric_domain(system)
    return n_ranks <= d or n_ranks % ((n_ranks + d - 1) // d) == 0


def _fabric_reason(algorithm, collective, system, exc):
    """Why an algorithm has no bar: short UI text."""
    if collective != "all_reduce":
        return "modelled for all_reduce only"
    if algorithm == "nvls":
        return "in-switch reduction stays inside one NVLink domain" \
            if system.nvlink.nvls else "no in-switch reduction on this system"
    if algorithm == "hierarchical":
        return "needs ranks in several NVLink domains"
    return str(exc)[:70]


def _system_ranks_controls(system, n_ranks, ranks_label, style):
    """A system drop-down and a ranks slider bounded by that system's GPUs."""
    from . import systems

    return {"system": W.Dropdown(options=systems.names(), value=system,
                                 description="System", style=style),
            "n_ranks": W.IntSlider(value=n_ranks, min=2,
                                   max=systems.get(system).n_gpus,
                                   description=ranks_label, style=style)}


class _FabricExplorer(_Explorer):
    def __init__(self, system, n_ranks, message_bytes, collective):
        from . import collectives

        style = {"description_width": "initial"}
        controls = {
            **_system_ranks_controls(system, n_ranks, "Ranks (GPUs)", style),
            "message_bytes": W.SelectionSlider(
                options=[(units.fmt_bytes(v), v) for v in FABRIC_SIZES],
                value=message_bytes, description="Message size", style=style),
            "collective": W.Dropdown(options=list(collectives.COLLECTIVES),
                                     value=collective, description="Collective",
                                     style=style),
        }
        super().__init__(controls, _PNGView(figsize=(7.0, 3.0)))
        self.view.fig.subplots_adjust(left=0.2, right=0.97, top=0.9, bottom=0.16)
        self.highlighted = None
        self.update()

    def _rows(self):
        c = self.controls
        return [(c["system"], c["collective"]), (c["n_ranks"], c["message_bytes"])]

    def _on_change(self, change=None):
        if self._hold:
            return
        if change is not None and change.get("owner") is self.controls["system"]:
            self._fit_ranks()
        self.update()

    def _fit_ranks(self):
        """Bound the ranks slider by the new system; keep a rank count it can place."""
        from . import systems

        s = systems.get(self.controls["system"].value)
        n = min(self.controls["n_ranks"].value, s.n_gpus)
        while n > 2 and not _fabric_ranks_ok(s, n):
            n -= 1
        _set_ranks(self, s.n_gpus, n)

    def _update(self):
        from . import collectives, systems

        c = self.controls
        name, n = c["system"].value, c["n_ranks"].value
        size, coll = c["message_bytes"].value, c["collective"].value
        s = systems.get(name)
        if n > s.n_gpus:
            raise ValueError(f"n_ranks: {name} has {s.n_gpus} GPUs; got {n}")
        d = _fabric_domain(s)
        k = (n + d - 1) // d                # NVLink domains (nodes) the ranks fill
        if not _fabric_ranks_ok(s, n):
            raise ValueError(
                f"{n} ranks on {name}: beyond one NVLink domain ({d} GPUs) the model "
                f"splits the ranks evenly over the {k} domains they fill; choose at "
                f"most {d} or a multiple of {k}")
        best = collectives.predict(coll, size, n, name)
        chosen = str(best.algorithm[0])
        rows, found = [], {}
        for algo in collectives.ALGORITHMS:
            p = best if algo == chosen else None
            if p is None:
                try:
                    p = collectives.predict(coll, size, n, name, algorithm=algo)
                except ValueError as exc:
                    rows.append((FABRIC_LABELS[algo], None, None,
                                 _fabric_reason(algo, coll, s, exc)))
                    continue
            found[algo] = p
            rows.append((FABRIC_LABELS[algo], float(p.time[0]), float(p.busbw[0]),
                         ""))
        multi = k > 1
        line = collectives.fabric_bandwidth(s)
        nv = s.nvlink.fabric != "none"
        line_label = "NVLink per GPU" if nv else \
            f"PCIe Gen{s.pcie.generation} x{s.pcie.lanes} per GPU"
        rates = [(line_label, line, "nvlink" if nv else "pcie")]
        net = None
        if multi:
            net = collectives.fabric_bandwidth(s, scope="inter")
            rates.append((f"network per GPU ({s.network.nic})", net, "ib"))
        high = list(collectives.ALGORITHMS).index(chosen) \
            if chosen in collectives.ALGORITHMS else None
        self.highlighted = high
        self.view.render(lambda ax: plotting.plot_fabric_algorithms(
            rows, line_rates=rates, highlight=high, ax=ax))
        t, bus = float(best.time[0]), float(best.busbw[0])
        where = f"{k} NVLink domains (nodes), {n // k} ranks each" if multi else \
            ("one NVLink domain" if nv else "one node, no NVLink")
        lines = [
            f"<b>{coll}</b> of {units.fmt_bytes(size)} on {n} ranks of <b>{name}</b> "
            f"({where}). NCCL's choice in the model: <b>{chosen}</b> "
            f"({best.protocol[0]}), {units.fmt_time(t)}; algbw "
            f"{best.algbw[0] / units.GB:.1f} GB/s, busbw {bus / units.GB:.1f} GB/s "
            f"per direction = {bus / line.bytes_per_s:.0%} of the "
            f"{line.gb_per_s:.0f} GB/s per-direction {line_label.split(' per')[0]} "
            "line rate."]
        if coll == "all_reduce" and "ring" in found and chosen != "ring":
            rt = float(found["ring"].time[0])
            lines.append(f"The ring alone would take {units.fmt_time(rt)} "
                         f"({rt / t:.1f}× NCCL's choice).")
        if bus > line.bytes_per_s:
            lines.append("busbw above the line rate: nccl-tests' busbw factor assumes "
                         "a ring, and in-switch reduction sends less per GPU.")
        if net is not None:
            lines.append(f"Between nodes each GPU has {net.gb_per_s:.0f} GB/s per "
                         f"direction of network, 1/{line / net:.0f} of its "
                         f"{line.gb_per_s:.0f} GB/s per direction inside the node.")
        self.summary.value = "<br>".join(lines)


def fabric_explorer(system="hgx-h200", n_ranks=8, message_bytes=64 * 2 ** 20,
                    collective="all_reduce"):
    """Collective time and busbw per algorithm on a system preset.

    Controls: system (a :func:`gpulab.systems.names` preset), ranks (bounded by
    the system's GPUs), message size (powers of two, 1 KiB to 16 GiB) and
    collective. Calls :func:`gpulab.collectives.predict` once for NCCL's choice
    and once per other algorithm, and draws
    :func:`gpulab.plotting.plot_fabric_algorithms` with the per-direction NVLink
    (or PCIe) line rate and, across nodes, the network share of one GPU.
    """
    from . import collectives, systems

    if system not in systems.names():
        raise ValueError(f"system must be one of {', '.join(systems.names())}; got "
                         f"{system!r}")
    s = systems.get(system)
    if isinstance(n_ranks, bool) or not isinstance(n_ranks, int) \
            or not 2 <= n_ranks <= s.n_gpus:
        raise ValueError(f"n_ranks must be an integer in [2, {s.n_gpus}] for "
                         f"{system}; got {n_ranks!r}")
    if message_bytes not in FABRIC_SIZES:
        raise ValueError("message_bytes must be a power of two from 1 KiB to 16 GiB; "
                         f"got {message_bytes!r}")
    if collective not in collectives.COLLECTIVES:
        raise ValueError(f"collective must be one of "
                         f"{', '.join(collectives.COLLECTIVES)}; got {collective!r}")
    return _FabricExplorer(system, n_ranks, message_bytes, collective)


# --- Chapter 6: reading nccl-tests (bucket explorer) ----------------------------------
# (section owned by the Chapter 6 author)
__all__ += ["bucket_explorer", "bucket_allreduce_time", "BUCKET_SIZES",
            "BUCKET_LABELS", "BUCKET_GRID", "GRADIENT_SIZES"]

#: Named bucket sizes of the explorer [B]: PyTorch DDP's default
#: ``bucket_cap_mb=25`` (DDP multiplies by 1024 * 1024) and Megatron-Core's default
#: of 40 M gradient elements, in bf16 (2 B) and fp32 (4 B).
BUCKET_LABELS = {25 * 2 ** 20: "25 MiB (PyTorch DDP default)",
                 80_000_000: "80 MB (Megatron 40M bf16)",
                 160_000_000: "160 MB (Megatron 40M fp32)"}
#: Bucket sizes of the explorer's slider: powers of two from 256 KiB to 16 GiB and
#: the named defaults. [B]
BUCKET_SIZES = tuple(sorted({2 ** k for k in range(18, 35)} | set(BUCKET_LABELS)))
#: Gradient sizes of the explorer: powers of two from 64 MiB to 64 GiB. [B]
GRADIENT_SIZES = tuple(2 ** k for k in range(26, 37))
#: Bucket sizes of the explorer's curve: 2^18 to 2^34 B in quarter powers of two.
BUCKET_GRID = tuple(float(2 ** (k / 4)) for k in range(72, 137))


def bucket_allreduce_time(gradient_bytes, bucket_bytes, n_ranks, system,
                          transport="p2p"):
    """Time to all_reduce a gradient split into buckets, one call per bucket.

    ``floor(G / b)`` full buckets of ``b`` bytes and one last bucket of the
    remainder (``ceil(G / b)`` calls in all); a bucket larger than the gradient
    is one call of ``G``. Calls run one after another (no overlap with compute);
    each call's time is :func:`gpulab.collectives.predict` for ``all_reduce``
    with one process per GPU, as data-parallel training runs (torchrun).

    Parameters
    ----------
    gradient_bytes : float
        Size of all the gradients to reduce. [B]
    bucket_bytes : array_like
        Bucket size(s). [B]
    n_ranks : int
        GPUs in the data-parallel group.
    system : str
        A :func:`gpulab.systems.names` preset.
    transport : {"p2p", "shm"}

    Returns
    -------
    total_time : numpy.ndarray
        [s], one per bucket size.
    n_buckets : numpy.ndarray of int
        ``ceil(G / b)``.
    """
    import numpy as np

    from . import collectives

    g = float(gradient_bytes)
    if not (np.isfinite(g) and g >= 1):
        raise ValueError(f"gradient_bytes must be >= 1 [B]; got {gradient_bytes!r}")
    b = np.atleast_1d(np.asarray(bucket_bytes, dtype=float))
    if b.size == 0 or not (np.all(np.isfinite(b)) and np.all(b >= 1)):
        raise ValueError(f"bucket_bytes must be >= 1 [B]; got {bucket_bytes!r}")
    b = np.minimum(b, g)
    n_full = np.floor(g / b)
    rem = g - n_full * b
    sizes = np.concatenate([b, np.where(rem > 0, rem, b)])
    p = collectives.predict("all_reduce", sizes, n_ranks, system,
                            transport=transport, gpus_per_process=1)
    t = np.asarray(p.time, dtype=float)
    total = n_full * t[:b.size] + np.where(rem > 0, t[b.size:], 0.0)
    return total, np.ceil(g / b).astype(int)


class _BucketExplorer(_Explorer):
    def __init__(self, system, n_ranks, gradient_bytes, bucket_bytes):

        style = {"description_width": "initial"}
        controls = {
            **_system_ranks_controls(system, n_ranks, "GPUs (data parallel)", style),
            "gradient_bytes": W.SelectionSlider(
                options=[(units.fmt_bytes(v), v) for v in GRADIENT_SIZES],
                value=gradient_bytes, description="Gradients", style=style),
            "bucket_bytes": W.SelectionSlider(
                options=[(BUCKET_LABELS.get(v, units.fmt_bytes(v)), v)
                         for v in BUCKET_SIZES],
                value=bucket_bytes, description="Bucket", style=style,
                layout=W.Layout(width="480px")),
        }
        super().__init__(controls, _PNGView(figsize=(6.4, 3.4)))
        self.view.fig.subplots_adjust(left=0.12, right=0.97, top=0.95, bottom=0.16)
        self.result = None
        self.update()

    def _rows(self):
        c = self.controls
        return [(c["system"], c["n_ranks"]), (c["gradient_bytes"], c["bucket_bytes"])]

    def _on_change(self, change=None):
        if self._hold:
            return
        if change is not None and change.get("owner") is self.controls["system"]:
            from . import systems

            n_gpus = systems.get(self.controls["system"].value).n_gpus
            _set_ranks(self, n_gpus, min(self.controls["n_ranks"].value, n_gpus))
        self.update()

    def _update(self):
        import numpy as np

        from . import collectives

        c = self.controls
        name, n = c["system"].value, c["n_ranks"].value
        g, b = c["gradient_bytes"].value, c["bucket_bytes"].value
        grid = np.asarray(BUCKET_GRID)
        total, nb = bucket_allreduce_time(g, np.append(grid, float(b)), n, name)
        one = collectives.predict("all_reduce", g, n, name, gpus_per_process=1)
        t1, tb, k = float(one.time[0]), float(total[-1]), int(nb[-1])
        factor = collectives.busbw_factor("all_reduce", n)
        eff = g / tb * factor
        self.result = {"total_time": tb, "n_buckets": k, "one_call_time": t1,
                       "effective_busbw": eff, "one_call_busbw": float(one.busbw[0])}
        self.view.render(lambda ax: plotting.plot_bucket_time(
            grid, total[:-1], chosen=(float(b), tb), one_call_time=t1, ax=ax))
        per = tb / k
        self.summary.value = (
            f"{units.fmt_bytes(g)} of gradients in <b>{k}</b> bucket(s) of "
            f"{units.fmt_bytes(min(b, g))}: {k} all_reduce call(s) on {n} GPUs of "
            f"<b>{name}</b>, about {units.fmt_time(per)} each, "
            f"<b>{units.fmt_time(tb)}</b> in all (one after another; overlap with "
            f"the backward pass not counted). Effective busbw "
            f"<b>{eff / units.GB:.0f} GB/s</b> per direction, vs "
            f"{float(one.busbw[0]) / units.GB:.0f} GB/s for one call of the whole "
            f"gradient ({units.fmt_time(t1)}): the buckets cost "
            f"{(tb / t1 - 1):.0%} more time.")


def bucket_explorer(system="h200-x2-measured", n_ranks=2,
                    gradient_bytes=2 * 2 ** 30, bucket_bytes=25 * 2 ** 20):
    """Gradient all_reduce time against bucket size (DDP-style bucketing).

    Controls: system (a :func:`gpulab.systems.names` preset), GPUs of the
    data-parallel group (bounded by the system), gradient size (64 MiB to
    64 GiB) and bucket size (256 KiB to 16 GiB, with PyTorch DDP's and
    Megatron-Core's defaults). Uses :func:`bucket_allreduce_time` (one
    :func:`gpulab.collectives.predict` all_reduce per bucket) and draws
    :func:`gpulab.plotting.plot_bucket_time`.
    """
    from . import systems

    if system not in systems.names():
        raise ValueError(f"system must be one of {', '.join(systems.names())}; got "
                         f"{system!r}")
    s = systems.get(system)
    if isinstance(n_ranks, bool) or not isinstance(n_ranks, int) \
            or not 2 <= n_ranks <= s.n_gpus:
        raise ValueError(f"n_ranks must be an integer in [2, {s.n_gpus}] for "
                         f"{system}; got {n_ranks!r}")
    if gradient_bytes not in GRADIENT_SIZES:
        raise ValueError("gradient_bytes must be a power of two from 64 MiB to "
                         f"64 GiB; got {gradient_bytes!r}")
    if bucket_bytes not in BUCKET_SIZES:
        raise ValueError("bucket_bytes must be one of BUCKET_SIZES (256 KiB to "
                         f"16 GiB); got {bucket_bytes!r}")
    return _BucketExplorer(system, n_ranks, gradient_bytes, bucket_bytes)



# --- Chapter 7: parallel strategies (layout explorer) ---------------------------------
# (section owned by the Chapter 7 author)
__all__ += ["layout_explorer", "LAYOUT_BATCHES", "LAYOUT_LABELS"]

#: Global batch sizes offered by the layout explorer. [sequences]
LAYOUT_BATCHES = (8, 16, 32, 64, 128, 256, 512, 1024)


#: Bar labels of the layout explorer (and of the chapter's static figure).
LAYOUT_LABELS = ("per GPU", "one step")


class _TwoPanelView(_PNGView):
    """Two stacked Axes (memory on top, step time below) redrawn by blitting.

    Axes, ticks and legends are drawn once per pair of x limits (the plot
    functions round the limits to a few values) and cached; each update restores
    that background and draws only the bars, their texts and the memory lines.
    """

    _CACHE = 32

    def __init__(self, figsize=(7.2, 4.4), dpi=100):
        super().__init__(figsize=figsize, dpi=dpi)
        import matplotlib as mpl

        self.fig.delaxes(self.ax)
        with mpl.rc_context(plotting.STYLE):       # the book's look
            self.ax_memory, self.ax_step = self.fig.subplots(2, 1)
        self.ax = self.ax_memory
        self.fig.subplots_adjust(left=0.13, right=0.66, top=0.92, bottom=0.11,
                                 hspace=0.75)
        self._backgrounds = {}

    def _dynamic(self):
        arts, key = [], []
        for ax in (self.ax_memory, self.ax_step):
            st = getattr(ax, "_gpulab_state", None)
            if st is None:
                return None, None
            for group in st["artists"]:
                for a in group:
                    arts.extend(a.patches if hasattr(a, "patches") else [a])
            key.append((ax.get_xlim(), id(st["sentinel"]),
                        tuple(t.get_text() for t in ax.get_yticklabels())))
        return arts, tuple(key)

    def render(self, draw):
        import matplotlib as mpl
        from PIL import Image

        canvas = self.fig.canvas
        with mpl.rc_context({**plotting.STYLE, "savefig.bbox": "standard"}):
            draw(self.ax)
            dynamic, key = self._dynamic()
            if dynamic is None:                       # pragma: no cover
                return super().render(lambda ax: None)
            _restore_background(self, canvas, dynamic, key)
            renderer = canvas.get_renderer()
            for a in dynamic:
                if a.get_visible():
                    a.draw(renderer)
            w, h = canvas.get_width_height()
            buf = io.BytesIO()
            Image.frombuffer("RGBA", (w, h), canvas.buffer_rgba(), "raw", "RGBA",
                             0, 1).save(buf, format="png", compress_level=1)
        self.image.value = buf.getvalue()


class _LayoutExplorer(_Explorer):
    def __init__(self, model, system, tp, pp, dp, zero, recompute,
                 sequence_parallel, global_batch, micro_batch):
        from . import parallelism, systems

        style = {"description_width": "initial"}
        short = W.Layout(width="250px")
        controls = {
            "model": W.Dropdown(options=parallelism.model_names(), value=model,
                                description="Model", style=style, layout=short),
            "system": W.Dropdown(options=systems.names(), value=system,
                                 description="System", style=style, layout=short),
            "tp": W.IntSlider(value=tp, min=1, max=16, description="TP",
                              style=style),
            "pp": W.IntSlider(value=pp, min=1, max=16, description="PP",
                              style=style),
            "dp": W.IntSlider(value=dp, min=1, max=64, description="DP",
                              style=style),
            "zero": W.ToggleButtons(options=list(parallelism.ZERO_STAGES),
                                    value=zero, description="ZeRO stage",
                                    style={**style, "button_width": "40px"}),
            "recompute": W.ToggleButtons(options=list(parallelism.RECOMPUTE),
                                         value=recompute, description="Recompute",
                                         style={**style, "button_width": "80px"}),
            "sequence_parallel": W.Checkbox(value=sequence_parallel,
                                            description="Sequence parallel",
                                            style=style),
            "global_batch": W.Dropdown(options=list(LAYOUT_BATCHES),
                                       value=global_batch,
                                       description="Global batch [sequences]",
                                       style=style, layout=short),
            "micro_batch": W.Dropdown(options=[1, 2, 4, 8], value=micro_batch,
                                      description="Micro-batch", style=style,
                                      layout=W.Layout(width="180px")),
        }
        self._cache = {}
        self.step = None
        self._fit_note = ""
        super().__init__(controls, _TwoPanelView())
        self.update()

    def _rows(self):
        c = self.controls
        return [(c["model"], c["system"]), (c["tp"], c["pp"], c["dp"]),
                (c["zero"], c["sequence_parallel"]), (c["recompute"],),
                (c["global_batch"], c["micro_batch"])]

    def _step(self, key):
        """StepTime of ``key`` (cached: the same settings are not recomputed)."""
        from . import parallelism

        if key not in self._cache:
            model, system, tp, pp, dp, zero, rc, sp, gb, mb = key
            try:
                st = parallelism.step_time(
                    model, system, parallelism.Layout(tp, pp, dp), global_batch=gb,
                    micro_batch=mb, zero=zero, sequence_parallel=sp, recompute=rc)
            except ValueError as exc:
                st = exc
            if len(self._cache) > 256:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = st
        st = self._cache[key]
        if isinstance(st, ValueError):
            raise st
        return st

    def update(self):
        self._fit_note = ""
        super().update()
        if self._fit_note and not self.message.value:
            self.show_message(self._fit_note)

    def _update(self):
        from . import parallelism, systems

        c = self.controls
        key = (c["model"].value, c["system"].value, int(c["tp"].value),
               int(c["pp"].value), int(c["dp"].value), int(c["zero"].value),
               c["recompute"].value, bool(c["sequence_parallel"].value),
               int(c["global_batch"].value), int(c["micro_batch"].value))
        try:
            st = self._step(key)
        except ValueError:
            self.summary.value = ""
            raise
        self.step = st
        sysobj = systems.get(key[1])
        cap = sysobj.gpu_spec.memory_bytes
        usable = cap * (1.0 - parallelism.assumption("memory_reserve_fraction"))
        view = self.view

        def draw(_ax):
            plotting.plot_memory_breakdown([(LAYOUT_LABELS[0], st)], capacity=cap,
                                           usable=usable, ax=view.ax_memory)
            plotting.plot_step_breakdown([(LAYOUT_LABELS[1], st)],
                                         ax=view.ax_step)

        view.render(draw)
        lay, mem = st.layout, st.memory
        gb, seq = key[8], parallelism.model(key[0]).seq_len
        overhead = 1.0 - st.compute / st.total
        lines = [
            f"<b>{lay}</b> ({lay.n_gpus} of {sysobj.n_gpus} GPUs of "
            f"{html.escape(key[1])}, {html.escape(sysobj.gpu)}): "
            f"<b>{st.total:.2f} s per step</b> of {gb} sequences × {seq} tokens = "
            f"{gb / st.total:.2f} samples/s, {st.tokens_per_s:,.0f} tokens/s, "
            f"end-to-end MFU {st.mfu:.0%}.",
            f"Communication and bubble: {overhead:.0%} of the step "
            f"({st.micro_batches} micro-batches per step).",
            f"Memory per GPU: <b>{mem.total / units.GB:.1f} GB</b> of "
            f"{usable / units.GB:.1f} GB usable ({cap / units.GB:.0f} GB less the "
            "reserve).",
        ]
        # step_time notes the memory shortfall as "needs ... GB per GPU; ..."
        short = [n for n in st.notes if n.startswith("needs ")]
        notes = [n for n in st.notes if n not in short]
        if notes:
            lines.append("Notes: " + "; ".join(html.escape(n) for n in notes) + ".")
        self.summary.value = "<br>".join(lines)
        if not st.fits:
            self._fit_note = f"{lay} does not fit: " + "; ".join(short)


def layout_explorer(model="13b", system="dgx-h100", tp=2, pp=2, dp=2, *, zero=1,
                    recompute="none", sequence_parallel=False, global_batch=64,
                    micro_batch=1):
    """Memory and step time of one TP x PP x DP layout of a model on a system.

    Controls: model preset, system preset, TP, PP and DP degrees, ZeRO stage,
    activation recomputation, sequence parallelism, global batch and micro-batch
    (sequences). Calls :func:`gpulab.parallelism.step_time` (results cached per
    setting) and draws :func:`gpulab.plotting.plot_memory_breakdown` (against the
    GPU's memory and the usable share) above
    :func:`gpulab.plotting.plot_step_breakdown`. A layout that breaks a
    divisibility rule shows the reasons; one that does not fit is drawn, with the
    memory it lacks in the message.
    """
    from . import parallelism, systems

    if model not in parallelism.model_names():
        raise ValueError(f"model must be one of {', '.join(parallelism.model_names())}"
                         f"; got {model!r}")
    if system not in systems.names():
        raise ValueError(f"system must be one of {', '.join(systems.names())}; got "
                         f"{system!r}")
    for name, value, high in (("tp", tp, 16), ("pp", pp, 16), ("dp", dp, 64)):
        if isinstance(value, bool) or not isinstance(value, int) \
                or not 1 <= value <= high:
            raise ValueError(f"{name} must be an integer in [1, {high}]; got "
                             f"{value!r}")
    for name, value, choices in (
            ("zero", zero, parallelism.ZERO_STAGES),
            ("recompute", recompute, parallelism.RECOMPUTE),
            ("global_batch", global_batch, LAYOUT_BATCHES),
            ("micro_batch", micro_batch, (1, 2, 4, 8))):
        if isinstance(value, bool) or value not in choices:
            raise ValueError(f"{name} must be one of "
                             f"{', '.join(map(str, choices))}; got {value!r}")
    if not isinstance(sequence_parallel, bool):
        raise ValueError(f"sequence_parallel must be True or False; got "
                         f"{sequence_parallel!r}")
    return _LayoutExplorer(model, system, tp, pp, dp, zero, recompute,
                           sequence_parallel, global_batch, micro_batch)


# --- Chapter 8: tensor parallelism (tp explorer) --------------------------------------
__all__ += ["tp_explorer", "TP_DEGREES", "TP_SEQ_LENS", "tp_degree_rows"]

#: TP degrees the TP explorer tries (those dividing the heads and fitting the system).
TP_DEGREES = (1, 2, 4, 8, 16, 32, 64)
#: Sequence lengths of the TP explorer. [tokens]
TP_SEQ_LENS = (1024, 2048, 4096, 8192, 16384, 32768)


def tp_degree_rows(model, system, *, seq_len, micro_batch=1, sequence_parallel=False,
                   tp_overlap=0.0):
    """Per-layer compute and TP communication of every usable TP degree.

    Each degree ``t`` is run as the layout ``(t, 1, n_gpus // t)`` with the
    distributed optimizer (ZeRO-1) and one micro-batch per GPU per step through
    :func:`gpulab.parallelism.step_time`; the per-layer figures are the step's
    compute, TP communication and exposed TP communication divided by the layers
    (so the compute includes a share of the output layer).

    Parameters
    ----------
    model : str
        A :func:`gpulab.parallelism.model_names` preset.
    system : str
        A :func:`gpulab.systems.names` preset.
    seq_len, micro_batch : int
    sequence_parallel : bool
    tp_overlap : float
        Share of the TP communication hidden behind GEMMs, [0, 1].

    Returns
    -------
    rows : list of (label, compute, comm, exposed, note)
        For :func:`gpulab.plotting.plot_tp_degree`. [s]
    steps : dict
        ``{tp: StepTime}``.
    skipped : dict
        ``{tp: reason}`` for the degrees the layout rules refuse.
    """
    from . import parallelism, systems

    spec, s = parallelism.model(model), systems.get(system)
    rows, steps, skipped = [], {}, {}
    for t in TP_DEGREES:
        if t > s.n_gpus:
            break
        dp = s.n_gpus // t
        try:
            st = parallelism.step_time(
                spec, s, (t, 1, dp), global_batch=dp * micro_batch,
                micro_batch=micro_batch, seq_len=seq_len, zero=1,
                sequence_parallel=sequence_parallel, tp_overlap=tp_overlap)
        except ValueError as exc:
            skipped[t] = str(exc).split(": ", 1)[-1]
            continue
        n = spec.layers
        rows.append((f"TP{t} × DP{dp}", st.compute / n, st.comm.tp / n,
                     st.tp_comm / n, "" if st.fits else "does not fit"))
        steps[t] = st
    return rows, steps, skipped


class _TPExplorer(_Explorer):
    def __init__(self, model, system, tp, seq_len, micro_batch, sequence_parallel,
                 tp_overlap):
        from . import parallelism, systems

        style = {"description_width": "initial"}
        controls = {
            "model": W.Dropdown(options=parallelism.model_names(), value=model,
                                description="Model", style=style),
            "system": W.Dropdown(options=systems.names(), value=system,
                                 description="System", style=style),
            "tp": W.Dropdown(options=list(TP_DEGREES), value=tp,
                             description="TP degree", style=style),
            "seq_len": W.SelectionSlider(options=list(TP_SEQ_LENS), value=seq_len,
                                         description="Sequence length",
                                         style=style),
            "micro_batch": W.IntSlider(value=micro_batch, min=1, max=8,
                                       description="Micro-batch", style=style),
            "sequence_parallel": W.Checkbox(value=sequence_parallel,
                                            description="--sequence-parallel",
                                            indent=False),
            "tp_overlap": W.FloatSlider(value=tp_overlap, min=0.0, max=1.0, step=0.1,
                                        description="--tp-comm-overlap hides",
                                        readout_format=".0%", style=style),
        }
        super().__init__(controls, _PNGView(figsize=(7.0, 3.4)))
        self.view.fig.subplots_adjust(left=0.16, right=0.98, top=0.97, bottom=0.15)
        self.rows = []
        self.highlighted = None
        self.update()

    def _rows(self):
        c = self.controls
        return [(c["model"], c["system"], c["tp"]),
                (c["seq_len"], c["micro_batch"]),
                (c["sequence_parallel"], c["tp_overlap"])]

    def _update(self):
        from . import systems

        c = self.controls
        model, system, tp = c["model"].value, c["system"].value, c["tp"].value
        sp, o = bool(c["sequence_parallel"].value), float(c["tp_overlap"].value)
        if o > 0 and not sp:
            raise ValueError("--tp-comm-overlap needs --sequence-parallel (Megatron "
                             "refuses it otherwise): tick sequence parallelism or "
                             "set the hidden share to 0")
        s = systems.get(system)
        if tp > s.n_gpus:
            raise ValueError(f"tp: {system} has {s.n_gpus} GPUs; got TP{tp}")
        rows, steps, skipped = tp_degree_rows(
            model, system, seq_len=int(c["seq_len"].value),
            micro_batch=int(c["micro_batch"].value), sequence_parallel=sp,
            tp_overlap=o)
        if tp in skipped:
            raise ValueError(f"TP{tp} for {model}: {skipped[tp]}")
        if tp not in steps:
            raise ValueError(f"tp: no usable TP degree up to TP{tp} for {model} on "
                             f"{system}")
        high = list(steps).index(tp)
        self.rows, self.highlighted = rows, high
        self.view.render(lambda ax: plotting.plot_tp_degree(rows, highlight=high,
                                                            ax=ax))
        st = steps[tp]
        label, comp, comm, expo, _ = rows[high]
        fits = [t for t, x in steps.items() if x.fits]
        best = max(fits, key=lambda t: steps[t].tokens_per_s) if fits else None
        mem_gb = st.memory.total / units.GB
        cap = s.gpu_spec.memory_bytes / units.GB
        lines = [
            f"<b>{model}</b> on <b>{system}</b>, {label}: per layer and micro-batch "
            f"{units.fmt_time(comp)} of compute and {units.fmt_time(comm)} of TP "
            f"communication, {units.fmt_time(expo)} of it exposed "
            f"(<b>{expo / (comp + expo):.0%}</b> of the layer's time).",
            f"Memory per GPU {mem_gb:.0f} GB of {cap:.0f} GB: "
            + ("fits." if st.fits else "<b>does not fit</b>.")
            + f" Throughput {st.tokens_per_s / 1e3:.1f} k tokens/s on "
            f"{st.layout.n_gpus} GPUs.",
        ]
        if best is not None:
            lines.append(f"Fastest layout that fits: TP{best} "
                         f"({steps[best].tokens_per_s / 1e3:.1f} k tokens/s).")
        else:
            lines.append("No TP × DP layout fits here: add pipeline stages, ZeRO-3 "
                         "or more GPUs.")
        lines.extend(f"Note: {n}" for n in st.notes if "does not fit" not in n
                     and "memory" not in n)
        if skipped:
            lines.append("Not possible: " + "; ".join(
                f"TP{t} ({why})" for t, why in skipped.items()))
        self.summary.value = "<br>".join(lines)


def tp_explorer(model="13b", system="hgx-h200", tp=4, seq_len=4096, micro_batch=1,
                sequence_parallel=False, tp_overlap=0.0):
    """Choose a tensor-parallel degree: per-layer compute against TP communication.

    Controls: model preset, system preset, the TP degree to detail, sequence
    length, micro-batch, ``--sequence-parallel`` and the share of the TP
    communication that ``--tp-comm-overlap`` hides. Every usable TP degree of the
    system is drawn by :func:`gpulab.plotting.plot_tp_degree` from
    :func:`tp_degree_rows` (``gpulab.parallelism.step_time`` per degree); the
    summary gives memory per GPU, throughput and the fastest layout that fits.
    """
    from . import parallelism, systems

    if model not in parallelism.model_names():
        raise ValueError(f"model must be one of {', '.join(parallelism.model_names())}"
                         f"; got {model!r}")
    if system not in systems.names():
        raise ValueError(f"system must be one of {', '.join(systems.names())}; got "
                         f"{system!r}")
    if isinstance(tp, bool) or tp not in TP_DEGREES:
        raise ValueError(f"tp must be one of {TP_DEGREES}; got {tp!r}")
    if isinstance(seq_len, bool) or seq_len not in TP_SEQ_LENS:
        raise ValueError(f"seq_len must be one of {TP_SEQ_LENS}; got {seq_len!r}")
    if isinstance(micro_batch, bool) or not isinstance(micro_batch, int) \
            or not 1 <= micro_batch <= 8:
        raise ValueError(f"micro_batch must be an integer in [1, 8]; got "
                         f"{micro_batch!r}")
    if not isinstance(sequence_parallel, bool):
        raise ValueError("sequence_parallel must be True or False; got "
                         f"{sequence_parallel!r}")
    if isinstance(tp_overlap, bool) or not isinstance(tp_overlap, (int, float)) \
            or not 0 <= tp_overlap <= 1:
        raise ValueError(f"tp_overlap must be a number in [0, 1]; got {tp_overlap!r}")
    return _TPExplorer(model, system, tp, seq_len, micro_batch, sequence_parallel,
                       float(tp_overlap))



# --- Chapter 9: is NVLink worth it (roi explorer) -------------------------------------
# (section owned by the Chapter 9 author)
__all__ += ["roi_explorer", "roi_cluster", "ROI_FAST_SYSTEMS", "ROI_SLOW_SYSTEMS",
            "ROI_NODES", "ROI_GLOBAL_BATCH", "ROI_SEARCH", "ROI_EXAMPLE_PRICES",
            "ROI_NETWORK_FROM"]

#: Systems the ROI explorer offers as the fast (NVLink) and the slow (PCIe) side.
ROI_FAST_SYSTEMS = ("dgx-h100", "hgx-h200")
ROI_SLOW_SYSTEMS = ("h100-pcie",)
#: Node counts offered (8 GPUs per node).
ROI_NODES = (1, 2, 4, 8)
#: Sequences per optimizer step in every ROI comparison (the same on both sides).
ROI_GLOBAL_BATCH = 512
#: Options the chooser tries on both sides (rank_layouts keywords; ZeRO-1 default).
ROI_SEARCH = {"recompute": ("none", "selective"), "sequence_parallel": (False, True)}
#: ILLUSTRATIVE example prices per GPU-hour [USD], NOT quotes or hardware data:
#: change them to your own offers. The chapter passes its own example inputs.
ROI_EXAMPLE_PRICES = {"fast": 3.00, "slow": 2.25}
#: A preset without a network (the PCIe box) borrows this preset's scale-out
#: network when spread over several nodes (an assumption: one 400 Gb/s NIC per GPU).
ROI_NETWORK_FROM = "dgx-h100"


#: Chooser results shared by every ROI explorer: {(model, system, nodes): StepTime
#: or the ValueError saying why nothing fits}. Deterministic, so safe to share.
_ROI_CACHE = {}


def roi_cluster(system, nodes):
    """``parallelism.cluster(system, nodes)``; a preset without a network section
    first borrows the network of :data:`ROI_NETWORK_FROM` (an assumption of the
    Chapter 9 comparison, so that PCIe servers can form a cluster)."""
    from . import parallelism

    return parallelism.cluster(system, nodes,
                               network_from=ROI_NETWORK_FROM if nodes > 1 else None)


class _ROIExplorer(_Explorer):
    def __init__(self, model, nodes, fast, slow, price_fast, price_slow,
                 project_tokens):
        from . import parallelism

        style = {"description_width": "initial"}
        w = W.Layout(width="240px")
        controls = {
            "model": W.Dropdown(options=parallelism.model_names(), value=model,
                                description="Model", style=style, layout=w),
            "nodes": W.Dropdown(options=[(f"{n} (= {8 * n} GPUs)", n)
                                         for n in ROI_NODES],
                                value=nodes, description="Nodes", style=style,
                                layout=w),
            "fast": W.Dropdown(options=ROI_FAST_SYSTEMS, value=fast,
                               description="NVLink system", style=style, layout=w),
            "slow": W.Dropdown(options=ROI_SLOW_SYSTEMS, value=slow,
                               description="PCIe system", style=style, layout=w),
            "price_fast": W.BoundedFloatText(value=price_fast, min=0.0, max=1000.0,
                                             step=0.05, style=style, layout=w,
                                             description="NVLink USD/GPU-h"),
            "price_slow": W.BoundedFloatText(value=price_slow, min=0.0, max=1000.0,
                                             step=0.05, style=style, layout=w,
                                             description="PCIe USD/GPU-h"),
            "project_tokens": W.FloatLogSlider(
                value=project_tokens / 1e9, base=10, min=0, max=4, step=0.05,
                description="Project [billion tokens]", style=style,
                readout_format=".3g", layout=W.Layout(width="480px")),
        }
        self._best = _ROI_CACHE
        self.roi = None
        self.steps = None
        for m in parallelism.model_names():     # every ranking once, up front:
            for n in ROI_NODES:                 # an update is then ROI arithmetic
                for sy in ROI_FAST_SYSTEMS + ROI_SLOW_SYSTEMS:  # and a redraw
                    self._best.setdefault((m, sy, n), None) or \
                        self._rank(m, sy, n)
        super().__init__(controls, _PNGView(figsize=(6.4, 2.2)))
        self.view.fig.subplots_adjust(left=0.14, right=0.97, top=0.95, bottom=0.26)
        self.update()

    def _rows(self):
        c = self.controls
        return [(c["model"], c["nodes"]), (c["fast"], c["slow"]),
                (c["price_fast"], c["price_slow"]), (c["project_tokens"],)]

    def _rank(self, model, system, nodes):
        """Run the chooser once and cache its best StepTime (or why none fits)."""
        from . import parallelism

        r = parallelism.rank_layouts(model, roi_cluster(system, nodes),
                                     global_batch=ROI_GLOBAL_BATCH, **ROI_SEARCH)
        if r.best is None:
            least = min((x for x in r.invalid if x.step is not None),
                        key=lambda x: x.step.memory.total, default=None)
            why = least.reasons[0] if least is not None else \
                (r.invalid[0].reasons[0] if r.invalid else "no layout")
            got = ValueError(f"{model} does not fit on {nodes} node(s) of {system}: "
                             f"{why}; add nodes")
        else:
            got = r.best.step
        self._best[(model, system, nodes)] = got
        return got

    def _choose(self, model, system, nodes):
        """The chooser's best layout: a StepTime (raises ValueError if none fits)."""
        got = self._best.get((model, system, nodes))
        if got is None:
            got = self._rank(model, system, nodes)
        if isinstance(got, Exception):
            raise got
        return got

    def _update(self):
        from . import parallelism

        c = self.controls
        model, nodes = c["model"].value, c["nodes"].value
        fast, slow = c["fast"].value, c["slow"].value
        tokens = c["project_tokens"].value * 1e9
        pf, ps = c["price_fast"].value, c["price_slow"].value
        try:
            sf = self._choose(model, fast, nodes)
            ss = self._choose(model, slow, nodes)
        except ValueError:
            self.summary.value = ""
            raise
        n_gpus = 8 * nodes
        spec = parallelism.model(model)
        roi = parallelism.nvlink_roi(
            sf.total, ss.total, tokens_per_step=ROI_GLOBAL_BATCH * spec.seq_len,
            price_fast=pf, price_slow=ps, n_gpus=n_gpus, project_tokens=tokens)
        self.roi, self.steps = roi, (sf, ss)
        self.view.render(lambda ax: plotting.plot_roi(
            roi, labels=(fast, slow), currency="USD", ax=ax))
        ratio = pf / ps if ps > 0 else float("inf")
        cheaper = fast if roi.cost_fast < roi.cost_slow else slow
        day = 86400.0
        self.summary.value = "<br>".join([
            f"Chooser on {n_gpus} GPUs, global batch {ROI_GLOBAL_BATCH} × "
            f"{spec.seq_len} tokens: <b>{fast}</b> {sf.layout} "
            f"{sf.total:.3g} s/step; <b>{slow}</b> {ss.layout} {ss.total:.3g} "
            "s/step.",
            f"{fast} is <b>{roi.speedup:.1%} faster</b> (speedup); {slow} is "
            f"{roi.slowdown:.1%} slower (slowdown). The project takes "
            f"{roi.project_s_fast / day:.3g} vs {roi.project_s_slow / day:.3g} days "
            f"({roi.time_saved_s / day:.3g} days earlier on {fast}).",
            f"Cost per million tokens: {roi.cost_per_mtoken_fast:.3g} vs "
            f"{roi.cost_per_mtoken_slow:.3g} USD. Break-even price ratio "
            f"<b>{roi.breakeven_price_ratio:.3f}</b>; yours is {ratio:.3f}, so "
            f"<b>{cheaper}</b> is cheaper for this project.",
            "Prices are illustrative inputs, not quotes."])


def roi_explorer(model="70b", nodes=8, fast="dgx-h100", slow="h100-pcie", *,
                 price_fast=None, price_slow=None, project_tokens=200e9):
    """Is NVLink worth it for one training project? Cost and days on both systems.

    Controls: model preset, nodes (8 GPUs each), the NVLink and the PCIe system,
    price per GPU-hour of each (USD; illustrative defaults
    :data:`ROI_EXAMPLE_PRICES`) and project size in tokens. For each system the
    chooser (:func:`gpulab.parallelism.rank_layouts`, options
    :data:`ROI_SEARCH`, global batch :data:`ROI_GLOBAL_BATCH`) picks the fastest
    layout on :func:`roi_cluster`; :func:`gpulab.parallelism.nvlink_roi` turns the
    two step times into days, cost and the break-even price ratio, drawn by
    :func:`gpulab.plotting.plot_roi`. Rankings are cached per explorer, so price
    and token changes only redo the ROI arithmetic.
    """
    from . import parallelism

    if model not in parallelism.model_names():
        raise ValueError(f"model must be one of {', '.join(parallelism.model_names())}"
                         f"; got {model!r}")
    if nodes not in ROI_NODES or isinstance(nodes, bool):
        raise ValueError(f"nodes must be one of {ROI_NODES}; got {nodes!r}")
    if fast not in ROI_FAST_SYSTEMS:
        raise ValueError(f"fast must be one of {', '.join(ROI_FAST_SYSTEMS)}; got "
                         f"{fast!r}")
    if slow not in ROI_SLOW_SYSTEMS:
        raise ValueError(f"slow must be one of {', '.join(ROI_SLOW_SYSTEMS)}; got "
                         f"{slow!r}")
    prices = []
    for name, v, key in (("price_fast", price_fast, "fast"),
                         ("price_slow", price_slow, "slow")):
        v = ROI_EXAMPLE_PRICES[key] if v is None else v
        if isinstance(v, bool) or not isinstance(v, (int, float)) \
                or not 0 <= v <= 1000:
            raise ValueError(f"{name} must be a number in [0, 1000] USD per "
                             f"GPU-hour; got {v!r}")
        prices.append(float(v))
    if isinstance(project_tokens, bool) or not isinstance(project_tokens,
                                                          (int, float)) \
            or not 1e9 <= project_tokens <= 1e13:
        raise ValueError("project_tokens must be a number in [1e9, 1e13] tokens; "
                         f"got {project_tokens!r}")
    return _ROIExplorer(model, nodes, fast, slow, prices[0], prices[1],
                        float(project_tokens))
