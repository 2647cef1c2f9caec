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
__all__ += ["plot_collective_steps", "plot_collective_prediction",
            "plot_collective_comparison"]

#: Algorithms that :func:`plot_collective_steps` can draw.
STEP_ALGORITHMS = ("ring", "tree", "nvls", "direct")
_CHUNK_COLORS = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#e15759",
                 "#76b7b2", "#edc948", "#9c755f")
_RANK_LETTERS = "abcdefgh"


def _collective_schedule(algorithm, n):
    """Steps of an all_reduce on ``n`` ranks, for drawing.

    Returns ``[(phase, transfers, state), ...]``, the first entry being the
    initial state. ``state[g][c]`` is the frozenset of ranks whose data GPU
    ``g``'s chunk ``c`` holds; a transfer is ``(src, dst, chunk, op)`` with
    ``src``/``dst`` a rank or ``"switch"``, ``chunk`` an index or ``None``
    (the whole buffer) and ``op`` ``"reduce"`` or ``"copy"``.
    """
    state = [[frozenset([g]) for _ in range(n)] for g in range(n)]
    full = frozenset(range(n))
    out = [("initial", [], [row[:] for row in state])]

    def apply(phase, transfers):
        old = [row[:] for row in state]
        for src, dst, c, op in transfers:
            if src == "switch" or dst == "switch":
                continue
            chunks = range(n) if c is None else [c]
            for k in chunks:
                state[dst][k] = (state[dst][k] | old[src][k]) if op == "reduce" \
                    else old[src][k]
        out.append((phase, transfers, [row[:] for row in state]))

    if algorithm == "ring":
        for s in range(n - 1):
            apply("reduce-scatter",
                  [(g, (g + 1) % n, (g - s) % n, "reduce") for g in range(n)])
        for s in range(n - 1):
            apply("all-gather",
                  [(g, (g + 1) % n, (g + 1 - s) % n, "copy") for g in range(n)])
    elif algorithm == "tree":
        levels = max(1, int(np.ceil(np.log2(n))))
        for k in range(levels):
            apply("reduce up", [(r, r - 2 ** k, None, "reduce")
                                for r in range(n) if r % 2 ** (k + 1) == 2 ** k])
        for k in reversed(range(levels)):
            apply("broadcast down",
                  [(r, r + 2 ** k, None, "copy") for r in range(n)
                   if r % 2 ** (k + 1) == 0 and r + 2 ** k < n])
    elif algorithm == "direct":
        apply("one shot", [(src, dst, None, "reduce") for dst in range(n)
                           for src in range(n) if src != dst])
    else:                                     # nvls: ld_reduce, then multicast
        tr = [(g, "switch", None, "reduce") for g in range(n)]
        tr += [("switch", g, g, "copy") for g in range(n)]
        for g in range(n):
            state[g][g] = full
        out.append(("reduce in switch", tr, [row[:] for row in state]))
        tr = [(g, "switch", g, "copy") for g in range(n)]
        tr += [("switch", g, None, "copy") for g in range(n)]
        for g in range(n):
            state[g] = [full] * n
        out.append(("multicast", tr, [row[:] for row in state]))
    return out


_PHASE_WORDS = {
    "initial": "start: each GPU holds its own buffer",
    "reduce-scatter": "reduce-scatter",
    "all-gather": "all-gather",
    "reduce up": "reduce up the tree",
    "broadcast down": "broadcast down the tree",
    "one shot": "one shot: read every peer, add",
    "reduce in switch": "the switch adds, returns one chunk each",
    "multicast": "the switch multicasts each chunk",
}


def _draw_step_panel(ax, n, transfers, state, x0, y0, label):
    """One step of a schedule, its top-left corner at data point (x0, y0)."""
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

    box_w, gap, cell_h, head = _STEP_BOX
    box_h = n * cell_h + head + 0.08
    top = y0 - 0.3 - _ARC_ROOM          # step label, then room for arcs
    bottom = top - box_h
    full = frozenset(range(n))
    xs = [x0 + g * (box_w + gap) for g in range(n)]
    mid = top - head - n * cell_h / 2

    def cell_y(c):                      # centre of chunk c's cell
        return top - head - (c + 0.5) * cell_h

    ax.text(x0, y0, label, fontsize=8, va="top", ha="left", color="#222222",
            fontweight="bold")
    for g in range(n):
        ax.add_patch(FancyBboxPatch(
            (xs[g], bottom), box_w, box_h,
            boxstyle="round,pad=0.02,rounding_size=0.08", fc="white",
            ec=COLORS["model"], lw=1.0, zorder=2))
        ax.text(xs[g] + box_w / 2, top - head / 2 - 0.02, f"GPU{g}",
                ha="center", va="center", fontsize=7, zorder=3)
        for c in range(n):
            have = state[g][c]
            ax.add_patch(Rectangle(
                (xs[g] + 0.08, cell_y(c) - cell_h / 2 + 0.03), box_w - 0.16,
                cell_h - 0.06, fc=_CHUNK_COLORS[c],
                alpha=0.2 + 0.8 * len(have) / n,
                ec=COLORS["model"] if have == full else "none", lw=1.2,
                zorder=3))
            text = "Σ" if have == full else \
                "".join(_RANK_LETTERS[r] for r in sorted(have))
            ax.text(xs[g] + box_w / 2, cell_y(c), text, ha="center",
                    va="center", fontsize=6.5, zorder=4,
                    color="white" if have == full else "#222222",
                    fontweight="bold" if have == full else "normal")
    sw_top = bottom - 0.45
    if any("switch" in (s, d) for s, d, _c, _o in transfers):
        ax.add_patch(FancyBboxPatch(
            (xs[0], sw_top - 0.42), xs[-1] + box_w - xs[0], 0.42,
            boxstyle="round,pad=0.02,rounding_size=0.08",
            fc="#dcebcf", ec=COLORS["nvlink"], lw=1.0, zorder=2))
        ax.text((xs[0] + xs[-1] + box_w) / 2, sw_top - 0.21,
                "NVSwitch: ALUs add, multicast copies", ha="center",
                va="center", fontsize=7, color="#2d5a0b", zorder=3)
    for src, dst, c, op in transfers:
        kw = dict(arrowstyle="-|>,head_length=3,head_width=1.8",
                  color=COLORS["model"] if c is None else _CHUNK_COLORS[c],
                  lw=1.1, ls="-" if op == "reduce" else "--", zorder=5,
                  shrinkA=0, shrinkB=0)
        if "switch" in (src, dst):
            g = dst if src == "switch" else src
            xm = xs[g] + box_w / 2 + (0.2 if src == "switch" else -0.2)
            a, b = (xm, bottom), (xm, sw_top)
            ax.add_patch(FancyArrowPatch(*((b, a) if src == "switch"
                                           else (a, b)), **kw))
            continue
        right = dst > src
        if abs(src - dst) == 1:          # neighbours: straight
            y = cell_y(c) if c is not None else mid + (0.1 if right else -0.1)
            xa = xs[src] + (box_w if right else 0)
            xb = xs[dst] + (0 if right else box_w)
            ax.add_patch(FancyArrowPatch((xa, y), (xb, y), **kw))
            continue
        # farther: rightward arcs over the boxes, leftward arcs under them
        dx = xs[dst] - xs[src]
        y = top + 0.02 if right else bottom - 0.02
        rad = min(0.3, 1.6 * _ARC_ROOM / abs(dx))
        ax.add_patch(FancyArrowPatch(
            (xs[src] + box_w / 2 + (0.12 if right else -0.12), y),
            (xs[dst] + box_w / 2, y),
            connectionstyle=f"arc3,rad={-rad}", **kw))


def _draw_step_key(ax, n, x0, y0):
    """How to read :func:`plot_collective_steps`, in an empty grid slot."""
    from matplotlib.patches import FancyArrowPatch

    letters = ", ".join(_RANK_LETTERS[:n])
    rows = [
        (None, f"{letters}: the data of GPU0 … GPU{n - 1}"),
        (None, f"{_RANK_LETTERS[:2]}: the sum of {_RANK_LETTERS[0]} and "
               f"{_RANK_LETTERS[1]} so far"),
        (None, "Σ (outlined): the complete sum"),
        ("-", "arrow: the receiver adds what arrives"),
        ("--", "dashed: the receiver stores a copy"),
        (None, "colour: one chunk; black: the whole buffer"),
    ]
    y = y0 - 0.2
    ax.text(x0, y0, "How to read the panels", fontsize=8, va="top",
            fontweight="bold", color="#222222")
    for ls, text in rows:
        y -= 0.42
        if ls is not None:
            ax.add_patch(FancyArrowPatch(
                (x0, y), (x0 + 0.8, y), arrowstyle="-|>,head_length=3,"
                "head_width=1.8", color=COLORS["model"], lw=1.1, ls=ls))
        ax.text(x0 + (1.0 if ls else 0.0), y, text, fontsize=7.5,
                va="center", color="#222222")


_STEP_BOX = (1.0, 0.75, 0.36, 0.34)    # box width, gap, cell height, header
_ARC_ROOM = 0.5


