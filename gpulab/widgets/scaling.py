"""Explorer of the scaling topic: data-parallel step time and efficiency.

UI only: controls in display units, converted to SI at the edge; every number
comes from the model layer. Factories return the widget (never display it).
"""
from __future__ import annotations


import ipywidgets as W
from .base import Explorer, PNGView, parse_params
from .. import plotting, scaling, specs, units


_TOKEN_OPTIONS = [(f"{v // 1024}K" if v >= 1024 else str(v), v)
                  for v in (2 ** k for k in range(8, 21))]


class _ScalingExplorer(Explorer):
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
        super().__init__(controls, PNGView(figsize=(6.4, 3.0)))
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
