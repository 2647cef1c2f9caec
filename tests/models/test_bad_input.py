"""Every public function refuses bad input with a ValueError naming the parameter.

The table below lists, for each public function of the model modules, a set of valid
keyword arguments and, per parameter, the bad values it must refuse. The meta-tests
at the bottom fail when a public function (or one of its parameters) is added
without a row here.
"""
from __future__ import annotations

import importlib
import importlib.util
import dataclasses
import inspect
import numbers
import re
import warnings

import numpy as np

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from gpulab import collectives, links, measurements, scaling, specs, units
from gpulab import topology  # PCIe chapter: server topology
from gpulab import pcie, systems  # PCIe chapter: link/copy model, system presets
from pathlib import Path  # (pcie/systems rows)
from gpulab.units import Bandwidth  # noqa: F401

from bad_values import (ARRAY_2D, HUGE, BD, CHOICE, FRACTION_CLOSED, FRACTION_OPEN, INF, INT, NAN,  # noqa: F401
                        NONFINITE, NONNEG, NOT_BANDWIDTH, PD, POS, RATE, SCALAR_ONLY,
                        WRONG_TYPE, Case)

MODULES = (units, links, collectives, scaling, specs, measurements)
MODULES += (topology,)
MODULES += (pcie, systems)

_DIGITS_BUG = ("gpulab/units.py _trim/fmt_*: 'digits' is never validated: digits=None "
               "or '3' raise TypeError from '10 ** digits', 2.5 or True raise a format "
               "ValueError not naming 'digits', and -1 is silently accepted")
_GPU_NAME_BUG = ("gpulab/scaling.py: an unknown GPU name is checked by specs.gpu, "
                 "whose ValueError says \"name must be one of 'V100', ...\", naming "
                 "specs.gpu's parameter 'name' instead of this function's parameter")
_ARRAY_BUG = ("gpulab/links.py link_bandwidth: an array symbol_rate passes lane_rate "
              "and then float(raw * ...) raises TypeError, not ValueError naming "
              "symbol_rate")
_ITER_BUG = ("gpulab/scaling.py growth_table: gpus=3 (not iterable) raises TypeError "
             "from list(gpus) instead of a ValueError naming 'gpus'")
_FLAG = "a bool flag; only its truthiness is used (not validated)"

_TOPO_A = topology.layout_a()
_TOPO_BAD = [None, "layout_a", 3, True, ["gpu0"]]
_NODE_BAD = [None, 3, True, "", "gpu99", "GPU0", ["gpu0"]]

_PCIE_LANES_BAD = [0, 3, 64, 2.5, "16", None, True, NAN, INF, ["x"]]
_PCIE_MPS_BAD = [64, 100, 8192, 256.5, "256", None, True, NAN, ["x"]]
_PCIE_HEADER_BAD = [8, 20, 12.5, "16", True, NAN, ["x"]]
_PCIE_FLAG_BAD = [None, 1, 0, "yes", [True]]
_PCIE_DLLP_BAD = [-0.1, 0.6, NAN, INF, "0.03", True, [0.1, 0.2]]
_SYSTEM_BAD = [None, 3, True, "", "no-such-system", "HGX-H200", ["hgx-h200"], "/"]
_SYSTEMS_YAML = specs.read_data_text("systems.yaml")
_SYSTEMS_FILE = str(Path(specs.__file__).with_name("data") / "systems.yaml")