def plot_collective_steps(algorithm, n_ranks=4, *, step=None, ax=None):
    """Draw an all_reduce step by step: GPUs, chunks and the transfers of each step.

    Each GPU is a box holding its buffer cut into ``n_ranks`` chunks (one
    colour per chunk). A cell's letters name the GPUs whose data it already
    sums (``a`` = GPU0's, ``b`` = GPU1's...); ``Σ`` marks a fully reduced
    chunk. Arrows are the transfers of the step: solid = the receiver adds
    what arrives, dashed = it stores a copy; coloured = one chunk, black = the
    whole buffer.

    Parameters
    ----------
    algorithm : {"ring", "tree", "nvls", "direct"}
        ``ring``: reduce-scatter then all-gather, ``2(n-1)`` steps; ``tree``:
        reduce up a binary tree then broadcast down (NCCL runs two such trees,
        each on half of the buffer, and pipelines them); ``nvls``: the
        NVSwitch reduces and multicasts; ``direct``: every GPU reads every
        peer's buffer at once (one-shot).
    n_ranks : int
        GPUs, 2-8.
    step : int, optional
        Draw only this step (0 = the initial state); default all steps, as
        small multiples in reading order.

    Returns
    -------
    matplotlib.axes.Axes
    """
    check_choice("algorithm", algorithm, STEP_ALGORITHMS)
    n = check_int("n_ranks", n_ranks, low=2, high=len(_RANK_LETTERS))
    sched = _collective_schedule(algorithm, n)
    last = len(sched) - 1
    if step is not None:
        step = check_int("step", step, low=0, high=last)
        panels = [step]
    else:
        panels = list(range(len(sched)))
    ncols = 1 if len(panels) == 1 else 2
    nrows = -(-len(panels) // ncols)
    box_w, gap, cell_h, head = _STEP_BOX
    panel_w = n * box_w + (n - 1) * gap
    below = 1.0 if algorithm == "nvls" else _ARC_ROOM
    panel_h = 0.3 + _ARC_ROOM + n * cell_h + head + 0.08 + below + 0.35
    col_w = panel_w + 0.9
    ax = new_axes(ax, figsize=(min(10.0, 1.0 * ncols * col_w),
                               0.9 * nrows * panel_h))
    for i, k in enumerate(panels):
        _phase, transfers, state = sched[k]
        label = _PHASE_WORDS["initial"] if k == 0 else \
            f"step {k} of {last}: {_PHASE_WORDS[_phase]}"
        r, c = divmod(i, ncols)
        _draw_step_panel(ax, n, transfers, state, c * col_w, -r * panel_h,
                         label)
    if len(panels) < nrows * ncols:                  # an empty slot: the key
        _draw_step_key(ax, n, (ncols - 1) * col_w, -(nrows - 1) * panel_h)
    ax.set_xlim(-0.15, (ncols - 1) * col_w + panel_w + 0.15)
    ax.set_ylim(-nrows * panel_h + 0.3, 0.1)
    ax.set_aspect("equal")
    ax.set_axis_off()
    return ax


_ALGO_COLORS = {"ring": COLORS["pcie"], "tree": COLORS["ib"],
                "direct": COLORS["hbm"], "nvls": COLORS["nvlink"],
                "hierarchical": COLORS["comm"], "none": COLORS["compute"]}


def _metric_values(prediction, metric):
    if metric == "busbw":
        return prediction.busbw / units.GB
    return prediction.time / units.US


def plot_collective_prediction(prediction, *, message_bytes=None, metric="busbw",
                               line_rate=None, ax=None):
    """A predicted nccl-tests curve, coloured by the algorithm chosen per size.

    Calling it again on the same Axes with the same number of sizes updates
    the artists in place (the explorer's redraw); axis limits snap to round
    values so that they change rarely.

    Parameters
    ----------
    prediction : gpulab.collectives.Prediction
        From :func:`gpulab.collectives.predict` over several sizes.
    message_bytes : numeric, optional
        One of the prediction's sizes, marked and labelled. [B]
    metric : {"busbw", "time"}
        busbw [GB/s] on a linear axis, or time per call [µs] on a log axis.
    line_rate : units.Bandwidth, optional
        Per-direction line rate drawn as a dashed line (busbw only).

    Returns
    -------
    matplotlib.axes.Axes
    """
    from . import collectives

    if not isinstance(prediction, collectives.Prediction) \
            or prediction.message_bytes.size < 2:
        raise ValueError("prediction must be a gpulab.collectives.Prediction "
                         "over at least two sizes")
    check_choice("metric", metric, ("busbw", "time"))
    if line_rate is not None and (not isinstance(line_rate, units.Bandwidth)
                                  or line_rate.direction != units.PER_DIRECTION):
        raise ValueError("line_rate must be a per-direction gpulab.units."
                         f"Bandwidth or None; got {line_rate!r}")
    s = prediction.message_bytes
    y = _metric_values(prediction, metric)
    mark = None
    if message_bytes is not None:
        hit = np.flatnonzero(np.isclose(s, float(message_bytes), rtol=1e-12))
        if not hit.size:
            raise ValueError("message_bytes must be one of the prediction's "
                             f"sizes; got {message_bytes!r}")
        mark = int(hit[0])
    ax = new_axes(ax)
    old = _state(ax, "collective_prediction", s.size)
    if old is None:
        ax.clear()
        base, = ax.plot(s, y, "-", color=COLORS["compute"], lw=1.0, alpha=0.5,
                        zorder=2)
        dots = {a: ax.plot([], [], "o", ms=3.8, color=c, zorder=3,
                           label=a)[0] for a, c in _ALGO_COLORS.items()}
        marker, = ax.plot([], [], "o", ms=11, mfc="none", mec=COLORS["accent"],
                          mew=2.2, zorder=4)
        note = ax.annotate("", (s[0], y[0]), xytext=(9, -6),
                           textcoords="offset points", fontsize=8,
                           color="#7a5a00", zorder=5, va="top", ha="left")
        rate = ax.axhline(0, color=COLORS["model"], ls="--", lw=1, zorder=1)
        rate_note = ax.text(0, 0, "", fontsize=8, va="bottom", ha="left",
                            color=COLORS["model"])
        bytes_axis(ax.xaxis)
        ax.set_xlabel("Message size S [B, binary prefixes]")
        art = {"base": base, "dots": dots, "marker": marker, "note": note,
               "rate": rate, "rate_note": rate_note}
        _remember(ax, "collective_prediction", s.size, art, _sentinel(ax))
    else:
        art = old
        art["base"].set_data(s, y)
    scale = "linear" if metric == "busbw" else "log"
    if ax.get_yscale() != scale:
        ax.set_yscale(scale)
    ax.set_ylabel("busbw [GB/s]" if metric == "busbw" else "Time per call [µs]")
    handles = []
    for a, line in art["dots"].items():
        sel = prediction.algorithm == a
        line.set_data(s[sel], y[sel])
        if sel.any():
            protos = dict.fromkeys(prediction.protocol[sel])
            line.set_label(f"{a} ({', '.join(protos)})")
            handles.append(line)
    marker, note = art["marker"], art["note"]
    if mark is not None:
        marker.set_data([s[mark]], [y[mark]])
        value = (f"{y[mark]:.1f} GB/s" if metric == "busbw"
                 else units.fmt_time(prediction.time[mark]))
        note.set_text(f"{units.fmt_bytes(s[mark])}: {value}\n"
                      f"{prediction.algorithm[mark]}/"
                      f"{prediction.protocol[mark]}")
        note.xy = (s[mark], y[mark])
        left = mark < 0.75 * s.size
        note.set_position((9, -6) if left else (-9, -6))
        note.set_ha("left" if left else "right")
    marker.set_visible(mark is not None)
    note.set_visible(mark is not None)
    show_rate = line_rate is not None and metric == "busbw"
    art["rate"].set_visible(show_rate)
    art["rate_note"].set_visible(show_rate)
    top = float(np.nanmax(y))
    if show_rate:
        r = line_rate.gb_per_s
        art["rate"].set_ydata([r, r])
        art["rate_note"].set_position((s[0], r))
        art["rate_note"].set_text(f"line rate: {r:.0f} GB/s per direction")
        top = max(top, r)
    ax.set_xlim(s[0] / 1.6, s[-1] * 1.6)
    if metric == "busbw":                 # round up to a multiple of 50 GB/s
        ax.set_ylim(0, 50.0 * np.ceil(top * 1.12 / 50.0) if top > 0 else 1.0)
    else:                                 # whole decades of µs
        lo = float(np.nanmin(y))
        ax.set_ylim(10.0 ** np.floor(np.log10(lo / 1.5)),
                    10.0 ** np.ceil(np.log10(top * 2.5)))
    labels = [h.get_label() for h in handles]
    loc = "center left" if metric == "busbw" else "upper left"
    leg = ax.get_legend()
    if leg is None or [t.get_text() for t in leg.texts] != labels \
            or leg._loc != leg.codes[loc]:
        leg = ax.legend(handles=handles, fontsize=8, title_fontsize=8, loc=loc,
                        title="algorithm (protocols) NCCL would pick")
        leg.set_zorder(6)
    return ax


def _prediction_blit_parts(ax):
    """For a fast redraw of :func:`plot_collective_prediction` on ``ax``.

    Returns ``(dynamic, key)``: the artists that change with every update
    (drawn on top of a cached background) and a key of everything else (the
    background can be reused while the key is unchanged), or None if ``ax``
    holds no such plot.
    """
    st = getattr(ax, "_gpulab_state", None)
    if not st or st["kind"] != "collective_prediction" \
            or st["sentinel"] not in ax.patches:
        return None
    art = st["artists"]
    dynamic = [art["base"], *art["dots"].values(), art["marker"], art["note"]]
    leg = ax.get_legend()
    key = (id(ax), ax.get_yscale(), ax.get_ylabel(), ax.get_xlim(), ax.get_ylim(),
           art["rate"].get_visible(), tuple(art["rate"].get_ydata()),
           art["rate_note"].get_text(), art["rate_note"].get_position(),
           tuple(t.get_text() for t in leg.texts) if leg else (),
           leg._loc if leg else None, ax.figure.dpi,
           tuple(ax.figure.get_size_inches()))
    return dynamic, key


def _sentinel(ax):
    """An invisible patch whose presence tells :func:`_state` the Axes is intact."""
    from matplotlib.patches import Rectangle

    p = Rectangle((0, 0), 0, 0, visible=False)
    ax.add_patch(p)
    return p


def plot_collective_comparison(measured=None, predicted=None, *, metric="busbw",
                               line_rate=None, colors=None, markers=None,
                               ax=None):
    """Measured points beside model curves; the same label shares a colour.

    Parameters
    ----------
    measured : dict, optional
        ``{label: (sizes, values)}``: sizes [B] and busbw [B/s] (metric
        ``busbw``) or time per call [s] (metric ``time``).
    predicted : dict, optional
        ``{label: gpulab.collectives.Prediction}``, drawn as lines.
    metric : {"busbw", "time"}
    line_rate : units.Bandwidth, optional
        Per-direction line rate, a dashed line (busbw only).
    colors : dict, optional
        ``{label: colour}``; other labels take colours in turn.
    markers : dict, optional
        ``{label: matplotlib marker}`` for measured points (default ``"o"``).

    Returns
    -------
    matplotlib.axes.Axes
    """
    from matplotlib.lines import Line2D

    from . import collectives

    measured = dict(measured or {})
    predicted = dict(predicted or {})
    if not measured and not predicted:
        raise ValueError("measured or predicted must hold at least one series")
    check_choice("metric", metric, ("busbw", "time"))
    for label, p in predicted.items():
        if not isinstance(p, collectives.Prediction):
            raise ValueError(f"predicted[{label!r}] must be a gpulab.collectives."
                             "Prediction")
    for label, v in measured.items():
        if isinstance(v, str) or len(v) != 2 \
                or np.shape(v[0]) != np.shape(v[1]) or np.size(v[0]) < 1:
            raise ValueError(f"measured[{label!r}] must be (sizes, values) of "
                             "equal length")
    if line_rate is not None and (not isinstance(line_rate, units.Bandwidth)
                                  or line_rate.direction != units.PER_DIRECTION):
        raise ValueError("line_rate must be a per-direction gpulab.units."
                         f"Bandwidth or None; got {line_rate!r}")
    palette = [COLORS["nvlink"], COLORS["pcie"], COLORS["ib"], COLORS["hbm"],
               COLORS["comm"], COLORS["accent"], COLORS["compute"], "#6f9fd8"]
    colors = dict(colors or {})
    marks = dict(markers or {})
    labels = list(dict.fromkeys([*predicted, *measured]))
    free = iter(c for c in palette if c not in colors.values())
    for label in labels:
        if label not in colors:
            colors[label] = next(free, COLORS["model"])
    scale = units.GB if metric == "busbw" else units.US
    ax = new_axes(ax)
    handles = []
    for label in labels:
        c = colors[label]
        has_p, has_m = label in predicted, label in measured
        if has_p:
            p = predicted[label]
            ax.plot(p.message_bytes, _metric_values(p, metric), "-", color=c,
                    lw=1.4, alpha=0.85)
        if has_m:
            s, v = (np.asarray(x, dtype=float) for x in measured[label])
            ax.plot(s, v / scale, ls="none", marker=marks.get(label, "o"),
                    color=c, ms=4.5, mew=1.3)
        handles.append(Line2D([], [], color=c, lw=1.4 if has_p else 0,
                              marker=marks.get(label, "o") if has_m else None,
                              ms=4.5, mew=1.3, label=label))
    if line_rate is not None and metric == "busbw":
        r = line_rate.gb_per_s
        ax.axhline(r, color=COLORS["model"], ls="--", lw=1)
        handles.append(Line2D([], [], color=COLORS["model"], ls="--", lw=1,
                              label=f"line rate: {r:.0f} GB/s per direction"))
    bytes_axis(ax.xaxis)
    ax.set_xlabel("Message size S [B, binary prefixes]")
    if metric == "busbw":
        ax.set_ylabel("busbw [GB/s]")
        ax.set_ylim(bottom=0)
    else:
        ax.set_yscale("log")
        ax.set_ylabel("Time per call [µs]")
    ax.legend(handles=handles, loc="upper left", fontsize=8,
              title="points: measured; lines: model", title_fontsize=8)
    return ax



# --- Chapter 5: NVSwitch and scaling out ---------------------------------------------------
# (section owned by the Chapter 5 author)
__all__ += ["plot_fabric", "plot_switch_planes", "plot_peer_links", "plot_busbw_curves",
            "plot_tp_layers", "plot_fabric_algorithms"]

_MAX_DRAWN_GPUS = 16


def _domain_links(system):
    """``(n, matrix)``: GPUs of one NVLink domain and direct links between pairs."""
    from . import systems as S

    s = S.resolve(system)
    n = s.nvlink_domain if s.nvlink.fabric != "none" else min(s.gpus_per_node,
                                                                 _MAX_DRAWN_GPUS)
    if n > _MAX_DRAWN_GPUS:
        raise ValueError(f"system: draws NVLink domains of at most {_MAX_DRAWN_GPUS} "
                         f"GPUs; {s.name!r} has {n}")
    m = np.zeros((n, n), dtype=int)
    if s.nvlink.fabric not in ("none", "nvswitch"):
        for g, peers in S.nvlink_peers(s).items():
            for p, k in peers.items():
                m[g, p] = k
    return s, n, m


def _switch_split(s):
    """Links from each GPU to each NVSwitch chip (topology assumption by generation)."""
    from . import topology as T

    planes = T.assumption("nvswitch_planes").get(s.nvlink.generation)
    chips = s.nvlink.switch_chips
    if planes is not None and (chips is None or chips == len(planes)) \
            and sum(planes) == s.nvlink.links_per_gpu:
        return list(planes)
    chips = chips or 1
    base, extra = divmod(s.nvlink.links_per_gpu, chips)
    return [base + (1 if i < extra else 0) for i in range(chips)]


def plot_fabric(system, *, label=None, ax=None):
    """Draw the NVLink fabric of one NVLink domain: GPUs on a circle, links as lines.

    Direct fabrics (a mesh, DGX-1's hybrid cube mesh) get one line per connected
    GPU pair, thicker for more links; an NVSwitch fabric gets its switch chips in
    the middle and one line from every GPU to every chip. Link counts come from
    :func:`gpulab.systems.nvlink_peers` (direct) or from the NVSwitch plane split
    of :func:`gpulab.topology.assumption` (``"nvswitch_planes"``).

    Parameters
    ----------
    system : systems.System or str
        A preset name, a YAML path or a System (NVLink domain of at most 16 GPUs).
    label : str, optional
        Text under the drawing (e.g. "(a) direct ring").
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    from matplotlib.lines import Line2D

    if label is not None and not isinstance(label, str):
        raise ValueError(f"label must be text or None; got {label!r}")
    s, n, m = _domain_links(system)
    ax = new_axes(ax, figsize=(3.6, 3.8))
    ang = np.pi / 2 - 2 * np.pi * np.arange(n) / n
    x, y = np.cos(ang), np.sin(ang)
    widths, handles = {}, []

    def lw(k):
        return 0.6 + 0.45 * k

    if s.nvlink.fabric == "nvswitch":
        split = _switch_split(s)
        # chips on a small inner circle
        phi = np.pi * 3 / 4 - 2 * np.pi * np.arange(len(split)) / len(split)
        r = 0.36 if len(split) > 1 else 0.0
        sx, sy = r * np.cos(phi), r * np.sin(phi)
        for i in range(n):
            for j, k in enumerate(split):
                ax.plot([x[i], sx[j]], [y[i], sy[j]], color=COLORS["nvlink"],
                        lw=lw(k), alpha=0.4, zorder=2)
                widths[k] = f"{k} links to each chip"
        for j in range(len(split)):
            ax.text(sx[j], sy[j], f"NVSw{j}", ha="center", va="center", fontsize=6.5,
                    zorder=5, bbox=dict(boxstyle="round,pad=0.25", fc="white",
                                        ec=COLORS["nvlink"], lw=1.4))
    elif s.nvlink.fabric == "none":
        ax.text(0, 0, "no NVLink:\nPCIe only", ha="center", va="center", fontsize=8,
                color=COLORS["pcie"])
    else:
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if m[i, j]]
        for i, j in pairs:
            k = int(m[i, j])
            ax.plot([x[i], x[j]], [y[i], y[j]], color=COLORS["nvlink"], lw=lw(k),
                    alpha=0.8, zorder=2)
            widths[k] = f"{k} link{'s' if k > 1 else ''} per pair"
            if len(pairs) <= 12:
                ax.text((x[i] + x[j]) / 2 * 1.12, (y[i] + y[j]) / 2 * 1.12, str(k),
                        ha="center", va="center", fontsize=7.5,
                        color=COLORS["nvlink"], zorder=4)
    for i in range(n):
        ax.text(x[i], y[i], f"GPU{i}", ha="center", va="center", fontsize=7.5,
                zorder=6, bbox=dict(boxstyle="round,pad=0.3", fc="white",
                                    ec=COLORS["model"], lw=1.1))
    for k in sorted(widths, reverse=True):
        handles.append(Line2D([], [], color=COLORS["nvlink"], lw=lw(k),
                              label=widths[k]))
    if label:
        ax.text(0.0, -1.36, label, ha="center", va="top", fontsize=9)
    if handles:
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                  ncol=1, fontsize=7.5, handlelength=2.2)
    ax.set_xlim(-1.3, 1.3)
    ax.set_ylim(-1.6 if label else -1.3, 1.3)
    ax.set_aspect("equal")
    ax.set_axis_off()
    return ax


def plot_switch_planes(topo, *, ax=None):
    """One bar per GPU: its NVLink links, coloured by the NVSwitch chip they go to.

    Shows how a DGX/HGX board spreads each GPU's links over the switch chips
    (H100/H200: 5/4/4/5 over four chips) and that every chip reaches every GPU.

    Parameters
    ----------
    topo : gpulab.topology.Topology
        A topology with NVSwitch chips, e.g. :func:`gpulab.topology.nvswitch_node`.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    from . import topology as T

    T._check_topo(topo)
    g, gpus, chips = topo.graph, topo.gpus, topo.nvswitches
    if not chips:
        raise ValueError(f"topo must have NVSwitch chips; {topo.name!r} has none")
    ax = new_axes(ax, figsize=(6.4, 3.2))
    shades = ["#3d7a10", "#8cc152", "#5a9e1b", "#b8dc8c", "#2e5c0c", "#a4cf6c"]
    y = np.arange(len(gpus))[::-1]
    left = np.zeros(len(gpus))
    for j, sw in enumerate(chips):
        k = np.array([g.edges[gp, sw]["links"] if g.has_edge(gp, sw) else 0
                      for gp in gpus], dtype=float)
        color = shades[j % len(shades)]
        ax.barh(y, k, left=left, color=color, edgecolor="white", lw=1.2,
                label=f"NVSw{j}: {int(k.sum())} ports to GPUs")
        for yi, lo, kk in zip(y, left, k):
            if kk:
                ax.text(lo + kk / 2, yi, f"{int(kk)}", ha="center", va="center",
                        fontsize=8, color="white" if j % 2 == 0 else "#1d3b06")
        left += k
    ax.set_yticks(y, [f"GPU{gp[3:]}" if gp.startswith("gpu") else gp for gp in gpus])
    ax.set_xlabel("NVLink links of the GPU [links], by NVSwitch chip")
    ax.set_xlim(0, float(left.max()) * 1.02)
    ax.grid(axis="y", visible=False)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=min(len(chips), 4),
              fontsize=8)
    return ax


