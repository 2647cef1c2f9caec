"""A ring of NCCL hosts sharing one GPU: lockstep or dataflow, from our recorded run."""
from __future__ import annotations

import numpy as np
import pytest

from gpulab import network
from gpulab.network import execution


def test_sweeps_pool_the_calls_and_hold_every_ring():
    sw = network.mixed_ring_sweeps()
    for p in ("LL", "LL128", "Simple"):
        for coll in ("all_gather", "all_reduce"):
            assert ("intra", p, 2, coll) in sw
            for n in (2, 4, 8):
                assert ("net", p, n, coll) in sw
            for n in (4, 8):
                assert ("mixed", p, n, coll) in sw
    a, b = network.mixed_ring_sweeps(call="a"), network.mixed_ring_sweeps(call="b")
    key = ("mixed", "LL", 4, "all_reduce")
    assert len(sw[key][8]) == len(a[key][8]) + len(b[key][8]) == 3
    assert all(t > 0 for v in sw.values() for ts in v.values() for t in ts)


def test_a_homogeneous_ring_is_the_same_in_both_forms():
    # the oracle behind the ratio: with one kind of edge, lockstep and dataflow agree,
    # so an all-network ring is the lockstep time of the mixed ring with its slow edge
    hops = [("net", 20e-6, 1e15), ("intra", 3e-6, 1e15)]
    for n, steps in ((4, 3), (4, 6), (8, 14)):
        lock = execution.ring_time(8, 1, n, steps, "Simple", [hops[0]])
        flow = execution.ring_dataflow_time(8, 1, n, 1, steps, "Simple", [hops[0]])
        assert float(flow) == pytest.approx(float(lock))
        # mixed: lockstep still pays the network edge at every step; the dataflow less
        assert float(execution.ring_time(8, 1, n, steps, "Simple", hops)) == \
            pytest.approx(float(lock))
        assert float(execution.ring_dataflow_time(8, 1, n, 2, steps, "Simple", hops)) \
            < 0.8 * float(lock)


def test_the_rings_of_four_ranks_run_as_a_dataflow():
    c = network.mixed_ring_check()
    rows = [r for r in c.rows if not r["crowded"]]
    assert len(rows) == 6
    for r in rows:
        # lockstep would take the all-network ring's time (ratio 1)
        assert r["ratio"] < 0.8, r
        assert abs(r["ratio"] - r["dataflow_ratio"]) < abs(r["ratio"] - 1), r
    # the fits: a network step of tens of microseconds, a P2P step of a few
    for p in c.net_step_s:
        assert 10e-6 < c.net_step_s[p] < 60e-6
        assert 0 <= c.intra_step_s[p] < 10e-6
    s = c.summary(include_crowded=False)
    assert s["median_dataflow_error"] == pytest.approx(
        np.median([r["dataflow_error"] for r in rows]))
    assert abs(s["median_dataflow_error"]) < 0.25 < s["median_lockstep_error"]


def test_crowded_rings_are_marked_and_summarised_apart():
    c = network.mixed_ring_check()
    assert {r["n_ranks"] for r in c.rows if r["crowded"]} == {8}
    assert c.summary()["rings"] == 12 and c.summary(include_crowded=False)["rings"] == 6


def test_small_bytes_selects_the_sizes_read():
    wide, narrow = network.mixed_ring_check(8192), network.mixed_ring_check(64)
    assert wide.small_bytes == 8192 and narrow.small_bytes == 64
    assert [r["measured_s"] for r in wide.rows] != [r["measured_s"] for r in narrow.rows]


def test_mid_sizes_are_predicted_from_other_rings_in_both_forms():
    c = network.mixed_ring_check()
    assert set(c.net_rate) == {"LL", "LL128", "Simple"}
    assert all(0.1e9 < r < 10e9 for r in c.net_rate.values())
    assert c.mid_rows and all(r["size_bytes"] >= 65536 for r in c.mid_rows)
    for r in c.mid_rows:
        # the dataflow never takes longer than lockstep (up to whole steps)
        assert r["dataflow_s"] <= r["lockstep_s"] * (1 + 1e-9)
        assert r["dataflow_error"] == pytest.approx(r["dataflow_s"] / r["measured_s"] - 1)
    s = c.mid_summary()
    assert s["points"] == sum(not r["crowded"] for r in c.mid_rows)
    e = sorted(r["dataflow_error"] for r in c.mid_rows if not r["crowded"])
    assert s["dataflow"] == pytest.approx((float(np.median(e)), e[0], e[-1]))
    assert c.mid_summary(include_crowded=True)["points"] == len(c.mid_rows)


def test_the_dataflow_variant_only_changes_ll128_and_simple_rings():
    c = network.scale_out("dgx-h100-spod", 2)
    s = 2.0 ** np.arange(3, 31, 3)
    for coll in ("all_gather", "all_reduce"):
        for proto in ("LL", "LL128", "Simple"):
            lock = network.collective_times(coll, s, 16, c, algorithm="ring", protocol=proto)
            flow = network.collective_times(coll, s, 16, c, algorithm="ring", protocol=proto,
                                            ring_form="dataflow")
            if proto == "LL":                 # a dataflow in both
                assert np.array_equal(lock["time"], flow["time"])
            else:                             # never slower; far faster when small
                assert np.all(flow["time"] <= lock["time"] * (1 + 1e-9))
                assert flow["time"][0] < 0.8 * lock["time"][0]
            # NCCL's estimate, and so its pick, does not depend on how the run goes
            assert np.array_equal(lock["estimate"], flow["estimate"])
        tree = network.collective_times(coll, s, 16, c, algorithm="tree") \
            if coll == "all_reduce" else None
        if tree is not None:
            assert np.array_equal(tree["time"], network.collective_times(
                coll, s, 16, c, algorithm="tree", ring_form="dataflow")["time"])


def test_public_errors_of_the_variant_differ_only_where_a_ring_runs():
    lock = network.public_errors("gcp-a3-mega", ring_form="lockstep")
    flow = network.public_errors("gcp-a3-mega", ring_form="dataflow")
    assert [(r["source"], r["band"]) for r in lock] == [(r["source"], r["band"]) for r in flow]
    small = [(a, b) for a, b in zip(lock, flow) if a["band"] == network.BANDS[0][0]]
    # the A3 Mega small calls (LL not allowed over TCPXO) are several times too slow in
    # lockstep and much nearer as a dataflow
    assert any(a["median_error"] > 2 and abs(b["median_error"]) < 1 for a, b in small)


def test_every_recorded_sweep_was_right_and_is_read_with_its_ranks():
    import csv
    from pathlib import Path

    import gpulab
    folder = Path(gpulab.__file__).parent / "data" / "measurements" / "raw" / \
        network.MIXED_RING_RUN
    sw = network.mixed_ring_sweeps()
    files = sorted(folder.glob("[ab]_*_r[12].csv"))
    assert len(files) == 40
    for f in files:
        with f.open() as fh:
            rows = list(csv.DictReader(fh))
        assert rows and all(int(r["wrong"]) == 0 for r in rows), f.name
        kind, proto = f.name.split("_")[1:3]
        for r in rows:
            assert int(r["size_bytes"]) in sw[kind, proto, int(r["n_ranks"]),
                                              r["collective"]], f.name
