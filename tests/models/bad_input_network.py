"""Bad-input rows for gpulab.network (collected by tests/models/test_bad_input.py)."""
from __future__ import annotations

from bad_values import CHOICE, INT, NONNEG, POS, Case

from gpulab import network as net
from gpulab.network import execution as ex
from gpulab.network import loopback as lb
from gpulab.network import mixed_ring as mr

MODULES = (net, ex, lb, mr)
NO_ARGS = {net.public_results, net.fabric_names, net.nccl_version,
           net.run_anomalies}
_RUN_BAD = [None, 3, True, "", "no-such-run", "../raw", ["x"]]
_RANKS_BAD = [None, "2", 3, (), (2, 3), (True,), [[2]]]

_CLUSTER_BAD = [None, 3, True, "", "no-such-cluster", "DGX-H100-SPOD", ["aws-p5"]]
_NICS_BAD = ["8x", "x400G", "0x400G", "8x0G", "8x9999G", "2000x100G", "8 NICs", 8,
             (8,), (8, 400, 1), (True, 400), (2.5, 400), ("a", 400), [[8, 400]]]
_FLAG_OPT = [1, 0, "yes", [True]]
_SIZES_BAD = [0, -1.0, float("nan"), float("inf"), "1", None, True, [[1.0]], ["a"]]
_SYSTEM2 = "dgx-h100-spod"
_FABRIC_BAD = [c for c in CHOICE("IB", "omnipath") if c is not None]   # None: default

