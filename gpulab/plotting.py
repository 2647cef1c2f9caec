"""Figures for the course: house style and ``plot_*`` functions.

Rules: every ``plot_*`` takes ``ax=None`` (a new figure is made only when needed),
draws from gpulab models or data, returns the ``Axes``, never calls ``plt.show()``
and sets no title (the caption carries the message). Axes carry units; byte axes
use binary prefixes and a log scale. The house style is applied only by an
explicit :func:`use_book_style` call.
"""
from __future__ import annotations

import numpy as np

from . import links, measurements, scaling, specs, units
from ._validate import check_choice, check_int

__all__ = [
    "COLORS", "use_book_style", "new_axes", "bytes_axis",
    "plot_growth", "plot_scaling_efficiency", "plot_dp_steps",
    "plot_nrz_pam4", "plot_eye", "plot_nvlink_generations", "plot_link_budget",
    "plot_copy_bandwidth", "plot_link_vs_generations", "plot_topology",
    "plot_pcie_budget", "plot_tlp_efficiency", "plot_host_copies",
    "plot_stage_transfers",
]

#: One colour per kind of path, used in every figure of the book.
COLORS = {
    "nvlink": "#5a9e1b",     # green
    "pcie": "#2f6db3",       # blue
    "ib": "#d9822b",         # orange
    "hbm": "#7b4fa0",        # purple
    "compute": "#555555",    # grey
    "comm": "#c0392b",       # red: exposed communication
    "model": "#222222",
    "accent": "#e0a100",
}

_STYLE = {
    "figure.figsize": (6.4, 3.6),
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
    "font.size": 10,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
    "legend.fontsize": 9,
    "lines.linewidth": 1.8,
    "svg.fonttype": "none",
}


def use_book_style(*, svg=True):
    """Apply the course's matplotlib style (and SVG inline output in notebooks).

    Call it once at the top of a chapter or lab; importing gpulab changes nothing.

    Parameters
    ----------
    svg : bool, default True
        In IPython/Jupyter, ask the inline backend for SVG figures (crisp in the
        HTML book). Ignored outside IPython.
    """
    import matplotlib as mpl

    mpl.rcParams.update(_STYLE)
    if svg:
        try:
            from IPython import get_ipython
            from matplotlib_inline.backend_inline import set_matplotlib_formats
        except ImportError:  # pragma: no cover - IPython always present in notebooks
            return
        if get_ipython() is not None:
            set_matplotlib_formats("svg")


def new_axes(ax=None, figsize=None):
    """Return ``ax`` or a fresh Axes on a new pyplot figure."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize)
    return ax


def bytes_axis(axis, *, binary=True):
    """Log-scale a byte axis (``ax.xaxis``) with binary-prefix tick labels."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    if axis is axis.axes.xaxis:
        axis.axes.set_xscale("log", base=2)
    else:
        axis.axes.set_yscale("log", base=2)
    axis.set_major_locator(LogLocator(base=4))
    axis.set_major_formatter(FuncFormatter(
        lambda v, _p: units.fmt_bytes(v, binary=binary) if v > 0 else ""))
    axis.set_minor_formatter(FuncFormatter(lambda v, _p: ""))
    return axis


# --- Chapter 1 ----------------------------------------------------------------------
_GROWTH_LABELS = {
    "fp16_dense_flops": ("Dense FP16/BF16 compute", "compute"),
    "nvlink_bandwidth": ("NVLink per GPU (per direction)", "nvlink"),
    "memory_bandwidth": ("HBM bandwidth", "hbm"),
}


