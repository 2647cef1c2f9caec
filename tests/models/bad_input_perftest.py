"""Bad-input rows for gpulab.nccltests.perftest (collected by tests/models/test_bad_input.py)."""
from __future__ import annotations

from pathlib import Path

from bad_values import CHOICE, FRACTION_OPEN, NONNEG, POS, Case

from gpulab.nccltests import perftest

MODULES = (perftest,)
NO_ARGS = {perftest.rail_reports}

_WRITE = perftest.public_output("azure_hdr_ib_write_bw.txt")
_LAT = perftest.public_output("azure_hdr_ib_read_lat.txt")
_TEXT = (" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
         " 65536      5000             392.38             392.34             0.748336\n")
_FILE = Path(perftest.__file__).parents[1] / "data" / "measurements" / "public" / \
    "azure_hdr_ib_write_bw.txt"

CASES = [
    Case(perftest.parse_perftest, {"text": _TEXT, "source": "<text>"},
         {"text": [None, 3, b"x", "", "   ", ["a"], "not perftest output\n",
                   _TEXT.replace("392.34", "-1"), _TEXT.replace("392.34", "nan")],
          "source": [None, 3, "", ["x"], True]}),
    Case(perftest.read_perftest, {"path": _FILE},
         {"path": [None, 3, True, b"x", "", "/no/such/file.txt", _FILE.parent]}),
    Case(perftest.rail_bandwidth, {"result": _WRITE},
         {"result": [None, 3, "mlx5_0", _LAT, {"bw": 1}]}),
    Case(perftest.check_rails, {"rails": {"mlx5_0": _WRITE}, "expected": 25e9,
                                "fraction": 0.9},
         {"rails": [None, {}, [], "mlx5_0", {"mlx5_0": None}, {"mlx5_0": -1.0},
                    {"mlx5_0": _LAT}, {"": 1.0}, {3: 1.0}, {"mlx5_0": float("nan")},
                    {"mlx5_0": True}],
          "expected": [v for v in POS if not isinstance(v, list)] + [[1.0, 2.0]],
          "fraction": [v for v in FRACTION_OPEN if not isinstance(v, list)]}),
    Case(perftest.public_output, {"name": "azure_hdr_ib_write_bw.txt"},
         {"name": CHOICE("rail_reports.csv", "../specs.py")}),
]
_ = NONNEG
