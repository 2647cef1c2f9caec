"""Precomputed charts of the PCIe topic: the link budget (the PCIe explorer), from raw
to effective rate per direction, and pipeline-stage transfers by placement (the
pipeline explorer)."""
from __future__ import annotations

import altair as alt

from .base import Control, build
from .. import links, parallelism, pcie, specs, topology, units

#: Lane counts and maximum payload sizes of the PCIe chart. [lanes], [B]
PCIE_LANES = (1, 2, 4, 8, 16)
PCIE_PAYLOADS = (128, 256, 512, 4096)


def _gbs(bw):
    v = bw.gb_per_s
    return f"{v:.3g} GB/s" if v < 10 else f"{v:.1f} GB/s"


def pcie_chart(generation=5, lanes=16, max_payload_bytes=256, *, header_bytes=16,
               ecrc=False):
    """PCIe per-direction budget: raw, encoded, after TLP framing, effective.
    Precomputed by :func:`gpulab.pcie.raw_bandwidth`,
    :func:`gpulab.pcie.encoded_bandwidth`, :func:`gpulab.pcie.tlp_efficiency` and
    :func:`gpulab.pcie.effective_bandwidth` for every generation of the data,
    :data:`PCIE_LANES` and :data:`PCIE_PAYLOADS`, with ``header_bytes`` TLP headers
    and ``ecrc``; the other keywords pick the initial point."""
    gens = specs.pcie_generations()
    controls = (
        Control("generation", "Generation", tuple(g.generation for g in gens),
                generation, labels=tuple(f"Gen{g.generation} "
                                         f"({g.transfer_rate_gt_per_s:g} GT/s)"
                                         for g in gens)),
        Control("lanes", "Lanes", PCIE_LANES, lanes,
                labels=tuple(f"x{n}" for n in PCIE_LANES)),
        Control("payload", "Max payload size", PCIE_PAYLOADS, max_payload_bytes,
                labels=tuple(f"{p} B" for p in PCIE_PAYLOADS)),
    )

    def point(generation, lanes, payload):
        kw = dict(header_bytes=header_bytes, ecrc=ecrc)
        raw = pcie.raw_bandwidth(generation, lanes)
        enc = pcie.encoded_bandwidth(generation, lanes)
        tlp = enc * pcie.tlp_efficiency(payload, generation=generation,
                                        dllp_overhead=0, **kw)
        eff = pcie.effective_bandwidth(generation, lanes, payload, **kw)
        rows = [{"stage": s, "order": i, "gbs": v.gb_per_s, "share": v / raw}
                for i, (s, v) in enumerate((("raw", raw), ("encoded", enc),
                                            ("after TLP framing", tlp),
                                            ("effective", eff)))]
        text = (f"PCIe Gen{generation} x{lanes}, max payload {payload} B, "
                f"{header_bytes // 4}-DW headers{', ECRC' if ecrc else ''}:\n"
                f"{_gbs(raw)} raw → {_gbs(enc)} encoded → {_gbs(eff)} effective, "
                f"per direction ({eff / raw:.0%} of raw).\n"
                f"Spec sheets add both directions: {_gbs(raw.to_bidirectional())} raw "
                "bidirectional.")
        return rows, text

    def plot(base):
        bars = base.mark_bar().encode(
            y=alt.Y("stage:N", sort=None, title=None),
            x=alt.X("gbs:Q", title="Per direction [GB/s]"),
            tooltip=["stage:N", alt.Tooltip("gbs:Q", format=".4g"),
                     alt.Tooltip("share:Q", format=".1%", title="of raw")])
        labels = base.mark_text(align="left", dx=4).encode(
            y=alt.Y("stage:N", sort=None), x="gbs:Q",
            text=alt.Text("share:Q", format=".0%"))
        return bars + labels

    return build("pcie", "PCIe link budget per direction", controls, point, plot,
                 height=140, note=f"{header_bytes}-byte TLP headers, "
                 + ("with" if ecrc else "without") + " ECRC")


