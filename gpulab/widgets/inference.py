"""Explorers of the serving topic: one decode step (TPOT) split into compute and
communication, with tokens per second; one expert-parallel dispatch and combine split
into its NVLink and RDMA legs.

UI only: every number comes from :func:`gpulab.inference.decode_step`; the bar is
:func:`gpulab.plotting.inference.plot_tpot_breakdown`. Factories return the widget
(never display it). A state the model refuses clears the figure and says why.
"""
from __future__ import annotations

import ipywidgets as W

from .base import Explorer, PNGView
from .. import inference, systems, units
from ..plotting import inference as plot_inference

#: Systems the explorer offers (NVLink servers and PCIe servers).
DECODE_SYSTEMS = ("hgx-h200", "dgx-h100", "hgx-b200", "h100-pcie", "l40s-x8",
                  "a100-pcie-x8")
#: Dense SwiGLU models with head dimension 128 (what the decode model covers).
DECODE_MODELS = ("llama3-8b", "llama3-70b")
DECODE_TPS = (1, 2, 4, 8)
DECODE_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
DECODE_CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


def _k(v):
    return f"{v // 1024}K" if v >= 1024 else str(v)


class _DecodeExplorer(Explorer):
    def __init__(self, model, system, tp, batch, context, precision, allreduce):
        style = {"description_width": "initial"}
        controls = {
            "model": W.Dropdown(options=list(DECODE_MODELS), value=model,
                                description="Model", style=style),
            "system": W.Dropdown(options=list(DECODE_SYSTEMS), value=system,
                                 description="System", style=style),
            "tp": W.ToggleButtons(options=[(f"TP{t}", t) for t in DECODE_TPS],
                                  value=tp, description="TP", style=style),
            "batch": W.SelectionSlider(options=list(DECODE_BATCHES), value=batch,
                                       description="Batch", style=style),
            "context": W.SelectionSlider(options=[(_k(c), c) for c in DECODE_CONTEXTS],
                                         value=context, description="Context",
                                         style=style),
            "precision": W.ToggleButtons(options=list(inference.PRECISIONS),
                                         value=precision, description="Weights",
                                         style=style),
            "allreduce": W.ToggleButtons(options=list(inference.ALLREDUCE),
                                         value=allreduce, description="All-reduce",
                                         style=style),
        }
        self.step = None
        super().__init__(controls, PNGView(figsize=(7.0, 1.9)))
        self.view.fig.subplots_adjust(left=0.2, right=0.97, top=0.78, bottom=0.3)
        self.update()

    def _rows(self):
        c = self.controls
        return [(c["model"], c["system"]), (c["tp"],), (c["batch"], c["context"]),
                (c["precision"], c["allreduce"])]

    def label(self):
        c = self.controls
        return f"{c['system'].value} TP{c['tp'].value}"

    def _update(self):
        c = self.controls
        self.step = None
        step = inference.decode_step(
            c["model"].value, c["system"].value, tp=c["tp"].value,
            batch=c["batch"].value, context=c["context"].value,
            precision=c["precision"].value, allreduce=c["allreduce"].value)
        self.view.render(lambda ax: plot_inference.plot_tpot_breakdown(
            [(self.label(), step)], ax=ax))
        self.step = step
        gpu = systems.resolve(c["system"].value).gpu_spec
        fit = "" if step.fits_memory else (
            f" <b>Does not fit</b>: {step.memory_per_gpu / units.GB:.0f} GB per GPU, "
            f"{gpu.name} has {gpu.memory_bytes / units.GB:.0f} GB.")
        self.summary.value = (
            f"TPOT <b>{step.tpot * 1e3:.2f} ms</b> ({step.comm_share:.0%} "
            f"communication; one all-reduce of {step.message_bytes / units.KiB:.0f} KiB "
            f"takes {step.allreduce_time * 1e6:.1f} µs). "
            f"{step.tokens_per_s:,.0f} tokens/s, "
            f"{step.tokens_per_s_per_gpu:,.0f} per GPU.{fit}")

    def _clear(self):
        def blank(ax):
            ax.clear()
            ax.set_xticks([])
            ax.set_yticks([])
            ax.grid(False)
        self.view.render(blank)
        self.summary.value = ""

    def update(self):
        super().update()
        if self.message.value:            # refused state: no stale bar stays up
            self.step = None
            self._clear()