def plot_peer_links(system, *, ax=None):
    """The NVLink links between every pair of GPUs of one NVLink domain, as a matrix.

    Cells hold the link count from :func:`gpulab.systems.nvlink_peers` (an
    NVSwitch pair shows the links a transfer between the two can use); empty
    cells are pairs without NVLink, which must go through PCIe or another GPU.

    Parameters
    ----------
    system : systems.System or str
        NVLink domain of at most 16 GPUs.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    from matplotlib.colors import LinearSegmentedColormap

    from . import systems as S

    s, n, _ = _domain_links(system)
    peers = S.nvlink_peers(s)
    m = np.zeros((n, n))
    for gp, row in peers.items():
        for p, k in row.items():
            m[gp, p] = k
    ax = new_axes(ax, figsize=(4.2, 3.8))
    cmap = LinearSegmentedColormap.from_list("links", ["#f4f4f4", COLORS["nvlink"]])
    edges = np.arange(n + 1) - 0.5
    ax.pcolormesh(edges, edges, m, cmap=cmap, vmin=0,
                  vmax=max(float(m.max()), 1.0), edgecolors="white", linewidth=1.5)
    ax.set_xlim(edges[0], edges[-1])
    ax.set_ylim(edges[-1], edges[0])            # GPU0 on top, as a matrix
    ax.set_aspect("equal")
    for i in range(n):
        for j in range(n):
            text = "–" if i == j else (f"{int(m[i, j])}" if m[i, j] else "0")
            dark = m[i, j] > 0.6 * max(float(m.max()), 1.0)
            ax.text(j, i, text, ha="center", va="center", fontsize=8,
                    color="white" if dark else "#555555")
    ticks = np.arange(n)
    ax.set_xticks(ticks, [f"GPU{i}" for i in ticks], fontsize=7, rotation=90)
    ax.set_yticks(ticks, [f"GPU{i}" for i in ticks], fontsize=7)
    ax.grid(False)
    ax.tick_params(length=0)
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    return ax


def _check_rates(line_rates, name):
    out = []
    for item in line_rates or ():
        if not (isinstance(item, tuple) and len(item) == 3):
            raise ValueError(f"{name} must be (label, Bandwidth, kind) tuples; got "
                             f"{item!r}")
        label, bw, kind = item
        if not isinstance(bw, units.Bandwidth):
            raise ValueError(f"{name}: {label!r} needs a units.Bandwidth; got {bw!r}")
        if bw.direction != units.PER_DIRECTION:
            raise units.DirectionError(f"{name}: {label!r} must be per direction "
                                       f"(busbw is); got {bw}")
        check_choice("kind", kind, COLORS)
        out.append((str(label), bw, kind))
    return out


def plot_busbw_curves(curves, *, line_rates=(), ax=None):
    """nccl-tests bus bandwidth against message size, one line per prediction.

    Parameters
    ----------
    curves : sequence of (label, collectives.Prediction, kind) or
        (label, Prediction, kind, linestyle)
        ``kind`` is a key of :data:`COLORS`.
    line_rates : sequence of (label, units.Bandwidth, kind), optional
        Per-direction reference rates drawn as dashed horizontal lines.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    from . import collectives as C

    curves = list(curves)
    if not curves:
        raise ValueError("curves must be a non-empty sequence of (label, Prediction, "
                         "kind)")
    rates = _check_rates(line_rates, "line_rates")
    ax = new_axes(ax)
    top = 0.0
    for item in curves:
        if not (isinstance(item, tuple) and len(item) in (3, 4)
                and isinstance(item[1], C.Prediction)):
            raise ValueError("curves must be (label, Prediction, kind[, linestyle]) "
                             f"tuples; got {item!r}"[:200])
        label, p, kind = item[:3]
        check_choice("kind", kind, COLORS)
        ls = item[3] if len(item) == 4 else "-"
        y = np.asarray(p.busbw) / units.GB
        ax.plot(p.message_bytes, y, ls, color=COLORS[kind], label=str(label))
        top = max(top, float(y.max()))
    x0 = min(float(np.min(item[1].message_bytes)) for item in curves)
    for label, bw, kind in rates:
        ax.axhline(bw.gb_per_s, color=COLORS[kind], lw=1.0, ls="--", alpha=0.8)
        ax.text(x0, bw.gb_per_s, f" {label}", fontsize=7.5, va="bottom",
                color=COLORS[kind])
        top = max(top, bw.gb_per_s)
    bytes_axis(ax.xaxis)
    ax.set_xlabel("Message size S [bytes]")
    ax.set_ylabel("busbw [GB/s, per direction]")
    ax.set_ylim(0, top * 1.12)
    ax.legend(loc="center left")
    return ax


