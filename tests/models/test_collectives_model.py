"""The NCCL-like collective model: structure, oracles and our H200 measurements."""
from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, strategies as st

from gpulab import collectives as C, measurements, specs, systems
from tests import strategies  # noqa: F401  (registers the "ci" profile)

RUN = "h200-x2-2026-11-30-pooled"     # scripts/pool_runs.py: 8 + 7 runs, four recordings
SYSTEM = "h200-x2-measured"


def _sweep(name):
    rows = csv.DictReader(io.StringIO(measurements.raw_capture(RUN, name)))
    out = {}
    for r in rows:
        out.setdefault(r["collective"], []).append(
            (float(r["size_bytes"]), float(r["time_us"]) * 1e-6))
    return {k: np.array(v) for k, v in out.items()}


SWEEPS = {"p2p": _sweep("p2p_center.csv"),
          "shm": _sweep("shm_center.csv")}
#: the same collectives with one process per GPU (nccl_sweep -P 1, like MPI)
PROCS = {"p2p": _sweep("p2p_procs_center.csv"),
         "shm": _sweep("shm_procs_center.csv")}


@pytest.mark.parametrize("n", [2, 3, 8, 64])
def test_wire_factors_and_steps(n):
    assert C.wire_factor("all_reduce", n) == pytest.approx(2 * (n - 1) / n)
    # ring all_reduce = reduce_scatter + all_gather, in bytes and in steps
    assert C.wire_factor("all_reduce", n) == pytest.approx(
        C.wire_factor("reduce_scatter", n) + C.wire_factor("all_gather", n))
    assert C.ring_steps("all_reduce", n) == \
        C.ring_steps("reduce_scatter", n) + C.ring_steps("all_gather", n)
    assert C.wire_factor("all_reduce", n, "direct") == n - 1
    assert C.wire_factor("broadcast", n) == 1.0
    assert C.ring_steps("sendrecv", n) == 1


@pytest.mark.parametrize("coll", C.COLLECTIVES)
@pytest.mark.parametrize("system", ["hgx-h200", "dgx-a100", "dgx-1-v100"])
def test_one_rank_is_a_copy_inside_the_gpu(coll, system):
    """One rank: NCCL copies send -> receive buffer in HBM: max(host time per call,
    2 S / HBM bandwidth); never a constant launch cost at 1 GiB (it used to be
    8.43 us for every size, i.e. 127,401 GB/s algbw at 1 GiB)."""
    p = C.predict(coll, [8, 2**20, 2**30], 1, system)
    launch = C.model_constant(f"transports/p2p/collectives/{coll}/launch_s")
    hbm = specs.gpu(systems.get(system).gpu).memory_bandwidth
    np.testing.assert_allclose(p.time, np.maximum(launch, 2 * p.message_bytes / hbm))
    assert p.time[0] == pytest.approx(launch)
    assert p.time[-1] == pytest.approx(2 * 2**30 / hbm)
    assert (p.algbw <= hbm / 2 * (1 + 1e-12)).all()       # a copy reads and writes
    assert set(p.algorithm) == {"copy"}
    assert C.local_copy_time(2**30, system) == pytest.approx(2 * 2**30 / hbm)


def test_one_rank_copy_against_our_h200_copies():
    """Held-out check (no fit): our 1x H200 device-to-device cudaMemcpyAsync,
    back to back. The spec-HBM copy is a lower bound, 11-19 % short from 64 MiB
    (the copy engine reaches 81-89 % of spec HBM), 25 % at 32 MiB."""
    raw = Path(C.__file__).with_name("data") / "measurements" / "raw"
    err = {}
    for f in sorted((raw / "h200-x1-2026-12-01-copies").glob("copies_run*.csv")):
        for r in csv.DictReader(f.open()):
            if r["kind"] == "d2d" and r["direction"] == "one":
                s = int(r["size_bytes"])
                if s >= 2**25:
                    t = float(r["b2b_per_copy_us"]) * 1e-6
                    err.setdefault(s, []).append(C.local_copy_time(s, "hgx-h200") / t - 1)
    assert len(err) == 6
    for s, e in err.items():
        assert max(e) < 0, s                                    # a lower bound
        assert min(e) > (-0.26 if s < 2**26 else -0.20), (s, e)


