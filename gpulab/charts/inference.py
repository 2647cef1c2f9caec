"""Precomputed charts of the serving topic: time per output token of one decode step
(the decode explorer's bar), compute vs communication, over system, TP degree, batch
and all-reduce kernel; one expert-parallel dispatch and combine (the EP explorer's
bars) over system, kernel, EP size and tokens per GPU."""
from __future__ import annotations

import altair as alt

from .base import Control, build
from .. import inference, units

#: The grid (the explorer's main controls; model, context and precision stay fixed).
DECODE_CHART_SYSTEMS = ("hgx-h200", "l40s-x8")
DECODE_CHART_TPS = (1, 2, 4, 8)
DECODE_CHART_BATCHES = (1, 8, 32, 128)
DECODE_CHART_ALLREDUCE = ("nccl", "oneshot", "twoshot")
_PARTS = ["compute + memory", "communication"]


def decode_chart(model="llama3-70b", *, context=8192, precision="bf16",
                 system="hgx-h200", tp=8, batch=32, allreduce="twoshot"):
    """TPOT of one decode step, compute + memory vs communication, precomputed by
    :func:`gpulab.inference.decode_step` over :data:`DECODE_CHART_SYSTEMS`,
    :data:`DECODE_CHART_TPS`, :data:`DECODE_CHART_BATCHES` and
    :data:`DECODE_CHART_ALLREDUCE` at ``context`` tokens and ``precision`` weights;
    the other keywords pick the initial point (a grid point). A point the model
    refuses has no bar and says why."""
    controls = (
        Control("system", "System", DECODE_CHART_SYSTEMS, system),
        Control("tp", "TP", DECODE_CHART_TPS, tp, labels=tuple(
            f"TP{t}" for t in DECODE_CHART_TPS), kind="radio"),
        Control("batch", "Batch", DECODE_CHART_BATCHES, batch, kind="radio"),
        Control("allreduce", "All-reduce", DECODE_CHART_ALLREDUCE, allreduce,
                kind="radio"),
    )

    def point(system, tp, batch, allreduce):
        try:
            d = inference.decode_step(model, system, tp=tp, batch=batch,
                                      context=context, precision=precision,
                                      allreduce=allreduce)
        except ValueError as exc:
            return [], f"Not possible at batch {batch}: {exc}"
        rows = [{"bar": f"TP{tp}", "part": _PARTS[0], "ms": d.compute_time * 1e3},
                {"bar": f"TP{tp}", "part": _PARTS[1], "ms": d.comm_time * 1e3}]
        fit = "" if d.fits_memory else (
            f" Does not fit: {d.memory_per_gpu / units.GB:.0f} GB per GPU.")
        text = (f"TPOT {d.tpot * 1e3:.2f} ms, {d.comm_share:.0%} communication "
                f"(all-reduce of {d.message_bytes / units.KiB:.0f} KiB: "
                f"{d.allreduce_time * 1e6:.1f} µs).\n"
                f"{d.tokens_per_s:,.0f} tokens/s, {d.tokens_per_s_per_gpu:,.0f} per "
                f"GPU.{fit}")
        if tp == 1:
            text += "\nAll-reduce: none at TP1 (the choice changes nothing)."
        return rows, text

    def plot(base):
        return base.mark_bar().encode(
            y=alt.Y("bar:N", title=None),
            x=alt.X("sum(ms):Q", title="Time per output token [ms]"),
            color=alt.Color("part:N", title=None, scale=alt.Scale(domain=_PARTS),
                            legend=alt.Legend(orient="bottom")),
            order=alt.Order("part:N", sort="ascending"),
            tooltip=["part:N", alt.Tooltip("ms:Q", format=".3g")])

    return build("decode", "Time per output token of one decode step", controls,
                 point, plot, height=60,
                 note=f"{model}, {context} tokens of context, {precision} weights")


#: The grid of the EP chart (the EP explorer's controls, fewer token counts).
EP_CHART_SYSTEMS = inference.ep.EP_SYSTEMS
EP_CHART_KERNELS = inference.ep.KERNELS
EP_CHART_SIZES = (8, 16, 32, 64, 128)
EP_CHART_TOKENS = (128, 4096)
_EP_PARTS = ["fixed cost", "NVLink leg", "RDMA leg"]


def ep_chart(system="hgx-h200", ep=32, tokens=128, kernel="low_latency_nvlink"):
    """One MoE dispatch and combine (DeepSeek-V3 shapes), fixed cost then the NVLink and
    the RDMA leg of each, precomputed by :func:`gpulab.inference.ep.moe_calls` (the EP
    explorer's model: node-limited routing for the normal kernels) over :data:`EP_CHART_SYSTEMS`, :data:`EP_CHART_KERNELS`,
    :data:`EP_CHART_SIZES` and :data:`EP_CHART_TOKENS`; the keywords pick the initial
    point. A point the model refuses has no bars and says why."""
    v3 = inference.ep.DEEPSEEK_V3
    controls = (
        Control("system", "System", EP_CHART_SYSTEMS, system),
        Control("kernel", "Kernel", EP_CHART_KERNELS, kernel, kind="radio"),
        Control("ep", "EP size", EP_CHART_SIZES, ep, kind="radio"),
        Control("tokens", "Tokens per GPU", EP_CHART_TOKENS, tokens, kind="radio"),
    )

    nic_rates = {inference.ep_fabric(s).rdma_bandwidth for s in EP_CHART_SYSTEMS}

    def point(system, kernel, ep, tokens):
        try:
            pair = inference.ep.moe_calls(system, ep, tokens, kernel)
        except ValueError as exc:
            return [], (f"Not possible: {exc}.\nKernel and Tokens per GPU change nothing "
                        "at this EP size.")
        rows = []
        for op, d in pair:
            for leg, t in (("NVLink", d.nvlink_time), ("RDMA", d.rdma_time)):
                bar = f"{op}, {leg}"
                rows.append({"bar": bar, "part": _EP_PARTS[0], "us": d.latency * 1e6})
                rows.append({"bar": bar, "part": f"{leg} leg", "us": t * 1e6})
        (_, d), (_, c) = pair
        text = (f"Dispatch {d.time * 1e6:,.0f} µs ({d.bottleneck}-bound), combine "
                f"{c.time * 1e6:,.0f} µs ({c.bottleneck}-bound).\n"
                f"Per GPU: {d.traffic.rdma_bytes / units.MB:,.1f} MB over RDMA and "
                f"{d.traffic.nvlink_bytes / units.MB:,.1f} MB over NVLink per dispatch; "
                f"{d.counted_bandwidth / 1e9:,.0f} GB/s as DeepEP counts it.")
        if kernel == "low_latency" and len(nic_rates) == 1:
            text += (f"\nSystem changes nothing here: RDMA only, and every system here "
                     f"has {next(iter(nic_rates)) * 8 / 1e9:.0f} Gb/s of NIC per GPU.")
        return rows, text

    def plot(base):
        return base.mark_bar().encode(
            y=alt.Y("bar:N", title=None, sort=None),
            x=alt.X("sum(us):Q", title="Time of one call [µs]"),
            color=alt.Color("part:N", title=None, scale=alt.Scale(domain=_EP_PARTS),
                            legend=alt.Legend(orient="bottom")),
            order=alt.Order("part:N", sort="ascending"),
            tooltip=["part:N", alt.Tooltip("us:Q", format=".3g")])

    return build("ep", "One MoE dispatch and combine", controls, point, plot,
                 height=110, note=(f"DeepSeek-V3 shapes: hidden {v3['hidden']}, "
                                   f"top-{v3['topk']} of {v3['experts']} experts"))