def plot_tp_layers(rows, *, ax=None):
    """Stacked bars per configuration: compute and tensor-parallel communication.

    Parameters
    ----------
    rows : sequence of (label, compute_time, comm_time)
        Times per transformer layer [s] (forward plus backward); communication
        is drawn as not overlapped with compute.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    rows = list(rows)
    if not rows or not all(isinstance(r, tuple) and len(r) == 3 for r in rows):
        raise ValueError("rows must be a non-empty sequence of (label, compute_time, "
                         "comm_time) tuples")
    comp = np.array([float(r[1]) for r in rows])
    comm = np.array([float(r[2]) for r in rows])
    if not (np.all(np.isfinite(comp)) and np.all(comp > 0)
            and np.all(np.isfinite(comm)) and np.all(comm >= 0)):
        raise ValueError("rows: compute_time must be > 0 and comm_time >= 0 [s]")
    ax = new_axes(ax)
    y = np.arange(len(rows))[::-1]
    ax.barh(y, comp * 1e3, color=COLORS["compute"], label="compute (at the MFU assumed)")
    ax.barh(y, comm * 1e3, left=comp * 1e3, color=COLORS["comm"],
            label="TP all_reduce (not overlapped)")
    for yi, c, m in zip(y, comp, comm):
        ax.annotate(f"comm = {m / c:.0%} of compute", ((c + m) * 1e3, yi),
                    xytext=(4, 0), textcoords="offset points", va="center",
                    fontsize=8)
    ax.set_yticks(y, [str(r[0]) for r in rows])
    ax.set_xlabel("Time per transformer layer, forward + backward [ms]")
    ax.set_xlim(0, float(np.max(comp + comm)) * 1e3 * 1.5)
    ax.grid(axis="y", visible=False)
    ax.legend(loc="upper right")
    return ax


def plot_fabric_algorithms(rows, *, line_rates=(), highlight=None, ax=None):
    """Horizontal bars of predicted busbw per algorithm, with per-direction line rates.

    Calling it again on the same Axes with the same row labels updates the bars,
    texts and lines in place (the fabric explorer redraws this way).

    Parameters
    ----------
    rows : sequence of (label, time, busbw, note)
        ``time`` [s] and ``busbw`` [B/s, per direction] of one algorithm, or
        ``None`` for both where it does not apply (``note`` says why).
    line_rates : sequence of (label, units.Bandwidth, kind), at most two
        Per-direction line rates drawn as dashed vertical lines.
    highlight : int, optional
        Row to outline (NCCL's choice).
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    rows = list(rows)
    if not rows or not all(isinstance(r, tuple) and len(r) == 4 for r in rows):
        raise ValueError("rows must be a non-empty sequence of (label, time, busbw, "
                         "note) tuples")
    gb, texts = [], []
    for label, t, bb, note in rows:
        if (t is None) != (bb is None):
            raise ValueError(f"rows: {label!r} needs both time and busbw, or neither")
        if t is None:
            gb.append(0.0)
            texts.append(note if note else "n/a")
            continue
        t, bb = float(t), float(bb)
        if not (np.isfinite(t) and t > 0 and np.isfinite(bb) and bb >= 0):
            raise ValueError(f"rows: {label!r} needs time > 0 [s] and busbw >= 0 "
                             f"[B/s]; got {t!r}, {bb!r}")
        gb.append(bb / units.GB)
        texts.append(f"{units.fmt_time(t)}, {bb / units.GB:.3g} GB/s"
                     + (f" ({note})" if note else ""))
    rates = _check_rates(line_rates, "line_rates")
    if len(rates) > 2:
        raise ValueError("line_rates: at most two")
    if highlight is not None:
        highlight = check_int("highlight", highlight, low=0, high=len(rows) - 1)
    ax = new_axes(ax)
    key = tuple(str(r[0]) for r in rows)
    y = np.arange(len(rows))[::-1]
    old = _state(ax, "fabric_algorithms", key)
    if old is None:
        ax.clear()
        bars = ax.barh(y, gb, color=COLORS["nvlink"])
        labels = [ax.annotate(s, (v, yi), xytext=(4, 0), textcoords="offset points",
                              va="center", fontsize=8, zorder=4)
                  for yi, v, s in zip(y, gb, texts)]
        lines = [ax.axvline(0, ls="--", lw=1.2, visible=False, zorder=1, alpha=0.7)
                 for _ in range(2)]
        tags = [ax.text(0, 1.01, "", fontsize=7, va="bottom", ha="left",
                        transform=ax.get_xaxis_transform()) for _ in range(2)]
        ax.set_yticks(y, list(key))
        ax.set_xlabel("busbw [GB/s, per direction]")
        ax.grid(axis="y", visible=False)
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(5))     # few tick labels: fast redraw
        _remember(ax, "fabric_algorithms", key, (bars, labels, lines, tags), bars[0])
    else:
        bars, labels, lines, tags = old
        for b, txt, yi, v, s in zip(bars, labels, y, gb, texts):
            b.set_width(v)
            txt.xy = (v, yi)
            txt.set_text(s)
    for i, (b, txt) in enumerate(zip(bars, labels)):
        on = i == highlight
        b.set_edgecolor(COLORS["accent"] if on else "none")
        b.set_linewidth(3.0 if on else 0.0)
        txt.set_fontweight("bold" if on else "normal")
        txt.set_color("#222222" if gb[i] > 0 else "#777777")
    top = max(gb + [1e-9])
    for i, (line, tag) in enumerate(zip(lines, tags)):
        if i < len(rates):
            label, bw, kind = rates[i]
            line.set_xdata([bw.gb_per_s, bw.gb_per_s])
            line.set_color(COLORS[kind])
            line.set_visible(True)
            tag.set_position((bw.gb_per_s, 1.01))
            tag.set_text(f"{label}, {bw.gb_per_s:.3g} GB/s")
            tag.set_color(COLORS[kind])
            tag.set_visible(True)
            top = max(top, bw.gb_per_s)
        else:
            line.set_visible(False)
            tag.set_visible(False)
    ax.set_xlim(0, top * 1.6)
    return ax