CASES = [
    # --- specs: the one accessor of the model assumptions ------------------------------
    Case(specs.assumption, {"table": "course", "name": "mfu"},
         {"table": CHOICE("Course", "nccl_model.yaml"),
          "name": [None, 3, True, "", "/", "no_such", "mfu/value/x", ["mfu"]]}),
    Case(specs.assumption_record, {"table": "nccl", "name": "protocols/LL"},
         {"table": CHOICE("NCCL", "assumptions"),
          "name": [None, 3, True, "", ".", "protocols/XX", ["protocols"]]}),
    # --- units ------------------------------------------------------------------------
    Case(units.gbit_per_s_to_bytes_per_s, {"gbit_per_s": 400}, {"gbit_per_s": NONNEG}),
    Case(units.bytes_per_s_to_gbit_per_s, {"bytes_per_s": 5e10},
         {"bytes_per_s": NONNEG}),
    Case(units.to_gb, {"n_bytes": 1e9}, {"n_bytes": NONNEG}),
    Case(units.to_gib, {"n_bytes": 1e9}, {"n_bytes": NONNEG}),
    Case(units.from_gb, {"gb": 1}, {"gb": NONNEG}),
    Case(units.from_gib, {"gib": 1}, {"gib": NONNEG}),
    Case(units.fmt_bytes, {"n_bytes": 1536, "binary": True, "digits": 3},
         {"n_bytes": NONNEG + SCALAR_ONLY, "digits": [None, "3", -1, 2.5, True]}, exempt={"binary": _FLAG}),
    Case(units.fmt_time, {"seconds": 1e-3, "digits": 3},
         {"seconds": NONNEG + SCALAR_ONLY, "digits": [None, "3", -1, 2.5, True]}),
    Case(units.fmt_bandwidth, {"bandwidth": PD, "unit": "GB/s", "digits": 4},
         {"bandwidth": NOT_BANDWIDTH, "unit": CHOICE("MB/s", "gb/s"),
          "digits": [None, "3", -1, 2.5, True]}),
    Case(units.fmt_rate, {"bytes_per_s": 1e9, "unit": "GB/s", "digits": 4},
         {"bytes_per_s": NONNEG + SCALAR_ONLY, "unit": CHOICE("MB/s"),
          "digits": [None, "3", -1, 2.5, True]}),
    Case(Bandwidth, {"bytes_per_s": 1e9, "direction": "per_direction"},
         {"bytes_per_s": NONNEG + SCALAR_ONLY,
          "direction": CHOICE("per direction", "PER_DIRECTION")}),
    Case(Bandwidth.from_gb_per_s, {"gb_per_s": 1, "direction": "bidirectional"},
         {"gb_per_s": NONNEG + SCALAR_ONLY, "direction": CHOICE("both")}),
    Case(Bandwidth.from_gbit_per_s, {"gbit_per_s": 1, "direction": "bidirectional"},
         {"gbit_per_s": NONNEG + SCALAR_ONLY, "direction": CHOICE("both")}),
    # --- links ------------------------------------------------------------------------
    Case(links.lane_rate, {"symbol_rate": 53.125e9, "bits_per_symbol": 2},
         {"symbol_rate": POS, "bits_per_symbol": INT(1, 8)}),
    Case(links.link_bandwidth, {"symbol_rate": 53.125e9, "bits_per_symbol": 2,
                                "lanes_per_direction": 2, "coding_efficiency": 0.9},
         {"symbol_rate": POS + SCALAR_ONLY, "bits_per_symbol": INT(1, 8),
          "lanes_per_direction": INT(1, 64),
          "coding_efficiency": FRACTION_OPEN + SCALAR_ONLY}),
    Case(links.gpu_bandwidth, {"link": PD, "n_links": 18},
         {"link": NOT_BANDWIDTH, "n_links": INT(1, 1024)}),
    Case(links.nvlink_link_bandwidth, {"generation": 4, "raw": False},
         {"generation": INT(1, 5)}, exempt={"raw": _FLAG}),
    Case(links.nvlink_gpu_bandwidth, {"generation": 4, "n_links": 18, "raw": False},
         {"generation": INT(1, 5),
          "n_links": [v for v in INT(1, 1024) if v is not None]},
         exempt={"raw": _FLAG}),
    Case(links.transfer_time, {"message_bytes": 1e6, "latency": 1e-6, "bandwidth": PD},
         {"message_bytes": NONNEG, "latency": NONNEG, "bandwidth": RATE}),
    Case(links.effective_bandwidth,
         {"message_bytes": 1e6, "latency": 1e-6, "bandwidth": PD},
         {"message_bytes": POS, "latency": NONNEG, "bandwidth": RATE}),
    Case(links.half_bandwidth_size, {"latency": 1e-6, "bandwidth": PD},
         {"latency": NONNEG, "bandwidth": RATE}),
    Case(links.fit_alpha_beta, {"message_bytes": [1e3, 1e6, 1e9],
                                "times": [1e-6, 2e-6, 4e-5], "weighting": "relative"},
         {"message_bytes": POS + [[1e3, NAN, 1e9], [1e3, -1e6, 1e9]],
          "times": POS + [[1e-6, INF, 4e-5]], "weighting": CHOICE("log")}),
    # --- collectives ------------------------------------------------------------------
    Case(collectives.ring_allreduce_time, {"message_bytes": 1e9, "n_ranks": 8,
                                           "bandwidth": PD, "latency": 1e-6},
         {"message_bytes": NONNEG, "n_ranks": INT(1), "bandwidth": RATE,
          "latency": NONNEG}),
    Case(collectives.algbw, {"message_bytes": 1e9, "time": 1e-3},
         {"message_bytes": NONNEG, "time": POS}),
    Case(collectives.busbw, {"message_bytes": 1e9, "time": 1e-3, "op": "all_reduce",
                             "n_ranks": 8},
         {"message_bytes": NONNEG, "time": POS, "op": CHOICE("allreduce"),
          "n_ranks": INT(1)}),
    Case(collectives.busbw_factor, {"op": "all_gather", "n_ranks": 8},
         {"op": CHOICE("ALL_REDUCE"), "n_ranks": INT(1)}),
    Case(collectives.model_constant, {"path": "protocols/LL/bandwidth"},
         {"path": ["", "/", "protocols/XX", None, 3, ["protocols"]]}),
    Case(collectives.wire_factor, {"collective": "all_reduce", "n_ranks": 8,
                                   "algorithm": "ring"},
         {"collective": CHOICE("allreduce"), "n_ranks": INT(1),
          "algorithm": CHOICE("mesh")}),
    Case(collectives.ring_steps, {"collective": "all_gather", "n_ranks": 8,
                                  "algorithm": "ring", "nodes": 1},
         {"collective": CHOICE(), "n_ranks": INT(1), "algorithm": CHOICE(),
          "nodes": INT(1, 8)}),
    Case(collectives.fabric_bandwidth, {"system": "hgx-h200", "transport": "p2p",
                                        "scope": "intra"},
         {"system": CHOICE("hgx-h900"), "transport": CHOICE("nvlink"),
          "scope": CHOICE("global")}),
    Case(collectives.predict, {"collective": "all_reduce", "message_bytes": 2**20,
                               "n_ranks": 2, "system": "h200-x2-measured",
                               "transport": "p2p", "algorithm": "auto",
                               "protocol": "auto", "nvls": True},
         {"collective": CHOICE(), "message_bytes": POS, "n_ranks": INT(1, 2),
          "system": CHOICE(), "transport": CHOICE("nvlink"),
          "algorithm": CHOICE("rings"), "protocol": CHOICE("LL64"),
          "nvls": ["yes", None, 1, ["on"]],
          "gpus_per_process": [v for v in INT(1, 2) if v is not None]}),
    Case(collectives.collective_time, {"collective": "all_gather",
                                       "message_bytes": 2**20, "n_ranks": 2,
                                       "system": "h200-x2-measured",
                                       "transport": "shm", "algorithm": "auto",
                                       "protocol": "auto", "nvls": False},
         {"collective": CHOICE(), "message_bytes": POS, "n_ranks": INT(1, 2),
          "system": CHOICE(), "transport": CHOICE(), "algorithm": CHOICE(),
          "protocol": CHOICE(), "nvls": ["off", None, 0],
          "gpus_per_process": [v for v in INT(1, 2) if v is not None]}),
    Case(collectives.calibrate, {"collective": "all_reduce",
                                 "message_bytes": [8, 2**27], "times": [1e-5, 5e-4],
                                 "n_ranks": 2, "system": "h200-x2-measured",
                                 "transport": "p2p", "fill": 0.2,
                                 "fill_bytes": 1e6},
         {"collective": CHOICE(), "message_bytes": POS, "times": POS,
          "n_ranks": INT(2, 2), "system": CHOICE(), "transport": CHOICE(),
          "fill": [v for v in NONNEG if v is not None],        # None = default
          "fill_bytes": [v for v in NONNEG if v is not None],
          "gpus_per_process": [v for v in INT(1, 2) if v is not None]}),
    # --- scaling ----------------------------------------------------------------------
    Case(scaling.assumption, {"name": "mfu"}, {"name": CHOICE("MFU")}),
    Case(scaling.assumption_info, {"name": "mfu"}, {"name": CHOICE("MFU")}),
    Case(scaling.growth, {"from_gpu": "V100", "to_gpu": "H100",
                          "metric": "fp16_dense_flops"},
         {"from_gpu": CHOICE("v100"), "to_gpu": CHOICE("H300"),
          "metric": CHOICE("tflops")}),
    Case(scaling.growth_table, {"gpus": ["H100"], "baseline": "V100"},
         {"gpus": ["H100", ["H300"], [None], 3], "baseline": CHOICE("v100")}),
    Case(scaling.scaling_efficiency, {"compute_time": 1.0, "comm_time": 0.5,
                                      "overlap": 0.5},
         {"compute_time": POS, "comm_time": NONNEG, "overlap": FRACTION_CLOSED}),
    Case(scaling.effective_gpus, {"n_gpus": 8, "compute_time": 1.0, "comm_time": 0.5,
                                  "overlap": 0.5},
         {"n_gpus": INT(1), "compute_time": POS, "comm_time": NONNEG,
          "overlap": FRACTION_CLOSED}),
    Case(scaling.exposed_comm_share, {"compute_time": 1.0, "comm_time": 0.5,
                                      "overlap": 0.5},
         {"compute_time": POS, "comm_time": NONNEG, "overlap": FRACTION_CLOSED}),
    Case(scaling.data_parallel_step,
         {"gpu": "H100", "n_gpus": 8, "params": 7e9, "tokens_per_gpu": 4096,
          "mfu": 0.4, "overlap": 0.0, "latency": 1e-6, "link_efficiency": 0.8,
          "bandwidth": None},
         {"gpu": CHOICE("h100"), "n_gpus": INT(1), "params": POS + SCALAR_ONLY,
          "tokens_per_gpu": POS + SCALAR_ONLY,
          "mfu": [v for v in FRACTION_OPEN if v is not None] + SCALAR_ONLY,
          "overlap": FRACTION_CLOSED + SCALAR_ONLY,
          "latency": [v for v in NONNEG if v is not None] + SCALAR_ONLY,
          "link_efficiency": [v for v in FRACTION_OPEN if v is not None],
          "bandwidth": [v for v in NOT_BANDWIDTH if v is not None]
                       + [BD, Bandwidth(0, "per_direction")]}),
    Case(scaling.breakeven_tokens_per_gpu,
         {"gpu": "H100", "n_gpus": 8, "mfu": 0.4, "link_efficiency": 0.8},
         {"gpu": CHOICE("B100"), "n_gpus": INT(2),
          "mfu": [v for v in FRACTION_OPEN if v is not None],
          "link_efficiency": [v for v in FRACTION_OPEN if v is not None]}),
    # --- specs ------------------------------------------------------------------------
    Case(specs.nvlink, {"generation": 4}, {"generation": INT(1, 5)}),
    Case(specs.pcie, {"generation": 5}, {"generation": INT(1, 6)}),
    Case(specs.gpu, {"name": "H100"}, {"name": CHOICE("h100", " H100"),
                                       "variant": ["no-such-thing", "", 3, True, ["x"],
                                                   "pcie 80gb", "SXM2 32GB"]}),
    Case(specs.nic, {"name": "ConnectX-7"}, {"name": CHOICE("connectx-7", "CX7")}),
    Case(specs.read_data_text, {"name": "gpus.csv"},
         {"name": CHOICE("..", "../specs.py", ".hidden", "data/gpus.csv")}),
    # --- measurements -----------------------------------------------------------------
    Case(measurements.copy_bandwidth, {"name": "h200_copy_bandwidth"},
         {"name": CHOICE("../gpus", "a/b", "h200 copy")}),
    Case(measurements.raw_capture, {"run": "h200-x2-2026-11-30",
                                    "filename": "topo-m.txt"},
         {"run": [None, 3, True, "..", "../x", ".git", ["x"]],
          "filename": [None, 3, True, "..", "a/b", ".hidden", ["x"]]}),
    Case(measurements.collective_run, {"run": "h200-x2-2026-11-30-floors",
                                       "filename": "s_default_r1.csv"},
         {"run": [None, 3, True, "..", "no-such-run", ["x"]],
          "filename": [None, 3, "a/b", "versions.txt", "command.sh", "missing.csv"]}),
    Case(measurements.pool_runs,
         {"runs": [("h200-x2-2026-11-30-floors", "s_default_r1.csv")]},
         {"runs": [None, 3, True, "h200", [], ["h200-x2-2026-11-30-floors"],
                   [("h200-x2-2026-11-30-floors", "versions.txt")],
                   [("h200-x2-2026-11-30-floors", "s_default_r1.csv", "x")],
                   [("h200-x2-2026-11-30-floors", 3)]]}),
    Case(measurements.parse_nvlink_status,
         {"text": "GPU 0: NVIDIA H200\n\t Link 0: 26.562 GB/s\n"},
         {"text": [None, 3, 2.5, True, b"GPU 0: x", ["GPU 0: x"]]}),
    Case(measurements.parse_nccl_choices,
         {"text": "NCCL INFO AllReduce: 8 Bytes -> Algo RING proto LL "
                  "channel{Lo..Hi}={0..0}", "collective": "all_reduce"},
         {"text": [None, 3, True, b"x", ["x"], "", "no choice line here"],
          "collective": CHOICE("AllReduce", "alltoall")}),
    # --- topology ---------------------------------------------------------------------
    *[Case(f, {"topo": _TOPO_A, "a": "gpu0", "b": "gpu4"},
           {"topo": _TOPO_BAD, "a": _NODE_BAD, "b": _NODE_BAD + extra_b})
      for f, extra_b in ((topology.path, []), (topology.path_latency, []),
                         (topology.bottleneck_bandwidth, ["gpu0"]))],
    Case(topology.path_class, {"topo": _TOPO_A, "a": "gpu0", "b": "nic1"},
         {"topo": _TOPO_BAD, "a": _NODE_BAD + ["cpu0", "sw0"],
          "b": _NODE_BAD + ["cpu1", "sw1"]}),
    Case(topology.pair_table, {"topo": _TOPO_A, "acs_enabled": False, "iommu": "off",
                               "p2p_level": "PXB"},
         {"topo": _TOPO_BAD, "acs_enabled": [None, 1, 0, "no"],
          "iommu": CHOICE("pt", "ON"), "p2p_level": CHOICE("pxb", "PIX2")}),
    Case(topology.p2p_possible, {"topo": _TOPO_A, "a": "gpu0", "b": "gpu1",
                                 "acs_enabled": False, "iommu": "off"},
         {"topo": _TOPO_BAD, "a": _NODE_BAD + ["cpu0"], "b": _NODE_BAD + ["gpu0"],
          "acs_enabled": [None, 1, 0, "no"], "iommu": CHOICE("pt", "ON")}),
    Case(topology.nccl_transport, {"topo": _TOPO_A, "a": "gpu0", "b": "gpu1",
                                   "acs_enabled": True, "iommu": "on",
                                   "p2p_level": "SYS"},
         {"topo": _TOPO_BAD, "a": _NODE_BAD + ["nic0", "cpu0"],
          "b": _NODE_BAD + ["gpu0", "nic1"], "acs_enabled": [None, 1, "yes"],
          "iommu": CHOICE("off "), "p2p_level": CHOICE("pxb", "NODE", 2)}),
    Case(topology.concurrent_bandwidth,
         {"topo": _TOPO_A, "transfers": [("gpu0", "cpu0"), ("gpu1", "cpu0")]},
         {"topo": _TOPO_BAD,
          "transfers": [None, 3, "gpu0", [3], [("gpu0",)], [("gpu0", "gpu0")],
                        [("gpu0", "gpu99")], [(None, "gpu1")], [("a", "b", "c")]]}),
    Case(topology.render_topo_matrix, {"topo": _TOPO_A}, {"topo": _TOPO_BAD}),
    *[Case(f, {"text": "\tGPU0\tGPU1\nGPU0\t X \tNV18\nGPU1\tNV18\t X \n"},
           {"text": [None, 3, 2.5, True, b"GPU0", ["GPU0"], "", "GPU0 GPU0\n",
                     "GPU0 GPU1\nGPU0 X PIX\nGPU1 SYS X\n", "GPU0\nGPU0 Y\n"]})
      for f in (topology.read_topo_matrix, topology.parse_topo_matrix)],
    Case(topology.assumption, {"name": "pcie_switch_latency_s"},
         {"name": CHOICE("PCIE_SWITCH_LATENCY_S")}),
    Case(topology.cpu_link, {"name": "UPI 2.0"}, {"name": CHOICE("upi 2.0", "QPI")}),
    Case(topology.layout_a, {"pcie_generation": 5, "lanes": 16, "cpu_link": "UPI 2.0"},
         {"pcie_generation": INT(1, 6), "lanes": INT(1, 32) + [3, 24],
          "cpu_link": CHOICE("UPI")}),
    Case(topology.layout_b, {"pcie_generation": 4, "lanes": 8, "cascaded": False},
         {"pcie_generation": INT(1, 6), "lanes": INT(1, 32) + [3],
          "cascaded": [None, 1, 0, "yes"]}),
    Case(topology.nvswitch_node, {"gpu": "A100", "pcie_generation": 5, "lanes": 16,
                                  "cpu_link": "xGMI (EPYC 9004)"},
         {"gpu": CHOICE("V100", "h100"),
          "pcie_generation": [v for v in INT(1, 6) if v is not None],
          "lanes": INT(1, 32) + [5], "cpu_link": CHOICE("xGMI")}),
    Case(topology.pcie_box, {"n_gpus": 6, "gpus_per_switch": 4, "n_cpus": 1,
                             "pcie_generation": 5, "lanes": 16, "cpu_link": "UPI 1.0"},
         {"n_gpus": INT(1, 16), "gpus_per_switch": INT(1, 16), "n_cpus": INT(1, 8),
          "pcie_generation": INT(1, 6), "lanes": INT(1, 32) + [6],
          "cpu_link": CHOICE("UPI 3.0")}),
    # --- pcie -------------------------------------------------------------------------
    Case(pcie.protocol_info, {"name": "lcrc_bytes"},
         {"name": CHOICE("LCRC_bytes", "flit", "flit.")}),
    Case(pcie.protocol_constant, {"name": "flit.tlp_bytes"},
         {"name": CHOICE("tlp_bytes", "flit.TLP_bytes")}),
    Case(pcie.raw_bandwidth, {"generation": 5, "lanes": 16},
         {"generation": INT(1, 6), "lanes": _PCIE_LANES_BAD}),
    Case(pcie.encoded_bandwidth, {"generation": 3, "lanes": 8},
         {"generation": INT(1, 6), "lanes": _PCIE_LANES_BAD}),
    Case(pcie.tlp_overhead_bytes, {"generation": 2, "header_bytes": 12, "ecrc": True},
         {"generation": INT(1, 6), "header_bytes": _PCIE_HEADER_BAD,
          "ecrc": _PCIE_FLAG_BAD}),
    *[Case(f, {**first, "max_payload_bytes": 512, "header_bytes": None, "ecrc": False,
               "dllp_overhead": 0.02, "read_completion": False},
           {**bad_first, "max_payload_bytes": _PCIE_MPS_BAD,
            "header_bytes": _PCIE_HEADER_BAD, "ecrc": _PCIE_FLAG_BAD,
            "dllp_overhead": _PCIE_DLLP_BAD, "read_completion": _PCIE_FLAG_BAD})
      for f, first, bad_first in (
          (pcie.tlp_efficiency, {"generation": 6}, {"generation": INT(1, 6)}),
          (pcie.effective_bandwidth, {"generation": 4, "lanes": 4},
           {"generation": INT(1, 6), "lanes": _PCIE_LANES_BAD}))],
    Case(pcie.host_copy_time, {"message_bytes": 1e6, "latency": 5e-6, "bandwidth": PD,
                               "issue_floor": 2e-5},
         {"message_bytes": NONNEG, "latency": NONNEG, "bandwidth": RATE,
          "issue_floor": NONNEG}),
    Case(pcie.staged_bandwidth, {"pinned_bandwidth": PD, "host_memcpy_bandwidth": 2e10},
         {"pinned_bandwidth": RATE + SCALAR_ONLY,
          "host_memcpy_bandwidth": RATE + SCALAR_ONLY}),
    Case(pcie.copy_bandwidth, {"kind": "p2p", "memory": "pinned", "system": "dgx-h100"},
         {"kind": CHOICE("H2D", "h2h"), "memory": CHOICE("Pinned", "locked"),
          "system": _SYSTEM_BAD}),
    Case(pcie.copy_time, {"message_bytes": [8, 1e9], "kind": "d2h",
                          "memory": "pageable", "system": "h100-pcie",
                          "caller": "pytorch", "direction": "one"},
         {"message_bytes": NONNEG, "kind": CHOICE("D2H"), "memory": CHOICE("paged"),
          "system": _SYSTEM_BAD, "caller": [c for c in CHOICE("CUDA") if c is not None],
          "direction": CHOICE("both", "One")}),
    Case(pcie.calibrate_copy, {"message_bytes": [4096, 2**20, 2**24, 2**28],
                               "times": [2.4e-5, 2.6e-5, 3.1e-4, 4.8e-3],
                               "bandwidth_bound": 2.0, "weighting": "absolute"},
         {"message_bytes": POS + [[4096, NAN, 2**24, 2**28], [1, 2, 3]],
          "times": POS + [[2.4e-5, -1, 3.1e-4, 4.8e-3], [1e-5, 1e-5, 1e-5, 1e-5]],
          "bandwidth_bound": [0.5, 0, -1, NAN, INF, "2", None, True, [1.0, 2.0]],
          "weighting": CHOICE("log")}),
    Case(pcie.calibrate_copies, {"run": None, "system": "h200-x2-measured"},
         {"run": [3, "h200_copy_bandwidth", True, {}, ["p2p"]],
          "system": _SYSTEM_BAD}),
    # --- systems ----------------------------------------------------------------------
    Case(systems.get, {"name": "hgx-h200"}, {"name": CHOICE("HGX-H200", "hgx_h200")}),
    Case(systems.resolve, {"system": "hgx-h200"}, {"system": _SYSTEM_BAD}),
    Case(systems.load, {"path": _SYSTEMS_FILE},
         {"path": [None, 3, True, "", ["x"], "/no/such/file.yaml", "/"]}),
    Case(systems.parse, {"text": _SYSTEMS_YAML, "source": "box.yaml"},
         {"text": [None, 3, True, b"systems: {}", ["systems"]],
          "source": [None, 3, True, ["x"]]}),
    # collectives issue: NVLink peers of a preset (hybrid cube mesh, NVL72 ...)
    Case(systems.nvlink_peers, {"system": "dgx-1-v100"}, {"system": _SYSTEM_BAD}),
]