def decode_explorer(model="llama3-70b", system="hgx-h200", *, tp=8, batch=32,
                    context=8192, precision="bf16", allreduce="twoshot"):
    """TPOT of one decode step, compute vs communication, and tokens per second.

    Controls: model, system, TP, batch, context, weight precision, all-reduce kernel.
    Calls :func:`gpulab.inference.decode_step` and
    :func:`gpulab.plotting.inference.plot_tpot_breakdown`; the initial state is the
    HGX H200 TP8 bar of the serving chapter's TPOT figure.
    """
    for name, value, options in (("model", model, DECODE_MODELS),
                                 ("system", system, DECODE_SYSTEMS),
                                 ("tp", tp, DECODE_TPS), ("batch", batch, DECODE_BATCHES),
                                 ("context", context, DECODE_CONTEXTS),
                                 ("precision", precision, inference.PRECISIONS),
                                 ("allreduce", allreduce, inference.ALLREDUCE)):
        if value not in options:
            raise ValueError(f"{name} must be one of {tuple(options)}; got {value!r}")
    return _DecodeExplorer(model, system, tp, batch, context, precision, allreduce)


# --- expert parallelism -------------------------------------------------------------------
#: EP sizes, tokens per GPU and kernels the EP explorer offers (DeepSeek-V3 shapes).
EP_SIZES = (8, 16, 32, 64, 128, 256)
EP_TOKENS = (1, 8, 32, 128, 512, 1024, 4096, 8192)


class _EPExplorer(Explorer):
    def __init__(self, system, ep, tokens, kernel):
        style = {"description_width": "initial"}
        controls = {
            "system": W.Dropdown(options=list(inference.ep.EP_SYSTEMS), value=system,
                                 description="System", style=style),
            "kernel": W.ToggleButtons(options=list(inference.ep.KERNELS), value=kernel,
                                      description="Kernel", style=style),
            "ep": W.SelectionSlider(options=list(EP_SIZES), value=ep,
                                    description="EP size", style=style),
            "tokens": W.SelectionSlider(options=list(EP_TOKENS), value=tokens,
                                        description="Tokens per GPU", style=style),
        }
        self.pair = None
        super().__init__(controls, PNGView(figsize=(7.0, 2.0)))
        self.view.fig.subplots_adjust(left=0.14, right=0.97, top=0.78, bottom=0.26)
        self.update()

    def _rows(self):
        c = self.controls
        return [(c["system"], c["kernel"]), (c["ep"], c["tokens"])]

    def _update(self):
        c = self.controls
        self.pair = None
        pair = inference.ep.moe_calls(c["system"].value, c["ep"].value,
                                      c["tokens"].value, c["kernel"].value)
        self.view.render(lambda ax: plot_inference.plot_ep_times(pair, ax=ax))
        self.pair = pair
        d, m = pair[0][1], pair[1][1]
        self.summary.value = (
            f"Dispatch <b>{d.time * 1e6:,.0f} µs</b> ({d.bottleneck}-bound: "
            f"{d.traffic.rdma_bytes / units.MB:,.1f} MB over RDMA, "
            f"{d.traffic.nvlink_bytes / units.MB:,.1f} MB over NVLink per GPU), "
            f"combine <b>{m.time * 1e6:,.0f} µs</b>; "
            f"{d.counted_bandwidth / 1e9:,.0f} and {m.counted_bandwidth / 1e9:,.0f} GB/s "
            f"as DeepEP counts them.")

    def update(self):
        super().update()
        if self.message.value:            # refused state: no stale bars stay up
            self.pair = None
            self.view.render(lambda ax: (ax.clear(), ax.set_xticks([]),
                                         ax.set_yticks([])))
            self.summary.value = ""


def ep_explorer(system="hgx-h200", *, ep=32, tokens=128, kernel="low_latency_nvlink"):
    """Time of one MoE dispatch and combine (DeepSeek-V3 shapes) on an EP group, split
    into the fixed cost, the NVLink leg and the RDMA leg.

    Controls: system (:data:`gpulab.inference.ep.EP_SYSTEMS`), kernel, EP size, tokens
    per GPU. Calls :func:`gpulab.inference.ep.moe_calls` and
    :func:`gpulab.plotting.inference.plot_ep_times`.
    """
    for name, value, options in (("system", system, inference.ep.EP_SYSTEMS),
                                 ("ep", ep, EP_SIZES), ("tokens", tokens, EP_TOKENS),
                                 ("kernel", kernel, inference.ep.KERNELS)):
        if value not in options:
            raise ValueError(f"{name} must be one of {tuple(options)}; got {value!r}")
    return _EPExplorer(system, ep, tokens, kernel)
