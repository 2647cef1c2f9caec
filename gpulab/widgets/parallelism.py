"""Explorers of the parallelism topic: gradient buckets, the layout chooser,
tensor-parallel degrees and the NVLink-vs-PCIe purchase (ROI).

UI only: controls in display units, converted to SI at the edge; every number
comes from the model layer. Factories return the widget (never display it).
"""
from __future__ import annotations

import html
import textwrap

import ipywidgets as W
from .base import (Explorer, PNGView, TwoPanelView, set_ranks, split_figure,
                   system_ranks_controls)
from .. import collectives, parallelism, plotting, systems, units


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


class _BucketExplorer(Explorer):
    def __init__(self, system, n_ranks, gradient_bytes, bucket_bytes):

        style = {"description_width": "initial"}
        controls = {
            **system_ranks_controls(system, n_ranks, "GPUs (data parallel)", style),
            "gradient_bytes": W.SelectionSlider(
                options=[(units.fmt_bytes(v), v) for v in GRADIENT_SIZES],
                value=gradient_bytes, description="Gradients", style=style),
            "bucket_bytes": W.SelectionSlider(
                options=[(BUCKET_LABELS.get(v, units.fmt_bytes(v)), v)
                         for v in BUCKET_SIZES],
                value=bucket_bytes, description="Bucket", style=style,
                layout=W.Layout(width="480px")),
        }
        super().__init__(controls, PNGView(figsize=(6.4, 3.4)))
        self.view.fig.subplots_adjust(left=0.12, right=0.97, top=0.95, bottom=0.16)
        self.result = None
        self.update()

    def _rows(self):
        c = self.controls
        return [(c["system"], c["n_ranks"]), (c["gradient_bytes"], c["bucket_bytes"])]

    def _system_changed(self):
        n_gpus = systems.get(self.controls["system"].value).n_gpus
        set_ranks(self, n_gpus, min(self.controls["n_ranks"].value, n_gpus))

    def _update(self):
        import numpy as np
        c = self.controls
        name, n = c["system"].value, c["n_ranks"].value
        g, b = c["gradient_bytes"].value, c["bucket_bytes"].value
        grid = np.asarray(BUCKET_GRID)
        total, nb = parallelism.bucket_allreduce_time(g, np.append(grid, float(b)), n, name)
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
    Megatron-Core's defaults). Uses :func:`gpulab.parallelism.bucket_allreduce_time` (one
    :func:`gpulab.collectives.predict` all_reduce per bucket) and draws
    :func:`gpulab.plotting.plot_bucket_time`.
    """
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

#: Global batch sizes offered by the layout explorer. [sequences]
LAYOUT_BATCHES = (8, 16, 32, 64, 128, 256, 512, 1024)


#: Bar labels of the layout explorer (and of the chapter's static figure).
LAYOUT_LABELS = ("per GPU", "one step")


class _LayoutExplorer(Explorer):
    def __init__(self, model, system, tp, pp, dp, zero, recompute,
                 sequence_parallel, global_batch, micro_batch):
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
        self.step = None        # the StepTime drawn (None: the setting cannot run)
        self._fit_note = ""
        self._refused = ""      # why the current setting cannot run ("" if it can)
        self._hidden = []       # data artists hidden while a refused setting is shown
        self._note = None       # the figure's "cannot run" note (a figure text)
        super().__init__(controls, TwoPanelView())
        self.update()

    def _rows(self):
        c = self.controls
        return [(c["model"], c["system"]), (c["tp"], c["pp"], c["dp"]),
                (c["zero"], c["sequence_parallel"]), (c["recompute"],),
                (c["global_batch"], c["micro_batch"])]

    def _step(self, key):
        """StepTime of ``key`` (cached: the same settings are not recomputed)."""
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
        self._refused = ""
        super().update()
        if self.message.value:
            # refused: the figure must not keep showing the last setting that ran
            self.step = None
            self.summary.value = ""
            self._draw_refused(self._refused or "this setting cannot be drawn: see "
                                                "the message above")
        elif self._fit_note:
            self.show_message(self._fit_note)

    def _draw_refused(self, reason):
        """Clear the data of both panels and write why in the middle of the figure."""
        view = self.view

        def draw(_ax):
            for a in split_figure(view.fig)[1]:
                if a.get_visible() and a not in view.ax_memory.spines.values() \
                        and a not in view.ax_step.spines.values():
                    a.set_visible(False)
                    self._hidden.append(a)
            text = "\n".join(["Nothing to draw for this setting:"]
                             + textwrap.wrap(reason, 48))
            if self._note is None:
                box = view.ax_memory.get_position()    # over the memory panel
                self._note = view.fig.text(
                    (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2, text, ha="center",
                    va="center", fontsize=10,
                    color="#8a1c1c", bbox={"boxstyle": "round", "fc": "#fdecea",
                                           "ec": "#f5c2c0"})
            self._note.set_text(text)
            self._note.set_visible(True)

        view.render(draw)

    def _restore_drawn(self):
        """Undo :meth:`_draw_refused` before the plot functions update their artists."""
        for a in self._hidden:
            a.set_visible(True)
        self._hidden = []
        if self._note is not None:
            self._note.set_visible(False)

    def _update(self):
        c = self.controls
        key = (c["model"].value, c["system"].value, int(c["tp"].value),
               int(c["pp"].value), int(c["dp"].value), int(c["zero"].value),
               c["recompute"].value, bool(c["sequence_parallel"].value),
               int(c["global_batch"].value), int(c["micro_batch"].value))
        try:
            st = self._step(key)
        except ValueError as exc:
            self._refused = str(exc)
            raise
        self.step = st
        sysobj = systems.get(key[1])
        cap = sysobj.gpu_spec.memory_bytes
        usable = cap * (1.0 - parallelism.assumption("memory_reserve_fraction"))
        view = self.view

        def draw(_ax):
            self._restore_drawn()
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
    :func:`gpulab.plotting.plot_step_breakdown`. A layout that cannot run (it breaks
    a divisibility rule, or needs more GPUs than the system has) shows the reasons,
    and the figure is cleared with a note saying why, so that it never shows an
    earlier layout; one that does not fit is drawn, with the memory it lacks in the
    message.
    """
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