CASES = [
    Case(net.loopback_sweeps, {"run": net.LOOPBACK_RUN, "protocols": ("LL",),
                               "ranks": (2,)},
         {"run": _RUN_BAD, "protocols": CHOICE("ll") + [()],
          "ranks": _RANKS_BAD}),
    Case(lb.read_ring_sweep, {"run": net.LOOPBACK_RUN, "filename": "graph_LL_2_r1.csv"},
         {"run": _RUN_BAD, "filename": [None, 3, "", "no-such.csv", "../x.csv",
                                        "nccl_info_2.txt"]}),
    Case(lb.ring_steps, {"collective": "all_gather", "n_ranks": 4},
         {"collective": CHOICE("allgather", "reduce_scatter"),
          "n_ranks": INT(2, 1_000_000)}),
    Case(net.fit_step_latency, {"steps": [1, 3], "times": [3e-5, 7e-5]},
         {"steps": [None, "x", [1, 1], [1, -3], [1, float("nan")], [1, 2, 3]],
          "times": [None, "x", [1.0], [1.0, -2.0], [1.0, float("inf")]]}),
    Case(net.loopback_check, {"fit_ranks": (2, 4), "small_bytes": 8192,
                              "run": net.LOOPBACK_RUN},
         {"fit_ranks": _RANKS_BAD + [(2,), (4, 4)],
          "small_bytes": [0, 4, 65536, float("nan"), "8", None, True, [8192]],
          "run": _RUN_BAD}),
    Case(net.mixed_ring_sweeps, {"run": net.MIXED_RING_RUN, "call": "a"},
         {"run": _RUN_BAD, "call": ["c", "A", 1, True, ["a"]]}),
    Case(net.mixed_ring_check, {"small_bytes": 2048, "run": net.MIXED_RING_RUN},
         {"small_bytes": [0, 8, 16384, float("nan"), "8", None, True, [2048]],
          "run": _RUN_BAD}),
    Case(net.public_errors, {"system": "aws-p5", "nodes": 2, "ring_form": "lockstep"},
         {"system": [3, True, "", "no-such-preset", "AWS-P5", ["aws-p5"]],
          "nodes": [v for v in INT(2, 1_000_000) if v is not None],
          "ring_form": CHOICE("Dataflow", "pipelined")}),
    Case(net.nonmonotone, {"sizes": [8, 16, 32], "times": [3.0, 2.0, 4.0], "factor": 1.5},
         {"sizes": [None, "8", 8, [-1, 16, 32], [8, float("nan"), 32], [8, 16]],
          "times": [None, "x", [1.0, 2.0], [1.0, -2.0, 3.0], [1.0, float("inf"), 3.0]],
          "factor": [0.5, -1, float("nan"), float("inf"), "2", None, True, [1.5]]}),
    Case(net.scale_out,
         {"system": _SYSTEM2, "nodes": 2, "nics": "8x400G", "fabric": "ib",
          "sharp": False, "gdr": True},
         {"system": _CLUSTER_BAD, "nodes": INT(1, 100_000), "nics": _NICS_BAD,
          "fabric": _FABRIC_BAD, "sharp": _FLAG_OPT,
          "gdr": _FLAG_OPT}),
    Case(net.cluster_preset, {"name": "aws-p5"}, {"name": _CLUSTER_BAD}),
    Case(net.algorithm_table,
         {"collective": "all_reduce", "sizes": [2**20, 2**30], "nodes": 2,
          "system": _SYSTEM2, "nics": None, "fabric": None, "sharp": None,
          "gdr": True, "nvls": True},
         {"collective": CHOICE("allreduce"), "sizes": _SIZES_BAD,
          "nodes": INT(2, 100_000), "system": _CLUSTER_BAD, "nics": _NICS_BAD,
          "fabric": _FABRIC_BAD, "sharp": _FLAG_OPT, "gdr": _FLAG_OPT,
          "nvls": _FLAG_OPT + [None]}),
    Case(net.collective_times,
         {"collective": "all_reduce", "message_bytes": [8, 2**30], "n_ranks": 16,
          "system": net.scale_out(_SYSTEM2, 2), "algorithm": "auto",
          "protocol": "auto", "nvls": True, "host_time": 0.0, "placement": "ordered",
          "ring_form": "lockstep"},
         {"collective": CHOICE("allreduce"), "message_bytes": _SIZES_BAD,
          "n_ranks": INT(2, 16) + [8], "system": [None, 3, True, "", "no-such"],
          "algorithm": CHOICE("nvls", "hierarchical", "collnet"),
          "protocol": CHOICE("ll"), "nvls": _FLAG_OPT + [None],
          "placement": CHOICE("random"), "ring_form": CHOICE("Lockstep", "mixed")},
         exempt={"host_time": "the caller's own launch model (collectives.predict "
                              "passes an array); not checked here"}),
    Case(net.network_path,
         {"system": net.scale_out(_SYSTEM2, 2), "n_ranks": 16, "nvls": True,
          "placement": "ordered"},
         {"system": [None, 3, True, "", "no-such"], "n_ranks": INT(1, 16),
          "placement": CHOICE("random")},
         exempt={"nvls": "any truthy value turns NVLS on (internal flag)"}),
    Case(net.tuner_tree_share,
         {"p": net.network_path(net.scale_out(_SYSTEM2, 2), 16), "proto": "Simple"},
         {"p": [None, 3, "dgx-h100-spod", net.scale_out(_SYSTEM2, 2)],
          "proto": CHOICE("simple")}),
    Case(net.fabric, {"name": "ib"}, {"name": CHOICE("IB", "omnipath")}),
    Case(net.topology, {"name": "fat_tree"}, {"name": CHOICE("fat-tree")}),
    Case(net.parse_nics, {"nics": "8x400G", "param": "nics"}, {"nics": _NICS_BAD},
         exempt={"param": "the name used in the message"}),
    Case(net.nccl_constant, {"name": "net_overhead_s"},
         {"name": [None, 3, "", "version", "no-such", ["hw_latency_s"]]}),
    Case(net.nvls_efficiency, {"system": "hgx-h200"},
         {"system": [None, 3, True, "", "no-such"]}),
    Case(net.busbw_factor, {"op": "all_reduce", "n_ranks": 8},
         {"op": CHOICE("allreduce"), "n_ranks": INT(1, 1_000_000)}),
]

# gpulab.network.execution: NCCL's execution mechanics
_HOPS_BAD = [None, 3, "intra", [], [("intra", 1e-6)], [("wire", 1e-6, 1e9)],
             [("intra", -1.0, 1e9)], [("intra", 1e-6, 0.0)]]
