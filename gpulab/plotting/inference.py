"""Figures of the serving topic: decode layer shards against our runs, the TP
all-reduce of decode-sized messages against published tables, and the time per
output token (TPOT) split into compute and communication.

Also the small data helpers the figures and the explorer share (measured decode
rows, the model at those rows, the engines' all-reduce choice); they call the
public functions of :mod:`gpulab.inference` only.
"""
from __future__ import annotations

import csv
import io
import statistics

import numpy as np
from matplotlib.lines import Line2D

from .. import specs, units
from ..inference import (PUBLISHED_ALLREDUCE, allreduce_comparison, allreduce_model_time,
                         decode_layer_time, decode_step)
from .style import COLORS, bytes_axis, new_axes

__all__ = ["DECODE_RUN", "decode_rows", "decode_model_rows", "tpot_rows",
           "plot_decode_layers",
           "plot_allreduce_sizes", "plot_tpot_breakdown", "plot_ep_check",
           "plot_kv_transfer_check", "plot_ttft_share", "plot_ep_times"]

#: Our decode runs inside ``gpulab/data`` (1x H200, 2026-12-02).
DECODE_RUN = "measurements/raw/h200-x1-2026-12-02-decode"
_INTS = ("hidden", "heads", "kv_heads", "ffn_hidden", "tp", "batch", "context",
         "layers", "weight_bytes", "kv_bytes")
_TP_COLORS = {1: "#222222", 2: COLORS["pcie"], 4: COLORS["nvlink"], 8: COLORS["comm"]}
_ALGO_STYLE = {"nccl": ("NCCL", COLORS["ib"]), "custom": ("custom (best of one/two-shot)",
                                                          COLORS["nvlink"])}
_PUB_MARKERS = {"nccl": "s", "trtllm_custom": "^", "vllm_custom": "v"}
_PUB_LABELS = {"nccl": "NCCL (nccl-tests)", "trtllm_custom": "TensorRT-LLM",
               "vllm_custom": "vLLM custom"}


def decode_rows(recipe="compiled"):
    """Rows of our decode runs (``decode_<recipe>.csv``), integers typed, ``layer_s``
    (seconds per layer shard) added."""
    if recipe not in ("compiled", "eager"):
        raise ValueError(f"recipe must be 'compiled' or 'eager'; got {recipe!r}")
    text = specs.read_data_text(f"{DECODE_RUN}/decode_{recipe}.csv")
    out = []
    for r in csv.DictReader(io.StringIO(text)):
        r = dict(r)
        for k in _INTS:
            r[k] = int(r[k])
        r["layer_s"] = float(r["layer_us"]) * 1e-6
        out.append(r)
    return out


def decode_model_rows(recipe="compiled"):
    """:func:`decode_rows` with the model's time (``model_s``) and its error
    (``error`` = model / measured - 1) of each row."""
    rows = decode_rows(recipe)
    for r in rows:
        r["model_s"] = decode_layer_time(r["hidden"], r["heads"], r["kv_heads"],
                                         r["ffn_hidden"], r["tp"], r["batch"],
                                         r["context"], precision=r["precision"],
                                         recipe=recipe)
        r["error"] = r["model_s"] / r["layer_s"] - 1
    return rows


def tpot_rows(model, system, tps, *, batch, context, precision="bf16",
              allreduce="nccl"):
    """``[(tp, DecodeStep)]`` for each TP degree in ``tps`` that the model allows."""
    out = []
    for t in tps:
        try:
            out.append((t, decode_step(model, system, tp=t, batch=batch,
                                       context=context, precision=precision,
                                       allreduce=allreduce)))
        except ValueError:
            continue
    if not out:
        raise ValueError(f"tps: no TP degree of {list(tps)} is valid for {model!r} on "
                         f"{system!r}")
    return out


