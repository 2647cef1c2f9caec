"""gpulab.nccltests.perftest: perftest (ib_write_bw / ib_read_lat) output and rail checks.

Oracles are the printed digits of the recorded public outputs and perftest's own unit
factors (src/perftest_parameters.c: Gb/sec = 125e6 B/s, MB/sec and MiB/sec = 2**20 B/s).
"""
from __future__ import annotations

import numpy as np
import pytest

from gpulab import nccltests
from gpulab.nccltests import perftest

GBIT = 125_000_000.0            # bytes per second in one Gb/sec

WRITE_G = """---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF\t\tDevice         : mlx5_3
 Number of qps   : 2\t\tTransport type : IB
 Link type       : IB
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
Conflicting CPU frequency values detected: 3295.212000 != 4999.302000. CPU Frequency is not max.
 65536      5000             392.38             392.34 \t\t     0.748336
---------------------------------------------------------------------------------------
"""

SEND_MB = """                    Send BW Test
 Dual-port       : OFF          Device         : mlx5_0
 Link type       : Ethernet
 #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
 1024       1000             0.00               5544.28\t\t   5.677340
"""


def test_gbit_row_in_si_units():
    r = nccltests.parse_perftest(WRITE_G)
    assert (r.kind, r.test, r.device, r.n_qps, r.link_type) == \
        ("bw", "RDMA_Write BW Test", "mlx5_3", 2, "IB")
    assert r.size_bytes.tolist() == [65536] and r.iterations.tolist() == [5000]
    assert r.bw_average[0] == pytest.approx(392.34 * GBIT, rel=1e-12)
    assert r.bw_peak[0] == pytest.approx(392.38 * GBIT, rel=1e-12)
    assert r.msg_rate[0] == pytest.approx(0.748336e6, rel=1e-12)
    # the message rate and the bandwidth agree: 65536 B x 0.748336 Mpps = 392.4 Gb/s
    assert r.msg_rate[0] * 65536 == pytest.approx(r.bw_average[0], rel=2e-3)


def test_mb_per_sec_is_mebibytes():
    r = nccltests.parse_perftest(SEND_MB)
    assert r.bw_average[0] == pytest.approx(5544.28 * 2 ** 20, rel=1e-12)
    assert r.test == "Send BW Test" and r.link_type == "Ethernet"


def test_recorded_public_write_sweep():
    r = nccltests.public_output("azure_hdr_ib_write_bw.txt")
    assert r.size_bytes[0] == 2 and r.size_bytes[-1] == 8 * 2 ** 20
    assert len(r.size_bytes) == 23
    assert np.all(np.diff(r.size_bytes) > 0)
    # the plateau: the largest average printed is 196.64 Gb/sec (4 MiB row)
    assert nccltests.rail_bandwidth(r) == pytest.approx(196.64 * GBIT, rel=1e-12)
    # msg rate x size = bandwidth in every row, within the printed digits
    assert np.allclose(r.msg_rate * r.size_bytes, r.bw_average, rtol=0.02)


def test_recorded_public_latency():
    r = nccltests.public_output("azure_hdr_ib_read_lat.txt")
    assert r.kind == "lat" and r.size_bytes.tolist() == [2]
    assert r.t_avg[0] == pytest.approx(5.50e-6, rel=1e-12)
    assert r.t_min[0] == pytest.approx(5.35e-6, rel=1e-12)
    assert r.t_max[0] == pytest.approx(11.78e-6, rel=1e-12)
    assert r.t_min[0] <= r.t_typical[0] <= r.t_max[0]
    assert r.bw_average.size == 0


def test_check_rails_flags_only_the_slow_one():
    good = nccltests.public_output("azure_hdr_ib_write_bw.txt")
    line = 200 * GBIT
    found = nccltests.check_rails({"mlx5_0": good, "mlx5_1": 30 * GBIT,
                                   "mlx5_2": 180 * GBIT}, line)
    # 180 Gb/s is exactly 90 % of 200: it passes; 30 Gb/s does not
    assert [f.rail for f in found] == ["mlx5_1"]
    assert found[0].fraction == pytest.approx(0.15, rel=1e-12)
    assert "mlx5_1" in str(found[0]) and "15%" in str(found[0])
    # the same healthy HDR rail on a 400 Gb/s NDR fabric is a bad rail (49 %)
    assert [f.rail for f in nccltests.check_rails({"mlx5_0": good}, 400 * GBIT)] \
        == ["mlx5_0"]
    assert nccltests.check_rails({"mlx5_0": good}, line, fraction=0.98) == []  # 98.3 %
    assert len(nccltests.check_rails({"mlx5_0": good}, line, fraction=0.99)) == 1


def test_rail_reports_are_sourced():
    rows = nccltests.rail_reports()
    assert len(rows) >= 2
    for row in rows:
        assert row["url"].startswith("https://github.com/")
        assert 0 < row["rate"] <= row["line_rate"]
    slow = [r["rail"] for r in rows if r["rate"] < perftest.PASS_FRACTION * r["line_rate"]]
    assert slow == ["NDv4 rail (before fix)"]


@pytest.mark.parametrize("text, words", [
    ("RDMA_Write BW Test\n Device : mlx5_0\n", "no perftest result header"),
    (" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
     "---\n", "no rows"),
    (" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
     " 65536 5000 392.38\n", "at least 5 columns"),
    (" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
     " 65536 5000 392.38 x 0.7\n", "not a number"),
    (" #bytes     #iterations    BW peak[Gb/sec]    BW average[MB/sec]   MsgRate[Mpps]\n",
     "different units"),
])
def test_malformed_output_is_refused_with_the_line(text, words):
    with pytest.raises(nccltests.NcclTestsParseError, match=words) as info:
        nccltests.parse_perftest(text, source="rail3.txt")
    assert "rail3.txt" in str(info.value) and "text" in str(info.value)


def test_read_perftest_file(tmp_path):
    p = tmp_path / "mlx5_3.txt"
    p.write_text("# Source: a note\n" + WRITE_G)
    r = nccltests.read_perftest(p)
    assert r.source == "mlx5_3.txt" and r.bw_average[0] == pytest.approx(392.34 * GBIT)
