"""Precomputed chart of the serving topic: time per output token of one decode step
(the decode explorer's bar), compute vs communication, over system, TP degree, batch
and all-reduce kernel."""
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