def plot_decode_layers(rows, *, shapes=("llama3-70b", "h5120-gqa8"), precision="bf16",
                       ax=None):
    """Measured decode layer-shard time against the bytes it reads (weights + KV
    cache), with the model at the same rows; held-out rows hollow.

    Parameters
    ----------
    rows : list of dict
        :func:`decode_model_rows`.
    shapes : sequence of str
        Layer shapes to show.
    precision : {"bf16", "fp8"}

    Returns
    -------
    matplotlib.axes.Axes
    """
    sel = [r for r in rows if r["shape"] in shapes and r["precision"] == precision]
    if not sel:
        raise ValueError(f"rows: none of shapes {list(shapes)} in {precision!r}")
    ax = new_axes(ax)
    for tp in sorted({r["tp"] for r in sel}):
        color = _TP_COLORS.get(tp, COLORS["accent"])
        for grid, face in (("fit", color), ("holdout", "none")):
            pts = [r for r in sel if r["tp"] == tp and r["grid"] == grid]
            if not pts:
                continue
            x = [r["weight_bytes"] + r["kv_bytes"] for r in pts]
            ax.scatter(x, [r["layer_s"] * 1e6 for r in pts], s=22, marker="o",
                       facecolors=face, edgecolors=color, linewidths=1.1,
                       label=f"TP{tp} measured" + (" (held out)" if grid == "holdout"
                                                   else ""))
            ax.scatter(x, [r["model_s"] * 1e6 for r in pts], s=18, marker="_",
                       color=COLORS["model"], linewidths=1.2,
                       label="model" if tp == min(r["tp"] for r in sel)
                       and grid == "fit" else None)
    gpu = specs.gpu("H200")
    xs = np.geomspace(min(r["weight_bytes"] + r["kv_bytes"] for r in sel) / 1.5,
                      max(r["weight_bytes"] + r["kv_bytes"] for r in sel) * 1.5, 50)
    ax.plot(xs, xs / gpu.memory_bandwidth * 1e6, ls="--", color=COLORS["hbm"], lw=1.2,
            label="bytes / spec HBM bandwidth")
    bytes_axis(ax.xaxis)
    ax.set_yscale("log")
    ax.set_xlabel("Bytes read per layer shard, weights + KV cache [B]")
    ax.set_ylabel("Time per layer [µs]")
    held = [abs(r["error"]) for r in sel if r["grid"] == "holdout"]
    if held:
        ax.text(0.02, 0.97, f"held-out rows shown: median |error| "
                f"{statistics.median(held):.0%}, max {max(held):.0%}",
                transform=ax.transAxes, va="top", fontsize=8)
    ax.legend(fontsize=7, loc="lower right", ncol=2)
    return ax


