"""Single-node oracles for gpulab.collectives' core formulas, written to kill mutants.

Expected values by hand, from nccl-tests' PERFORMANCE.md and the ring algorithm:

* busbw = algbw × f with f = 2(n − 1)/n for all_reduce, (n − 1)/n for all_gather,
  reduce_scatter and alltoall, 1 for broadcast, reduce and sendrecv; algbw = S / t;
* a ring all-reduce on n ranks takes 2(n − 1) steps, each moving S/n bytes per rank:
  t = 2(n − 1) α + 2(n − 1)/n · S / B;
* bytes each rank sends, per byte of message (the wire factor): ring
  2(n − 1)/n, double binary tree 2, one-shot direct n − 1, NVLS 1.

The multi-node parts (gpulab.network: ring, tree, NVLSTree and CollNet across nodes) have
their own tests (tests/models/test_network.py).
"""
from __future__ import annotations

import re

import pytest

from gpulab import collectives as C
from gpulab import units


@pytest.mark.parametrize("op, f8, f2, f1", [
    ("all_reduce", 14 / 8, 1.0, 0.0), ("all_gather", 7 / 8, 0.5, 0.0),
    ("reduce_scatter", 7 / 8, 0.5, 0.0), ("alltoall", 7 / 8, 0.5, 0.0),
    ("broadcast", 1.0, 1.0, 1.0), ("reduce", 1.0, 1.0, 1.0), ("sendrecv", 1.0, 1.0, 1.0)])
def test_busbw_factor_table(op, f8, f2, f1):
    assert (C.busbw_factor(op, 8), C.busbw_factor(op, 2), C.busbw_factor(op, 1)) == \
        (f8, f2, f1)


def test_algbw_and_busbw():
    assert C.algbw(1e9, 0.01) == 1e11
    assert C.busbw(1e9, 0.01, "all_reduce", 8) == pytest.approx(1.75e11, rel=1e-15)
    assert C.busbw(1e9, 0.01, "all_gather", 4) == pytest.approx(0.75e11, rel=1e-15)
    assert C.algbw(0, 1.0) == 0.0
    with pytest.raises(ValueError, match=r"^time must be > 0"):
        C.algbw(1.0, 0.0)


def test_ring_allreduce_time_by_hand():
    bw = units.Bandwidth(100e9, units.PER_DIRECTION)
    # 8 ranks: 14 steps of 1 µs, and 14/8 × 1 GB at 100 GB/s = 17.5 ms
    assert C.ring_allreduce_time(1e9, 8, bw, 1e-6) == pytest.approx(14e-6 + 17.5e-3,
                                                                     rel=1e-12)
    assert C.ring_allreduce_time(1e9, 8, bw) == pytest.approx(17.5e-3, rel=1e-12)
    assert C.ring_allreduce_time(4e6, 2, 1e9, 5e-6) == pytest.approx(2 * 5e-6 + 4e-3,
                                                                      rel=1e-12)
    assert C.ring_allreduce_time(1e9, 1, bw, 1e-6) == 0.0


@pytest.mark.parametrize("algorithm, want", [("ring", 14 / 8), ("tree", 2.0), ("direct", 7),
                                             ("nvls", 1.0)])
def test_all_reduce_wire_factor(algorithm, want):
    assert C.wire_factor("all_reduce", 8, algorithm) == want
    assert C.wire_factor("all_reduce", 1, algorithm) == 0.0


def test_wire_factor_of_other_collectives_is_the_busbw_factor():
    assert C.wire_factor("all_gather", 8) == 7 / 8
    assert C.wire_factor("broadcast", 4, "ring") == 1.0
    assert C.wire_factor("alltoall", 4, "direct") == 3 / 4


@pytest.mark.parametrize("collective, algorithm, n, want", [
    ("all_reduce", "ring", 8, 14), ("all_gather", "ring", 8, 7),
    ("reduce_scatter", "ring", 4, 3), ("broadcast", "ring", 2, 1),
    ("all_reduce", "direct", 8, 1), ("all_reduce", "nvls", 8, 1),
    ("alltoall", "ring", 8, 1), ("sendrecv", "ring", 8, 1),
    ("all_reduce", "tree", 8, 14),          # one node: 2 × (8 − 1) + 2 × log2(1)
    ("all_reduce", "ring", 1, 0)])