# --- Chapter 6: reading nccl-tests ---------------------------------------------------
# (section owned by the Chapter 6 author)
__all__ += ["plot_time_curves", "plot_article_audit", "plot_bucket_time"]


def _curve_arrays(name, label, x, y):
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    if x.size == 0 or x.shape != y.shape:
        raise ValueError(f"{name}: {label!r} needs sizes and values of the same "
                         f"non-zero length; got {x.size} and {y.size}")
    if not (np.all(np.isfinite(x)) and np.all(x > 0) and np.all(np.isfinite(y))
            and np.all(y >= 0)):
        raise ValueError(f"{name}: {label!r} needs sizes > 0 [B] and finite "
                         "values >= 0")
    return x, y


def plot_time_curves(curves, *, marks=(), ax=None):
    """Time per call against message size, log-log, measured points and model lines.

    Parameters
    ----------
    curves : sequence of (label, sizes, times, kind, style)
        ``sizes`` [B], ``times`` [s]; ``kind`` a key of :data:`COLORS`;
        ``style`` ``"measured"`` (markers) or ``"model"`` (a line).
    marks : sequence of (label, size), optional
        Vertical dotted lines at message sizes [B] (e.g. the half-bandwidth size).
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    curves = list(curves)
    if not curves:
        raise ValueError("curves must be a non-empty sequence of (label, sizes, "
                         "times, kind, style)")
    checked = []
    for item in curves:
        if not (isinstance(item, tuple) and len(item) == 5):
            raise ValueError("curves must be (label, sizes, times, kind, style) "
                             f"tuples; got {item!r}")
        label, x, y, kind, style = item
        check_choice("kind", kind, COLORS)
        check_choice("style", style, ("measured", "model"))
        x, y = _curve_arrays("curves", label, x, y)
        checked.append((str(label), x, y, kind, style))
    marks = list(marks or ())
    for m in marks:
        if not (isinstance(m, tuple) and len(m) == 2 and float(m[1]) > 0):
            raise ValueError(f"marks must be (label, size > 0 [B]) tuples; got {m!r}")
    ax = new_axes(ax)
    for label, x, y, kind, style in checked:
        if style == "measured":
            ax.plot(x, y * 1e6, "o", ms=4, color=COLORS[kind], label=label)
        else:
            ax.plot(x, y * 1e6, "-", lw=1.4, color=COLORS[kind], label=label)
    for label, size in marks:
        ax.axvline(float(size), ls=":", lw=1.2, color=COLORS["accent"])
        ax.annotate(str(label), (float(size), 1.0), xycoords=("data", "axes fraction"),
                    xytext=(3, -3), textcoords="offset points", fontsize=8,
                    va="top", color="#555555")
    bytes_axis(ax.xaxis)
    ax.set_yscale("log")
    ax.set_xlabel("Message size [B, binary prefixes]")
    ax.set_ylabel("Time per call [µs]")
    ax.legend(loc="upper left", fontsize=8)
    return ax


def plot_article_audit(sizes, claimed_busbw, curves, *, line_rate, ax=None):
    """Claimed nccl-tests busbw against model curves and the per-direction line rate.

    Parameters
    ----------
    sizes, claimed_busbw : array_like
        The claimed table: message sizes [B] and busbw [B/s].
    curves : sequence of (label, sizes, busbw, kind)
        Reference busbw curves [B, B/s] (model or measurement).
    line_rate : units.Bandwidth
        Per-direction line rate of one GPU; the band above it is shaded.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    x, y = _curve_arrays("claimed", "claimed table", sizes, claimed_busbw)
    (rate,) = _check_rates([("line rate", line_rate, "nvlink")], "line_rate")
    checked = []
    for item in curves or ():
        if not (isinstance(item, tuple) and len(item) == 4):
            raise ValueError("curves must be (label, sizes, busbw, kind) tuples; "
                             f"got {item!r}")
        label, cx, cy, kind = item
        check_choice("kind", kind, COLORS)
        cx, cy = _curve_arrays("curves", label, cx, cy)
        checked.append((str(label), cx, cy, kind))
    ax = new_axes(ax)
    lr = rate[1].gb_per_s
    top = max(float(y.max()) / units.GB, lr) * 1.15
    ax.axhspan(lr, top, color=COLORS["comm"], alpha=0.08, lw=0)
    ax.axhline(lr, ls="--", lw=1.2, color=COLORS["nvlink"])
    ax.annotate(f"line rate {lr:.0f} GB/s per direction", (1.0, lr),
                xycoords=("axes fraction", "data"), xytext=(-3, -4),
                textcoords="offset points", fontsize=8, ha="right", va="top",
                color=COLORS["nvlink"])
    for label, cx, cy, kind in checked:
        ax.plot(cx, cy / units.GB, "-", lw=1.4, color=COLORS[kind], label=label)
    ax.plot(x, y / units.GB, "X", ms=8, color=COLORS["comm"],
            label="claimed (source article)")
    bytes_axis(ax.xaxis)
    ax.set_ylim(0, top)
    ax.set_xlabel("Message size [B, binary prefixes]")
    ax.set_ylabel("busbw [GB/s, per direction]")
    ax.legend(loc="upper left", fontsize=8)
    return ax


