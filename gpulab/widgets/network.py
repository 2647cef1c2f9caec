"""Explorer of the network topic: an all_reduce across nodes, as NCCL would run it,
beside published multi-node measurements.

UI only: controls in display units, converted to SI at the edge; every number
comes from the model layer (:mod:`gpulab.network`, :func:`gpulab.collectives.predict`).
Factories return the widget (never display it).
"""
from __future__ import annotations

import ipywidgets as W
import numpy as np

from .base import Explorer, PNGView
from .. import collectives, network, plotting, units

#: Message sizes of the network explorer's curve: powers of two, 8 B to 16 GiB. [B]
NETWORK_SIZES = tuple(2 ** k for k in range(3, 35))
#: Node counts the explorer offers.
NETWORK_NODES = (2, 4, 8, 16, 32, 64, 128)
#: NIC choices: the preset's own, or one of these (count x Gb/s per direction).
NETWORK_NICS = ("8x400G", "8x200G", "4x400G", "16x200G", "32x100G", "8x100G")
#: Fabric choices: the preset's own, or one of these.
NETWORK_FABRICS = ("ib", "roce", "efa", "tcpx")
_PRESET = "preset"


def _published_rows(cluster, nodes, nics, fabric, collective):
    return sorted((r for r in network.public_results()
                   if r["system"] == cluster and r["nodes"] == nodes
                   and r["collective"] == collective
                   and (nics == _PRESET or r["nics"] == nics)
                   and (fabric == _PRESET or network.canonical_fabric(r["fabric"])
                        == network.canonical_fabric(fabric))),
                  key=lambda r: r["size_bytes"])


def published_points(cluster, nodes, nics=_PRESET, fabric=_PRESET,
                     collective="all_reduce"):
    """The published rows (:func:`gpulab.network.public_results`) that ran on this
    configuration: same cluster preset, node count and collective, and the NICs and
    fabric chosen (``"preset"`` accepts the row's own). Returns (label, sizes [B],
    busbw [B/s]) of the rows with a busbw above zero, or None."""
    rows = [r for r in _published_rows(cluster, nodes, nics, fabric, collective)
            if r["busbw_gbps"]]
    if not rows:
        return None
    return ("published", np.array([r["size_bytes"] for r in rows], dtype=float),
            np.array([r["busbw_gbps"] for r in rows]) * units.GB)