#: Public functions with no parameters (nothing to refuse).
NO_ARGS = {specs.nvlink_generations, specs.pcie_generations, specs.gpus,
           specs.gpu_names, specs.nics}
NO_ARGS |= {topology.cpu_links, pcie.transport_shares}
NO_ARGS |= {systems.names, scaling.gpu_names}

# Later modules keep their rows in tests/models/bad_input_<module>.py (see bad_values.py).
for _path in sorted(Path(__file__).parent.glob("bad_input_*.py")):
    _spec = importlib.util.spec_from_file_location(f"bad_input_{_path.stem}", _path)
    _table = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_table)
    MODULES += tuple(_table.MODULES)
    CASES += list(_table.CASES)
    NO_ARGS |= set(getattr(_table, "NO_ARGS", ()))


def _bad_params():
    for case in CASES:
        for param, values in case.bad.items():
            for v in values:
                marks = []
                reason = case.xfail.get((param, repr(v))) or case.xfail.get(param)
                if reason:
                    marks.append(pytest.mark.xfail(strict=True, reason=reason))
                yield pytest.param(case, param, v, marks=marks,
                                   id=f"{case.name}-{param}-{v!r}"[:90])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_valid_kwargs_work(case):
    """Sanity: the valid call succeeds, so a refusal below is due to the bad value."""
    case.func(**case.valid)