def test_single_node_ring_steps(collective, algorithm, n, want):
    assert C.ring_steps(collective, n, algorithm) == want


def test_bad_names_list_the_choices():
    with pytest.raises(ValueError, match=r"^op must be one of 'all_reduce'"):
        C.busbw_factor("allreduce", 8)
    with pytest.raises(ValueError, match=r"^collective must be one of 'all_reduce'"):
        C.wire_factor("allreduce", 8)
    with pytest.raises(ValueError, match=r"^algorithm must be one of 'ring'"):
        C.ring_steps("all_reduce", 8, "rings")
    with pytest.raises(ValueError, match=r"^n_ranks must be an integer in \[1, 1e\+06\]"):
        C.ring_allreduce_time(1.0, 0, 1e9)
    with pytest.raises(ValueError, match=r"^path must be a slash path such as "
                                         r"'protocols/LL/bandwidth'; got '/'$"):
        C.model_constant("/")


def test_rank_counts_are_bounded():
    for call in (lambda n: C.busbw_factor("all_reduce", n), lambda n: C.wire_factor("all_reduce", n)):
        assert call(1_000_000) == pytest.approx(2 * 999_999 / 1_000_000)
        with pytest.raises(ValueError, match=r"^n_ranks must be an integer in \[1, 1e\+06\]"):
            call(1_000_001)
    assert C.ranks_fit_domains("hgx-h200", 8) is True        # one node of eight GPUs
    with pytest.raises(ValueError, match=r"^n_ranks must be"):
        C.ranks_fit_domains("hgx-h200", 0)


@pytest.mark.parametrize("algorithm", ["nvlstree", "collnet"])
def test_all_reduce_wire_factor_of_the_switch_reductions(algorithm):
    # NVLSTree and CollNet: each GPU sends its buffer once and receives the result once
    assert C.wire_factor("all_reduce", 8, algorithm) == 1.0


@pytest.mark.parametrize("collective, n, system, kwargs, want", [
    ("all_reduce", 2, "h100-pcie", {"algorithm": "nvls"},
     "algorithm 'nvls' needs all_reduce inside one NVLink domain whose NVSwitch reduces in "
     "the switch, over the p2p transport, with NVLS enabled (system 'h100-pcie')"),
    ("all_gather", 2, "h200-x2-measured", {"algorithm": "direct"},
     "algorithm 'direct' is modelled for all_reduce, alltoall and sendrecv"),
    ("alltoall", 2, "h200-x2-measured", {"algorithm": "ring"},
     "alltoall is point-to-point: algorithm must be 'direct' or 'auto'"),
    # hgx-h200-2node: 8 GPUs per node, so one process drives at most 8
    ("all_reduce", 16, "hgx-h200-2node", {"gpus_per_process": 16},
     "gpus_per_process must be an integer in [1, 8]; got 16"),
])
def test_refused_choices_say_why(collective, n, system, kwargs, want):
    with pytest.raises(ValueError, match=f"^{re.escape(want)}$"):
        C.collective_time(collective, 1e6, n, system, **kwargs)


def test_a_ring_may_be_chosen_for_all_reduce():
    t = C.collective_time("all_reduce", 1e6, 2, "h200-x2-measured", algorithm="ring")
    assert t > 0


def test_tree_busbw_is_nine_tenths_of_the_ring_s():
    # 2 ranks, Simple: the ring moves 2(2-1)/2 = 1 buffer at B, the tree 2 buffers at
    # 0.9 B (NCCL's tree busbw x 0.9); the costs that do not grow with the size cancel in
    # the difference between 2 GB and 1 GB
    def slope(algorithm):
        t = [C.collective_time("all_reduce", s, 2, "h200-x2-measured", algorithm=algorithm,
                               protocol="Simple") for s in (1e9, 2e9)]
        return t[1] - t[0]
    assert slope("tree") / slope("ring") == pytest.approx(2 / 0.9, rel=1e-9)
