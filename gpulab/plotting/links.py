"""Figures of the links topic: NRZ/PAM4 signalling, eye diagrams, NVLink generations,
link budgets and measured copy bandwidth.

Every ``plot_*`` takes ``ax=None``, draws from gpulab models or data, returns the
``Axes``, never calls ``plt.show()`` and sets no title.
"""
from __future__ import annotations

import numpy as np
from .._validate import check_choice, check_int
from .style import COLORS, remember_artists, cached_artists, bytes_axis, new_axes
from .. import links, measurements, specs, units


_DEFAULT_BITS = (1, 0, 1, 1, 0, 0, 1, 0, 0, 1, 1, 1, 1, 0, 0, 0)
_PAM4_LEVELS = {(0, 0): -3, (0, 1): -1, (1, 1): 1, (1, 0): 3}   # Gray coding


def plot_nrz_pam4(bits=_DEFAULT_BITS, ax=None):
    """The same bits sent as NRZ (1 bit/symbol) and PAM4 (2 bits/symbol, Gray coded).

    At the same symbol rate PAM4 carries twice the bits; drawn here at the same
    *bit* rate, PAM4 needs half the symbols (each symbol lasts twice as long).
    """
    bits = [int(b) for b in bits]
    if len(bits) < 2 or len(bits) % 2 or any(b not in (0, 1) for b in bits):
        raise ValueError("bits must be an even-length sequence of 0/1 values")
    ax = new_axes(ax)
    nrz = np.array(bits, dtype=float) * 2 - 1            # -1, +1
    t_nrz = np.arange(len(bits) + 1)
    ax.step(t_nrz, np.append(nrz, nrz[-1]) + 5, where="post", color=COLORS["pcie"],
            label="NRZ: 2 levels, 1 bit per symbol")
    pairs = list(zip(bits[::2], bits[1::2]))
    pam = np.array([_PAM4_LEVELS[p] for p in pairs], dtype=float) / 3
    t_pam = np.arange(len(pairs) + 1) * 2
    ax.step(t_pam, np.append(pam, pam[-1]) * 1.5, where="post", color=COLORS["nvlink"],
            label="PAM4: 4 levels, 2 bits per symbol")
    for i, b in enumerate(bits):
        ax.text(i + 0.5, 6.4, str(b), ha="center", fontsize=8, color=COLORS["pcie"])
    for i, p in enumerate(pairs):
        ax.text(2 * i + 1, 2.0, f"{p[0]}{p[1]}", ha="center", fontsize=8,
                color=COLORS["nvlink"])
    ax.set_yticks([])
    ax.set_xlabel("Time [bit periods]")
    ax.set_xlim(0, len(bits))
    ax.set_ylim(-2.2, 7.2)
    ax.grid(False)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2)
    return ax


def plot_eye(modulation="PAM4", *, n_symbols=400, noise=0.06, ax=None):
    """Synthetic eye diagram: overlaid two-symbol windows of a band-limited signal.

    PAM4 has three stacked eyes, each a third of the NRZ eye's height at the same
    swing, which is why it needs FEC and a cleaner channel.
    """
    check_choice("modulation", modulation, ("NRZ", "PAM4"))
    n = check_int("n_symbols", n_symbols, low=10, high=100_000)
    rng = np.random.default_rng(7)   # local generator: no global seeding
    levels = np.array([-1.0, 1.0]) if modulation == "NRZ" \
        else np.array([-1.0, -1 / 3, 1 / 3, 1.0])
    sym = rng.choice(levels, size=n)
    spp = 32                                           # samples per symbol
    wave = np.repeat(sym, spp)
    kernel = np.hanning(spp)                           # band limit -> finite rise time
    wave = np.convolve(wave, kernel / kernel.sum(), mode="same")
    wave = wave + rng.normal(0, noise, wave.size)
    ax = new_axes(ax)
    seg = 2 * spp
    t = np.linspace(0, 2, seg)
    start = spp // 2
    stack = np.array([wave[i:i + seg] for i in range(start, wave.size - seg, spp)])
    color = COLORS["nvlink"] if modulation == "PAM4" else COLORS["pcie"]
    # hundreds of overlaid traces: drawn as one raster inside the vector figure (a
    # 1.4 MB SVG otherwise), axes and text stay vector
    ax.plot(t, stack.T, color=color, alpha=0.06, lw=1, rasterized=True)
    ax.set_xlim(0, 2)
    ax.set_ylim(-1.35, 1.35)
    ax.set_xlabel("Time [unit intervals]")
    ax.set_ylabel("Amplitude [a.u.]")
    ax.text(0.02, 1.22, f"{modulation}: {len(levels)} levels, "
            f"{int(np.log2(len(levels)))} bit(s) per symbol", fontsize=8)
    ax.grid(False)
    return ax


