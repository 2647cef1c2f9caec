"""Clusters described by data: a node preset scaled out over a network
(:func:`scale_out`, :data:`CLUSTER_PRESETS`)."""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

from .. import systems
from .._validate import check_int
from . import data

class _PresetNames(Sequence):
    """The cluster preset names, read from ``network.yaml`` on first use (importing
    gpulab reads no data file); behaves as a tuple of str."""

    @functools.cached_property
    def _names(self):
        return tuple(data.cluster_records())

    def __getitem__(self, i):
        return self._names[i]

    def __len__(self):
        return len(self._names)

    def __eq__(self, other):
        return tuple(self) == tuple(other) if isinstance(other, Sequence) else NotImplemented

    def __hash__(self):
        return hash(self._names)

    def __repr__(self):
        return repr(self._names)


#: Cluster presets of ``gpulab/data/network.yaml`` (node preset + network), in file
#: order; a sequence of str, read on first use.
CLUSTER_PRESETS = _PresetNames()


def cluster_preset(name):
    """The record of cluster preset ``name``: node preset, ``nics``, fabric,
    topology, oversubscription, SHARP, source.

    >>> cluster_preset("aws-p5")["nics"]
    '32x100G'
    """
    if not isinstance(name, str) or name not in CLUSTER_PRESETS:
        raise ValueError(f"name must be one of {', '.join(CLUSTER_PRESETS)}; "
                         f"got {name!r}")
    return data.cluster_records()[name]


def _base_system(system):
    """(node System, its network or None, base name) of a cluster preset name, a
    system preset name, a YAML path or a System."""
    if isinstance(system, str) and system in CLUSTER_PRESETS:
        rec = cluster_preset(system)
        node = systems.get(rec["node"])
        count, rate = data.parse_nics(rec["nics"])
        net = systems.NetworkConfig(
            nic=rec["nic"], nics_per_node=count, fabric=data.canonical_fabric(
                rec["fabric"]), nic_gbit_per_s=rate, sharp=False, gdr=True,
            topology=rec["topology"], oversubscription=float(rec["oversubscription"]))
        node = dataclasses.replace(node, name=system, network=net,
                                   n_gpus=node.gpus_per_node,
                                   description=rec["description"],
                                   source=rec["source"], accessed=rec["accessed"])
        return node, net, system
    try:
        s = systems.resolve(system)
    except ValueError as exc:
        msg = str(exc)
        raise ValueError(msg if msg.startswith("system") else f"system: {msg} "
                         f"(or a cluster preset: {', '.join(CLUSTER_PRESETS)})") \
            from None
    return s, s.network, s.name.split(" x")[0]


def scale_out(system, nodes, *, nics=None, fabric=None, sharp=None, gdr=True):
    """A cluster of ``nodes`` identical nodes joined by a scale-out network.

    Parameters
    ----------
    system : str or systems.System
        A cluster preset (:data:`CLUSTER_PRESETS`, e.g. ``"dgx-h100-spod"``), a
        system preset (its ``network`` section is the network) or a System.
    nodes : int
        Nodes (>= 1); ``n_gpus = nodes * gpus_per_node``.
    nics : str or (int, float), optional
        NICs per node and their rate: ``"8x400G"`` or ``(8, 400)`` (Gb/s per NIC,
        per direction). Default: the preset's.
    fabric : {"ib", "infiniband", "roce", "efa", "tcpx", ...}, optional
        Fabric kind (:func:`gpulab.network.fabric_names`). Default: the preset's.
    sharp : bool, optional
        Let NCCL reduce in the switches (CollNet/SHARP). Default False (NCCL's
        default: ``NCCL_COLLNET_ENABLE=0``).
    gdr : bool
        GPUDirect RDMA (default True); False stages data through host memory.

    Returns
    -------
    systems.System

    Examples
    --------
    >>> c = scale_out("dgx-h100-spod", 4)
    >>> c.n_gpus, c.nodes, c.network.nics_per_node, c.network.nic_rate.gb_per_s
    (32, 4, 8, 50.0)
    >>> scale_out("hgx-h200", 2, nics="4x200G", fabric="roce").network.fabric
    'roce'
    """
    node, net, base = _base_system(system)
    n = check_int("nodes", nodes, low=1, high=100_000)
    if sharp is not None and not isinstance(sharp, bool):
        raise ValueError(f"sharp must be True, False or None; got {sharp!r}")
    if not isinstance(gdr, bool):
        raise ValueError(f"gdr must be True or False; got {gdr!r}")
    n_gpus = n * node.gpus_per_node
    need_net = n_gpus > node.scale_up_domain
    if net is None:
        if nics is None or fabric is None:
            if need_net:
                raise ValueError(f"system {node.name!r} has no network section: give "
                                 "nics and fabric to connect its nodes")
        else:
            count, rate = data.parse_nics(nics)
            net = systems.NetworkConfig(nic=None, nics_per_node=count,
                                        fabric=data.canonical_fabric(fabric),
                                        nic_gbit_per_s=rate)
    changes = []
    if net is not None:
        repl = {}
        if nics is not None:
            count, rate = data.parse_nics(nics)
            repl.update(nics_per_node=count, nic_gbit_per_s=rate)
            changes.append(f"{count}x{rate:g}G")
        if fabric is not None:
            repl["fabric"] = data.canonical_fabric(fabric)
            changes.append(repl["fabric"])
        if sharp is not None:
            repl["sharp"] = sharp
            if sharp:
                changes.append("SHARP")
        if not gdr:
            repl["gdr"] = False
            changes.append("no GDR")
        net = dataclasses.replace(net, **repl)
    name = f"{base} x{n} nodes" + (f" ({', '.join(changes)})" if changes else "")
    return dataclasses.replace(node, n_gpus=n_gpus, network=net, name=name)
