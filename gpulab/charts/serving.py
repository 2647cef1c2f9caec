"""Precomputed chart of the serving-layout topic: output tokens per USD of each server
at its best layout meeting a TPOT target (the serving explorer's bars), over model and
TPOT target, at the illustrative example prices."""
from __future__ import annotations

import altair as alt

from .base import Control, build
from ..inference import roi

#: The grid (the explorer's model and TPOT target; context and prices stay fixed).
SERVING_CHART_MODELS = ("llama3-70b", "llama3-8b")
SERVING_CHART_TPOTS_MS = (10, 20, 30, 40, 50, 60, 70, 80, 90, 100)
SERVING_CHART_CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768)


def serving_chart(model="llama3-70b", *, tpot_ms=50, context=4096, precision="fp8"):
    """Tokens per USD of each server of :data:`gpulab.inference.roi.SYSTEMS` at its best
    layout meeting the TPOT target, precomputed by
    :func:`gpulab.inference.roi.buying_table` over :data:`SERVING_CHART_MODELS` and
    :data:`SERVING_CHART_TPOTS_MS` at ``context`` tokens (one of
    :data:`SERVING_CHART_CONTEXTS`), ``precision`` weights and the illustrative
    :data:`gpulab.inference.roi.EXAMPLE_PRICES` (a kernel-free chart cannot take other
    prices). ``model`` and ``tpot_ms`` pick the initial point (a grid point). A server
    that misses the target has no bar and says so."""
    if context not in SERVING_CHART_CONTEXTS:
        raise ValueError(f"context must be one of {SERVING_CHART_CONTEXTS}; "
                         f"got {context!r}")
    prices = dict(roi.EXAMPLE_PRICES)
    controls = (
        Control("model", "Model", SERVING_CHART_MODELS, model),
        Control("tpot_ms", "TPOT target [ms]", SERVING_CHART_TPOTS_MS, tpot_ms,
                kind="slider"),
    )

    def point(model, tpot_ms):
        table = roi.buying_table(model, prices, tpot_target=tpot_ms * 1e-3,
                                 context=context, precision=precision)
        rows, lines = [], [f"At a TPOT target of {tpot_ms} ms:"]
        for r in table:
            o = r["option"]
            if r["meets_target"]:
                rows.append({"system": r["system"],
                             "mtok_per_usd": r["tokens_per_usd"] / 1e6,
                             "layout": f"{o.label}, batch {o.batch}"})
                lines.append(f"{r['system']}: {o.label}, batch {o.batch}, TPOT "
                             f"{o.tpot * 1e3:.1f} ms, {r['tokens_per_usd'] / 1e6:.2f} M "
                             f"tokens per USD")
            else:
                lines.append(f"{r['system']}: no layout meets the target (fastest "
                             f"{o.label}: {o.tpot * 1e3:.1f} ms)")
        return rows, "\n".join(lines)

    def plot(base):
        return base.mark_bar().encode(
            y=alt.Y("system:N", title=None, sort=list(roi.SYSTEMS),
                    scale=alt.Scale(domain=list(roi.SYSTEMS))),
            x=alt.X("mtok_per_usd:Q",
                    title="Output tokens per USD [million], example prices"),
            tooltip=["system:N", "layout:N",
                     alt.Tooltip("mtok_per_usd:Q", format=".3g",
                                 title="M tokens per USD")])

    price_text = ", ".join(f"{s} {p:.2f}" for s, p in prices.items())
    return build("serving", "Tokens per USD at the best layout meeting the TPOT target "
                 "(example prices)", controls, point, plot, height=120,
                 summary_lines=5,
                 note=f"{context} tokens of context, {precision} weights and the "
                      f"illustrative example prices in USD per GPU-hour, not quotes "
                      f"({price_text})")