@pytest.mark.parametrize("case, param, value", list(_bad_params()))
def test_bad_input_raises_value_error_naming_parameter(case, param, value):
    kwargs = {**case.valid, param: value}
    with pytest.raises(ValueError) as info:
        case.func(**kwargs)
    assert re.search(rf"\b{re.escape(param)}\b", str(info.value)), (
        f"{case.name}({param}={value!r}) raised {info.value!r}, which does not name "
        f"{param!r}")


# --- huge and 2-D values: a ValueError naming the parameter, or a finite answer -------
def _numeric(v):
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


# Rows that still overflow, in modules other engineers own at the moment (pcie.py and
# parallelism/*): strict xfails, so the fix (decorate the function with
# gpulab._validate.finite_answer, or check its outputs with finite_result) turns
# them into failures to remove here.
_OWNED = ("gpulab/pcie.py and gpulab/parallelism/*: not yet checked for overflow "
          "(decorate with _validate.finite_answer)")
_H = ("1e+308", "1.7e+308")
_HUGE_XFAIL = {}


def _huge_params():
    for case in CASES:
        for param, valid in case.valid.items():
            if param in case.exempt:
                continue
            if _numeric(valid):
                values = HUGE + [ARRAY_2D]
            elif isinstance(valid, (list, tuple, np.ndarray)) and len(valid) \
                    and all(_numeric(x) for x in np.ravel(np.asarray(valid, dtype=object))):
                values = HUGE + [ARRAY_2D]
            else:
                continue
            for v in values:
                marks = []
                if repr(v) in _HUGE_XFAIL.get((case.name, param), ()):
                    marks.append(pytest.mark.xfail(strict=True, reason=_OWNED))
                yield pytest.param(case, param, v, marks=marks,
                                   id=f"{case.name}-{param}-{v!r}"[:90])


