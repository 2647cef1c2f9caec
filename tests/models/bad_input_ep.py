"""Bad-input rows for gpulab.inference.ep and gpulab.inference.disagg (collected by
tests/models/test_bad_input.py)."""
from __future__ import annotations

from bad_values import CHOICE, INT, NONNEG, SCALAR_ONLY, Case

from gpulab.inference import disagg, ep

MODULES = (ep, disagg)


def _int_or_none(low, high):
    """Bad values of an integer parameter in [low, high] where None is valid."""
    return [v for v in INT(low, high) if v is not None]


NO_ARGS = {ep.deepep_h800}

_SYSTEM_BAD = [None, 3, True, "", "no-such-system", "HGX-H200", ["hgx-h200"],
               "h100-pcie"]
_TRAFFIC = dict(tokens=4096, hidden=7168, topk=8, experts=256, ep=32, gpus_per_node=8,
                kernel="normal", operation="dispatch", max_nodes=4)
_TRAFFIC_BAD = {"tokens": INT(1, 10**7), "hidden": INT(128, 2**20) + [7000, 100],
                "topk": INT(1, 256) + [257], "experts": INT(1, 65536) + [100],
                "ep": INT(1, 65536) + [12, 3], "gpus_per_node": INT(1, 1024),
                "kernel": CHOICE("LL", "low-latency"), "operation": CHOICE("Dispatch"),
                "max_nodes": _int_or_none(1, 4) + [5]}
_TIME = dict(fabric="hgx-h200", ep=32, tokens=128, hidden=7168, topk=8, experts=256,
             kernel="low_latency_nvlink", operation="combine", max_nodes=None)
_TIME_BAD = {"fabric": _SYSTEM_BAD, "ep": INT(1, 65536) + [12], "tokens": INT(1, 10**7),
             "hidden": INT(128, 2**20) + [7000], "topk": INT(1, 256) + [257],
             "experts": INT(1, 65536) + [100], "kernel": CHOICE("LL"),
             "operation": CHOICE("all2all"), "max_nodes": _int_or_none(1, 4) + [5]}

CASES = [
    Case(ep.ep_constant, {"name": "low_latency_s"}, {"name": CHOICE("LOW_LATENCY_S")}),
    Case(ep.token_bytes, {"hidden": 7168, "operation": "dispatch", "kernel": "normal"},
         {"hidden": INT(128, 2**20) + [7000], "operation": CHOICE("send"),
          "kernel": CHOICE("fast")}),
    Case(ep.expected_hits, {"groups": 8, "per_group": 32, "picks": 8},
         {"groups": INT(1, 10**6), "per_group": INT(1, 10**6), "picks": INT(1, 256)}),
    Case(ep.ep_traffic, _TRAFFIC, _TRAFFIC_BAD),
    Case(ep.ep_fabric, {"system": "gb200-nvl72"}, {"system": _SYSTEM_BAD}),
    Case(ep.ep_time, _TIME, _TIME_BAD),
    Case(ep.moe_calls, dict(system="deepep-h800", ep=16, tokens=4096, kernel="normal",
                            shapes=None),
         {"system": _SYSTEM_BAD, "ep": INT(1, 65536) + [12], "tokens": INT(1, 10**7),
          "kernel": CHOICE("LL"), "shapes": [3, "v3", {"hidden": 7168}, ["hidden"]]}),
    Case(ep.ep_checks, {"source_ids": ["deepep-v1-legacy"]},
         {"source_ids": [3, "deepep-v1-legacy", [], ["deepep-v2"], [None]]}),
    Case(disagg.ttft_with_transfer, {"prefill_s": 0.3, "transfer_s": 0.05, "layers": 80},
         {"prefill_s": NONNEG + SCALAR_ONLY, "transfer_s": NONNEG + SCALAR_ONLY,
          "layers": _int_or_none(1, 10_000)}),
    Case(disagg.exposed_share, {"prefill_s": 0.3, "transfer_s": 0.05, "layers": None},
         {"prefill_s": NONNEG + SCALAR_ONLY, "transfer_s": NONNEG + SCALAR_ONLY,
          "layers": _int_or_none(1, 10_000)}),
    Case(disagg.moved_kv_bytes, dict(layers=94, kv_heads=4, head_dim=128, tokens=128, tp=8,
                                     element_bytes=2),
         {"layers": INT(1, 10_000), "kv_heads": INT(1, 4096) + [3],
          "head_dim": INT(1, 4096), "tokens": INT(1, 10**8), "tp": INT(1, 1024) + [6],
          "element_bytes": INT(1, 4) + [3]}),
    Case(disagg.kv_transfer_checks, {"fabric": "roce"},
         {"fabric": CHOICE("RoCE", "nvlink")}),
]
