"""Figures of the PCIe topic: link budget, TLP efficiency, host copies and
pipeline-stage transfers.

Every ``plot_*`` takes ``ax=None``, draws from gpulab models or data, returns the
``Axes``, never calls ``plt.show()`` and sets no title.
"""
from __future__ import annotations

import numpy as np
from .._validate import check_choice, check_int
from .style import COLORS, remember_artists, cached_artists, bytes_axis, new_axes
from .. import measurements, pcie, specs, systems, units


_BUDGET_SHADES = ("#8c8c8c", "#8fb3e0", COLORS["pcie"], "#1d4f8a")


def _gb(bw):
    v = bw.gb_per_s
    return f"{v:.3g}" if v < 10 else f"{v:.1f}"


def plot_pcie_budget(generation=5, lanes=16, max_payload_bytes=256, *,
                     header_bytes=None, ecrc=False, measured=None,
                     measured_label="measured", ax=None):
    """Horizontal bars from the raw PCIe rate to the protocol ceiling, per direction.

    Four bars, top to bottom: raw (transfer rate x lanes / 8), after line
    encoding, after TLP framing, header and CRC (no DLLPs), and the effective
    rate with DLLP/SKP traffic (:func:`gpulab.pcie.effective_bandwidth`). Each is
    labelled in GB/s and as a share of the raw rate. Calling it again on the
    same Axes updates the bars in place.

    Parameters
    ----------
    generation, lanes, max_payload_bytes, header_bytes, ecrc
        As in :func:`gpulab.pcie.effective_bandwidth`.
    measured : units.Bandwidth, optional
        A measured per-direction rate, drawn as a dashed vertical line.
    measured_label : str
        Text next to that line.
    """
    g = specs.pcie(generation)
    raw = pcie.raw_bandwidth(generation, lanes)
    enc = pcie.encoded_bandwidth(generation, lanes)
    kw = dict(generation=generation, header_bytes=header_bytes, ecrc=ecrc)
    tlp = enc * pcie.tlp_efficiency(max_payload_bytes, dllp_overhead=0, **kw)
    eff = pcie.effective_bandwidth(generation, lanes, max_payload_bytes,
                                   header_bytes=header_bytes, ecrc=ecrc)
    if measured is not None:
        if not isinstance(measured, units.Bandwidth) \
                or measured.direction != units.PER_DIRECTION:
            raise ValueError("measured must be a per-direction gpulab.units."
                             f"Bandwidth or None; got {measured!r}")
    flit = "FLIT" in g.encoding.upper()
    rate = f"{g.transfer_rate_gt_per_s:g} GT/s"
    names = [f"raw\n{rate} × {int(lanes)} lanes / 8",
             "no line code\n(flit mode)" if flit
             else f"encoded\n× {g.encoding} line code",
             "packets\n− flit and TLP header" if flit
             else "packets\n− TLP framing, header, CRC",
             "effective\n− DLLPs, SKP" if not flit else "effective\n(DLP in flit)"]
    vals = [raw, enc, tlp, eff]
    texts_now = [f" {_gb(v)} GB/s ({v / raw:.0%})" for v in vals]
    ax = new_axes(ax, figsize=(6.4, 3.0))
    y = np.arange(4)[::-1]
    old = cached_artists(ax, "pcie_budget", 4)
    if old is None:
        ax.clear()
        bars = ax.barh(y, [v.gb_per_s for v in vals], height=0.62,
                       color=_BUDGET_SHADES)
        texts = [ax.text(v.gb_per_s, yi, t, va="center", fontsize=8)
                 for v, yi, t in zip(vals, y, texts_now)]
        line = ax.axvline(0, color=COLORS["accent"], ls="--", lw=1.6, zorder=3)
        note = ax.text(0, 3.55, "", fontsize=8, color="#7a5a00", ha="right",
                       va="center")
        ax.set_xlabel("Bandwidth [GB/s, per direction]")
        ax.grid(axis="y", visible=False)
        ax.set_ylim(-0.6, 3.85)
        remember_artists(ax, "pcie_budget", 4, (bars, texts, line, note), bars[0])
    else:
        bars, texts, line, note = old
        for b, t, v, yi, s in zip(bars, texts, vals, y, texts_now):
            b.set_width(v.gb_per_s)
            t.set_position((v.gb_per_s, yi))
            t.set_text(s)
    ax.set_yticks(y, names)
    right = raw.gb_per_s * 1.42
    if measured is not None:
        m = measured.gb_per_s
        line.set_xdata([m, m])
        note.set_position((m - raw.gb_per_s * 0.01, 3.55))
        note.set_text(f"{measured_label}: {_gb(measured)} GB/s ")
        right = max(right, m * 1.1)
    line.set_visible(measured is not None)
    note.set_visible(measured is not None)
    ax.set_xlim(0, right)
    return ax