def _finite(obj, seen=0):
    """Every number reachable from ``obj`` (arrays, dataclasses, dicts, lists,
    Bandwidth) is finite."""
    if seen > 4 or obj is None or isinstance(obj, (str, bytes, bool)):
        return True
    if isinstance(obj, numbers.Number):
        return bool(np.isfinite(obj))
    if isinstance(obj, np.ndarray):
        return obj.dtype.kind not in "fc" or bool(np.isfinite(obj).all())
    if isinstance(obj, Bandwidth):
        return bool(np.isfinite(obj.bytes_per_s))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return all(_finite(getattr(obj, f.name), seen + 1)
                   for f in dataclasses.fields(obj))
    if isinstance(obj, dict):
        return all(_finite(v, seen + 1) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return all(_finite(v, seen + 1) for v in obj)
    return True


@pytest.mark.parametrize("case, param, value", list(_huge_params()))
def test_huge_or_2d_input_is_refused_or_answered_finite(case, param, value):
    valid = case.valid[param]
    if value is ARRAY_2D:
        row = np.atleast_1d(np.asarray(valid, dtype=float)).tolist()
        value = [row, row]
    elif not _numeric(valid):
        value = [value] * len(valid)
    kwargs = {**case.valid, param: value}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)   # overflow warnings too
            out = case.func(**kwargs)
    except ValueError as exc:
        assert re.search(rf"\b{re.escape(param)}\b", str(exc)), (
            f"{case.name}({param}={value!r:.40}) raised {exc!r}, which does not name "
            f"{param!r}")
    else:
        assert _finite(out), f"{case.name}({param}={value!r:.40}) returned {out!r:.200}"