def plot_growth(gpus=None, baseline="V100", ax=None):
    """Grouped bars: growth of compute, NVLink and HBM relative to ``baseline``."""
    rows = scaling.growth_table(gpus, baseline)
    ax = new_axes(ax)
    x = np.arange(len(rows))
    width = 0.27
    for i, (metric, (label, color)) in enumerate(_GROWTH_LABELS.items()):
        vals = [r[metric] for r in rows]
        bars = ax.bar(x + (i - 1) * width, vals, width, label=label,
                      color=COLORS[color])
        ax.bar_label(bars, labels=[f"{v:.1f}×" for v in vals], fontsize=7,
                     padding=1)
    ax.set_xticks(x, [r["gpu"] for r in rows])
    ax.set_ylabel(f"Growth relative to {baseline} [×]")
    ax.set_yscale("log")
    from matplotlib.ticker import FuncFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}×"))
    top = max(r[m] for r in rows for m in _GROWTH_LABELS)
    ax.set_ylim(0.8, top * 2.2)
    ax.legend(loc="upper left")
    return ax


def plot_scaling_efficiency(n_gpus=8, overlaps=(0.0, 0.5, 0.9), ax=None):
    """Effective GPUs vs the communication-to-compute ratio, for several overlaps."""
    n = check_int("n_gpus", n_gpus, low=1, high=100_000)
    ratio = np.logspace(-2, 1, 200)
    ax = new_axes(ax)
    for o, ls in zip(overlaps, ("-", "--", ":")):
        eff = scaling.effective_gpus(n, 1.0, ratio, overlap=o)
        ax.plot(ratio, eff, ls, color=COLORS["comm"],
                label=f"{o:.0%} of communication overlapped")
    ax.axhline(n, color=COLORS["compute"], lw=1, alpha=0.6)
    ax.axhline(n / 2, color=COLORS["accent"], lw=1, alpha=0.8)
    ax.annotate(f"{n} GPUs deliver {n // 2}: exposed comm = compute",
                (1.0, n / 2), xytext=(0.012, n / 2 * 0.78), fontsize=8,
                color="#7a5a00")
    ax.set_xscale("log")
    ax.set_xlabel("Communication time / compute time per step [×]")
    ax.set_ylabel(f"Effective GPUs [of {n}]")
    ax.set_ylim(0, n * 1.08)
    ax.legend(loc="lower left")
    return ax


def _state(ax, kind, key):
    """Artists of an earlier call of plot ``kind`` on ``ax`` with the same ``key``.

    Widgets call the same ``plot_*`` on the same Axes at every update; updating
    the existing artists in place is about twice as fast as clearing and redrawing.
    """
    st = getattr(ax, "_gpulab_state", None)
    if not st or st["kind"] != kind or st["key"] != key:
        return None
    if st["sentinel"] not in ax.patches:      # the Axes was cleared since
        return None
    return st["artists"]


def _remember(ax, kind, key, artists, sentinel):
    ax._gpulab_state = {"kind": kind, "key": key, "artists": artists,
                        "sentinel": sentinel}


def plot_dp_steps(steps, ax=None):
    """Horizontal stacked bars of compute and exposed communication per step.

    Calling it again on the same Axes with the same GPUs updates the bars in place.

    Parameters
    ----------
    steps : sequence of scaling.DPStep
        One bar per step (e.g. one per GPU generation).
    """
    steps = list(steps)
    if not steps or not all(isinstance(s, scaling.DPStep) for s in steps):
        raise ValueError("steps must be a non-empty sequence of scaling.DPStep")
    ax = new_axes(ax)
    key = tuple(s.gpu for s in steps)
    y = np.arange(len(steps))[::-1]
    comp = np.array([s.compute_time for s in steps]) * 1e3
    comm = np.array([s.exposed_comm_time for s in steps]) * 1e3
    labels = [f"  {s.efficiency:.0%} → {s.effective_gpus:.1f} of {s.n_gpus} GPUs"
              for s in steps]
    old = _state(ax, "dp_steps", key)
    if old is None:
        ax.clear()
        b1 = ax.barh(y, comp, color=COLORS["compute"], label="compute")
        b2 = ax.barh(y, comm, left=comp, color=COLORS["comm"],
                     label="exposed communication")
        texts = [ax.text(c + m, yi, t, va="center", fontsize=8)
                 for yi, c, m, t in zip(y, comp, comm, labels)]
        ax.set_yticks(y, list(key))
        ax.set_xlabel("Step time [ms]")
        ax.legend(loc="lower right")
        ax.grid(axis="y", visible=False)
        _remember(ax, "dp_steps", key, (b1, b2, texts), b1[0])
    else:
        b1, b2, texts = old
        for r1, r2, txt, yi, c, m, t in zip(b1, b2, texts, y, comp, comm, labels):
            r1.set_width(c)
            r2.set_x(c)
            r2.set_width(m)
            txt.set_position((c + m, yi))
            txt.set_text(t)
    ax.set_xlim(0, float(np.max(comp + comm)) * 1.45)
    return ax


