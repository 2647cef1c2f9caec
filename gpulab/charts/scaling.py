"""Precomputed chart of the scaling topic: data-parallel step time per GPU generation
(the scaling explorer's bars) over GPUs, model size, tokens per GPU and overlap."""
from __future__ import annotations

import altair as alt

from .base import Control, build
from .. import scaling, specs, units

#: The grid (the explorer's main controls; MFU stays at the assumption's value).
SCALING_GPUS = (2, 4, 8, 16, 32, 64)
SCALING_PARAMS = (1e9, 7e9, 13e9, 70e9)
SCALING_OVERLAP = (0.0, 0.25, 0.5, 0.75, 1.0)


def scaling_chart(gpus=("V100", "A100", "H100", "B200"), *, n_gpus=8, params=7e9,
                  tokens_per_gpu=4096, overlap=0.0):
    """Step time (compute + exposed ring AllReduce) per GPU generation, precomputed by
    :func:`gpulab.scaling.data_parallel_step` over :data:`SCALING_GPUS`,
    :data:`SCALING_PARAMS` and :data:`SCALING_OVERLAP` at ``tokens_per_gpu``
    tokens per GPU per step; the other keywords pick the initial point (a grid point)."""
    for g in gpus:
        specs.gpu(g)
    controls = (
        Control("n_gpus", "GPUs", SCALING_GPUS, n_gpus),
        Control("params", "Model size", SCALING_PARAMS, params,
                labels=tuple(f"{p / 1e9:g}B" for p in SCALING_PARAMS)),
        Control("overlap", "Overlap", SCALING_OVERLAP, overlap, kind="slider"),
    )

    def point(n_gpus, params, overlap):
        steps = [scaling.data_parallel_step(g, n_gpus, params, tokens_per_gpu,
                                            overlap=overlap) for g in gpus]
        rows = [{"gpu": s.gpu, "compute": s.compute_time * 1e3,
                 "exposed communication": s.exposed_comm_time * 1e3} for s in steps]
        worst = min(steps, key=lambda s: s.efficiency)
        grad = params * scaling.assumption("gradient_bytes_per_param")
        text = (f"Ring AllReduce of {units.fmt_bytes(grad, binary=False)} of gradients "
                f"over NVLink on {n_gpus} GPUs.\n"
                + ", ".join(f"{s.gpu} {s.efficiency:.0%}" for s in steps)
                + f" efficient.\nLowest: {worst.gpu}, {worst.efficiency:.0%} "
                  f"({worst.effective_gpus:.1f} of {worst.n_gpus} GPUs do useful work).")
        return rows, text

    def plot(base):
        return base.transform_fold(["compute", "exposed communication"],
                                   as_=["part", "ms"]).mark_bar().encode(
            y=alt.Y("gpu:N", sort=list(gpus), title=None),
            x=alt.X("sum(ms):Q", title="Step time [ms]"),
            color=alt.Color("part:N", title=None,
                            scale=alt.Scale(domain=["compute", "exposed communication"]),
                            legend=alt.Legend(orient="bottom")),
            order=alt.Order("part:N", sort="ascending"),
            tooltip=["gpu:N", "part:N", alt.Tooltip("ms:Q", format=".3g")])

    return build("scaling", "Data-parallel step time per GPU generation", controls,
                 point, plot, height=140,
                 note=f"{tokens_per_gpu} tokens per GPU per step")