def _numeric_params(case):
    out = []
    for param, valid in case.valid.items():
        if param in case.exempt:
            continue
        if _numeric(valid) or (isinstance(valid, (list, tuple)) and valid and all(
                _numeric(x) for x in np.ravel(np.asarray(valid, dtype=object)))):
            out.append(param)
    return out


# pcie.py and parallelism/* are other engineers' at the moment: hypothesis finds
# overflows there (roi.slowdown(t_slow=2.2e-313) -> -inf, step.step_time,
# comm.*, pcie.calibrate_copy naming 'times' for a bad message_bytes). The "ci"
# profile is derandomized, so these fail on every run: strict xfails.
_PROPERTY_XFAIL = set()
_NUMERIC_CASES = [pytest.param(c, marks=[pytest.mark.xfail(strict=True, reason=_OWNED)]
                               if c.name in _PROPERTY_XFAIL else [])
                  for c in CASES if _numeric_params(c)]
_ANY_FINITE = st.one_of(st.floats(allow_nan=False, allow_infinity=False),
                        st.integers(-10**400, 10**400),
                        st.floats(1e250, 1.79e308), st.floats(-1e-300, 1e-300))


@pytest.mark.parametrize("case", _NUMERIC_CASES,
                         ids=[c.values[0].name for c in _NUMERIC_CASES])