class _NetworkExplorer(Explorer):
    def __init__(self, cluster, nodes, nics, fabric, message_bytes):
        style = {"description_width": "initial"}
        controls = {
            "cluster": W.Dropdown(options=network.CLUSTER_PRESETS, value=cluster,
                                  description="Cluster", style=style,
                                  layout=W.Layout(width="260px")),
            "nodes": W.SelectionSlider(options=NETWORK_NODES, value=nodes,
                                       description="Nodes", style=style),
            "nics": W.Dropdown(options=[("as the preset", _PRESET)]
                               + [(f"{n} per node", n) for n in NETWORK_NICS],
                               value=nics, description="NICs", style=style,
                               layout=W.Layout(width="230px")),
            "fabric": W.ToggleButtons(options=[("preset", _PRESET)]
                                      + [(f, f) for f in NETWORK_FABRICS],
                                      value=fabric, description="Fabric",
                                      style=style),
            "message_bytes": W.SelectionSlider(
                options=[(units.fmt_bytes(s), s) for s in NETWORK_SIZES],
                value=message_bytes, description="Message size", style=style,
                layout=W.Layout(width="420px")),
        }
        self.sizes = np.array(NETWORK_SIZES, dtype=float)
        self.system = None
        self.prediction = None
        self._cache = {}
        super().__init__(controls, PNGView(figsize=(6.8, 3.6)))
        self.update()

    def _rows(self):
        c = self.controls
        return [(c["cluster"], c["nodes"]), (c["nics"],), (c["fabric"],),
                (c["message_bytes"],)]

    def _model(self, cluster, nodes, nics, fabric):
        """Model results of one configuration, kept for the next visit (the size
        control and revisited settings redraw without a model call)."""
        key = (cluster, nodes, nics, fabric)
        if key not in self._cache:
            system = network.scale_out(
                cluster, nodes, nics=None if nics == _PRESET else nics,
                fabric=None if fabric == _PRESET else fabric)
            pred = collectives.predict("all_reduce", self.sizes, system.n_gpus, system)
            path = network.network_path(system, system.n_gpus)
            if len(self._cache) >= 64:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = (system, pred, path,
                                published_points(cluster, nodes, nics, fabric),
                                _published_rows(cluster, nodes, nics, fabric,
                                                "all_reduce"))
        return self._cache[key]

    def _update(self):
        c = self.controls
        system, pred, path, pub, rows = self._model(
            c["cluster"].value, c["nodes"].value, c["nics"].value, c["fabric"].value)
        node_nics = units.Bandwidth(path.nics * path.nic_rate, units.PER_DIRECTION)
        size = c["message_bytes"].value
        self.view.render(lambda ax: plotting.plot_scale_out(
            pred, message_bytes=size, published=pub,
            line_rates=[("NICs of one node", node_nics, "ib")], ax=ax))
        self.system, self.prediction = system, pred
        i = NETWORK_SIZES.index(size)
        t, bus = float(pred.time[i]), float(pred.busbw[i])
        text = (f"all_reduce of <b>{units.fmt_bytes(size)}</b> over "
                f"{system.n_gpus} GPUs ({c['nodes'].value} nodes, "
                f"{path.nics:g} NICs of {path.nic_rate * 8 / 1e9:.0f} Gb/s per node): "
                f"<b>{units.fmt_time(t)}</b>, busbw <b>{bus / units.GB:.1f} GB/s</b> "
                f"per direction, NCCL's pick <b>{pred.algorithm[i]}</b> "
                f"({pred.protocol[i]}).")
        same = [r for r in rows if r["size_bytes"] == size and r["time_us"]]
        if same:
            got = same[0]["time_us"] * units.US
            text += (f" Published: {units.fmt_time(got)} "
                     f"(model {100 * (t / got - 1):+.0f}% in time).")
        elif rows:
            text += " Published runs of this configuration: crosses."
        self.summary.value = text


def network_explorer(cluster="dgx-h100-spod", nodes=2, *, nics=_PRESET,
                     fabric=_PRESET, message_bytes=units.GiB):
    """all_reduce across nodes: busbw over message sizes with NCCL's algorithm, the
    node's NIC total, and the published points of that configuration.

    Controls: cluster preset (:data:`gpulab.network.CLUSTER_PRESETS`), nodes, NICs
    per node (``"preset"`` or :data:`NETWORK_NICS`), fabric (``"preset"`` or
    :data:`NETWORK_FABRICS`), message size. Calls :func:`gpulab.network.scale_out`,
    :func:`gpulab.collectives.predict` and :func:`gpulab.plotting.plot_scale_out`.
    """
    if cluster not in network.CLUSTER_PRESETS:
        raise ValueError(f"cluster must be one of {', '.join(network.CLUSTER_PRESETS)}; "
                         f"got {cluster!r}")
    if nodes not in NETWORK_NODES:
        raise ValueError(f"nodes must be one of {NETWORK_NODES}; got {nodes!r}")
    if nics != _PRESET and nics not in NETWORK_NICS:
        raise ValueError(f"nics must be 'preset' or one of {NETWORK_NICS}; got {nics!r}")
    if fabric != _PRESET and fabric not in NETWORK_FABRICS:
        raise ValueError(f"fabric must be 'preset' or one of {NETWORK_FABRICS}; "
                         f"got {fabric!r}")
    if message_bytes not in NETWORK_SIZES:
        raise ValueError("message_bytes must be a power of two from 8 B to 16 GiB; "
                         f"got {message_bytes!r}")
    return _NetworkExplorer(cluster, nodes, nics, fabric, message_bytes)
