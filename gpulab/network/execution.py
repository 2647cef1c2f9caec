r"""What NCCL runs: channels, pieces and the pipeline of one collective call.

NCCL's tuner (``src/graph/tuning.cc``) *chooses* an algorithm and a protocol with an
estimate ``latency + bytes / bandwidth`` that assumes every channel is in use and that
a message streams from its first byte. The call then *runs* differently, and this
module models that run from NCCL's own mechanics (NCCL 2.30.7, file and line in
``gpulab/data/nccl_mechanics.yaml``):

1. **Channels used.** ``topoGetAlgoInfo`` (``src/enqueue.cc``) drops channels while
   the message is smaller than ``channels x threads x threshold`` bytes (64 B per
   thread for Simple, 8 B for LL and LL128, LL's multiplied by the ranks for a ring),
   so a small message runs on few channels and gets only their bandwidth.
2. **Pieces.** Every channel moves its share in pieces: a ring all_reduce step moves
   ``min(chunk, share / ranks)`` bytes, in slices of half a chunk for Simple (chunk =
   4 buffer steps, slice = 2; ``collectives.h``); a tree moves one buffer step at a
   time (NCCL cuts LL128's chunk smaller for mid sizes; the model does not, see
   :func:`tree_piece`). Simple signals a piece only once it is whole, so each hop is
   store-and-forward at slice granularity; LL and LL128 flag every 8- or 128-byte
   line, so over NVLink they forward almost at once, while a network step still
   leaves only when the proxy has the whole step.
3. **Pipeline.** The first piece must cross every hop of the algorithm's path (the
   ring's ``2(n-1)`` steps, the tree's chain up and down and its network levels),
   paying each hop's latency and the piece's transfer; the rest streams behind it at
   the slowest hop's rate. A network hop also limits a channel to the
   ``NCCL_STEPS`` (8) pieces it may have in flight per round trip of that hop.
4. **Rings.** An LL ring forwards each line as soon as its flag arrives and a sender
   waits for credit only ``NCCL_STEPS`` steps ahead (``prims_ll.h``), so it runs as a
   dataflow (:func:`ring_dataflow_time`): a small call pays the latencies along the
   chain of its pieces, each network crossing once. LL128 and Simple rings are
   modelled in lockstep (:func:`ring_time`), every step paced by the slowest edge: a
   stand-in. Our 1x H200 run of rings of NCCL hosts sharing one GPU
   (:func:`gpulab.network.mixed_ring_check`) found their small calls running as a
   dataflow too, so lockstep overcharges them; it is kept because in the middle
   band public RoCE, EFA and InfiniBand rings run slower than the dataflow form
   predicts, a per-step network cost that neither form has.

The model's time for one call:

.. math::

    t = t_\text{base} + \sum_{h \in \text{path}} \Bigl(\lambda_h + \frac{q}{b_h}\Bigr)
        + \frac{W / k(S) - q}{b_\text{min}}

with :math:`q` the piece of one step and channel, :math:`b_h` one channel's rate on
hop :math:`h`, :math:`W` the bytes each rank sends over the call, :math:`k(S)` the
channels used. NCCL's are the channel rule, the buffer/step/chunk/slice sizes, the
steps per algorithm and the per-step latencies (its tuner's constants, used here as
the latency of one step); ours are the per-channel rates (the achieved rate of the
path shared by NCCL's channel count), the assumption that the first piece's path
sets the fill, and (in :mod:`gpulab.network.model`) a tree streaming at NCCL's own
size-dependent tree efficiency (its tuner's ``treeCorrectionFactor``).
"""
from __future__ import annotations

import math

import numpy as np

from .._validate import as_number, check_choice, check_int, finite_answer
from . import data

__all__ = ["mechanic", "step_bytes", "channels_used", "tree_piece",
           "store_forward_piece", "pipeline_time", "tree_hops", "nvls_channels",
           "nvlstree_piece", "ring_time", "ring_dataflow_time", "PROTOCOLS"]

PROTOCOLS = data.PROTOCOLS
mechanic = data.mechanic


def _steps():
    return int(mechanic("buffers/nccl_steps"))


def _chunk_slice():
    cs = mechanic("buffers/chunk_slice_steps")["all_reduce"]
    return int(cs["chunkSteps"]), int(cs["sliceSteps"])


