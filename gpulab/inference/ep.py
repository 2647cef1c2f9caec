r"""Expert parallelism (EP) in serving: the dispatch and combine all-to-alls of a
mixture-of-experts layer, as DeepEP's kernels move them.

A MoE layer sends each token to its top-``k`` experts, spread over ``N`` GPUs (EP size),
and brings the expert outputs back: *dispatch* (FP8 activations with one FP32 scale per
128 elements) and *combine* (BF16). The GPUs form nodes of ``G`` GPUs joined by NVLink;
nodes talk through one RDMA NIC per GPU. DeepEP (deepseek-ai/DeepEP, first release,
commit ebfe47e4) has two kernel families, modelled from their mechanism:

* **normal** (prefill, training): a token crosses RDMA at most once per remote *node*
  (``csrc/kernels/internode.cu`` line 711: only ``dst_rdma_rank != rdma_rank`` is put over
  RDMA), to the GPU with the same local index there, which forwards it over NVLink to the
  GPUs of that node that hold its experts. Bytes per GPU:

  .. math::

      B_\mathrm{RDMA} = T\,\bar n_\mathrm{node}\,\frac{n-1}{n}\,b, \qquad
      B_\mathrm{NVL} = T\,\bar n_\mathrm{GPU}\,\frac{G-1}{G}\,b

  with ``T`` tokens per GPU, ``n = N / G`` nodes, ``b`` bytes per token, and
  :math:`\bar n_\mathrm{node}`, :math:`\bar n_\mathrm{GPU}` the expected numbers of distinct
  nodes and GPUs a token's experts fall on (uniform routing, optionally limited to
  ``max_nodes`` nodes as DeepSeek-V3's node-limited routing does). The time is bound by the
  slower leg: :math:`t = \alpha_\mathrm{n} + \max(B_\mathrm{RDMA}/(\eta_\mathrm{IB} R_\mathrm{NIC}),
  B_\mathrm{NVL}/(\eta_\mathrm{NVL} R_\mathrm{NVL}))`.
* **low-latency** (decode): one message per (token, expert) pair, sent straight to the
  GPU that holds the expert (``csrc/kernels/internode_ll.cu`` lines 68 and 142), no
  de-duplication and no forwarding. The first release sent every message to another GPU
  over RDMA (``low_latency``); since June 2025 messages to GPUs of the same node go over
  NVLink (``low_latency_nvlink``). :math:`t = \alpha_\mathrm{ll} + \max(\dots)` over the
  same two legs.

The link rates come from ``gpulab.systems`` (or :func:`deepep_h800` for DeepEP's test
machines); the NVLink efficiency is our measured P2P copy fraction
(:func:`gpulab.inference.custom_constant`), the RDMA one the fabric's
(:func:`gpulab.network.fabric`); the fixed costs are assumptions of
``data/inference_assumptions.yaml`` (``expert_parallel``). Nothing is fitted to DeepEP's
published tables: :func:`ep_checks` sets the model beside them, with the error.

Units are SI: bytes, seconds, bytes per second.

Examples
--------
DeepSeek-V3 shapes (hidden 7168, top-8 of 256 experts), 4096 tokens per GPU inside one
8-GPU node: no RDMA leg.

>>> from gpulab.inference import ep
>>> t = ep.ep_traffic(4096, 7168, 8, 256, ep=8, gpus_per_node=8)
>>> t.rdma_bytes
0.0
>>> ep.token_bytes(7168, "dispatch")        # FP8 + one FP32 scale per 128
7392
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import yaml

from .. import collectives, network, specs, systems
from .._validate import check_choice, check_int
from . import published
from .serving import custom_constant

__all__ = ["KERNELS", "OPERATIONS", "SCALE_BLOCK", "LL_HEADER_BYTES", "MAX_TOPK",
           "DEEPSEEK_V3", "DEEPEP_H800", "EP_SYSTEMS", "ep_constant", "token_bytes",
           "expected_hits", "EPTraffic", "ep_traffic", "EPFabric", "ep_fabric",
           "deepep_h800", "EPTime", "ep_time", "moe_calls", "ep_checks"]

#: Kernel families: DeepEP's normal kernels (NVLink + RDMA forwarding), its low-latency
#: kernels over RDMA only (first release) and with NVLink inside the node (since 2025-06).
KERNELS = ("normal", "low_latency", "low_latency_nvlink")
OPERATIONS = ("dispatch", "combine")
#: Elements per FP32 scale of the FP8 dispatch (DeepEP tests: ``hidden / 128 * 4`` bytes).
SCALE_BLOCK = 128
#: Header of one low-latency message (``sizeof(int4)``, internode_ll.cu line 68). [B]
LL_HEADER_BYTES = 16
#: Most experts per token the model takes (routers use a few to a few dozen).
MAX_TOPK = 1024
#: Name of DeepEP's test machines for :func:`ep_fabric` (see :func:`deepep_h800`).
DEEPEP_H800 = "deepep-h800"
#: Fabrics the explorer and the chart offer: DeepEP's H800s and NVLink presets with NICs.
EP_SYSTEMS = (DEEPEP_H800, "hgx-h200", "hgx-b200", "gb200-nvl72")
#: DeepSeek-V3 MoE shapes (Hugging Face ``config.json``: hidden_size, num_experts_per_tok,
#: n_routed_experts, topk_group) and DeepEP's test batches (tokens per GPU).
DEEPSEEK_V3 = {"hidden": 7168, "topk": 8, "experts": 256, "max_nodes": 4,
               "prefill_tokens": 4096, "decode_tokens": 128}


@functools.lru_cache(maxsize=None)
def _table():
    return yaml.safe_load(specs.read_data_text("inference_assumptions.yaml"))


def ep_constant(name):
    """Value of an entry of ``data/inference_assumptions.yaml`` (``expert_parallel/``).

    >>> ep_constant("h800_nvlink_links")
    8
    """
    node = _table()["expert_parallel"]
    check_choice("name", name, tuple(node))
    return node[name]["value"]


def token_bytes(hidden, operation, kernel="normal"):
    """Bytes one token carries: dispatch ``hidden`` FP8 bytes plus an FP32 scale per
    :data:`SCALE_BLOCK` elements (and a 16-byte header per low-latency message); combine
    ``2 x hidden`` (BF16). [B]

    >>> token_bytes(7168, "combine")
    14336
    >>> token_bytes(7168, "dispatch", "low_latency")
    7408
    """
    h = check_int("hidden", hidden, low=SCALE_BLOCK, high=1_048_576)
    if h % SCALE_BLOCK:
        raise ValueError(f"hidden must be a multiple of {SCALE_BLOCK} (one FP8 scale per "
                         f"{SCALE_BLOCK} elements) in [{SCALE_BLOCK}, 1048576]; got {h}")
    check_choice("operation", operation, OPERATIONS)
    check_choice("kernel", kernel, KERNELS)
    header = LL_HEADER_BYTES if kernel != "normal" and operation == "dispatch" else 0
    if operation == "combine":
        return 2 * h
    return h + h // SCALE_BLOCK * 4 + header


def expected_hits(groups, per_group, picks):
    """Expected number of distinct groups hit when ``picks`` distinct items are drawn
    uniformly from ``groups`` groups of ``per_group`` items:
    ``groups x (1 - C(total - per_group, picks) / C(total, picks))``.

    >>> expected_hits(2, 1, 2)          # both items: both groups
    2.0
    >>> round(expected_hits(8, 32, 8), 3)
    5.295
    """
    g = check_int("groups", groups, low=1, high=1_000_000)
    p = check_int("per_group", per_group, low=1, high=1_000_000)
    total = g * p
    k = check_int("picks", picks, low=1, high=MAX_TOPK)
    if k > total:
        raise ValueError(f"picks must be at most groups x per_group ({total}) items; got "
                         f"picks={k}, groups={g}, per_group={p}")
    miss = math.prod((total - p - i) / (total - i) for i in range(k))   # C(t-p,k)/C(t,k)
    return g * (1.0 - max(miss, 0.0))


@dataclass(frozen=True)
class EPTraffic:
    """Bytes one GPU sends in one dispatch or combine (all per GPU, per direction).

    Attributes: ``kernel``, ``operation``, ``tokens``, ``ep``, ``gpus_per_node``,
    ``nodes`` (``ep / gpus_per_node``, 1 inside one node), ``bytes_per_token`` [B],
    ``nodes_per_token`` and ``gpus_per_token`` (expected distinct nodes and GPUs a token's
    experts fall on), ``rdma_bytes`` and ``nvlink_bytes`` (what crosses each link) [B],
    ``counted_bytes`` [B]: the bytes DeepEP's tests divide by the time for their bandwidth
    column (they include a token's copy to its own node or GPU: normal inside one node,
    the tokens each GPU receives; normal across nodes, the tokens sent per node; low
    latency, every (token, expert) message).
    """

    kernel: str
    operation: str
    tokens: int
    ep: int
    gpus_per_node: int
    nodes: int
    bytes_per_token: int
    nodes_per_token: float
    gpus_per_token: float
    rdma_bytes: float
    nvlink_bytes: float
    counted_bytes: float


def ep_traffic(tokens, hidden, topk, experts, *, ep, gpus_per_node=8, kernel="normal",
               operation="dispatch", max_nodes=None):
    """Bytes one GPU moves over RDMA and over NVLink in one dispatch or combine.

    Parameters
    ----------
    tokens : int
        Tokens per GPU in the batch, in [1, 10**7].
    hidden : int
        Hidden size, a multiple of 128 in [128, 1048576].
    topk : int
        Experts per token, in [1, min(experts, 1024)].
    experts : int
        Routed experts of the layer, in [1, 65536], divisible by ``ep``.
    ep : int
        Expert-parallel size (GPUs), in [1, 65536]; up to ``gpus_per_node`` it stays in
        one node, beyond it must be a multiple of ``gpus_per_node``.
    gpus_per_node : int
        GPUs that share NVLink (one node, or one NVLink domain), in [1, 1024].
    kernel : {"normal", "low_latency", "low_latency_nvlink"}
    operation : {"dispatch", "combine"}
    max_nodes : int or None
        Node-limited routing (normal kernels): a token's experts lie on at most this many
        nodes (DeepSeek-V3: 4), in [1, nodes]; None: no limit.

    Returns
    -------
    EPTraffic

    Examples
    --------
    Two nodes, one token, two experts, one per GPU of four: by hand.

    >>> t = ep_traffic(1, 128, 2, 4, ep=4, gpus_per_node=2, operation="combine")
    >>> t.bytes_per_token, t.nodes
    (256, 2)
    """
    t = check_int("tokens", tokens, low=1, high=10_000_000)
    b = token_bytes(hidden, operation, kernel)
    e = check_int("experts", experts, low=1, high=65_536)
    k = check_int("topk", topk, low=1, high=MAX_TOPK)
    if k > e:
        raise ValueError(f"topk must be at most experts: a token picks topk of the "
                         f"layer's experts; got topk={k}, experts={e}")
    n_ep = check_int("ep", ep, low=1, high=65_536)
    g = check_int("gpus_per_node", gpus_per_node, low=1, high=1024)
    if e % n_ep:
        raise ValueError(f"experts must be divisible by ep (each GPU holds experts / ep "
                         f"experts); got experts={e}, ep={n_ep}")
    if n_ep <= g:
        g, nodes = n_ep, 1
    elif n_ep % g:
        raise ValueError(f"ep must be at most gpus_per_node={g} or a multiple of it; "
                         f"got {n_ep}")
    else:
        nodes = n_ep // g
    if max_nodes is None:
        m = nodes
    else:
        m = check_int("max_nodes", max_nodes, low=1, high=nodes)
    per_node, per_gpu = e // nodes, e // n_ep
    if k > m * per_node:
        raise ValueError(f"topk must be at most the experts of max_nodes={m} nodes "
                         f"({m * per_node}); got {k}")
    nodes_hit = expected_hits(m, per_node, k)
    gpus_hit = expected_hits(m * g, per_gpu, k)
    if kernel == "normal":
        rdma = t * nodes_hit * (nodes - 1) / nodes * b
        nvl = t * gpus_hit * (g - 1) / g * b
        counted = t * (nodes_hit if nodes > 1 else gpus_hit) * b
    else:
        remote = t * k * (n_ep - 1) / n_ep * b         # messages to other GPUs
        if kernel == "low_latency":
            rdma, nvl = remote, 0.0
        else:
            nvl = t * k * (g - 1) / n_ep * b             # other GPUs of the same node
            rdma = remote - nvl
        counted = t * k * b
    return EPTraffic(kernel, operation, t, n_ep, g, nodes, b, nodes_hit, gpus_hit,
                     float(rdma), float(nvl), float(counted))


@dataclass(frozen=True)
class EPFabric:
    """The links of an EP group: ``name``, ``gpus_per_node`` (GPUs sharing NVLink),
    ``nvlink_bandwidth`` and ``rdma_bandwidth`` (per GPU, per direction, line rate; None
    without a NIC) [B/s], and the fractions of them achieved, ``nvlink_efficiency`` and
    ``rdma_efficiency`` [1]."""

    name: str
    gpus_per_node: int
    nvlink_bandwidth: float
    rdma_bandwidth: float | None
    nvlink_efficiency: float
    rdma_efficiency: float


def ep_fabric(system):
    """:class:`EPFabric` of a system preset: its NVLink domain, its NVLink rate per GPU
    (:func:`gpulab.collectives.fabric_bandwidth`), its NIC rate per GPU and fabric
    efficiency (``gpulab.network``), and our measured NVLink copy fraction.
    ``"deepep-h800"`` (:data:`DEEPEP_H800`) gives :func:`deepep_h800`.

    >>> f = ep_fabric("hgx-h200")
    >>> f.gpus_per_node, f.nvlink_bandwidth / 1e9, f.rdma_bandwidth / 1e9
    (8, 450.0, 50.0)
    """
    if isinstance(system, str) and system == DEEPEP_H800:
        return deepep_h800()
    s = systems.resolve(system)
    if s.nvlink.generation is None or s.nvlink.fabric == "none":
        raise ValueError(f"system must have NVLink for the EP model (an NVSwitch or "
                         f"NVLink domain); {s.name!r} has none")
    nvl = collectives.fabric_bandwidth(s).bytes_per_s
    if s.network is None:
        rdma, eff = None, 1.0
    else:
        rdma = s.network_bandwidth_per_gpu.bytes_per_s
        eff = network.fabric(s.network.fabric).efficiency
    return EPFabric(s.name, int(s.nvlink_domain), float(nvl), rdma,
                    float(custom_constant("peer_efficiency")), float(eff))


def deepep_h800():
    """:class:`EPFabric` of DeepEP's test machines: 8 H800 per node, each with
    ``h800_nvlink_links`` NVLink4 links and one ConnectX-7 NIC on InfiniBand.

    >>> f = deepep_h800()
    >>> f.nvlink_bandwidth / 1e9, f.rdma_bandwidth / 1e9
    (200.0, 50.0)
    """
    link = specs.nvlink(4).nominal_link_bandwidth.to_per_direction().bytes_per_s
    nic = specs.nic("ConnectX-7").line_rate.bytes_per_s
    return EPFabric("8x H800 + CX7 (DeepEP)", 8, ep_constant("h800_nvlink_links") * link,
                    ep_constant("h800_nics_per_gpu") * nic,
                    float(custom_constant("peer_efficiency")),
                    float(network.fabric("infiniband").efficiency))


@dataclass(frozen=True)
class EPTime:
    """One dispatch or combine: ``traffic`` (:class:`EPTraffic`), ``latency``,
    ``nvlink_time`` and ``rdma_time`` (bytes / achieved rate of each leg) and ``time``
    (latency + the slower leg) [s]; ``bottleneck`` ("NVLink" or "RDMA"), and
    ``counted_bandwidth``: ``traffic.counted_bytes / time``, the number DeepEP's tables
    print [B/s]."""

    traffic: EPTraffic
    latency: float
    nvlink_time: float
    rdma_time: float
    time: float
    bottleneck: str
    counted_bandwidth: float


def ep_time(fabric, ep, tokens, *, hidden=7168, topk=8, experts=256, kernel="normal",
            operation="dispatch", max_nodes=None):
    """Time of one dispatch or combine on ``fabric`` (an :class:`EPFabric` or a system
    preset name). Other parameters as :func:`ep_traffic`. [s]

    Raises
    ------
    ValueError
        If the traffic needs RDMA and the fabric has no NIC, or an argument is out of
        range.

    Examples
    --------
    >>> d = ep_time("hgx-h200", 8, 128, kernel="low_latency_nvlink")
    >>> d.traffic.rdma_bytes, d.bottleneck
    (0.0, 'NVLink')
    """
    if isinstance(fabric, EPFabric):
        f = fabric
    else:
        try:
            f = ep_fabric(fabric)
        except ValueError as exc:
            raise ValueError(f"fabric must be an EPFabric or a system preset with NVLink "
                             f"({', '.join(EP_SYSTEMS)}, ...); {exc}") from None
    tr = ep_traffic(tokens, hidden, topk, experts, ep=ep, gpus_per_node=f.gpus_per_node,
                    kernel=kernel, operation=operation, max_nodes=max_nodes)
    nvl_t = tr.nvlink_bytes / (f.nvlink_efficiency * f.nvlink_bandwidth)
    if tr.rdma_bytes > 0 and f.rdma_bandwidth is None:
        raise ValueError(f"fabric {f.name!r} has no RDMA NIC; ep={tr.ep} with kernel "
                         f"{kernel!r} needs one (use ep <= {f.gpus_per_node} with an "
                         "NVLink kernel)")
    rdma_t = 0.0 if tr.rdma_bytes == 0 else tr.rdma_bytes / (f.rdma_efficiency
                                                              * f.rdma_bandwidth)
    lat = ep_constant("normal_latency_s" if kernel == "normal" else "low_latency_s")
    total = lat + max(nvl_t, rdma_t)
    return EPTime(tr, float(lat), float(nvl_t), float(rdma_t), float(total),
                  "RDMA" if rdma_t > nvl_t else "NVLink", tr.counted_bytes / total)


def moe_calls(system, ep, tokens, kernel="normal", *, shapes=None):
    """The dispatch and the combine of one MoE layer on ``system`` (a preset name,
    :data:`DEEPEP_H800` or an :class:`EPFabric`): ``[("dispatch", EPTime), ("combine",
    EPTime)]``. ``shapes`` (default :data:`DEEPSEEK_V3`) gives ``hidden``, ``topk``,
    ``experts`` and ``max_nodes``, the node limit applied to the normal kernels (the
    low-latency kernels route without one).

    >>> [op for op, _ in moe_calls("hgx-h200", 8, 128)]
    ['dispatch', 'combine']
    """
    keys = ("hidden", "topk", "experts", "max_nodes")
    if shapes is None:
        v = DEEPSEEK_V3
    elif isinstance(shapes, dict) and all(k in shapes for k in keys):
        v = shapes
    else:
        raise ValueError(f"shapes must be None or a dict with keys {keys}; got {shapes!r:.80}")
    fab = system if isinstance(system, EPFabric) else ep_fabric(system)
    nodes = max(1, check_int("ep", ep, low=1, high=65_536) // fab.gpus_per_node)
    limit = min(nodes, v["max_nodes"]) if kernel == "normal" else None
    return [(op, ep_time(fab, ep, tokens, hidden=v["hidden"], topk=v["topk"],
                         experts=v["experts"], kernel=kernel, operation=op,
                         max_nodes=limit))
            for op in OPERATIONS]


#: Published kernel -> (model kernel) per DeepEP table.
_MODEL_KERNEL = {("deepep-v1-2025-02", "normal"): "normal",
                 ("deepep-v1-legacy", "normal"): "normal",
                 ("deepep-v1-2025-02", "low_latency"): "low_latency",
                 ("deepep-v1-legacy", "low_latency"): "low_latency_nvlink"}


def ep_checks(source_ids=None):
    """The model beside DeepEP's published V1 tables (``published.ep_rows``), one row
    each, on :func:`deepep_h800` with the tests' routing (normal: top-``min(nodes, 4)``
    nodes, as ``tests/test_internode.py`` picks them; low latency: unlimited).

    The normal tables print a bandwidth (``counted_bytes / time``), so the error is
    ``model bandwidth / published - 1``; the low-latency tables print a time, so the
    error is ``model time / published - 1``. The V2 table (other kernels, logical
    bandwidth over another batch) is not checked.

    Parameters
    ----------
    source_ids : sequence of str or None
        Keep these tables only (``deepep-v1-2025-02``, ``deepep-v1-legacy``).

    Returns
    -------
    list of dict
        ``source_id``, ``kernel`` (as published), ``model_kernel``, ``ep``, ``scope``,
        ``operation``, ``tokens``, ``unit`` ("GB/s" or "us"), ``published``, ``model``,
        ``error``, ``bottleneck`` (the model's), ``published_bottleneck``.
    """
    keep = tuple(sorted({s for s, _ in _MODEL_KERNEL}))
    if source_ids is not None:
        if not isinstance(source_ids, (list, tuple)) or not source_ids:
            raise ValueError(f"source_ids must be None or a non-empty list of {keep}; got "
                             f"{source_ids!r}")
        for s in source_ids:
            check_choice("source_ids", s, keep)
        keep = tuple(source_ids)
    fab = deepep_h800()
    out = []
    for r in published.ep_rows():
        mk = _MODEL_KERNEL.get((r["source_id"], r["kernel"]))
        if mk is None or r["source_id"] not in keep:
            continue
        nodes = max(1, r["ep"] // fab.gpus_per_node)
        d = ep_time(fab, r["ep"], r["tokens_per_batch"], hidden=r["hidden"],
                    topk=r["topk"], experts=256, kernel=mk, operation=r["operation"],
                    max_nodes=min(nodes, DEEPSEEK_V3["max_nodes"]) if mk == "normal"
                    else None)
        if mk == "normal":
            unit, pub, mod = "GB/s", r["bandwidth_gb_per_s"], d.counted_bandwidth / 1e9
        else:
            unit, pub, mod = "us", r["latency_us"], d.time * 1e6
        out.append({"source_id": r["source_id"], "kernel": r["kernel"],
                    "model_kernel": mk, "ep": r["ep"], "scope": r["scope"],
                    "operation": r["operation"], "tokens": r["tokens_per_batch"],
                    "unit": unit, "published": float(pub), "model": float(mod),
                    "error": float(mod / pub - 1), "bottleneck": d.bottleneck,
                    "published_bottleneck": r["bottleneck"]})
    return out