CASES += [
    Case(ex.mechanic, {"path": "buffers/nccl_steps"},
         {"path": [None, 3, "", "no/such", "buffers/no_such"]}),
    Case(ex.step_bytes, {"protocol": "Simple"}, {"protocol": CHOICE("simple")}),
    Case(ex.channels_used,
         {"message_bytes": [8, 2**20], "max_channels": 16, "protocol": "Simple",
          "n_ranks": 8, "algorithm": "ring"},
         {"message_bytes": NONNEG, "max_channels": INT(1, 64),
          "protocol": CHOICE("ll"), "n_ranks": INT(1, 1_000_000),
          "algorithm": CHOICE("nvls")}),
    Case(ex.tree_piece, {"message_bytes": 2**20, "channels": 16, "protocol": "LL",
                         "step": 2**20},
         {"message_bytes": NONNEG, "channels": POS, "protocol": CHOICE(),
          "step": [0, -1.0, "1", True, float("inf")]}),
    Case(ex.store_forward_piece, {"piece": 2**20, "protocol": "LL128", "hop": "net"},
         {"piece": NONNEG, "protocol": CHOICE(), "hop": CHOICE("nvlink")}),
    Case(ex.pipeline_time,
         {"wire_bytes": 1e6, "channels": 4, "piece_intra": 1e4, "piece_net": 1e4,
          "hops_intra": 14, "hops_net": 2, "lat_intra": 1e-6, "lat_net": 5e-6,
          "rate_intra": 20e9, "rate_net": 10e9},
         {"wire_bytes": NONNEG, "channels": POS, "piece_intra": NONNEG,
          "piece_net": NONNEG, "hops_intra": INT(0, 1_000_000),
          "hops_net": INT(0, 1_000_000), "lat_intra": NONNEG, "lat_net": NONNEG,
          "rate_intra": POS, "rate_net": POS}),
    Case(ex.tree_hops, {"ranks_per_node": 8, "nodes": 2},
         {"ranks_per_node": [0, -1, None, "8", True, float("nan")],
          "nodes": INT(1, 1_000_000)}),
    Case(ex.nvls_channels, {"arch": "hopper", "nodes": 2},
         {"arch": CHOICE("ampere"), "nodes": INT(1, 1_000_000)}),
    Case(ex.nvlstree_piece, {"message_bytes": 2**20, "concurrent_ops": 128, "nodes": 2,
                             "nvls_chunk": 2**19, "tree_max": 2**19},
         {"message_bytes": NONNEG, "concurrent_ops": INT(1, 1_000_000),
          "nodes": INT(1, 1_000_000), "nvls_chunk": [0, -1.0, "1", True, float("inf")],
          "tree_max": [0, -1.0, "1", True, float("nan")]}),
    Case(ex.ring_time,
         {"message_bytes": 2**20, "channels": 16, "n_ranks": 8, "steps": 14,
          "protocol": "Simple", "hops": [("intra", 3.4e-6, 20e9)], "max_chunk": None},
         {"message_bytes": NONNEG, "channels": POS, "n_ranks": INT(1, 1_000_000),
          "steps": INT(0, 10_000_000), "protocol": CHOICE(), "hops": _HOPS_BAD,
          "max_chunk": [0, -1.0, "1", True, float("inf")]}),
    Case(ex.ring_dataflow_time,
         {"message_bytes": 2**20, "channels": 16, "n_ranks": 16, "ranks_per_node": 8,
          "steps": 30, "protocol": "LL",
          "hops": [("intra", 1.1e-6, 12e9), ("net", 2.7e-6, 2.4e9)], "max_chunk": None},
         {"message_bytes": NONNEG, "channels": POS, "n_ranks": INT(1, 1_000_000),
          "ranks_per_node": [0, 3, 17, 2.5, "8", None, True],
          "steps": INT(0, 10_000_000), "protocol": CHOICE(),
          "hops": _HOPS_BAD + [[("intra", 1.1e-6, 12e9)]],   # two nodes need "net"
          "max_chunk": [0, -1.0, "1", True, float("inf")]}),
]
