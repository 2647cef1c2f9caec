"""Bad-input rows for gpulab.nccltests (collected by tests/models/test_bad_input.py)."""
from __future__ import annotations

from pathlib import Path

from bad_values import NONNEG, SCALAR_ONLY, Case

from gpulab import nccltests

MODULES = (nccltests,)
NO_ARGS = set()

_DATA = Path(__file__).parents[1] / "data" / "nccltests"
_TEXT = (_DATA / "h100_2x8_all_reduce.txt").read_text()
_JSON = (_DATA / "json_report_v2_constructed.json").read_text()
_SWEEP = nccltests.parse(_TEXT)
_COLL_BAD = ["no-such-thing", "", 3, True, ["x"], "allreduce", "ALL_REDUCE"]
_TEXT_BAD = [None, 3, b"# bytes", ["a"], "", "not nccl-tests output\n",
             "#  size count type time algbw busbw #wrong\n 8 2 float x 0 0 0\n"]
_SOURCE_BAD = [None, 3, "", ["x"], True]
_SWEEP_BAD = [None, "sweep", 3, ["a"], _TEXT]

CASES = [
    Case(nccltests.parse, {"text": _TEXT, "source": "<text>",
                           "collective": "all_reduce"},
         {"text": _TEXT_BAD, "source": _SOURCE_BAD, "collective": _COLL_BAD}),
    Case(nccltests.parse_all, {"text": _TEXT, "source": "<text>"},
         {"text": _TEXT_BAD, "source": _SOURCE_BAD}),
    Case(nccltests.parse_json, {"text": _JSON, "source": "<text>",
                                "collective": None},
         {"text": [None, 3, "", "{", "[]", '{"results": []}', '{"version": 2}',
                   '{"results": [{"size": -8}]}'],
          "source": _SOURCE_BAD, "collective": _COLL_BAD}),
    Case(nccltests.read, {"text_or_path": _DATA / "h100_2x8_all_reduce.txt",
                          "collective": None},
         {"text_or_path": [None, 3, b"x", "", "/no/such/file.txt",
                           _DATA / "README.md", Path("/no/such.csv")],
          "collective": _COLL_BAD}),
    Case(nccltests.read_all, {"text_or_path": str(_DATA / "h100_2x8_all_reduce.txt")},
         {"text_or_path": [None, 3, b"x", "", "/no/such/file.txt", _DATA]}),
    Case(nccltests.render, {"sweep": _SWEEP}, {"sweep": _SWEEP_BAD}),
    Case(nccltests.consistency, {"sweep": _SWEEP}, {"sweep": _SWEEP_BAD}),
    Case(nccltests.audit, {"sweep": _SWEEP, "system": "hgx-h200-2node",
                           "transport": "p2p", "latency_floor": 2e-6},
         {"sweep": _SWEEP_BAD, "system": ["no-such-thing", "", 3, True, ["x"]],
          "transport": ["nvlink", "", None, 3, ["p2p"]],
          "latency_floor": [v for v in NONNEG if v is not None] + SCALAR_ONLY}),
]