def plot_allreduce_sizes(system, n_ranks, published_system, *, ax=None, label=None):
    """Model all-reduce time against message size (NCCL and the custom kernels)
    on ``system`` with ``n_ranks`` GPUs, and the published rows of
    ``published_system`` beside it; the legend gives each table's median error.

    Returns
    -------
    matplotlib.axes.Axes
    """
    comp = allreduce_comparison(system, n_ranks, published_system)
    ax = new_axes(ax)
    # NCCL's time steps with the channels it opens for a size (a sawtooth between powers
    # of two): drawn at nccl-tests' sizes, the custom kernels on a fine grid
    grid = {"nccl": 2.0 ** np.arange(13, 24),
            "custom": np.geomspace(8 * units.KiB, 8 * units.MiB, 40)}
    for kind, (name, color) in _ALGO_STYLE.items():
        sizes = grid[kind]
        try:
            t = [allreduce_model_time(kind, s, n_ranks, system) * 1e6 for s in sizes]
        except ValueError:
            continue
        ax.plot(sizes, t, color=color, label=f"model: {name}")
    for impl in ("nccl", "trtllm_custom", "vllm_custom"):
        pts = [r for r in comp if r["implementation"] == impl]
        if not pts:
            continue
        kind = PUBLISHED_ALLREDUCE[impl]
        err = statistics.median(abs(r["error"]) for r in pts)
        ax.scatter([r["message_bytes"] for r in pts],
                   [r["published_s"] * 1e6 for r in pts], marker=_PUB_MARKERS[impl],
                   s=20, facecolors="none", edgecolors=_ALGO_STYLE[kind][1],
                   label=f"{_PUB_LABELS[impl]} (median |error| {err:.0%})")
    bytes_axis(ax.xaxis)
    ax.set_yscale("log")
    ax.set_xlabel("Message size [B]")
    ax.set_ylabel("All-reduce time [µs]")
    if label:
        ax.text(0.02, 0.97, label, transform=ax.transAxes, va="top", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    return ax


def plot_tpot_breakdown(groups, *, ax=None):
    """Stacked bars of compute and communication per output token, one bar per
    (label, DecodeStep), with the communication share and tokens/s per GPU.

    Parameters
    ----------
    groups : sequence of (str, DecodeStep)
        Bar labels and decode steps (e.g. one per TP degree and system).

    Returns
    -------
    matplotlib.axes.Axes
    """
    groups = list(groups)
    if not groups:
        raise ValueError("groups must be a non-empty sequence of (label, DecodeStep)")
    ax = new_axes(ax)
    ax.clear()
    y = np.arange(len(groups))[::-1]
    comp = np.array([d.compute_time for _, d in groups]) * 1e3
    comm = np.array([d.comm_time for _, d in groups]) * 1e3
    ax.barh(y, comp, color=COLORS["compute"], label="compute + memory")
    ax.barh(y, comm, left=comp, color=COLORS["comm"], label="communication")
    for yi, c, m, (_, d) in zip(y, comp, comm, groups):
        note = "" if d.fits_memory else ", does not fit"
        ax.text(c + m, yi, f"  {d.comm_share:.0%} comm, "
                f"{d.tokens_per_s_per_gpu:,.0f} tok/s/GPU{note}", va="center",
                fontsize=8)
    ax.set_yticks(y, [g for g, _ in groups])
    ax.set_xlabel("Time per output token [ms]")
    ax.set_xlim(0, _nice(float(np.max(comp + comm)) * 1.5))
    ax.grid(axis="y", visible=False)
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2, borderaxespad=0.2)
    return ax


def _nice(x):
    """The next of 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 x 10^k at or above ``x`` (an axis limit that stays put
    while the data move a little)."""
    k = 10.0 ** np.floor(np.log10(x))
    return float(next(m * k for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10) if m * k >= x))




# --- expert parallelism and disaggregated serving ---------------------------------------
_OP_COLORS = {"dispatch": COLORS["ib"], "combine": COLORS["pcie"]}
_EP_SOURCES = {"deepep-v1-2025-02": ("o", "DeepEP, first release (Feb 2025)"),
               "deepep-v1-legacy": ("s", "DeepEP, tables of June 2025")}
_EP_MODEL_LS = {"normal": "-", "low_latency": "-", "low_latency_nvlink": "--"}
_EP_MODEL_LABELS = {"normal": "model", "low_latency": "model, RDMA only",
                    "low_latency_nvlink": "model, NVLink in the node"}