def plot_nvlink_generations(ax=None):
    """Per-GPU NVLink bandwidth per generation: per direction and bidirectional."""
    gens = specs.nvlink_generations()
    ax = new_axes(ax)
    x = np.arange(len(gens))
    per_dir = np.array([links.nvlink_gpu_bandwidth(g.generation).gb_per_s
                        for g in gens])
    b1 = ax.bar(x, per_dir, 0.6, color=COLORS["nvlink"], label="per direction")
    b2 = ax.bar(x, per_dir, 0.6, bottom=per_dir, color=COLORS["nvlink"], alpha=0.35,
                label="+ other direction = bidirectional total")
    ax.bar_label(b1, labels=[f"{v:.0f}" for v in per_dir], label_type="center",
                 fontsize=8, color="white")
    ax.bar_label(b2, labels=[f"{2 * v:.0f}" for v in per_dir], fontsize=8)
    ax.set_xticks(x, [f"NVLink{g.generation}\n{g.first_gpu} ×{g.links_per_gpu}"
                      for g in gens])
    ax.set_ylabel("Bandwidth per GPU [GB/s]")
    ax.set_ylim(0, 2 * per_dir.max() * 1.15)
    ax.legend(loc="upper left")
    return ax


def plot_link_budget(budget, ax=None):
    """Horizontal bars from raw line rate to achieved rates for one GPU.

    Parameters
    ----------
    budget : sequence of (label, units.Bandwidth, kind)
        Bars top to bottom; ``kind`` picks the colour (``"nvlink"``, ``"model"``,
        ``"accent"``...). All bandwidths must share one direction.
    """
    budget = list(budget)
    if not budget:
        raise ValueError("budget must be a non-empty sequence of (label, Bandwidth, kind)")
    direction = budget[0][1].direction
    for label, bw, kind in budget:
        if not isinstance(bw, units.Bandwidth):
            raise ValueError(f"budget entry {label!r}: bandwidth must be a Bandwidth")
        if bw.direction != direction:
            raise units.DirectionError("budget mixes per-direction and bidirectional "
                                       f"figures ({label!r})")
        check_choice("kind", kind, COLORS)
    ax = new_axes(ax)
    y = np.arange(len(budget))[::-1]
    ref = budget[0][1].gb_per_s
    vals = [b.gb_per_s for _, b, _ in budget]
    bars = ax.barh(y, vals, color=[COLORS[k] for _, _, k in budget], height=0.6)
    ax.bar_label(bars, labels=[f" {v:.1f} GB/s ({v / ref:.0%})" for v in vals],
                 fontsize=8)
    ax.set_yticks(y, [lbl for lbl, _, _ in budget])
    ax.set_xlabel(f"Bandwidth [GB/s, {direction.replace('_', ' ')}]")
    ax.set_xlim(0, ref * 1.35)
    ax.grid(axis="y", visible=False)
    return ax