@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_property_finite_input_gives_finite_answer_or_value_error(case, data):
    """Property: any finite number (or huge int) in one numeric parameter, the
    others valid: a ValueError naming that parameter, or a finite answer."""
    param = data.draw(st.sampled_from(_numeric_params(case)), label="param")
    x = data.draw(_ANY_FINITE, label="value")
    valid = case.valid[param]
    value = x if _numeric(valid) else [x] * len(valid)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            out = case.func(**{**case.valid, param: value})
    except ValueError as exc:
        assert re.search(rf"\b{re.escape(param)}\b", str(exc)), (case.name, param, exc)
    else:
        if (case.name, param) in _HUGE_XFAIL:
            return                      # known, listed above (other owners' modules)
        assert _finite(out), f"{case.name}({param}={value!r:.40}) returned {out!r:.200}"


# --- meta-tests: the table covers the API ---------------------------------------------
def _public_functions():
    for mod in MODULES:
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isfunction(obj):
                yield mod, name, obj


def test_every_public_function_is_in_the_table():
    covered = {c.func for c in CASES} | NO_ARGS
    missing = [f"{m.__name__}.{n}" for m, n, f in _public_functions()
               if f not in covered]
    assert not missing, f"public functions without a bad-input row: {missing}"


def test_no_args_functions_really_have_no_parameters():
    for f in NO_ARGS:
        assert not inspect.signature(f).parameters, f