def plot_bucket_time(bucket_bytes, total_time, *, chosen, one_call_time=None,
                     ax=None):
    """Total gradient all_reduce time against bucket size, the chosen bucket marked.

    Calling it again on the same Axes with as many points updates it in place
    (the bucket explorer redraws this way).

    Parameters
    ----------
    bucket_bytes : array_like
        Bucket sizes [B], increasing.
    total_time : array_like
        Time of all the buckets' all_reduce calls, one after another. [s]
    chosen : (bucket_bytes, total_time)
        The point to mark [B, s].
    one_call_time : float, optional
        Time of one all_reduce of the whole gradient [s], drawn dashed.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    x, y = _curve_arrays("total_time", "bucket curve", bucket_bytes, total_time)
    if np.any(np.diff(x) <= 0) or np.any(y <= 0):
        raise ValueError("bucket_bytes must increase and total_time be > 0 [s]")
    if not (isinstance(chosen, tuple) and len(chosen) == 2
            and float(chosen[0]) > 0 and float(chosen[1]) > 0):
        raise ValueError(f"chosen must be (bucket_bytes > 0, time > 0); got "
                         f"{chosen!r}")
    cx, cy = float(chosen[0]), float(chosen[1])
    if one_call_time is not None and not float(one_call_time) > 0:
        raise ValueError(f"one_call_time must be > 0 [s]; got {one_call_time!r}")
    ax = new_axes(ax)
    key = (len(x),)
    old = _state(ax, "bucket_time", key)
    if old is None:
        ax.clear()
        from matplotlib.patches import Rectangle

        sentinel = ax.add_patch(Rectangle((0, 0), 0, 0, visible=False))
        (line,) = ax.plot(x, y * 1e3, "-", lw=1.8, color=COLORS["comm"],
                          label="all buckets, one after another")
        (one,) = ax.plot([x[0], x[-1]], [1, 1], "--", lw=1.2,
                         color=COLORS["model"],
                         label="one call for the whole gradient")
        (dot,) = ax.plot([cx], [cy * 1e3], "o", ms=9, color=COLORS["accent"],
                         mec="#222222", zorder=5)
        tag = ax.annotate("", (cx, cy * 1e3), xytext=(6, 6),
                          textcoords="offset points", fontsize=8)
        bytes_axis(ax.xaxis)
        ax.set_yscale("log")
        from matplotlib.ticker import FuncFormatter, NullLocator

        # plain labels: mathtext (10^k) labels would cost most of a redraw
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("Bucket size [B, binary prefixes]")
        ax.set_ylabel("Gradient all_reduce time [ms]")
        ax.legend(loc="upper right", fontsize=8)
        _remember(ax, "bucket_time", key, (line, one, dot, tag), sentinel)
    else:
        line, one, dot, tag = old
        line.set_data(x, y * 1e3)
    dot.set_data([cx], [cy * 1e3])
    tag.xy = (cx, cy * 1e3)
    tag.set_text(f"{units.fmt_bytes(cx)}: {units.fmt_time(cy)}")
    lo, hi = float(y.min()), float(y.max())
    if one_call_time is None:
        one.set_visible(False)
    else:
        t1 = float(one_call_time)
        one.set_data([x[0], x[-1]], [t1 * 1e3, t1 * 1e3])
        one.set_visible(True)
        lo, hi = min(lo, t1), max(hi, t1)
    ax.set_xlim(x[0] / 1.3, x[-1] * 1.3)
    ax.set_ylim(lo * 1e3 / 1.5, hi * 1e3 * 2.0)
    return ax



# --- Chapter 7: parallel strategies --------------------------------------------------
# (section owned by the Chapter 7 author)
__all__ += ["plot_memory_breakdown", "plot_step_breakdown"]

#: Parts of a training GPU's memory (attribute, legend label, colour), left to right.
_CH7_MEMORY_PARTS = (("weights", "weights", "#2f6db3"),
                 ("gradients", "gradients", "#8fb3e0"),
                 ("optimizer", "optimizer states", "#7b4fa0"),
                 ("activations", "activations", "#e0a100"))
#: Parts of a step time (StepTime.components() key, legend label, colour).
_CH7_STEP_PARTS = (("compute", "compute", COLORS["compute"]),
               ("tp_comm", "TP communication", COLORS["comm"]),
               ("pp_comm", "PP communication", COLORS["ib"]),
               ("dp_comm", "DP communication (exposed)", COLORS["pcie"]),
               ("bubble", "pipeline bubble", "#c8c8c8"))


def _ch7_rows(results, name, want):
    """``[(label, obj)]`` from one result or a sequence of results / (label, result).

    ``want`` is "memory" (TrainingMemory) or "step" (StepTime)."""
    from . import parallelism as par

    def one(label, r):
        if isinstance(r, par.LayoutResult):
            if r.step is None:
                raise ValueError(f"{name}: layout {r.layout} has no step time "
                                 f"({'; '.join(r.reasons)})")
            r = r.step
        if isinstance(r, par.StepTime):
            lab = str(r.layout) if label is None else str(label)
            return lab, (r.memory if want == "memory" else r)
        if want == "memory" and isinstance(r, par.TrainingMemory):
            return ("" if label is None else str(label)), r
        kinds = ("parallelism.StepTime, LayoutResult or TrainingMemory"
                 if want == "memory" else "parallelism.StepTime or LayoutResult")
        raise ValueError(f"{name} must be a {kinds}, a sequence of them or of "
                         f"(label, result) pairs; got {r!r}")

    single = (par.StepTime, par.LayoutResult, par.TrainingMemory)
    items = [results] if isinstance(results, single) else results
    if isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
        raise ValueError(f"{name} must be a result or a non-empty sequence of "
                         f"results; got {results!r}")
    rows = []
    for it in items:
        if isinstance(it, tuple) and len(it) == 2 and not isinstance(it[0], single):
            rows.append(one(it[0], it[1]))
        else:
            rows.append(one(None, it))
    if not rows:
        raise ValueError(f"{name} must not be empty")
    return rows


def _ch7_nice_ceil(x):
    """The smallest of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 x 10^k at or above ``x``
    (stable axis limits: a widget can reuse its cached background)."""
    k = 10.0 ** np.floor(np.log10(x))
    for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * k >= x * (1 - 1e-12):
            return m * k
    return 10 * k  # pragma: no cover


def _ch7_stacked_barh(ax, kind, key, labels, parts, values, end_texts, xlabel):
    """Horizontal stacked bars, updated in place on a second call with ``key``."""
    y = np.arange(len(labels))[::-1]
    left = np.zeros(len(labels))
    old = _state(ax, kind, key)
    if old is None:
        ax.clear()
        bars = []
        for (_k, label, color), v in zip(parts, values):
            bars.append(ax.barh(y, v, left=left, color=color, label=label,
                                height=0.6))
            left = left + v
        texts = [ax.annotate(t, (x, yi), xytext=(4, 0), textcoords="offset points",
                             va="center", fontsize=8)
                 for yi, x, t in zip(y, left, end_texts)]
        ax.set_yticks(y, labels)
        ax.set_ylim(-0.6, len(labels) - 0.4)
        ax.set_xlabel(xlabel)
        ax.grid(axis="y", visible=False)
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(6))
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
        _remember(ax, kind, key, (bars, texts), bars[0][0])
        return ax, left, None
    bars, texts = old[:2]
    for cont, v in zip(bars, values):
        for rect, x0, w in zip(cont, left, v):
            rect.set_x(x0)
            rect.set_width(w)
        left = left + v
    for txt, yi, x, t in zip(texts, y, left, end_texts):
        txt.xy = (x, yi)
        txt.set_text(t)
    for tick, lab in zip(ax.get_yticklabels(), labels):
        if tick.get_text() != lab:
            ax.set_yticks(y, labels)
            break
    return ax, left, old


def plot_memory_breakdown(results, *, capacity=None, usable=None, ax=None):
    """Stacked bars of training memory per GPU: weights, gradients, optimizer
    states and activations, against the GPU's memory.

    Calling it again on the same Axes with the same labels updates the bars, texts
    and lines in place (the layout explorer redraws this way).

    Parameters
    ----------
    results : parallelism.StepTime, LayoutResult or TrainingMemory, or a sequence
        One bar per result; an item may be a ``(label, result)`` pair. A StepTime
        or LayoutResult is labelled with its layout.
    capacity : float, optional
        The GPU's memory, drawn as a solid line. [B]
    usable : float, optional
        The memory left after the reserve, drawn as a dashed line. [B]
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        x axis in GB (1e9 bytes).
    """
    rows = _ch7_rows(results, "results", "memory")
    limits = []
    for name, v in (("capacity", capacity), ("usable", usable)):
        if v is not None:
            v = float(v) if isinstance(v, (int, float, np.floating,
                                           np.integer)) else None
            if v is None or not np.isfinite(v) or v <= 0:
                raise ValueError(f"{name} must be a positive number of bytes or "
                                 "None")
        limits.append(v)
    cap, use = limits
    ax = new_axes(ax)
    values = [np.array([getattr(m, k) for _l, m in rows]) / units.GB
              for k, _n, _c in _CH7_MEMORY_PARTS]
    totals = np.array([m.total for _l, m in rows]) / units.GB
    ends = [f"{t:.1f} GB" for t in totals]
    key = (len(rows),)
    ax, _left, old = _ch7_stacked_barh(ax, "memory_breakdown", key,
                                   [lab for lab, _m in rows], _CH7_MEMORY_PARTS,
                                   values, ends, "Memory per GPU [GB]")
    if old is None:
        lines = [ax.axvline(0, color="#222222", lw=1.4, visible=False, zorder=3),
                 ax.axvline(0, color="#222222", lw=1.2, ls="--", visible=False,
                            zorder=3)]
        tags = [ax.text(0, 1.02, "", fontsize=8, va="bottom", ha=ha,
                        transform=ax.get_xaxis_transform())
                for ha in ("left", "right")]
        state = ax._gpulab_state
        state["artists"] = state["artists"] + (lines, tags)
    else:
        lines, tags = old[2], old[3]
    for line, tag, v, word in zip(lines, tags, (cap, use),
                                  ("GPU memory", "usable")):
        on = v is not None
        line.set_visible(on)
        tag.set_visible(on)
        if on:
            x = v / units.GB
            line.set_xdata([x, x])
            tag.set_position((x, 1.02))
            tag.set_text(f" {word} {x:.0f} GB " if word == "GPU memory"
                         else f"{word} {x:.0f} GB ")
    top = max([float(totals.max())] + [v / units.GB for v in (cap, use)
                                        if v is not None])
    ax.set_xlim(0, _ch7_nice_ceil(top * 1.22))
    return ax


def plot_step_breakdown(step_times, *, ax=None):
    """Stacked bars of one training step: compute, TP, PP and exposed DP
    communication, and the pipeline bubble.

    Calling it again on the same Axes with the same labels updates the bars in
    place.

    Parameters
    ----------
    step_times : parallelism.StepTime or LayoutResult, or a sequence
        One bar per step; an item may be a ``(label, step)`` pair (default label:
        the layout).
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        x axis in seconds; each bar ends with the step time and the end-to-end
        MFU.
    """
    rows = _ch7_rows(step_times, "step_times", "step")
    ax = new_axes(ax)
    comps = [st.components() for _l, st in rows]
    values = [np.array([c[k] for c in comps]) for k, _n, _c in _CH7_STEP_PARTS]
    ends = [f"{st.total:.2f} s, MFU {st.mfu:.0%}" for _l, st in rows]
    key = (len(rows),)
    ax, left, _old = _ch7_stacked_barh(ax, "step_breakdown", key,
                                   [lab for lab, _s in rows], _CH7_STEP_PARTS, values,
                                   ends, "Step time [s]")
    ax.set_xlim(0, _ch7_nice_ceil(float(left.max()) * 1.4))
    return ax


# --- Chapter 8: tensor parallelism ---------------------------------------------------
__all__ += ["plot_megatron_layer", "plot_tp_degree", "plot_tp_measured"]

#: Stages of one Megatron transformer layer, left to right: (text, kind) with kind
#: "rep" (replicated on every TP rank), "shard" (split over the ranks) or "f"/"g"
#: (the conjugate communication operators of Shoeybi et al. 2019, Fig. 3-4).
_MEGATRON_STAGES = (
    ("input X", "rep"), ("LayerNorm", "rep"), ("f", "f"),
    ("QKV\ncols {i}/{t}", "shard"), ("attention\nheads {i}/{t}", "shard"),
    ("out proj\nrows {i}/{t}", "shard"), ("g", "g"),
    ("+ residual\ndropout", "rep"), ("LayerNorm", "rep"), ("f", "f"),
    ("FC1 + GeLU\ncols {i}/{t}", "shard"), ("FC2\nrows {i}/{t}", "shard"),
    ("g", "g"), ("+ residual\ndropout", "rep"),
)


def plot_megatron_layer(*, sequence_parallel=False, ax=None):
    """Schematic of one Megatron-LM transformer layer split over two TP ranks.

    Column-parallel GEMMs (QKV, FC1) and row-parallel GEMMs (attention output,
    FC2) run on each rank's shard; the ``f`` and ``g`` operators mark where the
    tensor-parallel collectives fall. Without sequence parallelism ``g`` is an
    AllReduce in the forward pass and ``f`` one in the backward pass (two of each
    per layer); with it, ``g`` becomes a reduce-scatter (backward: all-gather) and
    ``f`` an all-gather (backward: reduce-scatter), and the replicated blocks hold
    1/t of the sequence.

    Parameters
    ----------
    sequence_parallel : bool
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    from matplotlib.patches import Circle, FancyBboxPatch

    if not isinstance(sequence_parallel, (bool, np.bool_)):
        raise ValueError("sequence_parallel must be True or False; got "
                         f"{sequence_parallel!r}")
    ax = new_axes(ax, figsize=(10.5, 3.4))
    t, n = 2, len(_MEGATRON_STAGES)
    lanes = (1.0, 0.0)                       # y of rank 0 and rank 1
    if sequence_parallel:
        ops = {"f": ("all-gather", "reduce-scatter"),
               "g": ("reduce-scatter", "all-gather")}
    else:
        ops = {"f": ("—", "AllReduce"), "g": ("AllReduce", "—")}
    fwd_c, bwd_c = COLORS["comm"], COLORS["pcie"]
    for k, (text, kind) in enumerate(_MEGATRON_STAGES):
        x = float(k)
        if k:
            for y in lanes:
                ax.plot([x - 0.62, x - 0.38], [y, y], color="#999999", lw=1.0,
                        zorder=1)
        if kind in ("f", "g"):
            ax.add_patch(Circle((x, 0.5), 0.3, facecolor="white",
                                edgecolor=COLORS["model"], lw=1.5, zorder=3))
            ax.text(x, 0.5, kind, ha="center", va="center", fontsize=12,
                    fontstyle="italic", fontweight="bold", zorder=4)
            for y in lanes:
                ax.plot([x - 0.38, x + 0.38], [y, y], color="#999999", lw=1.0,
                        zorder=1)
            fwd, bwd = ops[kind]
            ax.text(x, -0.62, f"fwd: {fwd}", ha="center", va="top", fontsize=7.5,
                    color=fwd_c if fwd != "—" else "#777777")
            ax.text(x, -0.92, f"bwd: {bwd}", ha="center", va="top", fontsize=7.5,
                    color=bwd_c if bwd != "—" else "#777777")
        elif kind == "rep":
            label = text + ("\n(1/t of seq.)" if sequence_parallel and k else "")
            ax.add_patch(FancyBboxPatch((x - 0.4, -0.3), 0.8, 1.6,
                                        boxstyle="round,pad=0.02",
                                        facecolor="#eeeeee", edgecolor="#888888",
                                        zorder=2))
            ax.text(x, 0.5, label, ha="center", va="center", fontsize=7.5,
                    rotation=90 if "\n" not in label else 0, zorder=3)
        else:
            for i, y in enumerate(lanes, start=1):
                ax.add_patch(FancyBboxPatch((x - 0.42, y - 0.28), 0.84, 0.56,
                                            boxstyle="round,pad=0.02",
                                            facecolor="#dfe9f5",
                                            edgecolor=COLORS["pcie"], zorder=2))
                ax.text(x, y, text.format(i=i, t=t), ha="center", va="center",
                        fontsize=7, zorder=3)
    for i, y in enumerate(lanes):
        ax.text(-0.62, y, f"GPU {i}", ha="right", va="center", fontsize=8.5)
    ax.text(-0.62, -0.77, "collective", ha="right", va="center", fontsize=8,
            color="#555555")
    ax.set_xlim(-1.5, n - 0.45)
    ax.set_ylim(-1.25, 1.5)
    ax.set_aspect("equal")
    ax.axis("off")
    return ax


