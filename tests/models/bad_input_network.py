"""Bad-input rows for gpulab.network (collected by tests/models/test_bad_input.py)."""
from __future__ import annotations

from bad_values import CHOICE, INT, Case

from gpulab import network as net

MODULES = (net,)
NO_ARGS = {net.public_results, net.public_errors, net.fabric_names, net.nccl_version}

_CLUSTER_BAD = [None, 3, True, "", "no-such-cluster", "DGX-H100-SPOD", ["aws-p5"]]
_NICS_BAD = ["8x", "x400G", "0x400G", "8x0G", "8x9999G", "2000x100G", "8 NICs", 8,
             (8,), (8, 400, 1), (True, 400), (2.5, 400), ("a", 400), [[8, 400]]]
_FLAG_OPT = [1, 0, "yes", [True]]
_SIZES_BAD = [0, -1.0, float("nan"), float("inf"), "1", None, True, [[1.0]], ["a"]]
_SYSTEM2 = "dgx-h100-spod"
_FABRIC_BAD = [c for c in CHOICE("IB", "omnipath") if c is not None]   # None: default

CASES = [
    Case(net.scale_out,
         {"system": _SYSTEM2, "nodes": 2, "nics": "8x400G", "fabric": "ib",
          "sharp": False, "gdr": True},
         {"system": _CLUSTER_BAD, "nodes": INT(1, 100_000), "nics": _NICS_BAD,
          "fabric": _FABRIC_BAD, "sharp": _FLAG_OPT,
          "gdr": _FLAG_OPT + [None]}),
    Case(net.cluster_preset, {"name": "aws-p5"}, {"name": _CLUSTER_BAD}),
    Case(net.algorithm_table,
         {"collective": "all_reduce", "sizes": [2**20, 2**30], "nodes": 2,
          "system": _SYSTEM2, "nics": None, "fabric": None, "sharp": None,
          "gdr": True, "nvls": True},
         {"collective": CHOICE("allreduce"), "sizes": _SIZES_BAD,
          "nodes": INT(2, 100_000), "system": _CLUSTER_BAD, "nics": _NICS_BAD,
          "fabric": _FABRIC_BAD, "sharp": _FLAG_OPT, "gdr": _FLAG_OPT + [None],
          "nvls": _FLAG_OPT + [None]}),
    Case(net.collective_times,
         {"collective": "all_reduce", "message_bytes": [8, 2**30], "n_ranks": 16,
          "system": net.scale_out(_SYSTEM2, 2), "algorithm": "auto",
          "protocol": "auto", "nvls": True, "host_time": 0.0},
         {"collective": CHOICE("allreduce"), "message_bytes": _SIZES_BAD,
          "n_ranks": INT(2, 16) + [8], "system": [None, 3, True, "", "no-such"],
          "algorithm": CHOICE("nvls", "hierarchical", "collnet"),
          "protocol": CHOICE("ll"), "nvls": _FLAG_OPT + [None]},
         exempt={"host_time": "the caller's own launch model (collectives.predict "
                              "passes an array); not checked here"}),
    Case(net.network_path,
         {"system": net.scale_out(_SYSTEM2, 2), "n_ranks": 16, "nvls": True},
         {"system": [None, 3, True, "", "no-such"], "n_ranks": INT(1, 16)},
         exempt={"nvls": "any truthy value turns NVLS on (internal flag)"}),
    Case(net.fabric, {"name": "ib"}, {"name": CHOICE("IB", "omnipath")}),
    Case(net.topology, {"name": "fat_tree"}, {"name": CHOICE("fat-tree")}),
    Case(net.parse_nics, {"nics": "8x400G", "param": "nics"}, {"nics": _NICS_BAD},
         exempt={"param": "the name used in the message"}),
    Case(net.nccl_constant, {"name": "net_overhead_s"},
         {"name": [None, 3, "", "version", "no-such", ["hw_latency_s"]]}),
    Case(net.busbw_factor, {"op": "all_reduce", "n_ranks": 8},
         {"op": CHOICE("allreduce"), "n_ranks": INT(1, 1_000_000)}),
]