#: Sequence lengths of the TP explorer. [tokens]
TP_SEQ_LENS = (1024, 2048, 4096, 8192, 16384, 32768)


#: Precisions of the TP explorer: (label, value) of each button and its tooltip. FP8
#: is the recipe frameworks run (torchao float8 training under torch.compile; the
#: model's ``recipe="compiled"``), the logits layer staying in BF16.
TP_PRECISIONS = (("BF16", "bf16"), ("FP8", "fp8"))
_TP_PRECISION_TIPS = ("BF16 mixed precision",
                      "FP8 GEMMs as torchao float8 training runs them under "
                      "torch.compile (logits in BF16)")


class _TPExplorer(Explorer):
    def __init__(self, model, system, tp, seq_len, micro_batch, sequence_parallel,
                 tp_overlap, precision):
        style = {"description_width": "initial"}
        controls = {
            "model": W.Dropdown(options=parallelism.model_names(), value=model,
                                description="Model", style=style),
            "system": W.Dropdown(options=systems.names(), value=system,
                                 description="System", style=style),
            "tp": W.Dropdown(options=list(parallelism.TP_DEGREES), value=tp,
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
            "precision": W.ToggleButtons(options=list(TP_PRECISIONS), value=precision,
                                         description="Precision",
                                         tooltips=list(_TP_PRECISION_TIPS),
                                         style={**style, "button_width": "60px"}),
        }
        self.rows = []
        self.highlighted = None
        self.shown = None       # the setting the figure shows (None: nothing drawn)
        super().__init__(controls, PNGView(figsize=(7.0, 3.4)))
        self.view.fig.subplots_adjust(left=0.16, right=0.98, top=0.97, bottom=0.15)
        self.update()

    def _rows(self):
        c = self.controls
        return [(c["model"], c["system"], c["tp"]),
                (c["seq_len"], c["micro_batch"], c["precision"]),
                (c["sequence_parallel"], c["tp_overlap"])]

    def update(self):
        super().update()
        if self.message.value:
            # refused: the figure keeps the last setting that ran; say which
            self.summary.value = (
                "" if self.shown is None else
                f"The figure still shows the last setting that ran: "
                f"{html.escape(self.shown)}.")

    def _update(self):
        c = self.controls
        model, system, tp = c["model"].value, c["system"].value, c["tp"].value
        sp, o = bool(c["sequence_parallel"].value), float(c["tp_overlap"].value)
        precision = c["precision"].value
        if o > 0 and not sp:
            raise ValueError("--tp-comm-overlap needs --sequence-parallel (Megatron "
                             "refuses it otherwise): tick sequence parallelism or "
                             "set the hidden share to 0")
        s = systems.get(system)
        if tp > s.n_gpus:
            raise ValueError(f"tp: {system} has {s.n_gpus} GPUs; got TP{tp}")
        rows, steps, skipped = parallelism.tp_degree_rows(
            model, system, seq_len=int(c["seq_len"].value),
            micro_batch=int(c["micro_batch"].value), sequence_parallel=sp,
            tp_overlap=o, precision=precision)
        if tp in skipped:
            raise ValueError(f"TP{tp} for {model}: {skipped[tp]}")
        if tp not in steps:
            raise ValueError(f"tp: no usable TP degree up to TP{tp} for {model} on "
                             f"{system}")
        high = list(steps).index(tp)
        self.rows, self.highlighted = rows, high
        self.view.render(lambda ax: plotting.plot_tp_degree(rows, highlight=high,
                                                            ax=ax))
        word = dict((v, k) for k, v in TP_PRECISIONS)[precision]
        self.shown = (f"{model} on {system} in {word}, TP{tp}, sequence length "
                      f"{c['seq_len'].value}, micro-batch {c['micro_batch'].value}"
                      + (", sequence parallel" if sp else "")
                      + (f", {o:.0%} of the TP communication hidden" if o else ""))
        st = steps[tp]
        label, comp, comm, expo, _ = rows[high]
        fits = [t for t, x in steps.items() if x.fits]
        best = max(fits, key=lambda t: steps[t].tokens_per_s) if fits else None
        mem_gb = st.memory.total / units.GB
        cap = s.gpu_spec.memory_bytes / units.GB
        lines = [
            f"<b>{model}</b> on <b>{system}</b> in <b>{word}</b>, {label}: per layer "
            f"and micro-batch "
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
        if precision == "fp8":
            lines.append("FP8 as frameworks run it: torchao float8 training under "
                         "torch.compile (the logits layer in BF16).")
        lines.extend(f"Note: {n}" for n in st.notes if "does not fit" not in n
                     and "memory" not in n)
        if skipped:
            lines.append("Not possible: " + "; ".join(
                f"TP{t} ({why})" for t, why in skipped.items()))
        self.summary.value = "<br>".join(lines)


def tp_explorer(model="13b", system="hgx-h200", tp=4, seq_len=4096, micro_batch=1,
                sequence_parallel=False, tp_overlap=0.0, precision="bf16"):
    """Choose a tensor-parallel degree: per-layer compute against TP communication.

    Controls: model preset, system preset, the TP degree to detail, sequence
    length, micro-batch, ``--sequence-parallel``, the share of the TP
    communication that ``--tp-comm-overlap`` hides and the precision (``"bf16"``
    or ``"fp8"``: torchao float8 training under torch.compile, the model's
    compiled recipe). Every usable TP degree of the system is drawn by
    :func:`gpulab.plotting.plot_tp_degree` from
    :func:`gpulab.parallelism.tp_degree_rows` (``gpulab.parallelism.step_time`` per degree); the
    summary gives memory per GPU, throughput and the fastest layout that fits. A
    setting the model refuses (FP8 on a GPU without FP8 Tensor Cores, a degree
    above the GPU count) shows the reason in one line and says which setting the
    figure still shows.
    """
    if model not in parallelism.model_names():
        raise ValueError(f"model must be one of {', '.join(parallelism.model_names())}"
                         f"; got {model!r}")
    if system not in systems.names():
        raise ValueError(f"system must be one of {', '.join(systems.names())}; got "
                         f"{system!r}")
    if isinstance(tp, bool) or tp not in parallelism.TP_DEGREES:
        raise ValueError(f"tp must be one of {parallelism.TP_DEGREES}; got {tp!r}")
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
    choices = [v for _, v in TP_PRECISIONS]
    if not isinstance(precision, str) or precision not in choices:
        raise ValueError(f"precision must be one of {', '.join(choices)}; got "
                         f"{precision!r}")
    return _TPExplorer(model, system, tp, seq_len, micro_batch, sequence_parallel,
                       float(tp_overlap), precision)

#: Models of the ROI explorer: the course's five (its rankings are computed up front
#: for every model, node count and system, so the list stays short).
ROI_MODELS = ("13b", "70b", "llama3-8b", "llama3-70b", "mixtral-8x7b")
#: Project sizes offered by the ROI explorer [billion tokens].
ROI_TOKEN_STEPS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)


def _token_options(value):
    values = sorted({float(v) for v in ROI_TOKEN_STEPS} | {float(value)})
    return [(f"{v:g}", v) for v in values]


class _ROIExplorer(Explorer):
    def __init__(self, model, nodes, fast, slow, price_fast, price_slow,
                 project_tokens):
        style = {"description_width": "initial"}
        w = W.Layout(width="240px")
        controls = {
            "model": W.Dropdown(options=list(ROI_MODELS), value=model,
                                description="Model", style=style, layout=w),
            "nodes": W.Dropdown(options=[(f"{n} (= {8 * n} GPUs)", n)
                                         for n in parallelism.ROI_NODES],
                                value=nodes, description="Nodes", style=style,
                                layout=w),
            "fast": W.Dropdown(options=parallelism.ROI_FAST_SYSTEMS, value=fast,
                               description="NVLink system", style=style, layout=w),
            "slow": W.Dropdown(options=parallelism.ROI_SLOW_SYSTEMS, value=slow,
                               description="PCIe system", style=style, layout=w),
            # plain text boxes: a bounded box would clamp a negative price silently;
            # _update refuses it with a message instead
            "price_fast": W.FloatText(value=price_fast, step=0.05, style=style,
                                      layout=w, description="NVLink USD/GPU-h"),
            "price_slow": W.FloatText(value=price_slow, step=0.05, style=style,
                                      layout=w, description="PCIe USD/GPU-h"),
            # exact token counts: a log slider's value is rounded by the browser
            # (200 -> 10**2.3 = 199.526)
            "project_tokens": W.SelectionSlider(
                options=_token_options(project_tokens / 1e9),
                value=project_tokens / 1e9,
                description="Project [billion tokens]", style=style,
                layout=W.Layout(width="480px")),
        }
        self.roi = None
        self.steps = None
        for m in ROI_MODELS:                    # every ranking once, up front (cached
            for n in parallelism.ROI_NODES:     # in the model layer): an update is
                for sy in parallelism.ROI_FAST_SYSTEMS + parallelism.ROI_SLOW_SYSTEMS:
                    try:                        # then ROI arithmetic and a redraw
                        parallelism.roi_best_step(m, sy, n)
                    except ValueError:
                        pass
        super().__init__(controls, PNGView(figsize=(6.4, 2.2)))
        self.view.fig.subplots_adjust(left=0.14, right=0.97, top=0.95, bottom=0.26)
        self.update()

    def _rows(self):
        c = self.controls
        return [(c["model"], c["nodes"]), (c["fast"], c["slow"]),
                (c["price_fast"], c["price_slow"]), (c["project_tokens"],)]

    def _update(self):
        c = self.controls
        model, nodes = c["model"].value, c["nodes"].value
        fast, slow = c["fast"].value, c["slow"].value
        tokens = c["project_tokens"].value * 1e9
        pf, ps = c["price_fast"].value, c["price_slow"].value
        for label, price in (("NVLink", pf), ("PCIe", ps)):
            if not 0 < price <= 1000:
                self.summary.value = ""
                raise ValueError(f"{label} price must be more than 0 and at most 1000 "
                                 f"USD per GPU-hour; got {price:g}")
        try:
            roi, (sf, ss) = parallelism.roi_comparison(
                model, nodes, fast, slow, price_fast=pf, price_slow=ps,
                project_tokens=tokens)
        except ValueError:
            self.summary.value = ""
            raise
        n_gpus = parallelism.roi_cluster(fast, nodes).n_gpus
        spec = parallelism.model(model)
        self.roi, self.steps = roi, (sf, ss)
        self.view.render(lambda ax: plotting.plot_roi(
            roi, labels=(fast, slow), currency="USD", ax=ax))
        ratio = pf / ps
        cheaper = fast if roi.cost_fast < roi.cost_slow else slow
        day = 86400.0
        self.summary.value = "<br>".join([
            f"Chooser on {n_gpus} GPUs, global batch {parallelism.ROI_GLOBAL_BATCH} × "
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

    Controls: model (one of the course models :data:`ROI_MODELS`), nodes (8 GPUs
    each), the NVLink and the PCIe system, price per GPU-hour of each (USD;
    illustrative defaults :data:`gpulab.parallelism.ROI_EXAMPLE_PRICES`) and project
    size in tokens. For each system the
    chooser (:func:`gpulab.parallelism.rank_layouts`, options
    :data:`gpulab.parallelism.ROI_SEARCH`, global batch :data:`gpulab.parallelism.ROI_GLOBAL_BATCH`) picks the fastest
    layout on :func:`gpulab.parallelism.roi_cluster`; :func:`gpulab.parallelism.nvlink_roi` turns the
    two step times into days, cost and the break-even price ratio, drawn by
    :func:`gpulab.plotting.plot_roi`. Rankings are cached per explorer, so price
    and token changes only redo the ROI arithmetic.
    """
    if not isinstance(model, str) or model not in ROI_MODELS:
        raise ValueError(f"model must be one of the course models "
                         f"{', '.join(ROI_MODELS)}; got {model!r}")
    if nodes not in parallelism.ROI_NODES or isinstance(nodes, bool):
        raise ValueError(f"nodes must be one of {parallelism.ROI_NODES}; got {nodes!r}")
    if fast not in parallelism.ROI_FAST_SYSTEMS:
        raise ValueError(f"fast must be one of {', '.join(parallelism.ROI_FAST_SYSTEMS)}; got "
                         f"{fast!r}")
    if slow not in parallelism.ROI_SLOW_SYSTEMS:
        raise ValueError(f"slow must be one of {', '.join(parallelism.ROI_SLOW_SYSTEMS)}; got "
                         f"{slow!r}")
    prices = []
    for name, v, key in (("price_fast", price_fast, "fast"),
                         ("price_slow", price_slow, "slow")):
        v = parallelism.ROI_EXAMPLE_PRICES[key] if v is None else v
        if isinstance(v, bool) or not isinstance(v, (int, float)) \
                or not 0 < v <= 1000:
            raise ValueError(f"{name} must be a number in (0, 1000] USD per "
                             f"GPU-hour; got {v!r}")
        prices.append(float(v))
    if isinstance(project_tokens, bool) or not isinstance(project_tokens,
                                                          (int, float)) \
            or not 1e9 <= project_tokens <= 1e13:
        raise ValueError("project_tokens must be a number in [1e9, 1e13] tokens; "
                         f"got {project_tokens!r}")
    return _ROIExplorer(model, nodes, fast, slow, prices[0], prices[1],
                        float(project_tokens))
