"""Expert-parallel dispatch/combine (gpulab.inference.ep) and disaggregated KV transfer
(gpulab.inference.disagg): analytic oracles worked by hand, properties, the checks
against DeepEP's and Mooncake's published tables, and bad input."""
from __future__ import annotations

import math
import statistics
from itertools import combinations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests import strategies  # noqa: F401  (registers the "ci" profile)

from gpulab import network
from gpulab.inference import custom_constant, disagg, ep

V3 = ep.DEEPSEEK_V3


# --- bytes ---------------------------------------------------------------------------
def test_token_bytes_by_hand():
    # FP8 element + one FP32 scale per 128 elements; BF16 back; 16-byte LL header
    assert ep.token_bytes(256, "dispatch") == 256 + 2 * 4
    assert ep.token_bytes(256, "dispatch", "low_latency") == 256 + 8 + 16
    assert ep.token_bytes(256, "combine", "low_latency_nvlink") == 512


def test_expected_hits_against_enumeration():
    # 3 groups of 2 items, 2 picks: enumerate the 15 pairs, count distinct groups
    items = [g for g in range(3) for _ in range(2)]
    pairs = list(combinations(range(6), 2))
    mean = sum(len({items[i], items[j]}) for i, j in pairs) / len(pairs)
    assert ep.expected_hits(3, 2, 2) == pytest.approx(mean)
    assert ep.expected_hits(4, 8, 1) == pytest.approx(1.0)          # one pick: one group
    assert ep.expected_hits(1, 8, 5) == pytest.approx(1.0)          # one group
    assert ep.expected_hits(4, 1, 4) == pytest.approx(4.0)          # every item picked


def test_normal_traffic_small_case_by_hand():
    # 2 nodes x 2 GPUs, 4 experts (one per GPU), top-2, 1 token, combine (2h bytes)
    t = ep.ep_traffic(1, 128, 2, 4, ep=4, gpus_per_node=2, operation="combine")
    b = 256
    nodes_hit = 2 * (1 - math.comb(2, 2) / math.comb(4, 2))          # 2 x (1 - 1/6)
    gpus_hit = 4 * (1 - math.comb(3, 2) / math.comb(4, 2))           # 4 x (1 - 1/2)
    assert (t.nodes, t.gpus_per_node, t.bytes_per_token) == (2, 2, b)
    assert t.nodes_per_token == pytest.approx(nodes_hit)
    assert t.gpus_per_token == pytest.approx(gpus_hit)
    assert t.rdma_bytes == pytest.approx(nodes_hit * 1 / 2 * b)      # (n-1)/n remote
    assert t.nvlink_bytes == pytest.approx(gpus_hit * 1 / 2 * b)     # (G-1)/G forwarded
    assert t.counted_bytes == pytest.approx(nodes_hit * b)           # DeepEP's counter


def test_low_latency_traffic_by_hand():
    # EP16 on 8-GPU nodes: 15/16 of the messages leave the GPU, 7/16 stay in the node
    b = ep.token_bytes(7168, "dispatch", "low_latency")
    pure = ep.ep_traffic(128, 7168, 8, 256, ep=16, kernel="low_latency")
    nvl = ep.ep_traffic(128, 7168, 8, 256, ep=16, kernel="low_latency_nvlink")
    assert pure.rdma_bytes == pytest.approx(128 * 8 * 15 / 16 * b) and pure.nvlink_bytes == 0
    assert nvl.nvlink_bytes == pytest.approx(128 * 8 * 7 / 16 * b)
    assert nvl.rdma_bytes == pytest.approx(128 * 8 * 8 / 16 * b)
    assert pure.counted_bytes == nvl.counted_bytes == 128 * 8 * b