def plot_ep_check(rows, *, kernel="normal", ax=None):
    """DeepEP's published dispatch and combine (markers, one shape per table) beside the
    model (lines) against the EP size, for one kernel family; the text gives each
    table's median and largest |error|.

    Parameters
    ----------
    rows : list of dict
        :func:`gpulab.inference.ep.ep_checks`.
    kernel : {"normal", "low_latency"}
        Normal kernels: DeepEP's bandwidth column [GB/s]; low-latency: time [µs].

    Returns
    -------
    matplotlib.axes.Axes
    """
    if kernel not in ("normal", "low_latency"):
        raise ValueError(f"kernel must be 'normal' or 'low_latency'; got {kernel!r}")
    sel = [r for r in rows if r["kernel"] == kernel]
    if not sel:
        raise ValueError(f"rows: none of kernel {kernel!r}")
    ax = new_axes(ax)
    for (mk, op) in sorted({(r["model_kernel"], r["operation"]) for r in sel}):
        pts = sorted((r["ep"], r["model"]) for r in sel
                     if r["model_kernel"] == mk and r["operation"] == op)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], color=_OP_COLORS[op],
                ls=_EP_MODEL_LS[mk], lw=1.3)
    notes = []
    for src, (marker, name) in _EP_SOURCES.items():
        for op in ("dispatch", "combine"):
            pts = [r for r in sel if r["source_id"] == src and r["operation"] == op]
            if not pts:
                continue
            filled = src == "deepep-v1-2025-02"
            ax.scatter([r["ep"] for r in pts], [r["published"] for r in pts],
                       marker=marker, s=26, linewidths=1.1, edgecolors=_OP_COLORS[op],
                       facecolors=_OP_COLORS[op] if filled else "none", zorder=3)
        errs = [abs(r["error"]) for r in sel if r["source_id"] == src]
        if errs:
            notes.append(f"{name.split(', ')[1]}: median |error| "
                         f"{statistics.median(errs):.0%}, max {max(errs):.0%}")
    ax.set_xscale("log", base=2)
    eps = sorted({r["ep"] for r in sel})
    ax.set_xticks(eps, [str(e) for e in eps])
    ax.minorticks_off()
    ax.set_xlabel("EP size [GPUs]")
    if kernel == "normal":
        ax.set_ylabel("Bandwidth as DeepEP counts it [GB/s]")
        ax.set_ylim(0, max(max(r["published"], r["model"]) for r in sel) * 1.45)
    else:
        ax.set_ylabel("Time of one call [µs]")
        ax.set_ylim(0, max(max(r["published"], r["model"]) for r in sel) * 2.0)
    ax.text(0.02, 0.98, "\n".join(notes), transform=ax.transAxes, va="top", fontsize=7)
    grey = COLORS["compute"]
    handles = [Line2D([], [], color=_OP_COLORS[op], lw=1.3, label=op)
               for op in ("dispatch", "combine")]
    for mk in sorted({r["model_kernel"] for r in sel}, key=list(_EP_MODEL_LS).index):
        handles.append(Line2D([], [], color=grey, ls=_EP_MODEL_LS[mk], lw=1.3,
                              label=_EP_MODEL_LABELS[mk]))
    for src, (marker, name) in _EP_SOURCES.items():
        if any(r["source_id"] == src for r in sel):
            filled = src == "deepep-v1-2025-02"
            handles.append(Line2D([], [], ls="none", marker=marker, markersize=5,
                                  markeredgecolor=grey,
                                  markerfacecolor=grey if filled else "none",
                                  label=name.replace("DeepEP, ", "published, ")))
    ax.legend(handles=handles, fontsize=7, loc="upper right", bbox_to_anchor=(1.0, 0.86))
    return ax


_KV_SOURCES = {"mooncake-vllm-pd-h800": ("o", COLORS["nvlink"], "vLLM, Qwen3-8B, H800"),
               "mooncake-sglang-pd-h20": ("^", COLORS["hbm"],
                                          "SGLang, Qwen3-235B-A22B, H20")}


def plot_kv_transfer_check(rows, *, ax=None):
    """Mooncake's published KV transfer times (markers) beside the model (lines: KV
    bytes at the line rate times the fabric efficiency) against the prompt length; the
    legend gives each run's error range.

    Parameters
    ----------
    rows : list of dict
        :func:`gpulab.inference.disagg.kv_transfer_checks`.

    Returns
    -------
    matplotlib.axes.Axes
    """
    rows = list(rows)
    if not rows:
        raise ValueError("rows must hold at least one kv_transfer_checks row")
    ax = new_axes(ax)
    for src in sorted({r["source_id"] for r in rows}):
        marker, color, name = _KV_SOURCES.get(src, ("D", COLORS["accent"], src))
        pts = sorted((r for r in rows if r["source_id"] == src),
                     key=lambda r: r["prompt_tokens"])
        x = [r["prompt_tokens"] for r in pts]
        errs = [r["error"] for r in pts]
        ax.scatter(x, [r["published_ms"] for r in pts], marker=marker, s=24,
                   facecolors="none", edgecolors=color, linewidths=1.1, zorder=3,
                   label=f"{name}, published")
        ax.plot(x, [r["model_ms"] for r in pts], color=color, lw=1.3,
                label=f"model (error {min(errs):+.0%} to {max(errs):+.0%})")
    _prompt_axis(ax, sorted({r["prompt_tokens"] for r in rows}))
    ax.set_yscale("log")
    ax.set_xlabel("Prompt length [tokens]")
    ax.set_ylabel("KV transfer time [ms]")
    ax.legend(fontsize=7, loc="upper left")
    return ax


