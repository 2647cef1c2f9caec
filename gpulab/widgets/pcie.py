"""Explorers of the PCIe topic: the link budget and pipeline-stage placement.

UI only: controls in display units, converted to SI at the edge; every number
comes from the model layer. Factories return the widget (never display it).
"""
from __future__ import annotations

import functools

import ipywidgets as W
from .base import Explorer, PNGView, gpu_label
from .. import (links, measurements, parallelism, pcie, plotting, specs, topology,
               units)


def _h200_pinned_h2d():
    """Measured pinned host-to-device peak of our 2x H200 run (per direction)."""
    return measurements.copy_bandwidth().peak("h2d_pinned")


_MEASURED_LABEL = "measured pinned H2D, 2× H200"


def _gbs(bw):
    """'63.0 GB/s' (3 significant digits below 10 GB/s): display only."""
    v = bw.gb_per_s
    return f"{v:.3g} GB/s" if v < 10 else f"{v:.1f} GB/s"


class _PCIeExplorer(Explorer):
    def __init__(self, generation, lanes, max_payload_bytes, header_bytes, ecrc):
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
        super().__init__(controls, PNGView(figsize=(7.0, 3.0)))
        self.view.fig.subplots_adjust(left=0.31, right=0.97, top=0.97, bottom=0.16)
        self.update()

    def _rows(self):
        c = self.controls
        return [(c["generation"], c["lanes"], c["max_payload_bytes"]),
                (c["header_bytes"], c["ecrc"])]

    def _update(self):
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
    specs.pcie(generation)
    pcie.effective_bandwidth(generation, lanes, max_payload_bytes,
                             header_bytes=header_bytes, ecrc=ecrc)    # validates
    if lanes not in (1, 2, 4, 8, 16):
        raise ValueError(f"lanes must be one of 1, 2, 4, 8, 16; got {lanes!r}")
    return _PCIeExplorer(generation, lanes, max_payload_bytes, header_bytes, ecrc)


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
    return {"A": topology.layout_a, "B": topology.layout_b,
            "nvswitch": lambda: topology.nvswitch_node("H200")}[layout]()


def _same_path(p, q):
    """Whether two placements have the same class, transport and rates."""
    return (p["class"], p["transport"], p["time"]) == (q["class"], q["transport"],
                                                       q["time"])


def _stage_row(label, layout, a, b, p):
    """(label, time per micro-batch, colour kind) of one bar of the pipeline plot."""
    text = (f"{label}\n{_LAYOUT_SHORT[layout]}: {gpu_label(a)} → {gpu_label(b)}, "
            f"{p['class']}, {_TRANSPORT_SHORT[p['transport']]}")
    return text, 2 * p["time"], _TRANSPORT_KIND[p["transport"]]


class _PipelineExplorer(Explorer):
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
        super().__init__(controls, PNGView(figsize=(7.0, 3.0), dpi=90))
        self.view.fig.subplots_adjust(left=0.37, right=0.98, top=0.97, bottom=0.17)
        controls["layout"].observe(self._on_layout, names="value")
        self.update()

    @staticmethod
    def _pair_options(layout):
        topo = _pipeline_topology(layout)
        gpus = topo.gpus
        out = []
        for i, a in enumerate(gpus):
            for b in gpus[i + 1:]:
                cls = topology.path_class(topo, a, b)
                out.append((f"{gpu_label(a)} → {gpu_label(b)} ({cls})", (a, b)))
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
        key = (layout, a, b)
        if key not in self._paths:        # the topology queries, once per path
            topo = _pipeline_topology(layout)
            transport, _why = topology.nccl_transport(topo, a, b)
            line = topology.bottleneck_bandwidth(topo, a, b)
            self._paths[key] = {
                "class": topology.path_class(topo, a, b), "transport": transport,
                "line": line, "latency": topology.path_latency(topo, a, b),
                "achieved": line * pcie.transport_shares()[transport]}
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
            f"Your placement ({PIPELINE_LAYOUTS[layout]}, {gpu_label(a)} → "
            f"{gpu_label(b)}): {mine['class']}, "
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
                      compute_ms=None, *, gpu="H100", stage_layers=8):
    """Cost of the activation transfer between two consecutive pipeline stages.

    Per micro-batch, stage k sends ``micro_batch x seq_len x hidden x
    dtype_bytes`` of activations to stage k+1 and receives their gradient back.
    The time of one transfer is :func:`gpulab.links.transfer_time` with the
    path's :func:`gpulab.topology.path_latency` and its
    :func:`gpulab.topology.bottleneck_bandwidth` times the achieved share of the
    transport NCCL picks (:func:`gpulab.topology.nccl_transport`; shares from
    the course data, see :func:`gpulab.pcie.transport_shares`). Bars: your placement and
    four references, (a) same switch, (b) across switches under one CPU,
    (c) across CPUs, (d) NVLink; the one that behaves like your placement is
    outlined (a fifth bar is added if none does).

    ``compute_ms`` (forward + backward of one micro-batch through one stage)
    defaults to :func:`gpulab.parallelism.stage_compute_time` for ``stage_layers``
    GPT layers of width ``hidden`` (head dimension 128) and ``micro_batch x seq_len``
    tokens on ``gpu``, at the compute efficiency of that layer shape (a 7B-like model,
    32 layers in four stages, on H100 by default).
    """
    if layout not in PIPELINE_LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(PIPELINE_LAYOUTS)}; "
                         f"got {layout!r}")
    if compute_ms is None:
        compute_ms = parallelism.stage_compute_time(
            hidden, stage_layers, seq_len, micro_batch, gpu=gpu) / units.MS
    # on the slider's 0.1 ms grid: the browser would round any other value and
    # send it back as a change
    if isinstance(compute_ms, bool) or not isinstance(compute_ms, (int, float)) \
            or not 1 <= compute_ms <= 1000:
        raise ValueError("compute_ms must be a number in [1, 1000] ms (the slider's "
                         f"range); got {compute_ms!r}")
    compute_ms = round(float(compute_ms), 1)
    return _PipelineExplorer(hidden, seq_len, micro_batch, dtype_bytes, layout,
                             tuple(pair), n_micro_batches, compute_ms)