def test_ep_inside_one_node_has_no_rdma_leg():
    for kernel in ("normal", "low_latency_nvlink"):
        t = ep.ep_traffic(4096, 7168, 8, 256, ep=8, gpus_per_node=8, kernel=kernel)
        assert t.rdma_bytes == 0 and t.nvlink_bytes > 0 and t.nodes == 1
        d = ep.ep_time("hgx-h200", 8, 4096, kernel=kernel)
        assert d.rdma_time == 0 and d.bottleneck == "NVLink"
    # the first low-latency kernels went over the NIC even inside one node
    assert ep.ep_traffic(128, 7168, 8, 256, ep=8, kernel="low_latency").nvlink_bytes == 0


def test_an_nvl72_domain_keeps_ep64_on_nvlink():
    d = ep.ep_time("gb200-nvl72", 64, 4096, kernel="normal")
    assert d.traffic.rdma_bytes == 0 and d.traffic.nodes == 1


def test_node_limit_caps_the_nodes_a_token_reaches():
    free = ep.ep_traffic(4096, 7168, 8, 256, ep=64)
    capped = ep.ep_traffic(4096, 7168, 8, 256, ep=64, max_nodes=4)
    assert capped.nodes_per_token <= 4 < free.nodes_per_token
    assert capped.rdma_bytes < free.rdma_bytes


# --- time ----------------------------------------------------------------------------
def test_time_is_latency_plus_the_slower_leg():
    f = ep.deepep_h800()
    d = ep.ep_time(f, 16, 4096, kernel="normal", max_nodes=2)
    tr = d.traffic
    nvl = tr.nvlink_bytes / (custom_constant("peer_efficiency") * 8 * 25e9)
    rdma = tr.rdma_bytes / (network.fabric("ib").efficiency * 50e9)
    assert d.nvlink_time == pytest.approx(nvl) and d.rdma_time == pytest.approx(rdma)
    assert d.time == pytest.approx(ep.ep_constant("normal_latency_s") + max(nvl, rdma))
    assert d.counted_bandwidth == pytest.approx(tr.counted_bytes / d.time)


def test_h800_rates_from_the_data():
    f = ep.deepep_h800()
    assert f.nvlink_bandwidth == pytest.approx(200e9)                # 8 x 25 GB/s
    assert f.rdma_bandwidth == pytest.approx(50e9)                   # 400 Gb/s
    assert ep.ep_fabric("deepep-h800") == f


def test_moe_calls_applies_the_node_limit_to_normal_kernels_only():
    (_, d), (_, c) = ep.moe_calls("deepep-h800", 64, 4096, "normal")
    assert d.traffic.nodes_per_token <= V3["max_nodes"]
    assert c.traffic.bytes_per_token == 2 * V3["hidden"]
    (_, ll), _ = ep.moe_calls("deepep-h800", 64, 128, "low_latency")
    assert ll.traffic.nodes_per_token > V3["max_nodes"]


@given(tokens=st.integers(1, 8192), k=st.sampled_from([1, 2, 4, 8]),
       kernel=st.sampled_from(ep.KERNELS), op=st.sampled_from(ep.OPERATIONS),
       n=st.sampled_from([8, 16, 32, 64, 128]))
def test_time_grows_with_tokens_and_bytes_with_topk(tokens, k, kernel, op, n):
    kw = dict(hidden=7168, experts=256, kernel=kernel, operation=op)
    a = ep.ep_time("hgx-h200", n, tokens, topk=k, **kw)
    b = ep.ep_time("hgx-h200", n, tokens + 1, topk=k, **kw)
    assert b.time > a.time
    more = ep.ep_time("hgx-h200", n, tokens, topk=2 * k, **kw)
    assert more.traffic.rdma_bytes + more.traffic.nvlink_bytes > \
        a.traffic.rdma_bytes + a.traffic.nvlink_bytes


@given(tokens=st.integers(1, 8192), kernel=st.sampled_from(("low_latency",
                                                            "low_latency_nvlink")))
def test_low_latency_time_grows_with_ep(tokens, kernel):
    times = [ep.ep_time("deepep-h800", n, tokens, kernel=kernel).time
             for n in (8, 16, 32, 64, 128, 256)]
    assert all(x <= y * (1 + 1e-12) for x, y in zip(times, times[1:]))


