"""Precomputed charts of the parallelism topic: gradient buckets, one TP x PP x DP
layout, tensor-parallel degrees and the NVLink-vs-PCIe purchase (the bucket,
layout, TP and ROI explorers)."""
from __future__ import annotations

import functools

import altair as alt
import numpy as np

from .base import BYTES_LABEL_EXPR, Control, build, picked
from .. import collectives, parallelism, systems, units

#: Grid of the bucket chart: systems, data-parallel GPUs, gradient sizes [B] and
#: marked bucket sizes [B] (PyTorch DDP's 25 MiB and Megatron-Core's 80 MB among them).
BUCKET_SYSTEMS = ("h200-x2-measured", "hgx-h200")
BUCKET_RANKS = (2, 8)
BUCKET_GRADIENTS = (2 ** 28, 2 ** 31, 2 ** 34)
BUCKET_MARKS = (2 ** 20, 25 * 2 ** 20, 80_000_000, 2 ** 28, 2 ** 30, 2 ** 32)
#: Bucket sizes of each curve: 256 KiB to 16 GiB in half powers of two, and the marks.
BUCKET_CURVE = tuple(sorted({float(2 ** (k / 2)) for k in range(36, 69)}
                            | {float(b) for b in BUCKET_MARKS}))
#: Grid of the layout chart: models, global batches [sequences] and layouts (TP, PP,
#: DP) that fill the system's eight GPUs.
LAYOUT_MODELS = ("13b", "llama3-8b", "70b")
LAYOUT_BATCHES = (16, 64, 256)
LAYOUT_CHOICES = tuple((t, p, 8 // (t * p)) for t in (1, 2, 4, 8) for p in (1, 2, 4, 8)
                       if t * p <= 8)
#: Grid of the TP chart: models, sequence lengths [tokens], TP degrees to detail.
TP_MODELS = ("13b", "llama3-8b", "70b", "llama3-70b")
TP_CHART_SEQ_LENS = (2048, 4096, 8192, 32768)
TP_CHART_DEGREES = (1, 2, 4, 8)
#: Precisions of the TP chart (FP8: torchao float8 training under torch.compile, the
#: model's compiled recipe, logits in BF16).
TP_CHART_PRECISIONS = ("bf16", "fp8")
#: Grid of the ROI chart: nodes, NVLink systems, NVLink price [USD per GPU-hour],
#: project sizes [tokens].
ROI_PRICES = tuple(np.round(np.arange(2.0, 4.01, 0.25), 2).tolist())
ROI_TOKENS = (20e9, 200e9, 2e12)

_STEP_PARTS = ("compute", "tp_comm", "pp_comm", "dp_comm", "bubble")
_STEP_WORDS = {"compute": "compute", "tp_comm": "TP communication",
               "pp_comm": "PP communication", "dp_comm": "DP communication",
               "bubble": "pipeline bubble"}


def _bucket_label(b):
    return {25 * 2 ** 20: "25 MiB (DDP)", 80_000_000: "80 MB (Megatron)"}.get(
        b, units.fmt_bytes(b))


def bucket_chart(system="h200-x2-measured", n_ranks=2, gradient_bytes=2 ** 31,
                 bucket_bytes=25 * 2 ** 20):
    """Time of a gradient's all_reduce split into buckets, against the bucket size.
    Precomputed by :func:`gpulab.parallelism.bucket_allreduce_time` over
    :data:`BUCKET_CURVE` and :func:`gpulab.collectives.predict` (one call) for
    :data:`BUCKET_SYSTEMS`, :data:`BUCKET_RANKS` and :data:`BUCKET_GRADIENTS`; the
    summary at each of :data:`BUCKET_MARKS`. The arguments pick the initial point."""
    controls = (
        Control("system", "System", BUCKET_SYSTEMS, system),
        Control("n_ranks", "GPUs (data parallel)", BUCKET_RANKS, n_ranks, kind="radio"),
        Control("gradient", "Gradients", BUCKET_GRADIENTS, gradient_bytes,
                labels=tuple(units.fmt_bytes(g) for g in BUCKET_GRADIENTS)),
        Control("bucket", "Bucket size", BUCKET_MARKS, bucket_bytes,
                labels=tuple(_bucket_label(b) for b in BUCKET_MARKS)),
    )

    @functools.lru_cache(maxsize=None)
    def curve(system, n_ranks, gradient):
        total, nb = parallelism.bucket_allreduce_time(gradient, np.asarray(BUCKET_CURVE),
                                                      n_ranks, system)
        one = collectives.predict("all_reduce", gradient, n_ranks, system,
                                  gpus_per_process=1)
        return total, nb, one

    def point(system, n_ranks, gradient, bucket):
        if n_ranks > systems.get(system).n_gpus:
            return [], (f"{system} has {systems.get(system).n_gpus} GPUs: no "
                        f"{n_ranks}-GPU data-parallel group there.\nGradients and "
                        f"Bucket size change nothing here; pick fewer GPUs or another "
                        f"system.\n ")
        total, nb, one = curve(system, n_ranks, gradient)
        rows = [{"bytes": round(b), "ms": float(t) * 1e3}
                for b, t in zip(BUCKET_CURVE, total)]
        i = BUCKET_CURVE.index(float(bucket))
        tb, k, t1 = float(total[i]), int(nb[i]), float(one.time[0])
        eff = gradient / tb * collectives.busbw_factor("all_reduce", n_ranks)
        text = (f"{units.fmt_bytes(gradient)} of gradients in {k} bucket(s) of "
                f"{units.fmt_bytes(min(bucket, gradient))}: {k} all_reduce call(s) on "
                f"{n_ranks} GPUs of {system},\nabout {units.fmt_time(tb / k)} each, "
                f"{units.fmt_time(tb)} in all (no overlap with the backward pass).\n"
                f"Effective busbw {eff / units.GB:.0f} GB/s per direction, vs "
                f"{float(one.busbw[0]) / units.GB:.0f} GB/s for one call "
                f"({units.fmt_time(t1)}): the buckets cost {tb / t1 - 1:.0%} more time.")
        return rows, text

    def plot(base):
        x = alt.X("bytes:Q", scale=alt.Scale(type="log", base=2), title="Bucket size",
                  axis=alt.Axis(values=[2 ** k for k in range(18, 35, 2)],
                                labelExpr=BYTES_LABEL_EXPR))
        y = alt.Y("ms:Q", scale=alt.Scale(type="log"),
                  title="Gradient all_reduce time [ms]")
        line = base.mark_line(point=alt.OverlayMarkDef(size=10)).encode(x=x, y=y, tooltip=[
            alt.Tooltip("bytes:Q", format=","), alt.Tooltip("ms:Q", format=".4g")])
        mark = base.transform_filter(picked("bytes", "bucket")).mark_point(
            size=160, color="#d62728", filled=True).encode(x=x, y=y)
        return line + mark

    return build("bucket", "Gradient all_reduce time against bucket size", controls,
                 point, plot, rows_by=("system", "n_ranks", "gradient"))


def layout_chart(model="13b", layout=(2, 2, 2), global_batch=64, *, system="dgx-h100",
                 micro_batch=1, zero=1):
    """Step time (compute, TP/PP/DP communication, bubble) and memory per GPU of one
    TP x PP x DP layout of eight GPUs. Precomputed by
    :func:`gpulab.parallelism.step_time` for :data:`LAYOUT_MODELS`,
    :data:`LAYOUT_BATCHES` and :data:`LAYOUT_CHOICES` on ``system`` (the keywords
    fixed); layouts the model refuses say why. ``layout`` is a (TP, PP, DP) of
    :data:`LAYOUT_CHOICES`."""
    names = tuple(f"TP{t} PP{p} DP{d}" for t, p, d in LAYOUT_CHOICES)
    if tuple(layout) not in LAYOUT_CHOICES:
        raise ValueError(f"layout must be one of {LAYOUT_CHOICES}; got {layout!r}")
    controls = (
        Control("model", "Model", LAYOUT_MODELS, model),
        Control("layout", "Layout", names, names[LAYOUT_CHOICES.index(tuple(layout))]),
        Control("batch", "Global batch [sequences]", LAYOUT_BATCHES, global_batch,
                kind="radio"),
    )
    sysobj = systems.get(system)
    cap = sysobj.gpu_spec.memory_bytes
    usable = cap * (1.0 - parallelism.assumption("memory_reserve_fraction"))

    def point(model, layout, batch):
        tp, pp, dp = LAYOUT_CHOICES[names.index(layout)]
        try:
            st = parallelism.step_time(model, system, parallelism.Layout(tp, pp, dp),
                                       global_batch=batch, micro_batch=micro_batch,
                                       zero=zero)
        except ValueError as exc:
            return [], f"TP{tp} × PP{pp} × DP{dp}: {exc}.\n \n "
        parts = st.components()
        rows = [{"part": _STEP_WORDS[p], "order": i, "s": parts[p]}
                for i, p in enumerate(_STEP_PARTS)]
        seq = parallelism.model(model).seq_len
        text = (f"{st.layout} ({st.layout.n_gpus} of {sysobj.n_gpus} GPUs of {system}): "
                f"{st.total:.2f} s per step of {batch} sequences × {seq} tokens, "
                f"{st.tokens_per_s:,.0f} tokens/s, MFU {st.mfu:.0%}.\n"
                f"Communication and bubble: {1 - st.compute / st.total:.0%} of the step "
                f"({st.micro_batches} micro-batches).\n"
                f"Memory per GPU {st.memory.total / units.GB:.1f} GB of "
                f"{usable / units.GB:.1f} GB usable: "
                + ("fits." if st.fits else "does not fit."))
        return rows, text

    def plot(base):
        return base.mark_bar().encode(
            x=alt.X("sum(s):Q", title="Step time [s]"),
            color=alt.Color("part:N", sort=[_STEP_WORDS[p] for p in _STEP_PARTS],
                            title=None, legend=alt.Legend(orient="bottom")),
            order=alt.Order("order:Q"),
            tooltip=["part:N", alt.Tooltip("s:Q", format=".3g")])

    return build("layout", "Step time of one layout", controls, point, plot,
                 height=40,
                 note=(f"{system}, micro-batch "
                       f"{micro_batch}, ZeRO-{zero}, no recomputation"))


def tp_chart(model="13b", tp=4, seq_len=4096, *, precision="bf16", system="hgx-h200",
             micro_batch=1):
    """Per-layer compute against TP communication for every usable TP degree, one
    degree detailed. Precomputed by :func:`gpulab.parallelism.tp_degree_rows` for
    :data:`TP_MODELS`, :data:`TP_CHART_SEQ_LENS`, sequence parallelism off/on and
    :data:`TP_CHART_PRECISIONS` on ``system``; the summary for each of
    :data:`TP_CHART_DEGREES`. On a GPU without FP8 the FP8 points carry the model's
    refusal and no bars."""
    controls = (
        Control("model", "Model", TP_MODELS, model),
        Control("seq_len", "Sequence length", TP_CHART_SEQ_LENS, seq_len),
        Control("sp", "--sequence-parallel", ("off", "on"), "off", kind="radio"),
        Control("precision", "Precision", TP_CHART_PRECISIONS, precision,
                labels=tuple(p.upper() for p in TP_CHART_PRECISIONS), kind="radio"),
        Control("tp", "Detail TP", TP_CHART_DEGREES, tp, kind="radio"),
    )
    cap = systems.get(system).gpu_spec.memory_bytes / units.GB

    @functools.lru_cache(maxsize=None)
    def degrees(model, seq_len, sp, precision):
        try:
            return parallelism.tp_degree_rows(model, system, seq_len=seq_len,
                                              micro_batch=micro_batch,
                                              sequence_parallel=sp == "on",
                                              precision=precision)
        except ValueError as exc:
            return exc

    def point(model, seq_len, sp, precision, tp):
        got = degrees(model, seq_len, sp, precision)
        if isinstance(got, ValueError):
            return [], f"{model} on {system} in {precision.upper()}: {got}.\n \n "
        rows, steps, skipped = got
        # one row per degree, both parts [ms] (the plot folds them into bars: half
        # the rows of one per part, the page stays light)
        out = [{"degree": label, "compute": comp * 1e3, "exposed": expo * 1e3}
               for label, comp, _comm, expo, _note in rows]
        if tp not in steps:
            why = skipped.get(tp, "not a usable degree here")
            return out, f"TP{tp} for {model}: {why}.\n \n "
        st = steps[tp]
        label, comp, comm, expo, _ = rows[list(steps).index(tp)]
        fits = [t for t, x in steps.items() if x.fits]
        best = max(fits, key=lambda t: steps[t].tokens_per_s) if fits else None
        text = (f"{model} on {system} in {precision.upper()}, {label}: per layer and "
                f"micro-batch {units.fmt_time(comp)} of compute, {units.fmt_time(comm)} "
                f"of TP communication, {units.fmt_time(expo)} exposed "
                f"({expo / (comp + expo):.0%} of the layer's time).\n"
                f"Memory per GPU {st.memory.total / units.GB:.0f} GB of {cap:.0f} GB: "
                + ("fits" if st.fits else "does not fit")
                + f"; {st.tokens_per_s / 1e3:.1f} k tokens/s on {st.layout.n_gpus} GPUs.\n"
                + (f"Fastest layout that fits: TP{best} "
                   f"({steps[best].tokens_per_s / 1e3:.1f} k tokens/s)." if best else
                   "No TP × DP layout fits: add pipeline stages, ZeRO-3 or GPUs."))
        return out, text

    def plot(base):
        first = "datum.part_key === 'compute'"
        return base.transform_fold(["compute", "exposed"], as_=["part_key", "ms"]) \
            .transform_calculate(
                part=f"{first} ? 'compute' : 'exposed TP communication'",
                order=f"{first} ? 0 : 1").mark_bar().encode(
            y=alt.Y("degree:N", sort=None, title=None),
            x=alt.X("sum(ms):Q", title="Per layer and micro-batch [ms]"),
            color=alt.Color("part:N", title=None, legend=alt.Legend(orient="bottom")),
            order=alt.Order("order:Q"),
            tooltip=["degree:N", "part:N", alt.Tooltip("ms:Q", format=".3g")])

    return build("tp", "Tensor-parallel degree: compute against exposed communication",
                 controls, point, plot, rows_by=("model", "seq_len", "sp", "precision"),
                 height=160,
                 note=f"{system}, micro-batch {micro_batch}, no --tp-comm-overlap; FP8 "
                      "as torchao float8 training under torch.compile, logits in BF16")


def roi_chart(model="70b", nodes=8, fast="dgx-h100", *, slow="h100-pcie",
              price_fast=None, price_slow=None, project_tokens=200e9):
    """Cost and days of one training project on an NVLink and a PCIe cluster.
    Precomputed by :func:`gpulab.parallelism.roi_comparison` for
    :data:`gpulab.parallelism.ROI_NODES`, :data:`gpulab.parallelism.ROI_FAST_SYSTEMS`,
    NVLink prices :data:`ROI_PRICES` and :data:`ROI_TOKENS`, at the PCIe price
    ``price_slow`` (default: the illustrative example price)."""
    prices = parallelism.ROI_EXAMPLE_PRICES
    price_fast = prices["fast"] if price_fast is None else price_fast
    price_slow = prices["slow"] if price_slow is None else price_slow
    controls = (
        Control("nodes", "Nodes of 8 GPUs", tuple(parallelism.ROI_NODES), nodes,
                kind="radio"),
        Control("fast", "NVLink system", tuple(parallelism.ROI_FAST_SYSTEMS), fast),
        Control("price", "NVLink USD per GPU-hour", ROI_PRICES, price_fast,
                kind="slider"),
        Control("tokens", "Project", ROI_TOKENS, project_tokens,
                labels=tuple(f"{t / 1e9:g}B tokens" for t in ROI_TOKENS)),
    )
    price_label, tokens_label = controls[2].label, controls[3].label

    def point(nodes, fast, price, tokens):
        try:
            roi, (sf, ss) = parallelism.roi_comparison(
                model, nodes, fast, slow, price_fast=price, price_slow=price_slow,
                project_tokens=tokens)
        except ValueError as exc:
            # no layout fits: no cost to compare, so the price and project controls
            # have nothing to act on here, and the text says so
            return [], (f"{exc}.\nNo cost to compare at this point: {price_label} and "
                        f"{tokens_label} change nothing until the model fits on both "
                        f"systems.\n ")
        day = 86400.0
        rows = [{"system": fast, "kUSD": roi.cost_fast / 1e3,
                 "days": roi.project_s_fast / day},
                {"system": slow, "kUSD": roi.cost_slow / 1e3,
                 "days": roi.project_s_slow / day}]
        cheaper = fast if roi.cost_fast < roi.cost_slow else slow
        text = (f"{model} on {8 * nodes} GPUs: {fast} {sf.layout} {sf.total:.3g} s/step; "
                f"{slow} {ss.layout} {ss.total:.3g} s/step ({roi.speedup:.1%} faster "
                f"on {fast}).\n"
                f"{roi.project_s_fast / day:.3g} vs {roi.project_s_slow / day:.3g} days; "
                f"cost per million tokens {roi.cost_per_mtoken_fast:.3g} vs "
                f"{roi.cost_per_mtoken_slow:.3g} USD.\n"
                f"Break-even price ratio {roi.breakeven_price_ratio:.3f}; yours "
                f"{price / price_slow:.3f}: {cheaper} is cheaper for this project.")
        return rows, text

    def plot(base):
        return base.mark_bar().encode(
            y=alt.Y("system:N", title=None),
            x=alt.X("kUSD:Q", title="Project cost [thousand USD, illustrative prices]"),
            tooltip=["system:N", alt.Tooltip("kUSD:Q", format=".4g"),
                     alt.Tooltip("days:Q", format=".3g")])

    return build("roi", "Is NVLink worth it? Cost of one project", controls, point,
                 plot, height=70,
                 note=f"model {model}, {slow} at {price_slow:g} USD per GPU-hour "
                      "(illustrative prices, not quotes)")