def test_every_parameter_is_covered_or_exempt():
    problems = []
    for case in CASES:
        params = [p for p in inspect.signature(case.func).parameters
                  if p not in ("self", "cls")]
        for p in params:
            if p not in case.bad and p not in case.exempt:
                problems.append(f"{case.name}: parameter {p!r} has no bad values")
        for p in list(case.bad) + list(case.exempt) + list(case.valid):
            if p not in params:
                problems.append(f"{case.name}: table names unknown parameter {p!r}")
    assert not problems, problems


def test_table_is_not_trivial():
    n = sum(len(v) for c in CASES for v in c.bad.values())
    assert n > 300
    assert len([f for _, _, f in _public_functions()]) >= 35


# --- the cases issue 12 found, by name -----------------------------------------------
@pytest.mark.parametrize("call, param", [
    (lambda: units.to_gb(10**400), "n_bytes"),                       # was OverflowError
    (lambda: collectives.predict("all_reduce", [[8, 16], [32, 64]], 2,
                                 "h200-x2-measured"), "message_bytes"),   # IndexError
    (lambda: collectives.algbw(1e308, 1e-3), "message_bytes"),      # was inf
    (lambda: collectives.busbw(1e308, 1e-3, "all_reduce", 8), "message_bytes"),
    (lambda: collectives.ring_allreduce_time(1.7e308, 8, PD, 1e-6), "message_bytes"),
    (lambda: links.lane_rate(1e308, 2), "symbol_rate"),
    (lambda: links.link_bandwidth(symbol_rate=1e308, bits_per_symbol=2,
                                  lanes_per_direction=2), "symbol_rate"),
    (lambda: scaling.data_parallel_step("H100", 8, params=1e308), "params"),
])
def test_issue_cases_raise_value_error_naming_the_callers_parameter(call, param):
    with pytest.raises(ValueError) as info:
        call()
    assert re.search(rf"\b{param}\b", str(info.value)), info.value
    assert "bytes_per_s" not in str(info.value)        # not an internal parameter