@given(tokens=st.integers(1, 8192), n=st.sampled_from([8, 16, 32, 64]))
def test_nvlink_never_slower_than_pure_rdma(tokens, n):
    pure = ep.ep_time("deepep-h800", n, tokens, kernel="low_latency")
    nvl = ep.ep_time("deepep-h800", n, tokens, kernel="low_latency_nvlink")
    assert nvl.time <= pure.time


# --- checks against the published tables (never fitted) -----------------------------
def test_ep_checks_cover_every_v1_row_with_its_error():
    rows = ep.ep_checks()
    assert len(rows) == 40 and {r["source_id"] for r in rows} == {
        "deepep-v1-2025-02", "deepep-v1-legacy"}
    for r in rows:
        assert r["error"] == pytest.approx(r["model"] / r["published"] - 1)
        assert r["unit"] == ("GB/s" if r["kernel"] == "normal" else "us")


def test_ep_model_is_a_bound_within_stated_errors():
    rows = ep.ep_checks()
    normal = [r for r in rows if r["kernel"] == "normal"]
    first_ll = [r for r in rows if r["model_kernel"] == "low_latency"]
    assert all(0 < r["error"] < 0.5 for r in normal)             # bandwidth above
    assert all(-0.2 < r["error"] < 0 for r in first_ll)          # time below
    assert statistics.median(abs(r["error"]) for r in first_ll) < 0.15
    # intranode rows are NVLink-bound, the first low-latency rows RDMA-bound, as published
    assert all(r["bottleneck"] == "NVLink" for r in normal if r["ep"] == 8)
    assert all(r["bottleneck"] == "RDMA" for r in first_ll)


def test_ep_checks_one_table():
    rows = ep.ep_checks(["deepep-v1-legacy"])
    assert rows and {r["source_id"] for r in rows} == {"deepep-v1-legacy"}


def test_ttft_with_transfer_by_hand():
    assert disagg.ttft_with_transfer(0.8, 0.2) == pytest.approx(1.0)
    assert disagg.ttft_with_transfer(0.8, 0.2, layers=4) == pytest.approx(0.8 + 0.05)
    # link slower than compute: the transfer dominates, one layer of prefill exposed
    assert disagg.ttft_with_transfer(0.2, 0.8, layers=4) == pytest.approx(0.05 + 0.8)
    assert disagg.ttft_with_transfer(0.8, 0.2, layers=1) == pytest.approx(1.0)
    assert disagg.exposed_share(3.0, 1.0) == pytest.approx(0.25)


@given(p=st.floats(1e-4, 10), x=st.floats(0, 10), n=st.integers(1, 200))
def test_layerwise_never_worse_than_sequential(p, x, n):
    seq = disagg.ttft_with_transfer(p, x)
    lw = disagg.ttft_with_transfer(p, x, layers=n)
    assert max(p, x) * (1 - 1e-12) <= lw <= seq * (1 + 1e-12)


def test_moved_kv_bytes_replicates_heads_beyond_tp():
    one = disagg.moved_kv_bytes(94, 4, 128, 1, tp=4)
    assert one == 2 * 94 * 4 * 128 * 2
    assert disagg.moved_kv_bytes(94, 4, 128, 1, tp=8) == 2 * one
    assert disagg.moved_kv_bytes(36, 8, 128, 10, tp=8) == 10 * 2 * 36 * 8 * 128 * 2


def test_kv_checks_match_published_sizes_and_undershoot_short_prompts():
    rows = disagg.kv_transfer_checks()
    assert len(rows) == 18
    for r in rows:
        assert r["error"] == pytest.approx(r["model_ms"] / r["published_ms"] - 1)
        assert r["error"] < 0                       # no fixed cost in the model
    by = {}
    for r in rows:
        by.setdefault(r["source_id"], []).append(r)
    for rs in by.values():
        rs.sort(key=lambda r: r["prompt_tokens"])
        assert abs(rs[-1]["error"]) < abs(rs[0]["error"])     # long prompts closer
