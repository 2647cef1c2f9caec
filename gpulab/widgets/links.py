"""Explorer of the links topic: the SerDes link calculator.

UI only: controls in display units, converted to SI at the edge; every number
comes from the model layer. Factories return the widget (never display it).
"""
from __future__ import annotations

import html

import ipywidgets as W
from .base import Explorer, PNGView, parse_bandwidth
from .. import links, plotting, specs, units


#: Line codes a learner meets (payload bits / line bits), by name.
LINE_CODES = (("none (1)", 1.0), ("8b/10b (0.8)", 8 / 10),
              ("64b/66b (0.9697)", 64 / 66), ("128b/130b (0.9846)", 128 / 130),
              ("16/17 (0.9412)", 16 / 17))


def _coding_options(gens):
    """:data:`LINE_CODES` plus any preset's coding ratio not among them."""
    options = list(LINE_CODES)
    for g in gens:
        if not any(abs(v - g.coding_efficiency) < 1e-12 for _, v in options):
            options.append((f"NVLink{g.generation} ({g.coding_efficiency:.4f})",
                            g.coding_efficiency))
    return options


class _LinkExplorer(Explorer):
    def __init__(self, generation, compare):
        style = {"description_width": "initial"}
        gens = specs.nvlink_generations()
        controls = {
            "preset": W.Dropdown(options=[(f"NVLink{g.generation} ({g.first_gpu})",
                                           g.generation) for g in gens]
                                 + [("custom", 0)], value=generation,
                                 description="Preset", style=style),
            "modulation": W.ToggleButtons(options=[("NRZ", 1), ("PAM4", 2)], value=1,
                                          description="Modulation", style=style),
            "symbol_rate_gbaud": W.FloatSlider(value=25.0, min=1, max=120, step=0.125,
                                               description="Symbol rate [GBd]",
                                               readout_format=".3f", style=style),
            "lanes": W.IntSlider(value=8, min=1, max=16,
                                 description="Lanes per direction", style=style),
            # named line codes, exact fractions: a float slider would be rounded
            # to its step by the browser (16/17 -> 0.9412) and leave the preset
            "coding": W.Dropdown(options=_coding_options(gens), value=1.0,
                                 description="Line code", style=style),
            "links": W.IntSlider(value=6, min=1, max=36, description="Links per GPU",
                                 style=style),
            "compare": W.Text(value=compare, description="Check a spec figure",
                              placeholder="e.g. 900 GB/s bidirectional", style=style,
                              continuous_update=False,
                              layout=W.Layout(width="360px")),
        }
        super().__init__(controls, PNGView(figsize=(7.0, 3.0)))
        controls["preset"].observe(self._on_preset, names="value")
        self._apply_preset(generation)

    def _rows(self):
        c = self.controls
        return [(c["preset"], c["modulation"]), (c["symbol_rate_gbaud"], c["lanes"]),
                (c["coding"], c["links"]), (c["compare"],)]

    def _apply_preset(self, generation):
        c = self.controls
        if generation:
            g = specs.nvlink(generation)
            self._hold = True
            try:
                c["modulation"].value = g.bits_per_symbol
                c["symbol_rate_gbaud"].value = g.symbol_rate / 1e9
                c["lanes"].value = g.lanes_per_direction
                c["coding"].value = next(           # the option's exact value
                    v for _, v in c["coding"].options
                    if abs(v - g.coding_efficiency) < 1e-12)
                c["links"].value = g.links_per_gpu
            finally:
                self._hold = False
        self.update()

    def _on_preset(self, change):
        if not self._hold:
            self._apply_preset(change["new"])

    def _on_change(self, change=None):
        if self._hold:
            return
        owner = change["owner"] if change else None
        preset = self.controls["preset"]
        if owner is preset:
            return                                # handled by _on_preset
        if owner is not None and owner is not self.controls["compare"] \
                and preset.value:
            self._hold = True
            preset.value = 0                      # edited by hand: now custom
            self._hold = False
        self.update()

    def _update(self):
        c = self.controls
        link = links.link_bandwidth(c["symbol_rate_gbaud"].value * 1e9,
                                    c["modulation"].value, c["lanes"].value,
                                    c["coding"].value)
        gpu = links.gpu_bandwidth(link, c["links"].value)
        raw_lane = links.lane_rate(c["symbol_rate_gbaud"].value * 1e9,
                                   c["modulation"].value)
        label = "custom" if not c["preset"].value else "preset"
        self.view.render(lambda ax: plotting.plot_link_vs_generations(
            gpu, label=label, ax=ax))
        lines = [
            f"Lane: {raw_lane / 1e9:.6g} Gb/s raw",
            f"Link: {units.fmt_bandwidth(link)}",
            f"GPU ({c['links'].value} links): {units.fmt_bandwidth(gpu)} = "
            f"{units.fmt_bandwidth(gpu.to_bidirectional())}",
        ]
        self.summary.value = "<br>".join(lines)     # current even if the spec is bad
        text = c["compare"].value.strip()
        if text:
            spec = parse_bandwidth(text)
            ratio = spec.to_per_direction() / gpu
            lines.append(f"Spec figure {html.escape(text)} is "
                         f"{units.fmt_bandwidth(spec.to_per_direction())}: "
                         f"{ratio:.2f}× this GPU's per-direction rate")
        self.summary.value = "<br>".join(lines)


def link_explorer(generation=4, *, compare=None):
    """NVLink calculator: modulation, symbol rate, lanes, coding and links -> GB/s.

    Calls :func:`gpulab.links.link_bandwidth` and :func:`gpulab.links.gpu_bandwidth`
    with SI values (baud, not GBd). ``generation`` picks the starting preset
    (0 for custom); ``compare`` is a spec figure to check against the result
    (default: the preset's spec-sheet total, e.g. "900 GB/s bidirectional").
    """
    if generation:
        specs.nvlink(generation)
    if compare is None:
        total = links.nvlink_gpu_bandwidth(generation or 4).to_bidirectional()
        compare = f"{total.gb_per_s:g} GB/s bidirectional"
    return _LinkExplorer(generation, compare)