def _bytes(name, value):
    """A size or sizes [B]: finite, >= 0."""
    return np.asarray(as_number(name, value, low=0), dtype=float)


def _positive(name, value):
    return np.asarray(as_number(name, value, low=0, low_inclusive=False), dtype=float)


def step_bytes(protocol):
    """Data bytes one buffer step holds for ``protocol``: the buffer over
    ``NCCL_STEPS``, LL carrying 8 data bytes per 16-byte line, LL128 120 of 128. [B]

    >>> step_bytes("Simple"), step_bytes("LL")
    (524288, 32768)
    """
    check_choice("protocol", protocol, PROTOCOLS)
    share = {"Simple": 1.0, "LL": 0.5, "LL128": 120 / 128}[protocol]
    return int(mechanic("buffers/step_bytes")[protocol] * share)


@finite_answer
def channels_used(message_bytes, max_channels, protocol, n_ranks, algorithm="ring"):
    """Channels NCCL runs a call on (``topoGetAlgoInfo``'s channel tuning).

    NCCL starts from ``max_channels`` and drops one while the message is smaller
    than ``channels x threads x threshold``; a ring with LL multiplies the threshold
    by the ranks.

    Parameters
    ----------
    message_bytes : numeric or array_like
        The call's ``nBytes`` (nccl-tests' size for all_reduce, all_gather and
        reduce_scatter). [B]
    max_channels : int
        The communicator's channels for the algorithm, 1-64.
    protocol : {"LL", "LL128", "Simple"}
    n_ranks : int
    algorithm : {"ring", "tree"}

    Returns
    -------
    numpy.ndarray
        Channels, 1 .. max_channels.

    Examples
    --------
    >>> channels_used([4096, 2**20, 2**30], 16, "Simple", 8).tolist()
    [1, 16, 16]
    >>> channels_used(2**20, 32, "LL", 8).tolist()    # 8 B x 8 ranks x 512 threads each
    32
    """
    s = _bytes("message_bytes", message_bytes)
    nc = check_int("max_channels", max_channels, low=1, high=64)
    check_choice("protocol", protocol, PROTOCOLS)
    n = check_int("n_ranks", n_ranks, low=1, high=1_000_000)
    check_choice("algorithm", algorithm, ("ring", "tree"))
    thr = mechanic("channels/thread_threshold_bytes")[protocol] * (
        n if algorithm == "ring" and protocol == "LL" else 1)
    per = mechanic("channels/max_threads")[protocol] * thr
    return np.clip(np.floor(s / per), 1, nc).astype(int)


@finite_answer
def tree_piece(message_bytes, channels, protocol, step=None):
    """Bytes one tree step moves on one channel: the channel's share, at most one
    buffer step (the tree runs with chunkSteps = sliceSteps = 1). [B]

    For LL128, NCCL cuts the chunk further while a channel's share holds few chunks
    (``calcCollChunking``, ``src/enqueue.cc`` lines 2286-2294 at v2.30.7-1: down to
    about 70 KB for a 1 MiB share on 4 nodes of 8). The model keeps one buffer step:
    with NCCL's smaller pieces, and no per-piece network cost in the model, its
    pipeline ran ahead of the public multi-node runs it was checked against (28 of
    58 source-band groups within target instead of 30), so that cost is missing and
    the larger piece stands in for it. This is ours, not NCCL's.

    ``step``: the buffer step where the job sets its buffer (``NCCL_BUFFSIZE / 8``
    for Simple); default NCCL's. [B]

    >>> int(tree_piece(2**30, 16, "Simple"))
    524288
    >>> int(tree_piece(2**30, 16, "Simple", step=2**20))     # NCCL_BUFFSIZE = 8 MiB
    1048576
    """
    s = _bytes("message_bytes", message_bytes)
    k = _positive("channels", channels)
    check_choice("protocol", protocol, PROTOCOLS)
    if step is None:
        step = step_bytes(protocol)
    else:
        step = float(as_number("step", step, low=0, low_inclusive=False,
                               allow_array=False))
    return np.minimum(s / k, step)