def plot_copy_bandwidth(run=None, kinds=("p2p",), *, nominal=None, ax=None):
    """Measured copy bandwidth vs size, with the fitted alpha-beta model.

    Parameters
    ----------
    run : measurements.CopyRun, optional
        Defaults to the recorded H200 run.
    kinds : sequence of str
        Copy kinds of the run to draw.
    nominal : units.Bandwidth, optional
        A per-direction spec line to draw for reference.
    """
    run = measurements.copy_bandwidth() if run is None else run
    ax = new_axes(ax)
    palette = {"p2p": COLORS["nvlink"], "h2d_pinned": COLORS["pcie"],
               "d2h_pinned": "#6f9fd8", "h2d_pageable": COLORS["ib"],
               "d2h_pageable": "#e8b27a"}
    for kind in kinds:
        if kind not in run.kinds:
            raise ValueError(f"kinds must be among {sorted(run.kinds)}; got {kind!r}")
        s, bw = run.kinds[kind]
        c = palette.get(kind, COLORS["model"])
        ax.plot(s, bw / units.GB, "o", color=c, ms=4, label=f"measured {kind}")
        alpha, beta = links.fit_alpha_beta(s, s / bw, weighting="absolute")
        grid = np.geomspace(s.min(), s.max(), 200)
        ax.plot(grid, links.effective_bandwidth(grid, alpha, beta) / units.GB, "-",
                color=c, alpha=0.7, lw=1.2,
                label=f"α–β fit: α={units.fmt_time(alpha)}, "
                      f"B={beta.gb_per_s:.0f} GB/s")
    if nominal is not None:
        if nominal.direction != units.PER_DIRECTION:
            raise units.DirectionError("nominal must be a per-direction Bandwidth")
        ax.axhline(nominal.gb_per_s, color=COLORS["model"], ls="--", lw=1,
                   label=f"spec: {nominal.gb_per_s:.0f} GB/s per direction")
    bytes_axis(ax.xaxis)
    ax.set_xlabel("Copy size [B, binary prefixes]")
    ax.set_ylabel("Bandwidth [GB/s, per direction]")
    ax.legend(loc="center left", fontsize=8)
    return ax


def plot_link_vs_generations(custom, label="your link", ax=None):
    """Per-GPU per-direction NVLink bandwidth of each generation beside ``custom``.

    Calling it again on the same Axes updates the bars in place.

    Parameters
    ----------
    custom : units.Bandwidth
        A per-GPU bandwidth (either direction convention; shown per direction).
    label : str
        Tick label of the custom bar.
    """
    if not isinstance(custom, units.Bandwidth):
        raise ValueError(f"custom must be a gpulab.units.Bandwidth; got {custom!r}")
    custom = custom.to_per_direction()
    gens = specs.nvlink_generations()
    names = [f"NVLink{g.generation}" for g in gens] + [str(label)]
    vals = [links.nvlink_gpu_bandwidth(g.generation).gb_per_s for g in gens]
    vals.append(custom.gb_per_s)
    ax = new_axes(ax)
    x = np.arange(len(vals))
    old = cached_artists(ax, "link_vs_generations", len(vals))
    if old is None:
        ax.clear()
        colors = [COLORS["nvlink"]] * len(gens) + [COLORS["accent"]]
        bars = ax.bar(x, vals, 0.6, color=colors)
        texts = ax.bar_label(bars, labels=[f"{v:.0f}" for v in vals], fontsize=8)
        ax.set_ylabel("Per GPU [GB/s, per direction]")
        ax.grid(axis="x", visible=False)
        remember_artists(ax, "link_vs_generations", len(vals), (bars, texts), bars[0])
    else:
        bars, texts = old
        bars[-1].set_height(vals[-1])
        texts[-1].set_text(f"{vals[-1]:.0f}")
        texts[-1].xy = (x[-1], vals[-1])
    ax.set_xticks(x, names)
    ax.set_ylim(0, max(vals) * 1.18 + 1)
    return ax
