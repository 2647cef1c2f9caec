"""Figures of the server-topology topic: a server's PCIe/NVLink graph.

Every ``plot_*`` takes ``ax=None``, draws from gpulab models or data, returns the
``Axes``, never calls ``plt.show()`` and sets no title.
"""
from __future__ import annotations

import numpy as np

from .style import COLORS, new_axes
from .. import topology as T


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
    T.check_topology(topo)
    g = topo.graph
    hl = []
    if highlight is not None:
        if isinstance(highlight, str) or not hasattr(highlight, "__iter__"):
            raise ValueError("highlight must be a sequence of node names; "
                             f"got {highlight!r}")
        hl = list(highlight)
        for n in hl:
            T.check_node(topo, n, "highlight")
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
