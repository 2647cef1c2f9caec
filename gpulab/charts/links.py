"""Precomputed chart of the links topic: the SerDes link calculator (the link
explorer) over NVLink presets and links per GPU."""
from __future__ import annotations

import altair as alt

from .base import Control, build
from .. import links, specs, units

#: Links per GPU of the chart's slider.
LINK_COUNTS = tuple(range(1, 19))


def link_chart(generation=4, n_links=None):
    """Per-GPU NVLink bandwidth (per direction) of a preset's link times a number of
    links, beside every generation's spec-sheet figure. Precomputed by
    :func:`gpulab.links.link_bandwidth` and :func:`gpulab.links.gpu_bandwidth` for
    every NVLink generation of the data and :data:`LINK_COUNTS` links; ``generation``
    and ``n_links`` (default: the preset's) pick the initial point."""
    gens = specs.nvlink_generations()
    g0 = specs.nvlink(generation)
    n_links = g0.links_per_gpu if n_links is None else n_links
    reference = [{"name": f"NVLink{g.generation}",
                  "gbs": links.nvlink_gpu_bandwidth(g.generation).gb_per_s}
                 for g in gens]
    controls = (
        Control("generation", "Link of", tuple(g.generation for g in gens), generation,
                labels=tuple(f"NVLink{g.generation} ({g.first_gpu})" for g in gens)),
        Control("n_links", "Links per GPU", LINK_COUNTS, n_links, kind="slider"),
    )

    def point(generation, n_links):
        g = specs.nvlink(generation)
        link = links.link_bandwidth(g.symbol_rate, g.bits_per_symbol,
                                    g.lanes_per_direction, g.coding_efficiency)
        gpu = links.gpu_bandwidth(link, n_links)
        lane = links.lane_rate(g.symbol_rate, g.bits_per_symbol)
        rows = reference + [{"name": "this GPU", "gbs": gpu.to_per_direction().gb_per_s}]
        preset = "the preset's count" if n_links == g.links_per_gpu else \
            f"the preset has {g.links_per_gpu}"
        text = (f"NVLink{generation}: {g.modulation} at {g.symbol_rate / 1e9:g} GBd, "
                f"lane {lane / 1e9:.6g} Gb/s raw, {g.lanes_per_direction} lanes, "
                f"coding {g.coding_efficiency:.4g}.\n"
                f"Link: {units.fmt_bandwidth(link)}.\n"
                f"GPU with {n_links} links ({preset}): {units.fmt_bandwidth(gpu)} = "
                f"{units.fmt_bandwidth(gpu.to_bidirectional())}.")
        return rows, text

    def plot(base):
        bars = base.mark_bar().encode(
            x=alt.X("name:N", sort=None, title=None, axis=alt.Axis(labelAngle=0)),
            y=alt.Y("gbs:Q", title="Per GPU [GB/s, per direction]"),
            color=alt.condition("datum.name === 'this GPU'", alt.value("#d62728"),
                                alt.value("#4c78a8")),
            tooltip=["name:N", alt.Tooltip("gbs:Q", format=".4g")])
        labels = base.mark_text(dy=-6).encode(
            x=alt.X("name:N", sort=None), y="gbs:Q", text=alt.Text("gbs:Q", format=".0f"))
        return bars + labels

    return build("link", "NVLink bandwidth per GPU", controls, point, plot,
                 height=200)
