r"""Collective-communication time models and nccl-tests metrics.

The ring AllReduce is a reduce-scatter followed by an all-gather, each made of
``n - 1`` steps in which every rank sends and receives ``S / n`` bytes at once:

.. math:: t_\text{ring}(S, n) = 2(n-1)\,\alpha + \frac{2(n-1)}{n}\,\frac{S}{B}

with ``S`` the full buffer [B], ``n`` ranks, per-step latency :math:`\alpha` [s]
and per-direction bandwidth :math:`B` [B/s] of each rank's link into the ring.

nccl-tests reports ``algbw = S / t`` and ``busbw = algbw * factor`` where the
factor for all_reduce is ``2(n-1)/n`` (nccl-tests ``doc/PERFORMANCE.md``). busbw
is the number to compare with a per-direction link rate.

Examples
--------
>>> from gpulab import collectives, units
>>> bw = units.Bandwidth.from_gb_per_s(370, "per_direction")
>>> t = collectives.ring_allreduce_time(1 * units.GiB, 8, bw, latency=0)
>>> round(collectives.busbw(1 * units.GiB, t, "all_reduce", 8) / 1e9, 6)
370.0
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from . import links, network, pcie, specs, systems
from ._validate import as_number, check_choice, check_int, finite_answer
from .links import per_direction_rate

__all__ = ["ring_allreduce_time", "algbw", "busbw", "busbw_factor", "BUSBW_OPS",
           "COLLECTIVES", "ALGORITHMS", "PROTOCOLS", "TRANSPORTS", "Prediction",
           "model_constant", "fabric_bandwidth", "wire_factor", "ring_steps",
           "collective_time", "predict", "calibrate", "local_copy_time"]

#: nccl-tests collectives (defined with the network model, the lower layer).
BUSBW_OPS = network.BUSBW_OPS


@finite_answer
def ring_allreduce_time(message_bytes, n_ranks, bandwidth, latency=0.0):
    r"""Compute the ring AllReduce time.

    Parameters
    ----------
    message_bytes : numeric
        Size of the buffer being reduced (nccl-tests' ``size``). [B]
    n_ranks : int
        Ranks in the ring, >= 1.
    bandwidth : units.Bandwidth or numeric
        Per-direction bandwidth of each rank into the ring. [B/s, per direction]
    latency : numeric, default 0
        Latency of one ring step. [s]

    Returns
    -------
    numeric
        Time. [s] (0 for one rank: nothing to reduce.)

    Notes
    -----
    .. math:: t = 2(n-1)\alpha + \frac{2(n-1)}{n}\frac{S}{B}

    ============================  =======================================
    Assumption                    Consequence
    ============================  =======================================
    bandwidth-optimal ring        each rank sends 2(n-1)/n of S
    all links equal, no SHARP     in-switch reduction not modelled here
    no compute cost for the sum   fine for BF16 sums on a GPU
    ============================  =======================================

    Examples
    --------
    >>> ring_allreduce_time(8e9, 2, 400e9)          # 2 ranks: each sends S/2 twice
    0.02
    """
    s = as_number("message_bytes", message_bytes, low=0)
    n = check_int("n_ranks", n_ranks, low=1, high=1_000_000)
    b = per_direction_rate(bandwidth)
    a = as_number("latency", latency, low=0)
    steps = 2 * (n - 1)
    return steps * a + steps / n * s / b


@finite_answer
def algbw(message_bytes, time):
    """nccl-tests' algorithm bandwidth ``S / t``. [B/s]"""
    s = as_number("message_bytes", message_bytes, low=0)
    t = as_number("time", time, low=0, low_inclusive=False)
    return s / t


def busbw_factor(op, n_ranks):
    """The nccl-tests factor turning algbw into busbw for ``op`` on ``n_ranks``
    (:func:`gpulab.network.busbw_factor`).

    >>> busbw_factor("all_reduce", 8)
    1.75
    """
    return network.busbw_factor(op, n_ranks)


@finite_answer
def busbw(message_bytes, time, op, n_ranks):
    """nccl-tests' bus bandwidth: ``algbw * busbw_factor(op, n)``. [B/s, per direction]"""
    return algbw(message_bytes, time) * busbw_factor(op, n_ranks)



# --- NCCL-like model: algorithms x protocols ---------------------------------------------
#: Collectives of nccl-tests that the model covers.
COLLECTIVES = BUSBW_OPS
#: Algorithms: ring, tree (chain inside a node, double binary tree between nodes:
#: all_reduce), direct (one-shot, every rank reads every peer: all_reduce;
#: point-to-point for alltoall/sendrecv), nvls (in-switch reduction inside one NVLink
#: domain, all_reduce), nvlstree (in-switch reduction inside each node, tree between
#: nodes) and collnet (reduction in the network switches, SHARP): the last two only
#: across nodes (:mod:`gpulab.network`).
ALGORITHMS = ("ring", "tree", "direct", "nvls", "nvlstree", "collnet")
#: NCCL protocols: LL (8-byte lines, flag per 4 B: lowest latency), LL128 (128-byte
#: lines, 120 B of data) and Simple (bulk copies with fences: full bandwidth).
PROTOCOLS = ("LL", "LL128", "Simple")
#: Transports between the GPUs of a node: peer-to-peer (NVLink or PCIe) or SHM
#: (NCCL_P2P_DISABLE=1: staged through pinned host memory over PCIe).
TRANSPORTS = ("p2p", "shm")


def model_constant(path):
    """A constant of ``data/nccl_model.yaml`` by its slash path
    (:func:`gpulab.specs.assumption` of the ``"nccl"`` table).

    >>> model_constant("protocols/LL128/bandwidth")
    0.92
    """
    if not isinstance(path, str) or not path.strip("/"):
        raise ValueError(f"path must be a slash path such as 'protocols/LL/bandwidth'; "
                         f"got {path!r}")
    try:
        return specs.assumption("nccl", path)
    except ValueError as exc:
        raise ValueError(str(exc).replace("name must", "path must", 1)) from None


@functools.lru_cache(maxsize=None)
def _constant(path):
    """:func:`model_constant`, cached for the model's inner loops (the stored value:
    read it, never modify it)."""
    return model_constant(path)


def wire_factor(collective, n_ranks, algorithm="ring"):
    """Bytes each rank sends (and receives) per byte of ``message_bytes``.

    nccl-tests' busbw factor for the bandwidth-optimal algorithms; NCCL's model
    factor 2 for the tree; ``n - 1`` for a one-shot all_reduce (every rank reads
    every peer's buffer); 1 for NVLS (each GPU sends its buffer into the switch
    and receives the reduced result once).

    >>> wire_factor("all_reduce", 8)
    1.75
    >>> wire_factor("all_reduce", 8, "direct")
    7
    """
    check_choice("collective", collective, COLLECTIVES)
    n = check_int("n_ranks", n_ranks, low=1, high=1_000_000)
    check_choice("algorithm", algorithm, ALGORITHMS)
    if n == 1:
        return 0.0
    if collective == "all_reduce":
        return {"ring": 2 * (n - 1) / n, "tree": 2.0, "direct": n - 1, "nvls": 1.0,
                "nvlstree": 1.0, "collnet": 1.0}[algorithm]
    return busbw_factor(collective, n)


def ring_steps(collective, n_ranks, algorithm="ring", nodes=1):
    """Latency steps of ``collective`` on ``n_ranks`` (NCCL's ``nsteps``).

    NCCL's tree is a chain inside each node and a double binary tree between
    nodes, so its steps are ``2 ((n / nodes - 1) + ceil(log2 nodes))``: inside
    one node it has as many steps as the ring (NCCL ``tuning.cc``).

    >>> ring_steps("all_reduce", 8), ring_steps("all_gather", 8)
    (14, 7)
    >>> ring_steps("all_reduce", 16, "tree", nodes=2)
    16
    """
    check_choice("collective", collective, COLLECTIVES)
    n = check_int("n_ranks", n_ranks, low=1, high=1_000_000)
    check_choice("algorithm", algorithm, ALGORITHMS)
    nodes = check_int("nodes", nodes, low=1, high=n)
    if n == 1:
        return 0
    if algorithm == "tree":
        return 2 * ((-(-n // nodes) - 1) + math.ceil(math.log2(nodes)))
    if algorithm in ("nvlstree", "collnet"):
        return 1 + 2 * math.ceil(math.log2(nodes))
    if algorithm in ("direct", "nvls") or collective in ("alltoall", "sendrecv"):
        return 1
    if collective == "all_reduce":
        return 2 * (n - 1)
    return n - 1


def _gpus_per_process(value, n, system, default_all=False):
    """GPUs one process drives: ``None`` -> one per process (torchrun, ``mpirun``
    with nccl-tests ``-g 1``) at every node count, or with ``default_all`` (a
    single-node measurement without its header) every rank of the node in one
    process (nccl-tests ``-g N``); else 1 .. min(n, gpus_per_node), dividing ``n``."""
    high = min(n, system.gpus_per_node)
    if value is None:
        return high if default_all and _domains_used(system, n) == 1 else 1
    if isinstance(value, str) and value == "node":
        if n % high:
            raise ValueError(f"gpus_per_process 'node' needs n_ranks ({n}) to be a "
                             f"multiple of the GPUs per node ({high})")
        return high
    g = check_int("gpus_per_process", value, low=1, high=high)
    if n % g:
        raise ValueError(f"gpus_per_process must divide n_ranks ({n}); got {g}")
    return g


def _domains_used(system, n):
    """NVLink domains that ``n`` ranks span (ranks fill one domain after another)."""
    return max(1, math.ceil(n / system.scale_up_domain))


def ranks_fit_domains(system, n_ranks):
    """Whether the model can place ``n_ranks`` on ``system``.

    Ranks fill one scale-up domain (:attr:`gpulab.systems.System.scale_up_domain`)
    after another; beyond one domain the model assumes the same number of ranks in
    every domain they span, so ``n_ranks`` must be a multiple of that count.

    Examples
    --------
    >>> from gpulab import systems
    >>> two = systems.get("hgx-h200-2node")
    >>> ranks_fit_domains(two, 8), ranks_fit_domains(two, 16), ranks_fit_domains(two, 9)
    (True, True, False)
    """
    system = systems.resolve(system)
    n = check_int("n_ranks", n_ranks, low=1)
    d = system.scale_up_domain
    return n <= d or n % math.ceil(n / d) == 0


def fabric_bandwidth(system, transport="p2p", *, scope="intra"):
    """Per-direction line rate one GPU has into a collective's fabric.

    Parameters
    ----------
    system : systems.System or str
        A preset name, a YAML path or a System.
    transport : {"p2p", "shm"}
        ``p2p``: NVLink (all links of the GPU; NVSwitch or mesh), or the PCIe host
        link for P2P over PCIe when the system has no NVLink. ``shm``: the encoded
        PCIe rate, which host-staged traffic crosses.
    scope : {"intra", "inter"}
        ``inter``: the network share of one GPU between nodes.

    Returns
    -------
    units.Bandwidth
        Per direction (the line rate; efficiencies are applied by the model).
    """
    system = systems.resolve(system)
    check_choice("transport", transport, TRANSPORTS)
    check_choice("scope", scope, ("intra", "inter"))
    if scope == "inter":
        net = getattr(system, "network_bandwidth_per_gpu", None)
        if net is None:
            raise ValueError(f"system {system.name!r} has no network section: scope "
                             "'inter' needs one")
        return net
    host = pcie.encoded_bandwidth(system.pcie.generation, system.pcie.lanes)
    if transport == "shm" or system.nvlink.generation is None \
            or system.nvlink.fabric == "none":
        return host
    return links.nvlink_gpu_bandwidth(system.nvlink.generation,
                                      system.nvlink.links_per_gpu)


@dataclass(frozen=True)
class Prediction:
    """Predicted collective performance for one or more sizes.

    Attributes
    ----------
    time : numpy.ndarray
        Time per call. [s]
    algbw, busbw : numpy.ndarray
        nccl-tests' algorithm and bus bandwidth. [B/s]
    algorithm, protocol : numpy.ndarray of str
        The (algorithm, protocol) with the smallest predicted time per size, as
        NCCL's tuner picks them.
    """

    collective: str
    n_ranks: int
    message_bytes: np.ndarray
    time: np.ndarray
    algbw: np.ndarray
    busbw: np.ndarray
    algorithm: np.ndarray
    protocol: np.ndarray
    scalar: bool = False

    @property
    def time_scalar(self):
        """``time`` as a float when the sizes were given as one number."""
        return float(self.time[0]) if self.scalar else self.time


def _candidates(collective, n, system, transport, algorithm, nvls=True):
    nodes = _domains_used(system, n)
    nvls_hw = (collective == "all_reduce" and getattr(system.nvlink, "nvls", False)
               and nvls)
    nvls_ok = (nvls_hw and transport == "p2p" and nodes == 1
               and n >= int(_constant("nvls/min_ranks")))
    if algorithm != "auto":
        if algorithm == "nvls" and not (nvls_hw and transport == "p2p"
                                        and nodes == 1):
            raise ValueError("algorithm 'nvls' needs all_reduce inside one NVLink "
                             "domain whose NVSwitch reduces in the switch, over the "
                             f"p2p transport, with NVLS enabled (system {system.name!r})")
        p2p_op = collective in ("alltoall", "sendrecv")
        if algorithm == "tree" and collective != "all_reduce":
            raise ValueError("algorithm 'tree' is modelled for all_reduce only")
        if algorithm == "direct" and collective != "all_reduce" and not p2p_op:
            raise ValueError("algorithm 'direct' is modelled for all_reduce, alltoall "
                             "and sendrecv")
        if p2p_op and algorithm != "direct":
            raise ValueError(f"{collective} is point-to-point: algorithm must be "
                             "'direct' or 'auto'")
        if algorithm in ("nvlstree", "collnet"):
            raise ValueError(f"algorithm {algorithm!r} needs all_reduce across nodes; "
                             f"{n} ranks fit in one NVLink domain of {system.name!r}")
        return [algorithm]
    if collective in ("alltoall", "sendrecv"):
        return ["direct"]
    if collective != "all_reduce":
        return ["ring"]
    algos = ["ring", "tree"]
    if nvls_ok:
        algos.append("nvls")
    return algos


def _fill_bytes(wire, f, sf):
    """Extra bytes' worth of time while the chunk pipeline ramps up:
    ``f sf (1 - exp(-wire / sf))``, so the incremental bandwidth rises smoothly
    from ``B / (1 + f)`` on small messages to ``B`` on large ones."""
    if sf <= 0:
        return 0.0 * wire
    return f * sf * -np.expm1(-np.asarray(wire, dtype=float) / sf)


def _const(system, path):
    """A model constant, taking the system's calibrated overrides
    (``System.collective_model``, written by ``gpulab fit``) first; mappings are
    merged key by key."""
    base = _constant(path)
    node = getattr(system, "collective_model", None)
    for key in path.split("/"):
        if not isinstance(node, dict) or key not in node:
            return base
        node = node[key]
    return {**base, **node} if isinstance(base, dict) and isinstance(node, dict) \
        else node


def _host_time(system, transport, collective, s, g):
    """The host's time per call when one process (thread) drives ``g`` GPUs.

    ``launch_s`` (one GPU per process, as nccl-tests run under MPI) plus
    ``launch_gpu_s`` for every further GPU the same thread launches on (nccl-tests
    ``-g N`` issues N launches one after the other), plus ``channel_s`` per GPU for
    every NCCL channel beyond the first: NCCL spreads larger messages over more
    channels (one per ``channel_bytes``, at most ``max_channels``), and each costs
    the host a little more set-up. A collective may carry its own
    ``launch_gpu_s``."""
    here = f"transports/{transport}"
    own = _const(system, f"{here}/collectives/{collective}")
    per_gpu = own.get("launch_gpu_s", _const(system, f"{here}/launch_gpu_s"))
    base = own["launch_s"] + (g - 1) * per_gpu
    ch = np.clip(np.asarray(s, dtype=float) / _const(system, f"{here}/channel_bytes"),
                 1, _const(system, f"{here}/max_channels"))
    return base + g * _const(system, f"{here}/channel_s") * (ch - 1)


def _fill_params(transport, collective, system=None):
    """(f, S_f) of a collective: its own entry if it has one (point-to-point
    operations pipeline differently), else the transport's."""
    own = _const(system, f"transports/{transport}/collectives/{collective}")
    return (own.get("fill", _const(system, f"transports/{transport}/fill")),
            own.get("fill_bytes", _const(system, f"transports/{transport}/fill_bytes")))


def _efficiency(transport, collective, n, system=None):
    """Achieved fraction of the line rate for ``n`` ranks: our 2-rank value,
    moving linearly in ``1 - 2/n`` to the 8-rank value where one is known
    (``efficiency_8``, from public 8-GPU runs) and constant beyond 8 ranks."""
    here = _const(system, f"transports/{transport}/collectives/{collective}")
    e2 = here["efficiency"]
    if "efficiency_8" not in here or n <= 2:
        return e2
    w = min(1.0, (1 - 2 / n) / (1 - 2 / 8))
    return e2 + w * (here["efficiency_8"] - e2)


def _protocol(system, transport, protocol):
    """A protocol's constants over one transport: ``transports/<t>/protocols/<p>``
    where given (LL and LL128 write flags with their data, which costs more through
    host memory than over NVLink), else the shared ``protocols/<p>``."""
    proto = _const(system, f"protocols/{protocol}")
    own = _const(system, f"transports/{transport}")
    extra = own.get("protocols", {}).get(protocol) if isinstance(own, dict) else None
    return {**proto, **extra} if extra else proto


def _single_time(collective, s, n, system, transport, algorithm, protocol, bw_intra,
                 nodes=1, g=1):
    """Time of one (algorithm, protocol) for sizes ``s`` (array), intra-node:
    the larger of the host's time per call (``g`` GPUs per process) and the GPUs'
    time (nccl-tests issues calls back to back, so the next launch overlaps the
    running collective)."""
    host = _host_time(system, transport, collective, s, g)
    eff = _efficiency(transport, collective, n, system)
    if algorithm == "nvls":
        b = bw_intra * network.nvls_efficiency(system)
        fill = _fill_bytes(s, _constant("nvls/fill"),
                           _constant("nvls/fill_bytes")) / b
        return np.maximum(host, _constant("nvls/latency_s") + s / b + fill)
    proto = _protocol(system, transport, protocol)
    b = bw_intra * eff * proto["bandwidth"]
    if algorithm == "tree":
        b *= 0.9                       # NCCL: tree busbw x 0.9
    wire = wire_factor(collective, n, algorithm) * s
    own = _const(system, f"transports/{transport}/collectives/{collective}")
    if algorithm == "direct" and "gpu_latency_s" in own:
        gpu = own["gpu_latency_s"]      # NCCL's point-to-point path, not a ring's hops
    else:
        gpu = proto["base_latency_s"] + \
            ring_steps(collective, n, algorithm, nodes) * proto["hop_latency_s"]
    fill = _fill_bytes(wire, *_fill_params(transport, collective, system)) / b
    if protocol == "LL":
        fill = 0.0                      # LL has no chunk pipeline to fill
    if algorithm in ("ring", "tree") and transport == "p2p" \
            and system.nvlink.fabric != "none":
        # NCCL runs a small call on fewer channels (enqueue.cc topoGetAlgoInfo: one channel
        # per threads x thread threshold bytes, the ring LL threshold times the ranks;
        # network.execution.channels_used), each at 1/max_channels of the rate. Over
        # NVLink only: max_channels is what NCCL opened on our 2x H200 (its log); over
        # PCIe or host memory NCCL opens a few channels, which we have not measured
        top = _const(system, f"transports/{transport}/max_channels")
        b = b * network.execution.channels_used(s, top, protocol, n, algorithm) / top
    return np.maximum(host, gpu + wire / b + fill)


@finite_answer
def local_copy_time(message_bytes, system):
    """Time of the one-rank "collective": a copy inside the GPU's memory. [s]

    With one rank NCCL has no peer: every collective (and nccl-tests' sendrecv
    to itself) copies the send buffer into the receive buffer (out of place; in
    place it copies nothing). The copy reads and writes ``message_bytes``, so it
    moves twice that through HBM, at the GPU's spec memory bandwidth
    (:attr:`gpulab.specs.GPUSpec.memory_bandwidth`, reads and writes together):
    ``2 S / B_HBM``. A lower bound: our 1x H200 device-to-device copies of 64 MiB
    to 1 GiB reach 81-89 % of it (``h200-x1-2026-12-01-copies``), so the
    model is 11-19 % short there.
    :func:`predict` takes the larger of this and the host's time per call.

    Parameters
    ----------
    message_bytes : numeric or array_like
        nccl-tests' ``size``. [B]
    system : systems.System or str

    >>> round(local_copy_time(2**30, "hgx-h200") * 1e6, 1)    # H200: 4.8 TB/s
    447.4
    """
    system = systems.resolve(system)
    s = as_number("message_bytes", message_bytes, low=0)
    return 2.0 * s / system.gpu_spec.memory_bandwidth


@finite_answer
def collective_time(collective, message_bytes, n_ranks, system, *, transport="p2p",
                    algorithm="auto", protocol="auto", nvls=True, gpus_per_process=None):
    r"""Predict the time of one collective call, as nccl-tests would measure it.

    Parameters
    ----------
    collective : str
        One of :data:`COLLECTIVES`.
    message_bytes : numeric or array_like
        nccl-tests' ``size``: the full buffer (all_gather: the gathered output;
        reduce_scatter: the input; alltoall: each rank's buffer; sendrecv: what
        each rank sends). [B]
    n_ranks : int
        Ranks (one per GPU), at most the system's GPUs. One rank is a copy
        inside the GPU (:func:`local_copy_time`), labelled algorithm ``copy``.
    system : systems.System or str
        Preset name, YAML path or System.
    transport : {"p2p", "shm"}
        ``shm`` models NCCL with ``NCCL_P2P_DISABLE=1`` (host-staged over PCIe).
        A PCIe-only system whose driver refuses peer-to-peer (``pcie.p2p: false``,
        e.g. GeForce cards) runs ``shm`` whatever is asked, as NCCL does.
    algorithm : "auto" or one of :data:`ALGORITHMS`
    protocol : "auto" or one of :data:`PROTOCOLS`
    nvls : bool, default True
        Allow in-switch reduction where the hardware has it; False models NCCL
        with ``NCCL_NVLS_ENABLE=0`` (NVLink multicast off).
    gpus_per_process : int, optional
        GPUs one process drives. Default 1 at every node count: one process per
        GPU, as training frameworks (torchrun) and nccl-tests under ``mpirun -g 1``
        run; ``N`` models nccl-tests ``-g N`` (one thread launching on N GPUs in
        turn), ``"node"`` every rank of a node in one process. It changes only the
        host's time per call.

    Returns
    -------
    numpy.ndarray or float
        Time per call. [s]

    Notes
    -----
    For algorithm :math:`a` and protocol :math:`p` over transport :math:`t`
    (NCCL ``tuning.cc``'s latency + bytes / bandwidth structure):

    .. math::

        g_{a,p}(S) = L_p + k_a(n)\,h_p + \frac{w_a(n)\,S}{B\,e_c\,\pi_p}
                     + f_c\,S_f\,\frac{1 - e^{-w_a(n) S / S_f}}{B\,e_c\,\pi_p},
        \qquad t_{a,p}(S) = \max\bigl(t_{h,c},\; g_{a,p}(S)\bigr)

    with the GPUs' base and per-hop latencies :math:`L_p, h_p` of the protocol
    on this transport, steps :math:`k_a(n)` (:func:`ring_steps`), wire factor
    :math:`w_a(n)` (:func:`wire_factor`), the per-direction line rate :math:`B`
    (:func:`fabric_bandwidth`), the achieved fraction :math:`e_c` of collective
    :math:`c`, the protocol's bandwidth share :math:`\pi_p` and a pipeline-fill
    term (:math:`f_c`, :math:`S_f`). A ring or tree over NVLink streams on the
    channels NCCL's channel rule gives the size (``enqueue.cc`` topoGetAlgoInfo,
    :func:`gpulab.network.execution.channels_used`: one channel per threads x thread
    threshold bytes, the ring LL threshold times the ranks), each at :math:`1/k_{max}`
    of the rate, so the streaming term is divided by :math:`c(S)/k_{max}` (ours: the
    rate per channel; over PCIe and host memory, where NCCL opens fewer channels
    than we measured over NVLink, the full rate is kept). :math:`t_{h,c}` is the host's time per call:
    nccl-tests issues calls back to back, so each launch overlaps the previous
    collective and small messages cost the host's time, not the GPUs'. For a
    process that drives :math:`g` GPUs and a message NCCL spreads over
    :math:`k(S)` channels,

    .. math::

        t_{h,c} = h_c + (g - 1)\,h_g + g\,h_k\,(k(S) - 1),\qquad
        k(S) = \min\bigl(k_{max}, \max(1, S / S_k)\bigr),

    with :math:`h_c` measured with one GPU per process and :math:`h_g` the extra
    time per further GPU one thread launches on (both from our 2x H200 runs). For
    ring and tree the protocol is the one NCCL's own tuning table picks
    (``nccl_tuning``; NCCL picks by its table, not by the fastest real time, and
    so does the model); the algorithm is the fastest NCCL would consider. Across
    nodes (ranks spanning two or more NVLink domains) the model is
    :func:`gpulab.network.collective_times`: NCCL's multi-node Ring, Tree,
    NVLSTree and CollNet with channels over all the node's NICs, chosen by NCCL's
    cost model; the host's time per call is the same as inside a node.

    =================================  ==============================================
    Assumption                         Source
    =================================  ==============================================
    hop latencies                      NCCL 2.28.3's tuning table on 2x H200 (ours)
    L_p, pi_p, e_c, h_c, h_g, h_k,     our C++ NCCL sweeps on 2x H200, NVLS off
    fill                               (scripts/fit_nccl_model.py)
    S_k, k_max                         NCCL's logged channels on 2x H200
    c(S): channels used for the size   NCCL's enqueue.cc channel rule (read in source)
    protocol choice (nccl_tuning)      NCCL's tuning table on 2x H200 (ours)
    8-GPU LL time (bound)              public 8x H20 nccl-tests (DeepEP#303)
    8-GPU e_c, NVLS constants          public 8x H200 sweep (ml-engineering; a
                                       PyTorch benchmark: used from 64 MiB)
    NVLS algbw = 0.61 x line rate      NVIDIA/nccl-tests#212 (an NCCL maintainer:
                                       8x H100 algbw ~275, busbw ~480 GB/s)
    =================================  ==============================================

    Examples
    --------
    >>> t = collective_time("all_reduce", 2**30, 2, "h200-x2-measured")
    >>> 300e9 < 2**30 / t < 380e9            # busbw = algbw for 2 ranks
    True
    """
    return predict(collective, message_bytes, n_ranks, system, transport=transport,
                   algorithm=algorithm, protocol=protocol, nvls=nvls,
                   gpus_per_process=gpus_per_process).time_scalar


@finite_answer
def predict(collective, message_bytes, n_ranks, system, *, transport="p2p",
            algorithm="auto", protocol="auto", nvls=True, gpus_per_process=None):
    """Predict time, algbw and busbw over sizes; see :func:`collective_time`.

    Returns
    -------
    Prediction
    """
    check_choice("collective", collective, COLLECTIVES)
    system = systems.resolve(system)
    n = check_int("n_ranks", n_ranks, low=1, high=system.n_gpus)
    check_choice("transport", transport, TRANSPORTS)
    check_choice("algorithm", algorithm, ("auto",) + ALGORITHMS)
    check_choice("protocol", protocol, ("auto",) + PROTOCOLS)
    if not isinstance(nvls, (bool, np.bool_)):
        raise ValueError(f"nvls must be True or False; got {nvls!r}")
    if transport == "p2p" and system.nvlink.fabric == "none" \
            and not getattr(system.pcie, "p2p", True):
        # no NVLink and the driver refuses PCIe peer-to-peer (GeForce cards): NCCL's
        # p2pCanConnect fails and it connects the GPUs through host memory (SHM)
        transport = "shm"
    s = np.atleast_1d(as_number("message_bytes", message_bytes, low=0,
                                low_inclusive=False, max_ndim=1)).astype(float)
    scalar = np.ndim(message_bytes) == 0
    g = _gpus_per_process(gpus_per_process, n, system)
    if n == 1:
        host = _const(system, f"transports/{transport}/collectives/{collective}/"
                              "launch_s")
        t = np.maximum(host, local_copy_time(s, system))
        return _prediction(collective, n, s, t, np.full(s.shape, "copy"),
                           np.full(s.shape, "none"), scalar)
    nodes = _domains_used(system, n)
    if nodes > 1:
        if algorithm in ("nvls", "direct") and collective == "all_reduce":
            raise ValueError(f"algorithm {algorithm!r} needs all_reduce inside one "
                             f"NVLink domain; {n} ranks span {nodes} domains of "
                             f"{system.name!r} (across nodes: 'ring', 'tree', "
                             "'nvlstree' or 'collnet')")
        # across nodes: NCCL's multi-node algorithms (gpulab.network); the host's
        # time per call is the same launch model as inside a node
        r = network.collective_times(collective, s, n, system, algorithm=algorithm,
                                     protocol=protocol, nvls=bool(nvls),
                                     host_time=_host_time(system, transport,
                                                          collective, s, g))
        t = r["time"]
        ppn = n // nodes
        if ppn >= 2 and collective in ("all_reduce", "all_gather", "reduce_scatter"):
            # each node does at least its own part: the same collective of its
            # ranks inside one NVLink domain
            t = np.maximum(t, predict(collective, s, ppn, system, transport=transport,
                                      nvls=nvls, gpus_per_process=1).time)
        return _prediction(collective, n, s, t, r["algorithm"], r["protocol"], scalar)
    bw_intra = fabric_bandwidth(system, transport).bytes_per_s
    if transport == "p2p" and system.nvlink.peer_links is not None:
        bw_intra = min(bw_intra, _subset_bandwidth(system, n))
    protos = PROTOCOLS if protocol == "auto" else (protocol,)
    if collective in ("alltoall", "sendrecv"):
        protos = ("Simple",) if protocol == "auto" else protos   # p2p ops: Simple
    rows, labels = [], []
    for algo in _candidates(collective, n, system, transport, algorithm, nvls):
        by_proto = []
        algo_protos = ("Simple",) if algo == "nvls" else protos
        for proto in algo_protos:
            if collective == "alltoall" and _uneven_mesh(system, n, transport, nodes):
                t = _mesh_alltoall(s, n, system, g)
            else:
                t = _single_time(collective, s, n, system, transport, algo, proto,
                                 bw_intra, g=g)
            by_proto.append(np.broadcast_to(t, s.shape))
        # the protocol NCCL would pick: the lowest time by NCCL's own table (ring and
        # tree); one-shot kernels outside NCCL's tuner: the fastest
        if algo in ("ring", "tree"):
            est = np.vstack([_nccl_estimate(collective, s, n, system, transport, algo, p,
                                            bw_intra, nodes) for p in algo_protos])
        else:
            est = np.vstack(by_proto)
        pick = np.argmin(est, axis=0)
        rows.append(np.vstack(by_proto)[pick, np.arange(s.size)])
        labels.append((algo, np.array(algo_protos)[pick]))
    times = np.vstack(rows)
    best = np.argmin(times, axis=0)
    idx = np.arange(s.size)
    t = times[best, idx]
    algos = np.array([labels[i][0] for i in best])
    protos_used = np.array([labels[i][1][j] for j, i in zip(idx, best)])
    return _prediction(collective, n, s, t, algos, protos_used, scalar)


def _nccl_estimate(collective, s, n, system, transport, algorithm, protocol, bw, nodes):
    """NCCL's own estimate of a call's time, used only to pick the protocol as NCCL
    does: its ring latency per protocol (base + steps x hop) and its bandwidth as
    a fraction of Simple's (``nccl_tuning``, from NCCL's tuning table on our 2x
    H200; a protocol NCCL disables there is never picked). NCCL picks by this
    table, not by the fastest real time: on 2x H200 it leaves LL for Simple at
    2 MiB although LL is still faster there."""
    tune = _constant(f"nccl_tuning/{transport}").get(protocol)
    if tune is None:
        return np.full(np.shape(s), np.inf)
    algo = algorithm
    steps = ring_steps(collective, n, algo, nodes)
    # one bandwidth per transport (NCCL's own busBw: its Simple rate over the line
    # rate), and all_gather / reduce_scatter charged all_reduce's bytes: that is
    # what NCCL's logged choices on 2x H200 follow (its printed all_gather rate,
    # twice all_reduce's, would put the switch a factor 2 too late)
    b = bw * _constant(f"nccl_tuning/{transport}/efficiency") * tune["bandwidth"]
    wire = wire_factor("all_reduce" if collective in ("all_gather", "reduce_scatter")
                       else collective, n, algo) * np.asarray(s, dtype=float)
    return tune["latency_s"] + steps * tune["hop_s"] + wire / b


def _subset_bandwidth(system, n):
    """NVLink rate each of the first ``n`` GPUs of a mesh has towards the others
    (the links inside the subset; the least-connected GPU sets it): two GPUs of a
    hybrid cube mesh share one or two links, not all six. [B/s, per direction]"""
    peers = systems.nvlink_peers(system)
    link = links.nvlink_link_bandwidth(system.nvlink.generation).bytes_per_s
    k = min(sum(peers[g].get(p, 0) for p in range(n) if p != g) for g in range(n))
    if k == 0:                                  # no NVLink inside the subset
        return fabric_bandwidth(system, "shm").bytes_per_s
    return k * link


def _uneven_mesh(system, n, transport, nodes):
    """True if some of the first ``n`` GPUs of a mesh lack NVLink between them, or
    have unequal links (hybrid cube mesh): alltoall then runs pair by pair."""
    if transport != "p2p" or nodes != 1 \
            or system.nvlink.fabric not in ("mesh", "hybrid_cube_mesh") \
            or system.nvlink.peer_links is None:
        return False
    peers = systems.nvlink_peers(system)
    counts = {peers[g].get(p, 0) for g in range(n) for p in range(n) if p != g}
    return len(counts) > 1


def _mesh_alltoall(s, n, system, gpp=1):
    """alltoall on a mesh with uneven peer links: every rank sends S/n to each
    peer at once, over that pair's NVLink links, or (no NVLink) through host
    memory over its PCIe link, which all such peers share. The slowest rank and
    path set the time (NVLink and PCIe run in parallel)."""
    peers = systems.nvlink_peers(system)
    link = links.nvlink_link_bandwidth(system.nvlink.generation).bytes_per_s
    host = fabric_bandwidth(system, "shm").bytes_per_s
    e_nv = _efficiency("p2p", "alltoall", n, system)
    e_host = _efficiency("shm", "alltoall", n, system)
    chunk = np.asarray(s, dtype=float) / n
    worst = 0.0 * chunk
    for g in range(n):
        nv = [peers[g][p] for p in range(n) if p != g and peers[g].get(p)]
        off = sum(1 for p in range(n) if p != g and not peers[g].get(p))
        t_nv = max((chunk / (k * link * e_nv) for k in nv), default=0.0 * chunk,
                   key=lambda x: float(np.max(x)))
        t_host = off * chunk / (host * e_host)
        worst = np.maximum(worst, np.maximum(t_nv, t_host))
    proto = _protocol(system, "p2p", "Simple")
    host = _host_time(system, "p2p", "alltoall", s, gpp)
    return np.maximum(host, proto["base_latency_s"] + proto["hop_latency_s"] + worst)


def _prediction(collective, n, s, t, algos, protos, scalar):
    ab = s / t
    return Prediction(collective, n, s, t, ab, ab * busbw_factor(collective, n),
                      algos, protos, scalar)


def _gpu_latency(system, transport, collective, n, algorithm, protocol):
    proto = _protocol(system, transport, protocol)
    return proto["base_latency_s"] + \
        ring_steps(collective, n, algorithm) * proto["hop_latency_s"]


@finite_answer
def calibrate(collective, message_bytes, times, n_ranks, system, *, transport="p2p",
              fill=None, fill_bytes=None, gpus_per_process=None):
    r"""Derive a collective's launch cost and efficiency from a measured sweep.

    Parameters
    ----------
    collective : str
        One of :data:`COLLECTIVES`.
    message_bytes, times : array_like
        nccl-tests ``size`` [B] and time per call [s]; at least one size
        <= 4 KiB (for the latency floor) and one >= 64 MiB (for the bandwidth).
    n_ranks : int
        Ranks of the measurement.
    system : systems.System or str
        The measured system (for its line rate).
    transport : {"p2p", "shm"}
    fill, fill_bytes : float, optional
        Pipeline-fill parameters; default: the model's current values.
    gpus_per_process : int, optional
        GPUs each process of the measurement drove (default: all ranks of a node,
        nccl-tests ``-g N``).

    Returns
    -------
    dict
        ``{"launch_s": ..., "efficiency": ...}`` in the form of
        ``data/nccl_model.yaml`` (``transports/<t>/collectives/<c>``).

    Notes
    -----
    ``launch_s`` is the host's time per call with one GPU per process: the
    median time of the sizes up to 4 KiB, where back-to-back calls wait for the
    host, not the GPUs, less ``launch_gpu_s`` for each further GPU the
    measuring process drove.
    ``efficiency`` solves the model with the Simple protocol (its GPU latency plus
    the wire bytes over the achieved rate) for every size from 64 MiB and takes
    the geometric middle of the lowest and highest value, which halves the worst
    relative error over those sizes (one size that runs unusually fast or slow,
    such as alltoall at 1 GiB, does not set the rate for all the others).
    """
    check_choice("collective", collective, COLLECTIVES)
    check_choice("transport", transport, TRANSPORTS)
    system = systems.resolve(system)
    n = check_int("n_ranks", n_ranks, low=2, high=system.n_gpus)
    s = np.atleast_1d(as_number("message_bytes", message_bytes, low=0,
                                low_inclusive=False))
    t = np.atleast_1d(as_number("times", times, low=0, low_inclusive=False))
    if s.shape != t.shape or s.ndim != 1:
        raise ValueError("message_bytes and times must be 1-D arrays of equal length")
    small, big = s <= 4096, s >= 64 * 2**20
    if not small.any() or not big.any():
        raise ValueError("message_bytes must include sizes <= 4 KiB and >= 64 MiB")
    f0, sf0 = _fill_params(transport, collective, system)
    f = f0 if fill is None else as_number("fill", fill, low=0, allow_array=False)
    sf = sf0 if fill_bytes is None \
        else as_number("fill_bytes", fill_bytes, low=0, allow_array=False)
    algo = "direct" if collective in ("alltoall", "sendrecv") else "ring"
    g = _gpus_per_process(gpus_per_process, n, system, default_all=True)
    launch = float(np.median(t[small])) \
        - (g - 1) * _const(system, f"transports/{transport}/launch_gpu_s")
    wire = wire_factor(collective, n, algo) * s[big]
    gpu = _gpu_latency(system, transport, collective, n, algo, "Simple")
    line = fabric_bandwidth(system, transport).bytes_per_s
    # t = gpu + (wire + fill(wire)) / (line e)  ->  e, for every size >= 64 MiB
    e = (wire + _fill_bytes(wire, f, sf)) / (line * np.maximum(t[big] - gpu, 1e-12))
    eff = float(np.sqrt(e.min() * e.max()))
    return {"launch_s": max(launch, 0.0), "efficiency": min(eff, 1.0)}
