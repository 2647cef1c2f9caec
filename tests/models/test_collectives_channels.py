"""Inside a server, a ring over NVLink streams on the channels NCCL's channel rule gives
the size (enqueue.cc topoGetAlgoInfo, gpulab.network.execution.channels_used), each at
1/max_channels of the rate: an analytic oracle, the rule's breakpoints, and the
transports (PCIe, host memory) it is not applied to."""
from __future__ import annotations

import numpy as np
import pytest

from gpulab import collectives, specs
from gpulab.network import execution


def _oracle(coll, s, n, system, proto, nc):
    """max(host, base + steps x hop + wire / (B e pi nc / max)) for ring LL, by hand."""
    c = specs.assumption("nccl", "transports/p2p")
    own = c["collectives"][coll]
    p = c["protocols"][proto]
    host = own["launch_s"] + c["channel_s"] * (min(max(s / c["channel_bytes"], 1),
                                                   c["max_channels"]) - 1)
    e2, e8 = own["efficiency"], own["efficiency_8"]
    eff = e2 + min(1.0, (1 - 2 / n) / (1 - 2 / 8)) * (e8 - e2)
    b = collectives.fabric_bandwidth(system).bytes_per_s * eff * p["bandwidth"]
    b *= nc / c["max_channels"]
    steps = collectives.ring_steps(coll, n)
    gpu = p["base_latency_s"] + steps * p["hop_latency_s"] \
        + collectives.wire_factor(coll, n, "ring") * s / b
    return max(host, gpu)


@pytest.mark.parametrize("size, channels", [(64 * 1024, 2), (256 * 1024, 8),
                                            (2**20, 24)])
def test_ring_ll_on_eight_gpus_streams_on_the_channels_used(size, channels):
    """LL ring on 8 ranks: 8 B x 8 ranks x 512 threads = 32 KiB per channel."""
    assert execution.channels_used(size, 24, "LL", 8).item() == channels
    t = collectives.predict("all_gather", size, 8, "hgx-h200", algorithm="ring",
                            protocol="LL", gpus_per_process=1).time_scalar
    assert t == pytest.approx(_oracle("all_gather", size, 8, "hgx-h200", "LL", channels),
                              rel=1e-9)


def test_fewer_channels_only_slow_a_call_down():
    """Never faster than the full-rate form; on nccl-tests' sizes (powers of two) never
    faster for a larger call. Between them the time is a sawtooth, as NCCL's: a call just
    below a channel's worth of bytes runs on one channel fewer."""
    s = 2.0 ** np.arange(10, 27)
    t = collectives.predict("all_gather", s, 8, "hgx-h200", algorithm="ring",
                            protocol="LL", gpus_per_process=1).time
    assert np.all(np.diff(t) >= -1e-12)
    full = np.array([_oracle("all_gather", x, 8, "hgx-h200", "LL", 24) for x in s])
    assert np.all(t >= full * (1 - 1e-9))
    below = collectives.predict("all_gather", [64 * 1024 - 4096, 64 * 1024], 8, "hgx-h200",
                                algorithm="ring", protocol="LL", gpus_per_process=1).time
    assert below[0] > below[1]            # one channel at 60 KiB, two at 64 KiB


def test_not_applied_over_pcie_or_host_memory():
    """Over PCIe (l40s-x8) and through host memory NCCL opens fewer channels than our
    NVLink log shows: there the model keeps the full rate, as before."""
    for system, transport in (("l40s-x8", "p2p"), ("hgx-h200", "shm")):
        t = collectives.predict("all_reduce", 64 * 1024, 2, system, transport=transport,
                                algorithm="ring", protocol="LL").time_scalar
        c = specs.assumption("nccl", f"transports/{transport}")
        own, p = c["collectives"]["all_reduce"], c["protocols"]["LL"]
        b = collectives.fabric_bandwidth(system, transport).bytes_per_s \
            * own["efficiency"] * p["bandwidth"]
        host = own["launch_s"] + c["channel_s"] * (min(64 * 1024 / c["channel_bytes"],
                                                       c["max_channels"]) - 1)
        gpu = p["base_latency_s"] + 2 * p["hop_latency_s"] + 64 * 1024 / b
        assert t == pytest.approx(max(host, gpu), rel=1e-9), system