def plot_tlp_efficiency(generation=5, *, ax=None):
    """Payload share of the encoded PCIe rate against the max payload size.

    Curves from :func:`gpulab.pcie.tlp_efficiency` for the cases of a bulk copy:
    read completions (3-DW header, the data of a host-to-device copy), 64-bit
    memory writes (4-DW header, device to host), the same with ECRC, and the
    3-DW case without DLLP traffic (the Intel AN 456 ceiling).

    Parameters
    ----------
    generation : int
        PCIe generation, 1-6.
    """
    specs.pcie(generation)
    mps = np.array(pcie.protocol_constant("max_payload_bytes"))
    cases = [
        ("3-DW header, no DLLPs (Intel AN 456 ceiling)",
         dict(header_bytes=12, dllp_overhead=0), COLORS["model"], ":"),
        ("read completions, 3-DW header (host → GPU)",
         dict(read_completion=True), COLORS["pcie"], "-"),
        ("memory writes, 4-DW header (GPU → host)", {}, COLORS["nvlink"], "-"),
        ("memory writes, 4-DW header + ECRC", dict(ecrc=True), COLORS["ib"], "--"),
    ]
    ax = new_axes(ax)
    for label, kw, color, ls in cases:
        eff = [pcie.tlp_efficiency(int(p), generation=generation, **kw)
               for p in mps]
        ax.plot(mps, np.array(eff) * 100, ls, marker="o", ms=3.5, color=color,
                label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(mps, [f"{p:d}" for p in mps])
    ax.minorticks_off()
    ax.set_xlabel("Max payload size [B]")
    ax.set_ylabel("Payload share of encoded rate [%]")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=8)
    return ax


def plot_host_copies(run=None, *, system="h200-x2-measured",
                     kinds=("h2d_pinned", "d2h_pinned", "h2d_pageable",
                            "d2h_pageable"), ax=None):
    """Measured host<->device copy bandwidth beside the calibrated copy model.

    Points: the recorded sweep (a PyTorch copy_ loop); lines:
    ``S / pcie.copy_time(S, ..., caller="pytorch")`` of
    ``system``; dashed: the encoded PCIe rate of the system's link.

    Parameters
    ----------
    run : measurements.CopyRun, optional
        Defaults to the recorded 2x H200 run.
    system : str or systems.System
        The model's system preset.
    kinds : sequence of str
        Any of ``h2d_pinned``, ``d2h_pinned``, ``h2d_pageable``,
        ``d2h_pageable``.
    """
    from matplotlib.lines import Line2D
    run = measurements.copy_bandwidth() if run is None else run
    handles = []
    sys_ = systems.resolve(system)
    palette = {"h2d_pinned": COLORS["pcie"], "d2h_pinned": "#6f9fd8",
               "h2d_pageable": COLORS["ib"], "d2h_pageable": "#e8b27a"}
    ax = new_axes(ax)
    for kind in kinds:
        check_choice("kinds", kind, palette)
        if kind not in run.kinds:
            raise ValueError(f"kinds: the run has no {kind!r} copies "
                             f"(has {sorted(run.kinds)})")
        direction, memory = kind.split("_")
        s, bw = run.kinds[kind]
        c = palette[kind]
        name = f"{direction.upper()} {memory}"
        ax.plot(s, bw / units.GB, "o", color=c, ms=4)
        grid = np.geomspace(s.min(), s.max(), 120)
        t = pcie.copy_time(grid, direction, memory=memory, system=sys_,
                            caller="pytorch")        # the sweep is a PyTorch loop
        ax.plot(grid, grid / t / units.GB, "-", color=c, lw=1.2, alpha=0.8)
        handles.append(Line2D([], [], color=c, marker="o", ms=4, lw=1.2,
                              label=name))
    enc = pcie.encoded_bandwidth(sys_.pcie.generation, sys_.pcie.lanes)
    ax.axhline(enc.gb_per_s, color=COLORS["model"], ls="--", lw=1)
    handles.append(Line2D([], [], color=COLORS["model"], ls="--", lw=1,
                          label=f"encoded Gen{sys_.pcie.generation} "
                                f"x{sys_.pcie.lanes}: {enc.gb_per_s:.1f} GB/s"))
    bytes_axis(ax.xaxis)
    ax.set_xlabel("Copy size [B, binary prefixes]")
    ax.set_ylabel("Bandwidth [GB/s, per direction]")
    ax.set_ylim(0, enc.gb_per_s * 1.12)
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.0, 0.84),
              fontsize=8, title="points: measured; lines: model",
              title_fontsize=8)
    return ax