def test_two_ranks_large_message_limit():
    """For large S, time -> w S / (line rate x efficiency): busbw -> e x line."""
    s = 2.0**36
    line = C.fabric_bandwidth(SYSTEM).bytes_per_s
    for coll in ("all_reduce", "all_gather", "sendrecv"):
        p = C.predict(coll, s, 2, SYSTEM)
        eff = C.model_constant(f"transports/p2p/collectives/{coll}/efficiency")
        assert p.busbw[0] == pytest.approx(eff * line, rel=0.01)
        assert p.busbw[0] < line                       # never above the line rate


def test_fabric_bandwidths():
    assert C.fabric_bandwidth("hgx-h200").gb_per_s == pytest.approx(450)
    assert C.fabric_bandwidth("hgx-h200", "shm").gb_per_s == pytest.approx(
        32 * 16 * 128 / 130 / 8)
    assert C.fabric_bandwidth("h100-pcie").gb_per_s == pytest.approx(
        32 * 16 * 128 / 130 / 8)


@given(st.floats(8, 2**33), st.floats(1.01, 16))
def test_time_grows_with_size(s, k):
    for coll in ("all_reduce", "all_gather", "alltoall"):
        a, b = C.predict(coll, [s, s * k], 8, "hgx-h200").time
        assert b >= a


@given(st.integers(2, 7))
def test_more_ranks_never_faster_for_ring(n):
    t1 = C.collective_time("all_gather", 2**24, n, "hgx-h200")
    t2 = C.collective_time("all_gather", 2**24, n + 1, "hgx-h200")
    # NCCL's table may pick a better protocol for n + 1 ranks (LL128 at 8): <= 2%
    assert t2 >= t1 * 0.98


def test_shm_is_slower_than_p2p_for_large_messages():
    for coll in C.COLLECTIVES:
        p2p = C.collective_time(coll, 2**28, 2, SYSTEM)
        shm = C.collective_time(coll, 2**28, 2, SYSTEM, transport="shm")
        assert shm > 3 * p2p, coll


def test_protocol_choice_has_the_measured_shape():
    """LL wins small messages, Simple wins large ones (NCCL's tuner does the same)."""
    p = C.predict("all_reduce", [1024, 2**30], 2, SYSTEM)
    assert list(p.protocol) == ["LL", "Simple"]
    forced = C.predict("all_reduce", 2**30, 2, SYSTEM, protocol="LL")
    # LL carries 4 data bytes per 8-byte line: at most half of Simple's bandwidth
    assert forced.time[0] > 1.9 * p.time[1]


def test_nvls_only_where_the_switch_reduces():
    with pytest.raises(ValueError, match="nvls"):
        C.predict("all_reduce", 2**30, 8, "h100-pcie", algorithm="nvls")
    with pytest.raises(ValueError, match="all_reduce"):
        C.predict("all_gather", 2**30, 8, "hgx-h200", algorithm="tree")


def test_calibration_reproduces_the_model_data():
    """nccl_model.yaml's per-collective values are what the recordings give:
    launch_s the one-process-per-GPU floor, launch_gpu_s what a process driving
    both GPUs adds to it, efficiency what calibrate() derives."""
    for transport, sweeps in SWEEPS.items():
        extra = []
        for coll, a in sweeps.items():
            here = f"transports/{transport}/collectives/{coll}"
            one = PROCS[transport][coll]
            floor1 = np.median(one[one[:, 0] <= 4096, 1])
            floor2 = np.median(a[a[:, 0] <= 4096, 1])
            assert C.model_constant(f"{here}/launch_s") == pytest.approx(floor1, rel=2e-3)
            assert C.model_constant(f"{here}/launch_gpu_s") == pytest.approx(
                floor2 - floor1, rel=2e-3)
            extra.append(floor2 - floor1)
            got = C.calibrate(coll, a[:, 0], a[:, 1], 2, SYSTEM, transport=transport)
            assert got["efficiency"] == pytest.approx(
                C.model_constant(f"{here}/efficiency"), rel=2e-3)
            # calibrate's launch_s takes the second GPU's launches back out
            assert got["launch_s"] == pytest.approx(
                floor2 - C.model_constant(f"transports/{transport}/launch_gpu_s"),
                rel=2e-3)
        assert C.model_constant(f"transports/{transport}/launch_gpu_s") == \
            pytest.approx(np.median(extra), rel=2e-3)


