"""Precomputed chart of the network topic: an all_reduce across nodes (the network
explorer's curve) over cluster presets, node counts, fabrics and message sizes, with
the published points of each configuration."""
from __future__ import annotations

import functools

import altair as alt

from .base import Control, build, bytes_x, picked
from .. import collectives, network, units

#: Grid of the network chart: cluster presets, node counts, fabrics ("preset": the
#: cluster's own) and marked sizes [B].
NETWORK_CLUSTERS = ("dgx-h100-spod", "dgx-a100-spod", "aws-p5", "gcp-a3-mega")
NETWORK_CHART_NODES = (2, 8, 32)
NETWORK_CHART_FABRICS = ("preset", "ib", "efa", "tcpx")
NETWORK_MARKS = tuple(2 ** k for k in (4, 12, 20, 26, 30))   # 16 B .. 1 GiB
#: Message sizes of each curve: powers of four, 16 B to 16 GiB. [B]
NETWORK_CURVE = tuple(2 ** k for k in range(4, 35, 2))


def network_chart(cluster="dgx-h100-spod", nodes=2, fabric="preset",
                  message_bytes=units.GiB):
    """Predicted all_reduce busbw across nodes over message sizes (NCCL's algorithm per
    size), with the published points of the configuration. Precomputed by
    :func:`gpulab.network.scale_out` and :func:`gpulab.collectives.predict` over
    :data:`NETWORK_CURVE` for every combination of :data:`NETWORK_CLUSTERS`,
    :data:`NETWORK_CHART_NODES` and :data:`NETWORK_CHART_FABRICS` (the preset's NICs);
    the summary at each of :data:`NETWORK_MARKS`; published points where their size
    is one of the curve's. The arguments pick the initial point."""
    controls = (
        Control("cluster", "Cluster", NETWORK_CLUSTERS, cluster),
        Control("nodes", "Nodes", NETWORK_CHART_NODES, nodes, kind="radio"),
        Control("fabric", "Fabric", NETWORK_CHART_FABRICS, fabric, kind="radio"),
        Control("size", "Message size", NETWORK_MARKS, message_bytes,
                labels=tuple(units.fmt_bytes(v) for v in NETWORK_MARKS)),
    )
    public = network.public_results()

    @functools.lru_cache(maxsize=None)
    def curve(cluster, nodes, fabric):
        own = network.canonical_fabric(network.cluster_preset(cluster)["fabric"])
        fixed = network.cluster_preset(cluster).get("fabric_fixed", False)
        # a cloud's fabric is the provider's: its what-if fabrics draw the preset's
        c = network.scale_out(cluster, nodes, fabric=None if fabric == "preset"
                              or fixed else fabric)
        pred = collectives.predict("all_reduce", NETWORK_CURVE, c.n_gpus, c)
        path = network.network_path(c, c.n_gpus)
        same = fabric == "preset" or network.canonical_fabric(fabric) == own
        # published points at the model's sizes (a page stays light as sources grow)
        pub = sorted((r["size_bytes"], r["busbw_gbps"], r["time_us"]) for r in public
                     if same and r["system"] == cluster and r["nodes"] == nodes
                     and r["size_bytes"] in NETWORK_CURVE
                     and r["collective"] == "all_reduce"
                     and r["nics"] == network.cluster_preset(cluster)["nics"])
        return c, pred, path, pub, (own if fixed else None)

    def point(cluster, nodes, fabric, size):
        c, pred, path, pub, fixed = curve(cluster, nodes, fabric)
        # "algorithm" is NCCL's pick, or "published" for a published point
        rows = [{"bytes": b, "busbw": float(pred.busbw[i]) / units.GB,
                 "algorithm": str(pred.algorithm[i])}
                for i, b in enumerate(NETWORK_CURVE)]
        rows += [{"bytes": b, "busbw": v, "algorithm": "published"}
                 for b, v, _ in pub if v]
        i = NETWORK_CURVE.index(size)
        bus = float(pred.busbw[i])
        node_nics = path.nics * path.nic_rate
        lines = [f"{units.fmt_bytes(size)} over {c.n_gpus} GPUs, {path.nics:g} NICs of "
                 f"{path.nic_rate * 8 / 1e9:.0f} Gb/s per node "
                 f"({node_nics / units.GB:.0f} GB/s per direction together):",
                 f"{units.fmt_time(float(pred.time[i]))}, busbw "
                 f"{bus / units.GB:.1f} GB/s; NCCL's pick: {pred.algorithm[i]} "
                 f"({pred.protocol[i]})."]
        hit = [t for b, _, t in pub if b == size and t]
        t = float(pred.time[i])
        if hit:
            lines.append(f"Published: {units.fmt_time(hit[0] * units.US)} (model "
                         f"{100 * (t / (hit[0] * units.US) - 1):+.0f}% in time).")
        elif pub:
            lines.append("Published runs: crosses.")
        else:
            lines.append(" ")
        if fixed:      # the what-if fabrics draw the preset: the control says so
            why = f"Fabric: every choice draws {cluster}'s own {fixed}."
            lines[-1:] = [why] if lines[-1] == " " else [lines[-1], why]
        return rows, "\n".join(lines)

    def plot(base):
        x = bytes_x()
        y = alt.Y("busbw:Q", title="busbw [GB/s, per direction]")
        model = base.transform_filter("datum.algorithm != 'published'")
        line = model.mark_line(color="#999999").encode(x=x, y=y)
        dots = model.mark_point(filled=True, size=30).encode(
            x=x, y=y, color=alt.Color("algorithm:N", title="NCCL's pick",
                                      legend=alt.Legend(orient="bottom")),
            tooltip=[alt.Tooltip("bytes:Q", format=","), "algorithm:N",
                     alt.Tooltip("busbw:Q", format=".4g")])
        pub = base.transform_filter("datum.algorithm == 'published'").mark_point(
            shape="cross", size=70, color="#222222", filled=True).encode(
            x=x, y=y, tooltip=[alt.Tooltip("bytes:Q", format=","),
                               alt.Tooltip("busbw:Q", format=".4g")])
        mark = model.transform_filter(picked("bytes", "size")).mark_point(
            size=160, color="#d62728", filled=False, strokeWidth=2).encode(x=x, y=y)
        return line + dots + pub + mark

    return build("network", "Predicted all_reduce busbw across nodes (crosses: "
                 "published runs)", controls, point, plot,
                 rows_by=("cluster", "nodes", "fabric"), summary_lines=3,
                 note="all_reduce, all GPUs of every node, the preset's NICs")
