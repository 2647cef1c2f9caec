"""Scale-out networks: multi-node collectives as NCCL runs them.

A cluster is data: a node preset (``gpulab/data/systems.yaml``) plus a network
(NICs per node and their rate, fabric kind, topology, oversubscription, SHARP,
GPUDirect RDMA), with presets in ``gpulab/data/network.yaml``. NCCL's own tuner
(NCCL 2.30.7 ``src/graph/tuning.cc``: latency + bytes / bandwidth for each algorithm
and protocol, evaluated on the hardware's achieved rates) picks the algorithm and
protocol, as NCCL does; the time of that pick is modelled from how NCCL runs it
(:mod:`gpulab.network.execution`: channels used for the size, chunks and slices, a
a ring's steps (LL as a dataflow; LL128 and Simple in lockstep, a stand-in: our mixed-ring
run, :func:`mixed_ring_check`, found small calls running as a dataflow), a tree's pipeline,
steps in flight per network hop).
:mod:`gpulab.collectives` delegates to it whenever ranks span nodes.

API (stable)
------------
``scale_out(system, nodes, *, nics=None, fabric=None, sharp=None, gdr=None)``
    -> :class:`gpulab.systems.System` with ``n_gpus = nodes x gpus_per_node``.
    ``system``: a cluster preset (:data:`CLUSTER_PRESETS`), a system preset or a
    System; ``nics``: ``"8x400G"`` or ``(count, gbit_per_s)``; ``fabric``: ``"ib"``,
    ``"roce"``, ``"efa"``, ``"tcpx"`` (or the full names, :func:`fabric_names`);
    ``sharp``: reduce in the switches (CollNet); ``gdr=False``: stage through host
    memory over PCIe.
``CLUSTER_PRESETS``, ``cluster_preset(name)``
    ``dgx-h100-spod``, ``dgx-h200-spod``, ``dgx-a100-spod``, ``aws-p5``,
    ``gcp-a3-mega``, ``azure-nd-h100-v5`` with their sources.
``gpulab.collectives.predict(coll, sizes, n_ranks, system)``
    On a multi-node system: the same Prediction (time, algbw, busbw, algorithm,
    protocol) with algorithm ``"ring"``, ``"tree"``, ``"nvlstree"``, ``"collnet"``
    (``"direct"`` for alltoall / sendrecv), chosen as NCCL's tuner does.
``algorithm_table(collective, sizes, nodes, system, *, nics, fabric, sharp, gdr, nvls)``
    Every algorithm's time, algbw and busbw per size, and NCCL's pick (explorer).
``collective_times(collective, sizes, n_ranks, system, ...)``
    The model itself: time, the tuner's estimate, algorithm and protocol per size.
``network_path(system, n_ranks)``
    What the ranks see: nodes, NICs used, achieved network and NVLink rates, hops.
``tuner_tree_share(path, proto)``
    NCCL's tuner's tree busBw over its ring's on that path (its topology search's
    channel speeds and per-channel caps): why two nodes of 8 HDR NICs pick the ring.
``public_results()``, ``public_errors()``, ``BANDS``, ``POINT_TARGET``
    Published multi-node nccl-tests results
    (``gpulab/data/measurements/public_multinode.csv``) and the model's error per
    source and size band (target: the median per source and band within 20 %,
    every point within 35 %: time below 64 KiB, busbw above).
``fabric(name)``, ``fabric_names()``, ``topology(name)``, ``parse_nics(text)``,
``nccl_constant(name)``, ``nccl_version()``
    The data behind the model.

Units: SI (bytes, seconds, bytes per second per direction); NIC rates in Gb/s per
direction where written as text (``"8x400G"``).

Examples
--------
>>> from gpulab import network, collectives
>>> c = network.scale_out("dgx-h100-spod", 4)
>>> p = collectives.predict("all_reduce", [8, 2**30], c.n_gpus, c)
>>> p.algorithm.tolist()
['tree', 'nvlstree']
>>> r = collectives.predict("all_reduce", 2**30, c.n_gpus, c, algorithm="ring")
>>> bool(340e9 < r.busbw[0] < 8 * 50e9 * 0.94)   # 8 NICs x 50 GB/s x 0.94, less latency
True
"""
from __future__ import annotations

from .data import (  # noqa: F401
    PROTOCOLS,
    Fabric,
    canonical_fabric,
    fabric,
    fabric_names,
    nccl_constant,
    nccl_version,
    parse_nics,
    record,
    topology,
)
from .cluster import CLUSTER_PRESETS, cluster_preset, scale_out  # noqa: F401
from .model import (  # noqa: F401
    BUSBW_OPS,
    NET_ALGORITHMS,
    RING_FORMS,
    NetworkPath,
    algorithm_table,
    busbw_factor,
    candidates,
    collective_times,
    network_path,
    nvls_efficiency,
    tuner_tree_share,
)
from .loopback import (  # noqa: F401
    LOOPBACK_CHANNELS, LOOPBACK_RUN, LoopbackCheck, fit_step_latency, loopback_check, loopback_sweeps)
from .mixed_ring import (  # noqa: F401
    MIXED_RING_RUN, MixedRingCheck, mixed_ring_check, mixed_ring_sweeps)
from .public import (  # noqa: F401
    ANOMALY_FACTOR, BANDS, POINT_TARGET, cluster_of, nonmonotone, predicted, public_errors,
    public_results, run_anomalies)

__all__ = [
    "scale_out", "CLUSTER_PRESETS", "cluster_preset", "algorithm_table",
    "collective_times", "nvls_efficiency", "network_path", "NetworkPath", "public_results",
    "public_errors", "BANDS", "POINT_TARGET", "ANOMALY_FACTOR", "nonmonotone",
    "run_anomalies", "fabric", "fabric_names", "Fabric", "topology",
    "parse_nics", "nccl_constant", "nccl_version", "busbw_factor", "BUSBW_OPS",
    "NET_ALGORITHMS", "RING_FORMS", "PROTOCOLS", "tuner_tree_share", "LOOPBACK_RUN", "LOOPBACK_CHANNELS",
    "LoopbackCheck",
    "fit_step_latency", "loopback_check", "loopback_sweeps",
    "MIXED_RING_RUN", "MixedRingCheck", "mixed_ring_check", "mixed_ring_sweeps",
]