def test_host_time_per_call():
    """One GPU per process pays launch_s; a process driving g GPUs adds
    launch_gpu_s for each further GPU; more NCCL channels cost a little more,
    up to the channel cap."""
    here = "transports/p2p/collectives/all_reduce"
    h1 = C.predict("all_reduce", 8, 2, SYSTEM, gpus_per_process=1).time[0]
    h2 = C.predict("all_reduce", 8, 2, SYSTEM, gpus_per_process=2).time[0]  # -g 2
    # the default is one process per GPU, at any node count
    assert C.predict("all_reduce", 8, 2, SYSTEM).time[0] == h1
    assert h1 == pytest.approx(C.model_constant(f"{here}/launch_s"))
    assert h2 - h1 == pytest.approx(C.model_constant(f"{here}/launch_gpu_s"))
    s = 2.0 ** np.arange(3, 31)
    host = C._host_time(SYSTEM, "p2p", "all_reduce", s, 2)
    assert np.all(np.diff(host) >= 0)
    cap = C.model_constant("transports/p2p/max_channels")
    full = s >= cap * C.model_constant("transports/p2p/channel_bytes")
    assert np.ptp(host[full]) == 0 and host[-1] == pytest.approx(
        h2 + 2 * C.model_constant("transports/p2p/channel_s") * (cap - 1))
    # 8 GPUs in one process (nccl-tests -g 8) never beat one process per GPU
    for coll in ("all_reduce", "all_gather", "alltoall"):
        g8 = C.predict(coll, s, 8, "hgx-h200", gpus_per_process=8).time
        g1 = C.predict(coll, s, 8, "hgx-h200", gpus_per_process=1).time
        assert np.all(g8 >= g1) and g8[0] > 2 * g1[0]
    with pytest.raises(ValueError, match="gpus_per_process"):
        C.predict("all_reduce", 8, 6, "hgx-h200", gpus_per_process=4)   # 4 does not divide 6


def test_protocol_is_the_one_nccl_logged():
    """The protocol follows NCCL's own table, which NCCL 2.28.3 logged per size on
    our 2x H200 (all_reduce, all_gather, reduce_scatter, broadcast, 8 B - 1 GiB)."""
    import re
    names = {"AllReduce": "all_reduce", "AllGather": "all_gather",
             "ReduceScatter": "reduce_scatter", "Broadcast": "broadcast"}
    pat = re.compile(r"(\w+): (\d+) Bytes -> Algo \w+ proto (\w+)")
    for transport, least in (("p2p", 112), ("shm", 112)):
        log = measurements.raw_capture("h200-x2-2026-11-30-nccl-protocols",
                                       f"choice_{transport}.csv")
        logged = {(names[m[1]], int(m[2])): m[3].replace("SIMPLE", "Simple")
                  for m in pat.finditer(log) if m[1] in names}
        same = sum(C.predict(c, float(z), 2, SYSTEM, transport=transport).protocol[0] == p
                   for (c, z), p in logged.items())
        assert len(logged) == 112 and same >= least, (transport, same)


@pytest.mark.parametrize("transport", sorted(SWEEPS))
def test_model_against_our_h200_sweeps(transport):
    """Accuracy on the pooled calibration table (2 ranks): the target of the
    collectives issue, +-15% from 64 KiB and +-30% below, with margin below."""
    for coll, a in SWEEPS[transport].items():
        s, t = a[:, 0], a[:, 1]
        err = np.abs(C.predict(coll, s, 2, SYSTEM, gpus_per_process=2, transport=transport).time / t - 1)
        assert err.mean() < 0.10, (coll, err.mean())
        assert err[s < 65536].max() < 0.20, (coll, err[s < 65536].max())
        assert err[s >= 65536].max() < WORST[transport], (coll, err[s >= 65536].max())


#: worst |time error| from 64 KiB on the pooled tables: the collectives issue's target
WORST = {"p2p": 0.15, "shm": 0.15}


@pytest.mark.parametrize("transport", sorted(PROCS))
def test_model_with_one_process_per_gpu(transport):
    """The same collectives with one process per GPU (as MPI / torchrun run them):
    the host floor drops from ~16 to ~10 us and the GPUs' own latency shows."""
    for coll, a in PROCS[transport].items():
        s, t = a[:, 0], a[:, 1]
        err = np.abs(C.predict(coll, s, 2, SYSTEM, transport=transport,
                               gpus_per_process=1).time / t - 1)
        assert err.mean() < 0.16, (coll, err.mean())
        assert err.max() < 0.45, (coll, err.max())