def _prompt_axis(ax, prompts):
    ax.set_xscale("log", base=2)
    ticks = [p for i, p in enumerate(prompts) if i % 2 == 0] if len(prompts) > 6 \
        else prompts
    ax.set_xticks(ticks, [f"{p // 1024}K" if p >= 1024 else str(p) for p in ticks])
    ax.minorticks_off()


_PATH_COLORS = (COLORS["nvlink"], COLORS["ib"], COLORS["comm"], COLORS["pcie"])


def plot_ttft_share(curves, *, ax=None):
    """Share of the time to first token that the KV transfer adds, against the prompt
    length: one colour per path, solid when the cache moves after the prefill, dashed
    when it moves layer by layer during it.

    Parameters
    ----------
    curves : list of (str, str, sequence of int, sequence of float)
        ``(path label, overlap, prompt lengths, shares in [0, 1])``, overlap
        ``"sequential"`` or ``"layerwise"``.

    Returns
    -------
    matplotlib.axes.Axes
    """
    curves = list(curves)
    if not curves:
        raise ValueError("curves must hold at least one (label, overlap, prompts, shares)")
    ax = new_axes(ax)
    paths = list(dict.fromkeys(c[0] for c in curves))
    for label, overlap, prompts, shares in curves:
        if overlap not in ("sequential", "layerwise"):
            raise ValueError(f"overlap must be 'sequential' or 'layerwise'; got {overlap!r}")
        color = _PATH_COLORS[paths.index(label) % len(_PATH_COLORS)]
        ax.plot(list(prompts), [100 * s for s in shares], color=color,
                ls="-" if overlap == "sequential" else "--",
                label=f"{label}" + (", layer by layer" if overlap == "layerwise" else ""))
    _prompt_axis(ax, sorted({p for c in curves for p in c[2]}))
    ax.set_yscale("log")
    ax.set_xlabel("Prompt length [tokens]")
    ax.set_ylabel("KV transfer share of TTFT [%]")
    ax.legend(fontsize=7, loc="lower left", ncol=2, bbox_to_anchor=(0.0, 1.0))
    return ax


def plot_ep_times(groups, *, ax=None):
    """One dispatch or combine per row: its fixed cost (grey), then the time of its
    NVLink leg and of its RDMA leg side by side (the call lasts the fixed cost plus the
    longer leg, written at the end of the row).

    Parameters
    ----------
    groups : sequence of (str, EPTime)
        Row labels and :class:`gpulab.inference.ep.EPTime` results.

    Returns
    -------
    matplotlib.axes.Axes
    """
    groups = list(groups)
    if not groups:
        raise ValueError("groups must be a non-empty sequence of (label, EPTime)")
    ax = new_axes(ax)
    ax.clear()
    y = np.arange(len(groups))[::-1]
    for i, (yi, (_, d)) in enumerate(zip(y, groups)):
        lat = d.latency * 1e6
        for off, leg, color, name in ((0.18, d.nvlink_time, COLORS["nvlink"], "NVLink leg"),
                                      (-0.18, d.rdma_time, COLORS["ib"], "RDMA leg")):
            ax.barh(yi + off, lat, height=0.34, color=COLORS["compute"],
                    label="fixed cost" if i == 0 and off > 0 else None)
            ax.barh(yi + off, leg * 1e6, left=lat, height=0.34, color=color,
                    label=name if i == 0 else None)
        ax.text(d.time * 1e6, yi, f"  {d.time * 1e6:,.0f} µs, {d.bottleneck}-bound",
                va="center", fontsize=8)
    ax.set_yticks(y, [g for g, _ in groups])
    ax.set_xlabel("Time of one call [µs]")
    ax.set_xlim(0, _nice(max(d.time for _, d in groups) * 1e6 * 1.6))
    ax.grid(axis="y", visible=False)
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=3, borderaxespad=0.2,
              fontsize=8)
    return ax