@finite_answer
def store_forward_piece(piece, protocol, hop):
    """The part of a piece a hop must hold before it forwards: a Simple slice (half a
    ring chunk; one network message is one slice), one line for LL/LL128 over NVLink
    or PCIe, a whole step over the network (the proxy sends a step when it is
    complete). [B]

    >>> float(store_forward_piece(2**21, "Simple", "intra"))
    1048576.0
    >>> float(store_forward_piece(2**21, "LL128", "intra"))
    128.0
    """
    q = _bytes("piece", piece)
    check_choice("protocol", protocol, PROTOCOLS)
    check_choice("hop", hop, ("intra", "net"))
    if protocol == "Simple":
        chunk_steps, slice_steps = _chunk_slice()
        return q * slice_steps / chunk_steps
    if hop == "net":
        return q
    return np.minimum(q, 8.0 if protocol == "LL" else 128.0)


@finite_answer
def pipeline_time(wire_bytes, channels, piece_intra, piece_net, hops_intra, hops_net,
                  lat_intra, lat_net, rate_intra, rate_net):
    r"""Time of a store-and-forward pipeline over a path of hops. [s]

    .. math::

        t = h_i(\lambda_i + q_i/b_i) + h_n(\lambda_n + q_n/b_n)
            + \frac{W/k - q}{b_\text{min}}

    with :math:`h_i, h_n` the NVLink/PCIe and network hops of the first piece's
    path, :math:`\lambda` their latencies [s], :math:`q` the bytes a hop holds before
    it forwards, :math:`b` one channel's rate on each kind of hop [B/s, per
    direction], :math:`W` the bytes each rank sends and :math:`k` the channels. A
    network hop holds at most ``NCCL_STEPS`` pieces in flight per channel, so what
    streams behind the first piece gets at most ``NCCL_STEPS q_n / (2 lambda_n)``
    per channel (a round trip per piece).

    >>> t = pipeline_time(1e9, 16, 1e6, 1e6, 14, 0, 2e-6, 0.0, 20e9, 20e9)
    >>> round(float(t) * 1e3, 3)   # 14 hops x (2 us + 50 us) - 50 us + 1e9 / 320 GB/s
    3.803
    """
    w = _bytes("wire_bytes", wire_bytes)
    k = _positive("channels", channels)
    qi = _bytes("piece_intra", piece_intra)
    qn = _bytes("piece_net", piece_net)
    hi = check_int("hops_intra", hops_intra, low=0, high=1_000_000)
    hn = check_int("hops_net", hops_net, low=0, high=1_000_000)
    li = float(as_number("lat_intra", lat_intra, low=0, allow_array=False))
    ln = float(as_number("lat_net", lat_net, low=0, allow_array=False))
    b_in = _positive("rate_intra", rate_intra)
    b_net = _positive("rate_net", rate_net)
    fill = hi * (li + qi / b_in)
    if not hn:
        return fill + np.maximum(w / k - qi, 0.0) / b_in
    fill = fill + hn * (ln + qn / b_net)
    first = np.where(b_net < b_in, qn, qi)
    window = _steps() * qn / max(2.0 * ln, 1e-12)
    b_min = np.maximum(np.minimum(b_in, np.minimum(b_net, window)), 1e-300)
    return fill + np.maximum(w / k - first, 0.0) / b_min


def tree_hops(ranks_per_node, nodes):
    """(intra, network) hops of the tree's path: the chain inside a node and the
    binary tree's levels between nodes, up and down.

    >>> tree_hops(8, 2)
    (14, 2)
    """
    ppn = as_number("ranks_per_node", ranks_per_node, low=1, high=1_000_000,
                    allow_array=False)
    nodes = check_int("nodes", nodes, low=1, high=1_000_000)
    levels = max(1, math.ceil(math.log2(nodes))) if nodes > 1 else 0
    return 2 * (math.ceil(ppn) - 1), 2 * levels


def nvls_channels(arch, nodes):
    """NCCL's NVLS channels: 16 on Hopper, 32 (across nodes) or 24 (one NVLink
    domain) on Blackwell (``nccl_mechanics.yaml``, channels/nvls_channels).

    >>> nvls_channels("hopper", 2), nvls_channels("blackwell", 2)
    (16, 32)
    """
    check_choice("arch", arch, ("hopper", "blackwell"))
    nodes = check_int("nodes", nodes, low=1, high=1_000_000)
    v = mechanic("channels/nvls_channels")
    if arch == "blackwell":
        return int(v["sm100_multi_node"] if nodes > 1 else v["sm100_single_node"])
    return int(v["sm90"])