# --- Chapter 2 ----------------------------------------------------------------------
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
    ax.plot(t, stack.T, color=color, alpha=0.06, lw=1)
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
    old = _state(ax, "link_vs_generations", len(vals))
    if old is None:
        ax.clear()
        colors = [COLORS["nvlink"]] * len(gens) + [COLORS["accent"]]
        bars = ax.bar(x, vals, 0.6, color=colors)
        texts = ax.bar_label(bars, labels=[f"{v:.0f}" for v in vals], fontsize=8)
        ax.set_ylabel("Per GPU [GB/s, per direction]")
        ax.grid(axis="x", visible=False)
        _remember(ax, "link_vs_generations", len(vals), (bars, texts), bars[0])
    else:
        bars, texts = old
        bars[-1].set_height(vals[-1])
        texts[-1].set_text(f"{vals[-1]:.0f}")
        texts[-1].xy = (x[-1], vals[-1])
    ax.set_xticks(x, names)
    ax.set_ylim(0, max(vals) * 1.18 + 1)
    return ax


# --- Chapter 3: server topology -------------------------------------------------------
def plot_topology(topo, *, ax=None, highlight=None):
    """Draw a server topology in layers: CPUs on top, PCIe switches, then devices.

    GPUs and NICs share the bottom PCIe row; NVSwitch chips sit below them. One
    line per edge, coloured by kind (PCIe blue, NVLink green, CPU-to-CPU link
    grey and dashed); NICs are outlined in the network colour. PCIe and
    CPU-to-CPU edges are labelled with their bandwidth in GB/s per direction,
    NVSwitch chips with the links each GPU has to them.

    Parameters
    ----------
    topo : gpulab.topology.Topology
        A topology from a builder or from ``parse_topo_matrix``.
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure sized to the topology otherwise.
    highlight : sequence of str, optional
        Two node names (their :func:`gpulab.topology.path` is drawn) or a
        longer path of adjacent nodes, drawn as a thick band under the edges.

    Returns
    -------
    matplotlib.axes.Axes
    """
    from matplotlib.lines import Line2D

    from . import topology as T

    T._check_topo(topo)
    g = topo.graph
    hl = []
    if highlight is not None:
        if isinstance(highlight, str) or not hasattr(highlight, "__iter__"):
            raise ValueError("highlight must be a sequence of node names; "
                             f"got {highlight!r}")
        hl = list(highlight)
        for n in hl:
            T._node(topo, n, "highlight")
        if len(hl) == 2:
            hl = T.path(topo, hl[0], hl[1])
        elif any(not g.has_edge(u, v) for u, v in zip(hl, hl[1:])) or len(hl) < 2:
            raise ValueError("highlight must be two nodes or a path of adjacent "
                             f"nodes; got {highlight!r}")

    # layers: depth in the PCIe tree below the CPUs
    children, depth = {}, {c: 0 for c in topo.cpus}
    queue = list(topo.cpus)
    while queue:
        u = queue.pop(0)
        kids = sorted((v for v in g.neighbors(u) if v not in depth
                       and g.edges[u, v]["kind"] == "pcie"),
                      key=lambda v: (g.nodes[v]["kind"] != "switch",
                                     g.nodes[v]["kind"] != "gpu", g.nodes[v]["index"]))
        children[u] = kids
        for v in kids:
            depth[v] = depth[u] + 1
            queue.append(v)
    devices = topo.devices
    bottom = max([depth.get(d, 1) for d in devices] + [1])
    pos, slot = {}, [0.0]

    def place(u):
        kids = children.get(u, [])
        if g.nodes[u]["kind"] in ("gpu", "nic") or not kids:
            pos[u] = (slot[0], -float(bottom if g.nodes[u]["kind"] in ("gpu", "nic")
                                      else depth.get(u, 0)))
            slot[0] += 1.0
            return
        for v in kids:
            place(v)
        pos[u] = (sum(pos[v][0] for v in kids) / len(kids), -float(depth[u]))

    for c in topo.cpus:
        place(c)
        slot[0] += 0.5
    for n in g.nodes:                        # anything not under a CPU
        if n not in pos and g.nodes[n]["kind"] != "nvswitch":
            pos[n] = (slot[0], -float(bottom))
            slot[0] += 1.0
    xs = [pos[d][0] for d in devices] or [0.0]
    nvs = topo.nvswitches
    for i, s in enumerate(nvs):
        x = (min(xs) + (max(xs) - min(xs)) * (i + 0.5) / len(nvs))
        pos[s] = (x, -bottom - 1.3)

    width = max(xs) - min(xs) + 1
    ax = new_axes(ax, figsize=(max(6.4, 0.7 * width), 3.2 + 0.7 * bottom
                               + (1.0 if nvs else 0)))
    colors = {"pcie": COLORS["pcie"], "nvlink": COLORS["nvlink"],
              "nvswitch": COLORS["nvlink"], "upi": COLORS["compute"]}
    label_kw = dict(fontsize=7, ha="center", va="center", zorder=4,
                    bbox=dict(boxstyle="round,pad=0.12", fc="white", ec="none",
                              alpha=0.85))

    def curve(a, b, kind):
        (x0, y0), (x1, y1) = pos[a], pos[b]
        lo, hi = sorted((x0, x1))
        between = [n for n in g.nodes if n in pos and pos[n][1] == y0
                   and lo < pos[n][0] < hi]
        if kind in ("nvlink", "upi") and y0 == y1 and (between or kind == "nvlink"):
            sign = -1.0 if kind == "nvlink" else 1.0    # arc, clear of the boxes
            h = sign * (0.3 + 0.05 * abs(x1 - x0))
            t = np.linspace(0, 1, 30)
            return x0 + (x1 - x0) * t, y0 + h * np.sin(np.pi * t)
        return np.array([x0, x1]), np.array([y0, y1])

    extent = []
    for a, b, d in g.edges(data=True):
        kind = d["kind"]
        x, y = curve(a, b, kind)
        extent += [y.min(), y.max()]
        ax.plot(x, y, color=colors[kind], lw=1.0 if kind == "nvswitch" else 1.6,
                ls="--" if kind == "upi" else "-",
                alpha=0.55 if kind == "nvswitch" else 1.0, zorder=2,
                gid=f"{a}-{b}")
        if kind in ("pcie", "upi", "nvlink"):
            i = len(x) // 2
            if len(x) == 2:
                lo = 0 if y[0] < y[1] else 1
                xm, ym = x[lo] + 0.35 * (x[1 - lo] - x[lo]), y[lo] + 0.35 * (
                    y[1 - lo] - y[lo])
            else:
                xm, ym = x[i], y[i]
            ax.text(xm, ym, f"{d['bandwidth'].gb_per_s:.0f}", color=colors[kind],
                    **label_kw)
    for u, v in zip(hl, hl[1:]):
        x, y = curve(u, v, g.edges[u, v]["kind"])
        ax.plot(x, y, color=COLORS["accent"], lw=7, alpha=0.45, zorder=1,
                solid_capstyle="round")

    node_style = {"cpu": ("CPU", COLORS["compute"]), "switch": ("SW", COLORS["pcie"]),
                  "gpu": ("GPU", COLORS["model"]), "nic": ("NIC", COLORS["ib"]),
                  "nvswitch": ("NVSw", COLORS["nvlink"])}
    for n, d in g.nodes(data=True):
        prefix, color = node_style[d["kind"]]
        text = f"{prefix}{d['index']}"
        if d["kind"] == "nvswitch":
            per = sorted({(g.edges[n, m]["links"],
                           g.edges[n, m]["bandwidth"].gb_per_s / g.edges[n, m]["links"])
                          for m in g.neighbors(n)})
            text += "\n" + ", ".join(f"{k} × {bw:g}" for k, bw in per) + " per GPU"
        x, y = pos[n]
        ax.text(x, y, text, ha="center", va="center", fontsize=7.5, zorder=5,
                color="#222222", gid=n,
                bbox=dict(boxstyle="round,pad=0.3", fc="white", ec=color,
                          lw=1.8 if d["kind"] == "nic" else 1.2))
    handles = [Line2D([], [], color=COLORS["pcie"], lw=1.6, label="PCIe")]
    if len(topo.cpus) > 1:
        handles.append(Line2D([], [], color=COLORS["compute"], lw=1.6, ls="--",
                              label="CPU-to-CPU link"))
    if nvs or any(d["kind"] == "nvlink" for _, _, d in g.edges(data=True)):
        handles.append(Line2D([], [], color=COLORS["nvlink"], lw=1.6, label="NVLink"))
    if topo.nics:
        handles.append(Line2D([], [], color=COLORS["ib"], lw=0, marker="s", ms=8,
                              mfc="white", mew=1.8, label="NIC (to the network)"))
    if hl:
        handles.append(Line2D([], [], color=COLORS["accent"], lw=6, alpha=0.45,
                              label="path " + " → ".join(hl)))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0),
              ncol=min(len(handles), 5), fontsize=8,
              title="edge labels: bandwidth in GB/s, per direction",
              title_fontsize=8)
    ys = [p[1] for p in pos.values()] + extent
    ax.set_xlim(min(xs) - 0.8, max(max(xs), max(p[0] for p in pos.values())) + 0.8)
    ax.set_ylim(min(ys) - 0.55, max(ys) + 0.45)
    ax.set_axis_off()
    return ax