def plot_stage_transfers(transfers, compute_time, *, highlight=None, ax=None):
    """Horizontal bars: communication time per micro-batch for stage placements.

    Each bar is one placement of two consecutive pipeline stages; its label
    gives the time and, in brackets, its share of ``compute_time``. Calling it again on the
    same Axes with the same number of bars updates them in place.

    Parameters
    ----------
    transfers : sequence of (str, float, str)
        ``(label, seconds, kind)`` per placement, top to bottom; ``kind`` picks
        the colour (a key of :data:`COLORS`). [s]
    compute_time : float
        Compute time per micro-batch of one stage, the reference of the shares.
        [s]
    highlight : int, optional
        Index of the bar to outline (the chosen placement).
    """
    rows = list(transfers)
    if not rows:
        raise ValueError("transfers must be a non-empty sequence of "
                         "(label, seconds, kind)")
    for i, row in enumerate(rows):
        if isinstance(row, str) or len(row) != 3:
            raise ValueError(f"transfers: item {i} must be (label, seconds, "
                             f"kind); got {row!r}")
        check_choice("kind", row[2], COLORS)
    from .._validate import as_number

    secs = [as_number("transfers", r[1], low=0, allow_array=False) for r in rows]
    tc = as_number("compute_time", compute_time, low=0, low_inclusive=False,
                   allow_array=False)
    if highlight is not None:
        highlight = check_int("highlight", highlight, low=0, high=len(rows) - 1)
    n = len(rows)
    y = np.arange(n)[::-1]
    ms = np.array(secs) * 1e3
    labels = [f" {units.fmt_time(s)} ({s / tc:.1%})" for s in secs]
    ax = new_axes(ax, figsize=(6.4, 0.55 * n + 1.2))
    old = cached_artists(ax, "stage_transfers", n)
    if old is None:
        ax.clear()
        bars = ax.barh(y, ms, height=0.6, color=[COLORS[r[2]] for r in rows])
        texts = [ax.text(m, yi, t, va="center", fontsize=8)
                 for m, yi, t in zip(ms, y, labels)]
        ax.set_xlabel("Communication per micro-batch [ms] (share of compute)")
        ax.grid(axis="y", visible=False)
        ax.set_ylim(-0.6, n - 0.4)
        remember_artists(ax, "stage_transfers", n, (bars, texts), bars[0])
    else:
        bars, texts = old
        for b, t, m, yi, s, r in zip(bars, texts, ms, y, labels, rows):
            b.set_width(m)
            b.set_color(COLORS[r[2]])
            t.set_position((m, yi))
            t.set_text(s)
    for i, b in enumerate(bars):
        on = i == highlight
        b.set_edgecolor(COLORS["accent"] if on else "none")
        b.set_linewidth(3.0 if on else 0.0)
        texts[i].set_fontweight("bold" if on else "normal")
    ax.set_yticks(y, [r[0] for r in rows])
    ax.set_xlim(0, float(ms.max()) * 1.75 if ms.max() > 0 else 1.0)
    return ax