@finite_answer
def nvlstree_piece(message_bytes, concurrent_ops, nodes, nvls_chunk=None, tree_max=None):
    """Bytes one NVLSTree step moves per channel and head: NCCL's NVLS chunk
    (128 KiB; 64 KiB from 4 nodes, ``nvlsTreeMaxChunkSize``), cut to 64 and 32 KiB
    while the message is smaller than 4 and 1 times ``ops x chunk``
    (``calcCollChunking``, ``src/enqueue.cc``), and at most the op's share. [B]
    ``nvls_chunk`` and ``tree_max``: ``NCCL_NVLS_CHUNKSIZE`` and
    ``NCCL_NVLSTREE_MAX_CHUNKSIZE`` where the job sets them; the start is the smaller.

    >>> int(nvlstree_piece(2**30, 128, 2)), int(nvlstree_piece(32 * 2**20, 128, 2))
    (131072, 65536)
    >>> int(nvlstree_piece(2**32, 128, 8, nvls_chunk=2**19, tree_max=2**19))
    524288
    """
    s = _bytes("message_bytes", message_bytes)
    ops = check_int("concurrent_ops", concurrent_ops, low=1, high=1_000_000)
    nodes = check_int("nodes", nodes, low=1, high=1_000_000)
    if nvls_chunk is None:
        nvls_chunk = float(mechanic("buffers/chunk_bytes_default")["nvls_max"])
    else:
        nvls_chunk = float(as_number("nvls_chunk", nvls_chunk, low=0, low_inclusive=False,
                                     allow_array=False))
    # nvlsTreeMaxChunkSize: 64 KiB from 4 nodes (src/transport/nvls.cc, line 229 at
    # v2.30.7-1, ncclNvlsTuning), unless NCCL_NVLSTREE_MAX_CHUNKSIZE is set
    if tree_max is None:
        tree_max = nvls_chunk if nodes < 4 else 65536.0
    else:
        tree_max = float(as_number("tree_max", tree_max, low=0, low_inclusive=False,
                                   allow_array=False))
    chunk = np.full(s.shape, min(nvls_chunk, tree_max))
    for factor, cut in ((32, 262144), (16, 131072), (4, 65536), (1, 32768)):
        chunk = np.where((s < factor * ops * chunk) & (chunk > cut), cut, chunk)
    return np.minimum(chunk, s / ops)


@finite_answer
def ring_time(message_bytes, channels, n_ranks, steps, protocol, hops, max_chunk=None):
    r"""Time of a ring that runs in lockstep. [s]

    Every rank sends from the first step on, so a ring has no fill: each step waits
    for the neighbour's piece, and every edge of the ring is busy in every step, so
    the slowest edge sets the period of a step (ours; the network model uses it for
    LL128 and Simple, and :func:`ring_dataflow_time` for LL. Our mixed-ring run,
    :func:`gpulab.network.mixed_ring_check`, found small LL128 and Simple calls
    running as a dataflow, so this form overcharges them; run as a dataflow
    (``network.public_errors(ring_form="dataflow")``), LL128 and Simple leave fewer
    public multi-node source groups between 64 KiB and 1 GiB within target than
    this form, faster than measured, so a per-step network cost is missing there
    and the lockstep's latency at every step stands in for it):

    .. math::

        t = L\,s\,\max_h\Bigl(\frac{q}{b_h},\; \lambda_h + \frac{u_h}{b_h}\Bigr)

    with :math:`s` the steps of one loop (all_reduce ``2(n-1)``), :math:`L` the
    loops (``S / (channels x n x chunk)``, at least 1), :math:`q` the piece of one
    step and channel (``min(S / (channels x n), chunk)``, the chunk 4 buffer steps
    for Simple, one for LL/LL128, or ``max_chunk``), :math:`u_h` the part of it a hop
    holds before it forwards (:func:`store_forward_piece`), :math:`\lambda_h` [s] and
    :math:`b_h` [B/s] the latency and one channel's rate of each kind of edge in
    ``hops`` (``[(kind, latency_s, rate), ...]``, kind ``"intra"`` or ``"net"``).

    >>> t = ring_time(2**30, 16, 8, 14, "Simple", [("intra", 3.4e-6, 20e9)])
    >>> round(float(t) * 1e3, 3)    # 1.75 GiB / (16 x 20 GB/s): bandwidth-bound
    5.872
    >>> t = ring_time(8, 1, 8, 14, "LL", [("intra", 1.1e-6, 10e9)])
    >>> round(float(t) * 1e6, 1)    # 14 steps x 1.1 us: latency-bound
    15.4
    """
    s = _bytes("message_bytes", message_bytes)
    k = _positive("channels", channels)
    n = check_int("n_ranks", n_ranks, low=1, high=1_000_000)
    st = check_int("steps", steps, low=0, high=10_000_000)
    check_choice("protocol", protocol, PROTOCOLS)
    hops = _hop_list(hops)
    chunk = _ring_chunk(protocol, max_chunk)
    q = np.minimum(s / (k * n), chunk)
    loops = np.maximum(1.0, s / (k * n * chunk))
    period = 0.0 * q
    for kind, lat, rate in hops:
        u = store_forward_piece(q, protocol, kind)
        period = np.maximum(period, np.maximum(q / rate, lat + u / rate))
    return loops * st * period


