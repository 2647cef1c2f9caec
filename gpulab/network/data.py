"""The network data: NCCL's cost-model constants, fabrics, topologies and cluster
presets, read from ``gpulab/data/network.yaml`` (each record with its source)."""
from __future__ import annotations

import copy
import functools
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from .. import systems
from .._validate import check_choice

_FILE = Path(__file__).resolve().parents[1] / "data" / "network.yaml"

#: NCCL protocols, as NCCL names them.
PROTOCOLS = ("LL", "LL128", "Simple")


@functools.lru_cache(maxsize=1)
def _doc():
    with open(_FILE, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


_MECHANICS = _FILE.with_name("nccl_mechanics.yaml")


@functools.lru_cache(maxsize=1)
def _mechanics_doc():
    with open(_MECHANICS, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def mechanic(path):
    """A value of ``gpulab/data/nccl_mechanics.yaml`` (NCCL 2.30.7's execution
    constants, each with file and line) by its slash path; the stored value itself
    (read it, never modify it).

    >>> mechanic("buffers/nccl_steps")
    8
    >>> mechanic("channels/thread_threshold_bytes")["Simple"]
    64
    """
    node = _mechanics_doc()
    for key in str(path).strip("/").split("/"):
        if not isinstance(node, dict) or key not in node:
            raise ValueError(f"path must name a record of nccl_mechanics.yaml such as "
                             f"'buffers/nccl_steps'; got {path!r}")
        node = node[key]
    return node["value"] if isinstance(node, dict) and "value" in node else node


def record(path):
    """A record of ``network.yaml`` by its slash path (``{value, kind, source,
    accessed}``), a copy.

    >>> record("nccl/net_overhead_s")["value"]
    1e-06
    """
    if not isinstance(path, str) or not path.strip("/"):
        raise ValueError(f"path must be a slash path such as 'nccl/net_overhead_s'; "
                         f"got {path!r}")
    node = _doc()
    for key in path.strip("/").split("/"):
        if not isinstance(node, dict) or key not in node:
            raise ValueError(f"path must name an entry of network.yaml; got {path!r}")
        node = node[key]
    return copy.deepcopy(node)


def nccl_constant(name):
    """The value of NCCL constant ``name`` (``gpulab/data/network.yaml``, section
    ``nccl``: copied from NCCL 2.30.7 ``src/graph/tuning.cc``); a copy.

    >>> nccl_constant("hw_latency_s")["net"]["ring"]["LL"]
    2.7e-06
    """
    return copy.deepcopy(constant_view(name))


def constant_view(name):
    """Like :func:`nccl_constant` but the stored value itself (read-only: do not
    modify), for the model's inner loops."""
    node = _doc()["nccl"]
    if not isinstance(name, str) or name not in node or name in ("version", "commit"):
        raise ValueError(f"name must be an NCCL constant of network.yaml; got {name!r}")
    return _constant(name)


@functools.lru_cache(maxsize=None)
def _constant(name):
    return _doc()["nccl"][name]["value"]


def nccl_version():
    """The NCCL version the constants come from.

    >>> nccl_version()
    '2.30.7'
    """
    return str(_doc()["nccl"]["version"])


@dataclass(frozen=True)
class Fabric:
    """A scale-out fabric: achieved fraction of the NIC line rate, the latency it adds
    to each network step beyond NCCL's own (InfiniBand) constants, per extra
    switch hop, and the latency its NCCL plugin reports to NCCL's tuner (a tuning
    input the tuner adds to its estimate, not a time). [fraction, s, s, s]"""

    name: str
    description: str
    efficiency: float
    extra_latency_s: float
    switch_hop_s: float
    aliases: tuple
    tuner_latency_s: float = 0.0


def fabric_names():
    """Fabric names and their aliases, canonical names first.

    >>> fabric_names()[:4]
    ('infiniband', 'roce', 'efa', 'tcpx')
    """
    fabs = _doc()["fabrics"]
    return tuple(fabs) + tuple(a for f in fabs.values() for a in f.get("aliases", ()))


def canonical_fabric(name, param="fabric"):
    """The canonical fabric name for ``name`` or one of its aliases
    (``ib`` -> ``infiniband``, ``ethernet`` -> ``roce``, ``tcpxo`` -> ``tcpx``).

    >>> canonical_fabric("ib")
    'infiniband'
    """
    check_choice(param, name, fabric_names())
    for key, f in _doc()["fabrics"].items():
        if name == key or name in f.get("aliases", ()):
            return key
    raise AssertionError(name)  # pragma: no cover (check_choice refused it)


def fabric(name):
    """The :class:`Fabric` named ``name`` (or an alias).

    >>> fabric("ib").efficiency
    0.94
    """
    return _fabric(canonical_fabric(name, "name"))


@functools.lru_cache(maxsize=16)
def _fabric(key):
    f = _doc()["fabrics"][key]
    return Fabric(key, f["description"], float(f["efficiency"]["value"]),
                  float(f["extra_latency_s"]["value"]),
                  float(f["switch_hop_s"]["value"]), tuple(f.get("aliases", ())),
                  float(f["tuner_latency_s"]["value"]))


@functools.lru_cache(maxsize=16)
def _topology(name):
    t = _doc()["topologies"][name]
    out = {"leaf_nodes": int(t["leaf_nodes"]["value"]),
           "hops_inside": int(t["hops_inside"]), "hops_beyond": int(t["hops_beyond"]),
           "description": t["description"]}
    if "leaf_ports" in t:
        out["leaf_ports"] = int(t["leaf_ports"]["value"])
    return out


def topology(name):
    """A topology's ``leaf_nodes``, ``hops_inside`` and ``hops_beyond`` (and
    ``leaf_ports`` where the leaf size depends on the NICs per node).

    >>> topology("rail_optimized")["leaf_nodes"]
    32
    """
    check_choice("name", name, systems.NETWORK_TOPOLOGIES)
    return dict(_topology(name))


def leaf_nodes(topology_name, nics_per_node):
    """Nodes under one leaf group of ``topology_name`` for nodes of
    ``nics_per_node`` NICs.

    Rail-optimised: NIC k of every node sits on rail switch k, so the group size
    does not depend on the NIC count (the topology's ``leaf_nodes``). Fat tree: all
    NICs of a node on one leaf, so a leaf holds ``leaf_ports // nics_per_node`` nodes
    (at least 1); ``leaf_ports`` is the switch's ports down to nodes.

    >>> leaf_nodes("fat_tree", 8), leaf_nodes("fat_tree", 32), leaf_nodes("rail_optimized", 32)
    (4, 1, 32)
    """
    t = topology(topology_name)
    if isinstance(nics_per_node, bool) or not isinstance(nics_per_node, (int, float)) \
            or not nics_per_node > 0:
        raise ValueError(f"nics_per_node must be a number > 0; got {nics_per_node!r}")
    if "leaf_ports" not in t:
        return t["leaf_nodes"]
    return max(1, int(t["leaf_ports"] // nics_per_node))


_NICS = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+(?:\.\d+)?)\s*[gG](?:b|bit|bps)?(?:/s)?\s*$")


def parse_nics(nics, param="nics"):
    """``(count, gbit_per_s)`` from ``"8x400G"`` or a ``(count, gbit_per_s)`` pair.

    >>> parse_nics("32x100G"), parse_nics((8, 200))
    ((32, 100.0), (8, 200.0))
    """
    msg = (f"{param} must be COUNTxRATE such as '8x400G' (count 1-1024, rate "
           f"1-3200 Gb/s per NIC) or a (count, gbit_per_s) pair; got {nics!r}")
    if isinstance(nics, str):
        m = _NICS.match(nics)
        if not m:
            raise ValueError(msg)
        count, rate = int(m.group(1)), float(m.group(2))
    elif isinstance(nics, (tuple, list)) and len(nics) == 2 \
            and not any(isinstance(v, bool) for v in nics):
        try:
            count, rate = nics
            if int(count) != count:
                raise ValueError
            count, rate = int(count), float(rate)
        except (TypeError, ValueError):
            raise ValueError(msg) from None
    else:
        raise ValueError(msg)
    if not (1 <= count <= 1024 and 1 <= rate <= 3200):
        raise ValueError(msg)
    return count, rate


_CLUSTER_KEYS = ("description", "node", "nic", "nics", "fabric", "topology",
                 "oversubscription", "sharp_capable", "source", "accessed")
_CLUSTER_OPTIONAL = ("leaf_nodes", "fabric_fixed", "tuner_latency_s", "nccl_protocols",
                     "nccl_env", "fabric_efficiency", "host_cpu")
#: NCCL settings a cluster preset may carry (``nccl_env``), in bytes.
NCCL_ENV_KEYS = ("NCCL_BUFFSIZE", "NCCL_NVLS_CHUNKSIZE", "NCCL_NVLSTREE_MAX_CHUNKSIZE")


def _check_cluster(name, rec):
    """Validate one ``clusters`` record of network.yaml (keys, types, ranges)."""
    where = f"network.yaml: clusters.{name}"
    if not isinstance(rec, dict):
        raise ValueError(f"{where}: must be a mapping; got {type(rec).__name__}")
    unknown = [k for k in rec if k not in _CLUSTER_KEYS + _CLUSTER_OPTIONAL]
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r} (allowed: "
                         f"{', '.join(_CLUSTER_KEYS + _CLUSTER_OPTIONAL)})")
    missing = [k for k in _CLUSTER_KEYS if k not in rec]
    if missing:
        raise ValueError(f"{where}: missing key {missing[0]!r}")
    for k in ("description", "node", "source", "nics"):
        if not isinstance(rec[k], str) or not rec[k].strip():
            raise ValueError(f"{where}.{k}: must be non-empty text; got {rec[k]!r}")
    parse_nics(rec["nics"], param=f"{where}.nics")
    canonical_fabric(rec["fabric"], param=f"{where}.fabric")
    check_choice(f"{where}.topology", rec["topology"], systems.NETWORK_TOPOLOGIES)
    o = rec["oversubscription"]
    if isinstance(o, bool) or not isinstance(o, (int, float)) or not 1 <= o <= 1000:
        raise ValueError(f"{where}.oversubscription: must be a number in [1, 1000]; "
                         f"got {o!r}")
    if "leaf_nodes" in rec:
        v = rec["leaf_nodes"]
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 1_000_000:
            raise ValueError(f"{where}.leaf_nodes: must be an integer in [1, 1000000]; "
                             f"got {v!r}")
    if "tuner_latency_s" in rec:
        v = rec["tuner_latency_s"]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1e-3:
            raise ValueError(f"{where}.tuner_latency_s: must be a number of seconds in "
                             f"[0, 0.001]; got {v!r}")
    if "fabric_efficiency" in rec:
        v = rec["fabric_efficiency"]
        ok = (isinstance(v, dict) and set(v) == {"value", "kind", "source"}
              and not isinstance(v["value"], bool)
              and isinstance(v["value"], (int, float)) and 0 < v["value"] <= 1
              and v["kind"] in ("spec", "measured", "derived", "assumed")
              and isinstance(v["source"], str) and v["source"].strip())
        if not ok:
            raise ValueError(f"{where}.fabric_efficiency: must be a mapping of value "
                             "(a share of the line rate in (0, 1]), kind (spec, "
                             f"measured, derived or assumed) and source; got {v!r}")
    if "host_cpu" in rec:
        v = rec["host_cpu"]
        ok = (isinstance(v, dict) and set(v) == {"vendor", "source"}
              and v["vendor"] in systems.HOST_CPUS
              and isinstance(v["source"], str) and v["source"].strip())
        if not ok:
            raise ValueError(f"{where}.host_cpu: must be a mapping of vendor (one of "
                             f"{', '.join(systems.HOST_CPUS)}) and source; got {v!r}")
    if "nccl_protocols" in rec:
        v = rec["nccl_protocols"]
        if not isinstance(v, list) or not v or any(x not in PROTOCOLS for x in v):
            raise ValueError(f"{where}.nccl_protocols: must be a non-empty list of "
                             f"{', '.join(PROTOCOLS)}; got {v!r}")
    if "nccl_env" in rec:
        env = rec["nccl_env"]
        if not isinstance(env, dict) or not env:
            raise ValueError(f"{where}.nccl_env: must be a mapping of "
                             f"{', '.join(NCCL_ENV_KEYS)} to bytes; got {env!r}")
        for k, v in env.items():
            if k not in NCCL_ENV_KEYS:
                raise ValueError(f"{where}.nccl_env: unknown key {k!r} (allowed: "
                                 f"{', '.join(NCCL_ENV_KEYS)})")
            if isinstance(v, bool) or not isinstance(v, int) or not 4096 <= v <= 2**30:
                raise ValueError(f"{where}.nccl_env.{k}: must be an integer number of "
                                 f"bytes in [4096, 1073741824]; got {v!r}")
    for k in ("fabric_fixed", "sharp_capable"):
        if k in rec and not isinstance(rec[k], bool):
            raise ValueError(f"{where}.{k}: must be true or false; got {rec[k]!r}")
    return rec


@functools.lru_cache(maxsize=1)
def _cluster_records():
    recs = _doc()["clusters"]
    if not isinstance(recs, dict) or not recs:
        raise ValueError("network.yaml: clusters: must define at least one cluster")
    return {name: _check_cluster(name, rec) for name, rec in recs.items()}


def cluster_records():
    """The ``clusters`` section: ``{name: record}`` (copies), each record checked:
    the required keys, ``nics`` as COUNTxRATE, a known fabric and topology,
    ``oversubscription`` in [1, 1000], the optional ``leaf_nodes`` (an integer >= 1),
    ``fabric_fixed`` (true: the provider fixes the network's fabric) and
    ``tuner_latency_s`` (the latency the instance's network plugin reports to NCCL's
    tuner, where it differs from the fabric's), ``nccl_protocols`` (the protocols
    the plugin leaves NCCL across nodes), ``nccl_env`` (buffer and NVLS chunk
    sizes the provider sets, :data:`NCCL_ENV_KEYS`) and ``fabric_efficiency`` (a
    record: the share of the line rate the provider states one card delivers on
    this instance, used instead of the fabric's) and ``host_cpu`` (a record: the
    vendor of the instance's CPUs, where it differs from its node preset's, with
    its source)."""
    return copy.deepcopy(_cluster_records())