def test_calibrate_needs_small_and_large_sizes():
    with pytest.raises(ValueError, match="message_bytes"):
        C.calibrate("all_reduce", [2**20, 2**21], [1e-5, 2e-5], 2, SYSTEM)


def test_model_constant_errors_name_the_path():
    with pytest.raises(ValueError, match="path"):
        C.model_constant("protocols/LL256/bandwidth")
    assert set(C.PROTOCOLS) <= set(C.model_constant("protocols"))


@pytest.mark.parametrize("where", ["protocols", "transports/p2p/protocols",
                                   "transports/shm/protocols"])
def test_protocol_shares_within_their_payload_fraction(where):
    """A protocol's bandwidth share cannot beat the data it carries per line: LL
    sends 4 data bytes with a 4-byte flag in every 8-byte line (<= 1/2), LL128 120
    data bytes of every 128 (<= 15/16); Simple carries data only (1)."""
    bound = {"LL": 4 / 8, "LL128": 120 / 128, "Simple": 1.0}
    shares = {p: v["bandwidth"] for p, v in C.model_constant(where).items()}
    assert shares and set(shares) <= set(bound)
    for proto, share in shares.items():
        assert 0 < share <= bound[proto], (where, proto, share)
    assert shares.get("Simple", 1.0) == 1.0


def test_every_preset_predicts():
    for name in systems.names():
        sysm = systems.get(name)
        p = C.predict("all_reduce", [8, 2**20, 2**30], sysm.n_gpus, sysm)
        assert np.all(p.time > 0) and np.all(np.diff(p.time) > 0)


def test_nvl72_is_one_nvlink_domain():
    """72 GPUs in one NVLink domain: no network hop, no multi-node algorithm."""
    for n in (8, 16, 72):
        p = C.predict("all_reduce", [2**20, 2**34], n, "gb200-nvl72")
        assert not set(p.algorithm) & {"nvlstree", "collnet"}, n
    big = C.predict("all_gather", 2**34, 72, "gb200-nvl72").busbw[0]
    assert big > 0.5 * C.fabric_bandwidth("gb200-nvl72").bytes_per_s


def test_two_nodes_use_the_network():
    one = C.collective_time("all_reduce", 2**32, 8, "hgx-h200-2node")
    two = C.collective_time("all_reduce", 2**32, 16, "hgx-h200-2node")
    # NVLSTree on two nodes: the in-switch reduction, not the eight NICs, is the
    # bottleneck, so two nodes take as long as one, never less
    assert two >= one
    ring = C.collective_time("all_reduce", 2**32, 16, "hgx-h200-2node",
                             algorithm="ring")
    assert ring > two
    with pytest.raises(ValueError, match="nvls"):
        C.predict("all_reduce", 2**30, 16, "hgx-h200-2node", algorithm="nvls")
    with pytest.raises(ValueError, match="nvls"):
        C.predict("all_reduce", 2**30, 8, "hgx-h200", algorithm="nvls",
                  transport="shm")


def test_nvls_can_be_switched_off_like_nccl():
    """nvls=False models NCCL_NVLS_ENABLE=0: the ring takes over on an NVSwitch box."""
    on = C.predict("all_reduce", 2**32, 8, "hgx-h200")
    off = C.predict("all_reduce", 2**32, 8, "hgx-h200", nvls=False)
    assert on.algorithm[0] == "nvls" and off.algorithm[0] != "nvls"
    assert off.busbw[0] < C.fabric_bandwidth("hgx-h200").bytes_per_s < on.busbw[0]
    with pytest.raises(ValueError, match="nvls"):
        C.predict("all_reduce", 2**30, 8, "hgx-h200", algorithm="nvls", nvls=False)
    with pytest.raises(ValueError, match="nvls"):
        C.predict("all_reduce", 2**30, 8, "hgx-h200", nvls="no")


# Public 8x H200 nccl-tests all_reduce sweep with NVLS on (busbw GB/s; stas00/ml-engineering
# network chapter, quoted in the course's reference notes). The NVLS latency/fill and the
# LL hop latency were fitted to it, so this guards the fit rather than proving the model.
PUBLIC_8XH200_NVLS = {2**15: 1.44, 2**17: 5.7, 2**19: 23.9, 2**20: 39.9, 2**22: 107,
                      2**23: 156, 2**24: 220, 2**25: 276, 2**26: 347, 2**27: 402,
                      2**28: 436, 2**29: 450, 2**30: 464, 2**32: 473, 2**34: 482}


