"""Explorer of the serving-layout chapter: which server serves a model at a TPOT target
for the fewest dollars per token.

UI only: controls in display units (milliseconds, USD per GPU-hour), converted to SI at
the edge; the best layouts and tokens per USD come from
:func:`gpulab.inference.roi.buying_table`, the figure from
:func:`gpulab.plotting.plot_tokens_per_dollar`. The factory returns the widget.
"""
from __future__ import annotations

import html

import ipywidgets as W

from .. import plotting
from ..inference import roi
from .base import Explorer, PNGView

__all__ = ["SERVING_MODELS", "SERVING_CONTEXTS", "serving_explorer"]

#: Models the explorer offers (dense presets the decode model covers).
SERVING_MODELS = ("llama3-70b", "llama3-8b")
#: Context lengths offered (tokens in each sequence's KV cache).
SERVING_CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768)


class _ServingExplorer(Explorer):
    def __init__(self, model, tpot_ms, context, prices):
        style = {"description_width": "initial"}
        w = W.Layout(width="230px")
        controls = {
            "model": W.Dropdown(options=list(SERVING_MODELS), value=model,
                                description="Model", style=style, layout=w),
            # whole milliseconds: a float slider's browser arithmetic sends 49.999... back
            "tpot_ms": W.IntSlider(value=round(tpot_ms), min=5, max=200, step=1,
                                   description="TPOT target [ms]", style=style,
                                   layout=W.Layout(width="360px")),
            "context": W.Dropdown(options=list(SERVING_CONTEXTS), value=context,
                                  description="Context [tokens]", style=style,
                                  layout=w),
        }
        for s in roi.SYSTEMS:
            # plain text boxes: a bounded box would clamp a bad price silently
            controls[f"price:{s}"] = W.FloatText(value=prices[s], step=0.05,
                                                 description=f"{s} USD/GPU-h",
                                                 style=style, layout=w)
        self.rows = None
        super().__init__(controls, PNGView(figsize=(6.4, 2.6)))
        self.view.fig.subplots_adjust(left=0.17, right=0.97, top=0.95, bottom=0.2)
        self.update()

    def _rows(self):
        c = self.controls
        p = [c[f"price:{s}"] for s in roi.SYSTEMS]
        return [(c["model"], c["context"]), (c["tpot_ms"],), tuple(p[:2]), tuple(p[2:])]

    def prices(self):
        """``{system: USD per GPU-hour}`` as entered (checked in :meth:`_update`)."""
        return {s: self.controls[f"price:{s}"].value for s in roi.SYSTEMS}

    def _update(self):
        c = self.controls
        prices = self.prices()
        for s, v in prices.items():
            if not 0 < v <= 1000:
                raise ValueError(f"price of {s} must be more than 0 and at most 1000 "
                                 f"USD per GPU-hour; got {v:g}")
        rows = roi.buying_table(c["model"].value, prices,
                                tpot_target=c["tpot_ms"].value * 1e-3,
                                context=c["context"].value)
        self.rows = rows

        def draw(ax):
            ax.clear()
            plotting.plot_tokens_per_dollar(rows, ax=ax)
        self.view.render(draw)
        lines = []
        for r in rows:
            o = r["option"]
            if r["meets_target"]:
                lines.append(
                    f"<b>{html.escape(r['system'])}</b>: {html.escape(o.label)}, batch "
                    f"{o.batch}, TPOT {o.tpot * 1e3:.1f} ms, "
                    f"{o.tokens_per_s_per_gpu:,.0f} tokens/s per GPU, "
                    f"{r['tokens_per_usd'] / 1e6:.2f} M tokens per USD")
            else:
                lines.append(f"<b>{html.escape(r['system'])}</b>: no layout meets the "
                             f"target (fastest {o.label}: {o.tpot * 1e3:.1f} ms)")
        lines.append("Prices are illustrative inputs, not quotes.")
        self.summary.value = "<br>".join(lines)

    def update(self):
        super().update()
        if self.message.value:               # refused state: no stale bars stay up
            self.rows = None
            self.summary.value = ""

            def blank(ax):
                ax.clear()
                ax.set_axis_off()
            self.view.render(blank)


def serving_explorer(model="llama3-70b", *, tpot_ms=50.0, context=4096, prices=None):
    """Best serving layout per server at a TPOT target and its tokens per USD.

    Controls: model (:data:`SERVING_MODELS`), TPOT target in ms, context length
    (:data:`SERVING_CONTEXTS`) and a price per GPU-hour for each server of
    :data:`gpulab.inference.roi.SYSTEMS` (defaults: the illustrative
    :data:`gpulab.inference.roi.EXAMPLE_PRICES`). The initial state is the chapter's
    tokens-per-USD figure.
    """
    if model not in SERVING_MODELS:
        raise ValueError(f"model must be one of {', '.join(SERVING_MODELS)}; "
                         f"got {model!r}")
    if isinstance(tpot_ms, bool) or not isinstance(tpot_ms, (int, float)) \
            or not 5 <= tpot_ms <= 200 or tpot_ms != round(tpot_ms):
        raise ValueError(f"tpot_ms must be a whole number of ms in [5, 200]; "
                         f"got {tpot_ms!r}")
    if context not in SERVING_CONTEXTS:
        raise ValueError(f"context must be one of {SERVING_CONTEXTS}; got {context!r}")
    merged = dict(roi.EXAMPLE_PRICES)
    if prices is not None:
        if not isinstance(prices, dict) or set(prices) - set(roi.SYSTEMS):
            raise ValueError(f"prices must be a dict with keys among "
                             f"{', '.join(roi.SYSTEMS)}; got {prices!r}")
        merged.update(prices)
    for s, v in merged.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1000:
            raise ValueError(f"prices[{s!r}] must be a number in (0, 1000] USD per "
                             f"GPU-hour; got {v!r}")
    return _ServingExplorer(model, float(tpot_ms), context,
                            {s: float(v) for s, v in merged.items()})