#: Reference placements of two consecutive pipeline stages: (label, server, (src, dst)).
PIPELINE_PLACEMENTS = (
    ("(a) same switch", "A", ("gpu0", "gpu1")),
    ("(b) 2 switches, 1 CPU", "B", ("gpu1", "gpu2")),
    ("(c) across CPUs", "A", ("gpu3", "gpu4")),
    ("(d) NVLink", "nvswitch", ("gpu3", "gpu4")),
)
#: Grid of the pipeline chart: hidden sizes, sequence lengths [tokens], micro-batches
#: [sequences] and activation precisions (name, bytes per value).
PIPELINE_HIDDEN = (4096, 8192, 16384)
PIPELINE_SEQ_LENS = (2048, 4096, 8192)
PIPELINE_MICRO_BATCHES = (1, 2, 4, 8)
PIPELINE_DTYPES = (("FP32", 4), ("BF16", 2), ("FP8", 1))


def pipeline_chart(hidden=4096, seq_len=4096, micro_batch=1, dtype="BF16", *,
                   gpu="H100", stage_layers=8):
    """Activation transfer (and its gradient back) between two pipeline stages per
    micro-batch, for four reference placements. Each transfer is
    :func:`gpulab.links.transfer_time` with the path's
    :func:`gpulab.topology.path_latency` and :func:`gpulab.topology.bottleneck_bandwidth`
    times the share of the transport NCCL picks (:func:`gpulab.pcie.transport_shares`); compute per
    micro-batch from :func:`gpulab.parallelism.stage_compute_time` for ``stage_layers``
    GPT layers of the chosen hidden size on ``gpu``. Precomputed over :data:`PIPELINE_HIDDEN`, :data:`PIPELINE_SEQ_LENS`,
    :data:`PIPELINE_MICRO_BATCHES` and :data:`PIPELINE_DTYPES`."""
    servers = {"A": topology.layout_a(), "B": topology.layout_b(),
               "nvswitch": topology.nvswitch_node("H200")}
    shares = pcie.transport_shares()
    paths = []
    for label, server, (a, b) in PIPELINE_PLACEMENTS:
        topo = servers[server]
        transport, _why = topology.nccl_transport(topo, a, b)
        paths.append((label, topology.path_class(topo, a, b), transport,
                      topology.path_latency(topo, a, b),
                      topology.bottleneck_bandwidth(topo, a, b) * shares[transport]))
    dtypes = dict(PIPELINE_DTYPES)
    controls = (
        Control("hidden", "Hidden size", PIPELINE_HIDDEN, hidden),
        Control("seq_len", "Sequence length", PIPELINE_SEQ_LENS, seq_len),
        Control("micro_batch", "Micro-batch size", PIPELINE_MICRO_BATCHES, micro_batch,
                kind="radio"),
        Control("dtype", "Activations", tuple(dtypes), dtype, kind="radio"),
    )

    def point(hidden, seq_len, micro_batch, dtype):
        message = micro_batch * seq_len * hidden * dtypes[dtype]
        compute = parallelism.stage_compute_time(hidden, stage_layers, seq_len,
                                                 micro_batch, gpu=gpu)
        rows, lines = [], []
        for label, cls, transport, latency, achieved in paths:
            t = 2 * links.transfer_time(message, latency, achieved)
            rows.append({"placement": f"{label}: {cls}, {transport}", "ms": t * 1e3})
            lines.append(f"{label.split(' ')[0]} {units.fmt_time(t)} "
                         f"({t / compute:.1%})")
        text = (f"Activation per micro-batch: {micro_batch} × {seq_len} × {hidden} × "
                f"{dtypes[dtype]} B = {units.fmt_bytes(message)}; its gradient comes "
                "back, the same size.\n"
                f"Compute per micro-batch and stage: {units.fmt_time(compute)}.\n"
                "Both transfers, share of compute: " + ", ".join(lines) + ".")
        return rows, text

    def plot(base):
        return base.mark_bar().encode(
            y=alt.Y("placement:N", sort=None, title=None),
            x=alt.X("ms:Q", title="Transfers per micro-batch [ms]"),
            tooltip=["placement:N", alt.Tooltip("ms:Q", format=".3g")])

    return build("pipeline", "Pipeline-stage transfers by placement", controls, point,
                 plot, height=120,
                 note=f"compute: {stage_layers} layers per stage on {gpu}, at the "
                      "layer shape's modelled efficiency")