def test_public_8x_h200_nvls_sweep():
    """That sweep comes from a PyTorch benchmark: from 64 MiB it measures NCCL
    (model within 5%); below, it adds PyTorch's own time per call, so the model
    (nccl-tests, one process per GPU) must be faster there, never slower."""
    s = np.array(sorted(PUBLIC_8XH200_NVLS), dtype=float)
    want = np.array([PUBLIC_8XH200_NVLS[k] for k in sorted(PUBLIC_8XH200_NVLS)]) * 1e9
    got = C.predict("all_reduce", s, 8, "hgx-h200", gpus_per_process=1).busbw
    err = got / want - 1
    assert np.abs(err[s >= 2**26]).max() < 0.05
    assert np.all(err[s < 2**26] > -0.05)


# Public 8x H20 nccl-tests all_reduce, 128 B - 4 KiB [us] (deepseek-ai/DeepEP#303): the
# same NVLink4 links and third-generation NVSwitch as HGX H100/H200.
PUBLIC_8XH20_AR_US = {128: 15.50, 256: 15.70, 512: 16.26, 1024: 16.38, 2048: 16.49,
                      4096: 16.69}


def test_public_8x_h20_small_messages():
    """Eight ranks, one process per GPU: the ring's LL latency (not the host)
    sets small all_reduce times, about 16 us on public 8-GPU Hopper runs."""
    s = np.array(sorted(PUBLIC_8XH20_AR_US), dtype=float)
    want = np.array([PUBLIC_8XH20_AR_US[k] for k in sorted(PUBLIC_8XH20_AR_US)]) * 1e-6
    got = C.predict("all_reduce", s, 8, "hgx-h200", nvls=False, gpus_per_process=1).time
    assert np.abs(got / want - 1).max() < 0.15


def test_public_8x_h200_ring_and_nvls_ramp():
    """16 GiB ring / all_gather / reduce_scatter and the 4-8 GPU NVLS ramp at 8 GiB."""
    ring = C.predict("all_reduce", 2**34, 8, "hgx-h200", nvls=False).busbw[0]
    assert ring / 367.2e9 == pytest.approx(1, abs=0.05)
    for coll, want in (("all_gather", 361.4e9), ("reduce_scatter", 362.9e9)):
        assert C.predict(coll, 2**34, 8, "hgx-h200").busbw[0] / want == \
            pytest.approx(1, abs=0.05)
    for n, want in ((4, 363), (5, 414), (6, 436), (7, 460), (8, 473)):
        got = C.predict("all_reduce", 2**33, n, "hgx-h200").busbw[0]
        assert got / (want * 1e9) == pytest.approx(1, abs=0.08), n


def test_tree_inside_one_node_is_a_chain():
    """NCCL's tree is a chain inside a node: as many steps as the ring there."""
    assert C.ring_steps("all_reduce", 8, "tree") == C.ring_steps("all_reduce", 8)
    assert C.ring_steps("all_reduce", 16, "tree", nodes=2) == 2 * (7 + 1)
    assert C.ring_steps("all_reduce", 64, "tree", nodes=8) < C.ring_steps("all_reduce", 64)


def test_hybrid_cube_mesh_pairs_and_alltoall():
    """DGX-1: two GPUs share one link (not all six); an 8-GPU alltoall is bound by
    the three link-less peers reached through host memory over PCIe."""
    link = C.fabric_bandwidth("dgx-1-v100").bytes_per_s / 6
    two = C.predict("all_reduce", 2**38, 2, "dgx-1-v100").busbw[0]
    eff = C.model_constant("transports/p2p/collectives/all_reduce/efficiency")
    assert two == pytest.approx(link * eff, rel=0.02)
    a2a = C.predict("alltoall", 2**30, 8, "dgx-1-v100")
    host = C.fabric_bandwidth("dgx-1-v100", "shm").bytes_per_s \
        * C.model_constant("transports/shm/collectives/alltoall/efficiency")
    # 3 peers x S/8 through one PCIe link bound the time
    assert a2a.time[0] == pytest.approx(3 * 2**30 / 8 / host, rel=0.01)
    assert a2a.busbw[0] < 0.2 * C.predict("all_reduce", 2**30, 8, "dgx-1-v100").busbw[0]
    # an NVSwitch system has no such penalty
    assert C.predict("alltoall", 2**30, 8, "dgx-a100").busbw[0] > 10 * a2a.busbw[0]