# --- Chapter 3: PCIe budget, protocol efficiency, host copies, pipeline stages -----------
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
    from . import pcie

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
    old = _state(ax, "pcie_budget", 4)
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
        _remember(ax, "pcie_budget", 4, (bars, texts, line, note), bars[0])
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
    from . import pcie

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

    Points: the recorded sweep; lines: ``S / pcie.copy_time(S, ...)`` of
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

    from . import pcie, systems

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
        t = pcie.copy_time(grid, direction, memory=memory, system=sys_)
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
    from ._validate import as_number

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
    old = _state(ax, "stage_transfers", n)
    if old is None:
        ax.clear()
        bars = ax.barh(y, ms, height=0.6, color=[COLORS[r[2]] for r in rows])
        texts = [ax.text(m, yi, t, va="center", fontsize=8)
                 for m, yi, t in zip(ms, y, labels)]
        ax.set_xlabel("Communication per micro-batch [ms] (share of compute)")
        ax.grid(axis="y", visible=False)
        ax.set_ylim(-0.6, n - 0.4)
        _remember(ax, "stage_transfers", n, (bars, texts), bars[0])
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


# --- Chapter 4: in-network reduction -------------------------------------------------------
# (section owned by the Chapter 4 author)


# --- Chapter 5: NVSwitch and scaling out ---------------------------------------------------
# (section owned by the Chapter 5 author)