def _hop_list(hops):
    """``hops`` of a ring as a list of (kind, latency_s, rate), validated."""
    if isinstance(hops, (str, bytes)) or not hasattr(hops, "__iter__"):
        raise ValueError(f"hops must be a list of (kind, latency_s, rate); got {hops!r}")
    hops = list(hops)
    if not hops or any(not isinstance(h, (tuple, list)) or len(h) != 3 for h in hops):
        raise ValueError(f"hops must be a non-empty list of (kind, latency_s, rate); "
                         f"got {hops!r}")
    out = []
    for kind, lat, rate in hops:
        check_choice("hops kind", kind, ("intra", "net"))
        out.append((kind, float(as_number("hops latency_s", lat, low=0, allow_array=False)),
                    _positive("hops rate", rate)))
    return out


def _ring_hops(hops):
    """``hops`` of a ring as {kind: (latency_s, rate)}, validated."""
    return {kind: (lat, rate) for kind, lat, rate in _hop_list(hops)}


def _ring_chunk(protocol, max_chunk):
    """A ring piece's largest size [B]: ``max_chunk`` where given, else the
    protocol's buffer step (a Simple chunk of slice steps)."""
    if max_chunk is None:
        return step_bytes(protocol) * (_chunk_slice()[0] if protocol == "Simple" else 1)
    return float(as_number("max_chunk", max_chunk, low=0, low_inclusive=False,
                           allow_array=False))