def test_extrapolation_to_8_gib_on_our_h200():
    """1-8 GiB runs lie beyond the calibration sweeps (<= 1 GiB): the model stays
    within 15% in time of them (C++ NCCL loop, 2x H200, NVLS off)."""
    from gpulab import nccltests
    text = measurements.raw_capture("h200-x2-2026-11-30-bench-large", "c_large.csv")
    for sw in nccltests.parse_all(text):
        if sw.collective not in C.COLLECTIVES:
            continue
        p = C.predict(sw.collective, sw.size_bytes.astype(float), 2, SYSTEM)
        err = np.abs(p.time / sw.time_s - 1)
        assert err.max() < 0.15, (sw.collective, err.max())


def test_held_out_floor_study():
    """The floor study (19 default + 11 NCCL_P2P_DISABLE=1 runs recorded later,
    never used by the fit): from 4 MiB the model is within 16% of the runs' center;
    below, the center of a bimodal host floor is within 35%."""
    for transport in ("p2p", "shm"):
        for coll, p in measurements.pool_runs(measurements.HOLDOUT_RUNS[transport]).items():
            s = p.size_bytes
            err = np.abs(C.predict(coll, s, 2, SYSTEM, gpus_per_process=2, transport=transport).time
                         / p.center - 1)
            assert err[s >= 2**22].max() < 0.16, (transport, coll, err[s >= 2**22].max())
            assert err.max() < 0.35, (transport, coll, err.max())


def test_host_floor_is_bimodal_across_runs():
    """What the chapters say about our machines: in some runs the small-message floor
    is ~13 us, in others ~20 us, for both transports; from 8 MiB all runs agree
    within 12% (median 1-4%)."""
    for transport in ("p2p", "shm"):
        runs = measurements.FIT_RUNS[transport] + measurements.HOLDOUT_RUNS[transport]
        floors = []
        for coll, p in measurements.pool_runs(runs).items():
            small = p.size_bytes <= 32768
            floors += list(np.nanmedian(p.times[:, small], axis=1))
            big = p.size_bytes >= 2**23
            spread = np.nanmax(p.times[:, big], axis=0) / np.nanmin(p.times[:, big], axis=0)
            assert spread.max() < 1.12, (transport, coll, spread.max())
        floors = np.array(floors)
        fast = floors < 16e-6
        assert 0.25 < fast.mean() < 0.75, fast.mean()
        assert np.median(floors[fast]) < 14e-6 and np.median(floors[~fast]) > 18e-6


def test_second_machine_after_the_last_fit():
    """Three full sweeps per transport and process layout on another 2x H200 machine,
    recorded after the last fit: from 16 MiB the model holds within 13% of their
    median in every mode; below, that machine's host was faster than every earlier
    one (the model is then too slow, never too fast by more than 25%)."""
    for (transport, g), runs in measurements.CHECK_RUNS.items():
        for coll, p in measurements.pool_runs(runs).items():
            s = p.size_bytes
            ratio = C.predict(coll, s, 2, SYSTEM, transport=transport,
                              gpus_per_process=g).time / p.median
            assert np.abs(ratio[s >= 2**24] - 1).max() < 0.13, (transport, g, coll)
            assert ratio.min() > 0.75, (transport, g, coll, ratio.min())


def test_across_nodes_predict_is_the_network_model():
    """Ranks spanning nodes: predict = gpulab.network's NCCL model, floored by the
    host's time per call (one process per GPU by default, as multi-node nccl-tests
    run under mpirun) and by the same collective of one node's ranks."""
    from gpulab import network
    c = network.scale_out("dgx-h100-spod", 4)
    s = 2.0 ** np.arange(3, 34, 2)
    p = C.predict("all_reduce", s, 32, c)
    r = network.collective_times("all_reduce", s, 32, c)
    one = C.predict("all_reduce", s, 8, c, gpus_per_process=1).time
    assert np.all(p.time >= r["time"] - 1e-15) and np.all(p.time >= one - 1e-15)
    assert list(p.algorithm) == list(r["algorithm"])
    assert set(p.algorithm) <= {"ring", "tree", "nvlstree"}
    g1 = C.predict("all_reduce", 8, 32, c, gpus_per_process=1).time[0]
    assert C.predict("all_reduce", 8, 32, c).time[0] == pytest.approx(g1)