def _tp_rows(rows, width):
    rows = list(rows)
    if not rows or not all(isinstance(r, tuple) and len(r) == width for r in rows):
        raise ValueError(f"rows must be a non-empty sequence of {width}-tuples")
    return rows


def plot_tp_degree(rows, *, highlight=None, ax=None):
    """Per-layer compute and tensor-parallel communication for several TP degrees.

    Calling it again on an Axes it drew before updates the bars and texts in
    place (the TP explorer reuses one figure); a different number of rows
    redraws the Axes.

    Parameters
    ----------
    rows : sequence of (label, compute_time, comm_time, exposed_time, note)
        Per transformer layer and micro-batch, forward plus backward [s]:
        compute, TP communication before overlap, and the part of it left on the
        critical path (``0 <= exposed_time <= comm_time``); the hidden rest is
        drawn hatched inside the compute bar. ``note`` (str) is printed after the
        bar (e.g. "does not fit").
    highlight : int, optional
        Row to outline.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    rows = _tp_rows(rows, 5)
    try:
        comp = np.array([float(r[1]) for r in rows])
        comm = np.array([float(r[2]) for r in rows])
        expo = np.array([float(r[3]) for r in rows])
    except (TypeError, ValueError):
        raise ValueError("rows: times must be numbers [s]") from None
    if not (np.all(np.isfinite(comp)) and np.all(comp > 0) and np.all(np.isfinite(comm))
            and np.all(comm >= 0) and np.all(expo >= 0)
            and np.all(expo <= comm * (1 + 1e-12))):
        raise ValueError("rows: compute_time must be > 0 and 0 <= exposed_time <= "
                         "comm_time [s]")
    if highlight is not None and (isinstance(highlight, bool) or highlight
                                  not in range(len(rows))):
        raise ValueError(f"highlight must be a row index in [0, {len(rows) - 1}] or "
                         f"None; got {highlight!r}")
    ms = 1e3
    hidden = np.minimum(comm - expo, comp)
    heads = [(f"{e / (c + e):.0%} exposed" if m > 0 else "no TP communication")
             + (f"; {r[4]}" if r[4] else "")
             for c, m, e, r in zip(comp, comm, expo, rows)]
    labels = [str(r[0]) for r in rows]
    state = getattr(ax, "_gpulab_tp_degree", None)
    if state is not None and state["n"] != len(rows):
        ax.cla()
        state = None
    ax = new_axes(ax)
    y = np.arange(len(rows))[::-1]
    if state is None:               # build the artists once, then update in place
        state = {"n": len(rows), "labels": None}
        state["comp"] = ax.barh(y, comp * ms, color=COLORS["compute"],
                                label="compute")
        state["expo"] = ax.barh(y, expo * ms, left=comp * ms, color=COLORS["comm"],
                                label="TP communication, exposed")
        state["hidden"] = ax.barh(
            y, hidden * ms, left=(comp - hidden) * ms, height=0.5, fill=False,
            hatch="////", edgecolor=COLORS["comm"], lw=0,
            label="TP communication, hidden behind GEMMs")
        state["frame"] = ax.barh(0, 1, fill=False, edgecolor=COLORS["model"],
                                 lw=2.0)[0]
        state["texts"] = [ax.annotate("", (0, yi), xytext=(4, 0),
                                      textcoords="offset points", va="center",
                                      fontsize=8) for yi in y]
        ax.set_xlabel("Time per layer and micro-batch, forward + backward [ms]")
        ax.grid(axis="y", visible=False)
        ax.legend(loc="upper center", ncol=3, fontsize=7.5, handlelength=1.5,
                  columnspacing=1.0, borderaxespad=0.1)
        ax.set_ylim(-0.6, len(rows) - 0.4 + 0.9)
        ax._gpulab_tp_degree = state
    for i in range(len(rows)):
        state["comp"][i].set_width(comp[i] * ms)
        state["expo"][i].set_x(comp[i] * ms)
        state["expo"][i].set_width(expo[i] * ms)
        state["hidden"][i].set_x((comp[i] - hidden[i]) * ms)
        state["hidden"][i].set_width(hidden[i] * ms)
        txt = state["texts"][i]
        txt.set_text(heads[i])
        txt.xy = ((comp[i] + expo[i]) * ms, y[i])
        txt.set_fontweight("bold" if i == highlight else "normal")
    frame = state["frame"]
    frame.set_visible(highlight is not None)
    if highlight is not None:
        frame.set_xy((0, y[highlight] - 0.4))
        frame.set_width((comp[highlight] + expo[highlight]) * ms)
    if labels != state["labels"]:
        ax.set_yticks(y, labels)
        state["labels"] = labels
    ax.set_xlim(0, float(np.max(comp + expo)) * ms * 1.6)
    return ax


def plot_tp_measured(rows, *, ax=None):
    """Measured against modelled: one TP layer's compute and its AllReduces.

    Parameters
    ----------
    rows : sequence of (label, measured_compute, measured_comm, model_compute, model_comm)
        Per transformer layer and micro-batch on one TP rank, forward plus
        backward [s]. Each row becomes two stacked bars, measured (solid) and
        model (hatched); the label notes the model's error on the total.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    rows = _tp_rows(rows, 5)
    try:
        data = np.array([[float(v) for v in r[1:]] for r in rows])
    except (TypeError, ValueError):
        raise ValueError("rows: times must be numbers [s]") from None
    if not (np.all(np.isfinite(data)) and np.all(data[:, [0, 2]] > 0)
            and np.all(data >= 0)):
        raise ValueError("rows: compute times must be > 0 and comm times >= 0 [s]")
    ax = new_axes(ax, figsize=(7.0, 0.9 + 0.75 * len(rows)))
    ms, n = 1e3, len(rows)
    y_meas = np.arange(n)[::-1] * 2.6 + 1.0
    y_mod = y_meas - 0.9
    kw = {"height": 0.8}
    ax.barh(y_meas, data[:, 0] * ms, color=COLORS["compute"],
            label="compute, measured", **kw)
    ax.barh(y_meas, data[:, 1] * ms, left=data[:, 0] * ms, color=COLORS["comm"],
            label="4 AllReduces, measured", **kw)
    ax.barh(y_mod, data[:, 2] * ms, facecolor="white", edgecolor=COLORS["compute"],
            hatch="///", label="compute, model", **kw)
    ax.barh(y_mod, data[:, 3] * ms, left=data[:, 2] * ms, facecolor="white",
            edgecolor=COLORS["comm"], hatch="///", label="4 AllReduces, model",
            **kw)
    for ym, yo, d in zip(y_meas, y_mod, data):
        meas, mod = d[0] + d[1], d[2] + d[3]
        ax.annotate(f"comm {d[1] / d[0]:.0%} of compute", (meas * ms, ym),
                    xytext=(4, 0), textcoords="offset points", va="center",
                    fontsize=8)
        ax.annotate(f"model {mod / meas - 1:+.0%}", (mod * ms, yo), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize=8)
    ticks = np.ravel(np.column_stack([y_meas, y_mod]))
    labels = np.ravel([[f"{r[0]}, measured", "model"] for r in rows])
    ax.set_yticks(ticks, labels)
    ax.set_xlabel("Time per layer and micro-batch on one TP=2 rank, "
                  "forward + backward [ms]")
    ax.set_xlim(0, float(np.max(data[:, :2].sum(1).tolist()
                                + data[:, 2:].sum(1).tolist())) * ms * 1.3)
    ax.grid(axis="y", visible=False)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=8)
    return ax



