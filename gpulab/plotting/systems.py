"""Figures of the systems topic: scale-up fabrics, NVSwitch planes and peer links.

Every ``plot_*`` takes ``ax=None``, draws from gpulab models or data, returns the
``Axes``, never calls ``plt.show()`` and sets no title.
"""
from __future__ import annotations

import numpy as np

from .style import COLORS, new_axes
from .. import systems as S
from .. import topology as T


_MAX_DRAWN_GPUS = 16


def _domain_links(system):
    """``(n, matrix)``: GPUs of one NVLink domain and direct links between pairs."""
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
    T.check_topology(topo)
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