@finite_answer
def ring_dataflow_time(message_bytes, channels, n_ranks, ranks_per_node, steps, protocol,
                       hops, max_chunk=None):
    r"""Time of a ring run as a dataflow: each step waits only for what it needs. [s]

    Rank :math:`r` ends step :math:`j` at

    .. math::

        T_{r,j} = \max\bigl(T_{r-1,j-1} + \lambda_\text{in} + u_\text{in}/b_\text{in},\;
                  T_{r,j-1} + q/b_\text{out},\;
                  T_{r+1,j-D} + \lambda_\text{out}\bigr),\qquad T_{r,0} = 0,

    the piece from the previous rank (its edge's latency and the part a hop holds
    before it forwards, :func:`store_forward_piece`), its own previous send on its
    outgoing edge, and a free slot at the next rank: a sender runs at most
    ``D`` pieces ahead of its receiver, ``D`` = ``NCCL_STEPS`` (8) over the pieces
    one step occupies (1 for LL and LL128, a Simple chunk's 4). The call ends at the
    latest :math:`T_{r, L s}` (``L`` loops of ``s`` steps, as in :func:`ring_time`).
    The edge into the first rank of every node is a network edge (``hops`` kind
    ``"net"``), the others ``"intra"``; all nodes are alike, so one node's ranks are
    followed. Beyond two loops (and 256 steps) the rest runs at the average
    period of the second half of the steps followed.

    This is how NCCL's LL primitives run (``nccl_mechanics.yaml``,
    loops/ll_ring_flow: a line is forwarded as soon as its flag arrives, a sender
    waits for credit only ``NCCL_STEPS`` steps ahead). A small call's time is then
    the latencies along the ring's path, each network crossing paid once per
    crossing, not the slowest edge's latency at every step as in :func:`ring_time`,
    which it never exceeds.

    Parameters
    ----------
    message_bytes : numeric or array_like
        The call's size. [B]
    channels : numeric or array_like
        Channels used (per size or one).
    n_ranks : int
    ranks_per_node : int
        Ranks per node, dividing ``n_ranks`` (``n_ranks``: one node, all edges
        intra; 1: all network).
    steps : int
        Steps of one loop (all_reduce ``2(n-1)``, all_gather ``n-1``).
    protocol : {"LL", "LL128", "Simple"}
    hops : list of (kind, latency_s, rate)
        ``"intra"`` and/or ``"net"`` edges: latency [s] and one channel's rate [B/s].
    max_chunk : float, optional
        As in :func:`ring_time`. [B]

    Examples
    --------
    >>> hops = [("intra", 1.1e-6, 10e9), ("net", 5e-6, 2.5e9)]
    >>> t = ring_dataflow_time(8, 1, 16, 8, 30, "LL", hops)
    >>> round(float(t) * 1e6, 1)      # 26 NVLink steps x 1.1 us + 4 crossings x 5 us
    48.6
    >>> round(float(ring_time(8, 1, 16, 30, "LL", hops)) * 1e6, 1)   # lockstep: 30 x 5 us
    150.0
    """
    s = _bytes("message_bytes", message_bytes)
    shape = s.shape
    k = _positive("channels", channels)
    try:
        k = np.broadcast_to(k, shape).astype(float).reshape(-1)
    except ValueError:
        raise ValueError(f"channels must be one count or one per message size "
                         f"(shape {shape}); got shape {k.shape}") from None
    s = s.reshape(-1)
    n = check_int("n_ranks", n_ranks, low=1, high=1_000_000)
    ppn = check_int("ranks_per_node", ranks_per_node, low=1, high=n)
    if n % ppn:
        raise ValueError(f"ranks_per_node must divide n_ranks ({n}); got {ppn}")
    st = check_int("steps", steps, low=0, high=10_000_000)
    check_choice("protocol", protocol, PROTOCOLS)
    edges = _ring_hops(hops)
    nodes = n // ppn
    need = ({"intra"} if nodes == 1 else {"net"} if ppn == 1 else {"intra", "net"})
    if not need <= set(edges):
        raise ValueError(f"hops must give the {' and '.join(sorted(need))} edges of a "
                         f"ring of {n} ranks, {ppn} per node; got {sorted(edges)}")
    chunk = _ring_chunk(protocol, max_chunk)
    credit = _steps() // (_chunk_slice()[0] if protocol == "Simple" else 1)
    q = np.minimum(s / (k * n), chunk)
    loops = np.maximum(1.0, s / (k * n * chunk))
    total = np.maximum(np.rint(loops * st), 0)          # float: may be huge
    if st == 0 or s.size == 0:
        return np.zeros(shape)
    # one node's ranks: position 0 receives over the network (from the previous node)
    period = 1 if nodes == 1 or ppn == 1 else ppn
    kinds = ["intra" if nodes == 1 else "net"] + \
        ["intra"] * (period - 1)                      # edge into each position
    lat = np.array([edges[c][0] for c in kinds])
    rate = np.stack([np.broadcast_to(edges[c][1], s.shape) for c in kinds], axis=1)
    qq = q[:, None]
    u = np.stack([store_forward_piece(q, protocol, c) for c in kinds], axis=1)
    w_in = lat[None, :] + u / rate                     # piece from the previous rank
    s_out = np.roll(qq / rate, -1, axis=1)             # own send on the next rank's edge
    c_out = np.roll(lat, -1)[None, :]                  # credit back over that edge
    cap = np.minimum(total, max(2 * st, 256)).astype(int)
    last = int(cap.max())
    ends = np.zeros((last + 1, s.size))
    hist = [np.zeros((s.size, period))]
    t = hist[0]
    for j in range(1, last + 1):
        t = np.maximum(np.roll(t, 1, axis=1) + w_in, t + s_out)
        if j > credit:
            t = np.maximum(t, np.roll(hist[j - credit], -1, axis=1) + c_out)
        hist.append(t)
        ends[j] = t.max(axis=1)
    idx = np.arange(s.size)
    out = ends[cap, idx]
    more = total > cap
    if more.any():
        back = cap // 2
        per_step = (ends[cap, idx] - ends[back, idx]) / np.maximum(cap - back, 1)
        out = np.where(more, out + (total - cap) * per_step, out)
    return out.reshape(shape)