# --- Chapter 9: is NVLink worth it ---------------------------------------------------
# (section owned by the Chapter 9 author)
__all__ += ["plot_step_comparison", "plot_speedup_slowdown", "plot_roi"]

#: Colour of each part of a step (keys of parallelism.StepTime.components()).
_STEP_PARTS = (("compute", "compute", "compute"), ("tp_comm", "comm", "TP comm."),
               ("pp_comm", "ib", "PP comm."), ("dp_comm", "hbm", "DP comm."),
               ("bubble", "accent", "pipeline bubble"))


def plot_step_comparison(rows, *, ax=None):
    """Stacked horizontal bars of step time per system: compute, exposed TP, PP and
    DP communication and the pipeline bubble.

    Parameters
    ----------
    rows : sequence of (label, parallelism.StepTime)
        One bar per row, top to bottom; each is annotated with its throughput.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    from . import parallelism as par

    rows = list(rows)
    if not rows or not all(isinstance(r, tuple) and len(r) == 2
                           and isinstance(r[1], par.StepTime) for r in rows):
        raise ValueError("rows must be a non-empty sequence of (label, StepTime) "
                         "tuples")
    ax = new_axes(ax)
    y = np.arange(len(rows))[::-1]
    left = np.zeros(len(rows))
    for key, kind, name in _STEP_PARTS:
        w = np.array([r[1].components()[key] for r in rows])
        ax.barh(y, w, left=left, color=COLORS[kind], label=name)
        left += w
    for yi, (_label, st) in zip(y, rows):
        ax.annotate(f"{st.total:.3g} s, {st.tokens_per_s / 1e3:.3g}k tokens/s",
                    (st.total, yi), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize=8)
    ax.set_yticks(y, [str(r[0]) for r in rows])
    ax.set_xlabel("Step time [s]")
    ax.set_xlim(0, float(left.max()) * 1.45)
    ax.grid(axis="y", visible=False)
    ax.legend(loc="lower right", fontsize=7.5)
    return ax


def plot_speedup_slowdown(points=(), *, ax=None):
    """Speedup of the fast system against slowdown of the slow one, for the same pair.

    The curve is :func:`gpulab.parallelism.speedup` against
    :func:`gpulab.parallelism.slowdown` for step-time ratios from 1 to 4; the dotted
    diagonal is where the two would be equal (they never are, except at zero).

    Parameters
    ----------
    points : sequence of (label, t_fast, t_slow), optional
        Pairs of times [s] (or inverse throughputs) to mark on the curve.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    from . import parallelism as par

    points = list(points)
    for p in points:
        if not (isinstance(p, tuple) and len(p) == 3):
            raise ValueError("points must be (label, t_fast, t_slow) tuples; got "
                             f"{p!r}"[:200])
    marks = [(str(lbl), 100 * par.slowdown(f, s), 100 * par.speedup(f, s))
             for lbl, f, s in points]
    ax = new_axes(ax)
    ratio = np.linspace(1.0, 4.0, 200)
    x = [100 * par.slowdown(1.0, r) for r in ratio]
    y = [100 * par.speedup(1.0, r) for r in ratio]
    ax.plot(x, y, color=COLORS["model"], label="speedup of the fast system")
    ax.plot([0, 75], [0, 75], ":", color="#888888", lw=1.2,
            label="if speedup were the slowdown")
    for lbl, sx, sy in marks:
        ax.plot([sx], [sy], "o", color=COLORS["nvlink"], ms=6, zorder=4)
        ax.plot([sx, sx], [sx, sy], "-", color=COLORS["comm"], lw=1.0)
        ax.annotate(f"{lbl}: slowdown {sx:.0f}%, speedup {sy:.0f}%", (sx, sy),
                    xytext=(-8, 8), textcoords="offset points", ha="right",
                    fontsize=8)
    ax.set_xlabel("Slowdown of the slow system, 1 − t_fast/t_slow [%]")
    ax.set_ylabel("Speedup, t_slow/t_fast − 1 [%]")
    ax.set_xlim(0, 75)
    ax.set_ylim(0, 300)
    ax.legend(loc="upper left")
    return ax


def plot_roi(roi, *, labels=("NVLink", "PCIe"), currency="USD", ax=None):
    """Cost and length of one training project on the fast and the slow system.

    Calling it again on the same Axes with the same labels updates the bars in
    place (the ROI explorer redraws this way).

    Parameters
    ----------
    roi : parallelism.ROI
        From :func:`gpulab.parallelism.nvlink_roi`.
    labels : (str, str)
        Names of the fast and the slow system.
    currency : str
        Currency of the prices the ROI was computed with (axis label only).
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    from . import parallelism as par

    if not isinstance(roi, par.ROI):
        raise ValueError(f"roi must be a parallelism.ROI; got {roi!r}"[:200])
    if not (isinstance(labels, (tuple, list)) and len(labels) == 2):
        raise ValueError(f"labels must be two strings; got {labels!r}")
    cost = np.array([roi.cost_fast, roi.cost_slow])
    days = np.array([roi.project_s_fast, roi.project_s_slow]) / 86400.0
    k = 1e3 if cost.max() < 1e7 else 1e6
    unit = "thousand" if k == 1e3 else "million"
    width = cost / k
    texts = [f"{c:,.4g} {unit} {currency}, {d:.3g} days" for c, d in
             zip(width, days)]
    key = tuple(str(x) for x in labels)
    y = np.array([1, 0])
    ax = new_axes(ax)
    old = _state(ax, "roi", key)
    if old is None:
        ax.clear()
        bars = ax.barh(y, width, color=[COLORS["nvlink"], COLORS["pcie"]],
                       height=0.55)
        notes = [ax.annotate(t, (w, yi), xytext=(4, 0), textcoords="offset points",
                             va="center", fontsize=8.5)
                 for yi, w, t in zip(y, width, texts)]
        ax.set_yticks(y, list(key))
        ax.grid(axis="y", visible=False)
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(5))
        _remember(ax, "roi", key, (bars, notes), bars[0])
    else:
        bars, notes = old
        for b, txt, yi, w, t in zip(bars, notes, y, width, texts):
            b.set_width(w)
            txt.xy = (w, yi)
            txt.set_text(t)
    ax.set_xlabel(f"Project cost [{unit} {currency}]")
    ax.set_xlim(0, float(width.max()) * 1.7)
    return ax
