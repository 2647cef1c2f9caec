"""Bad-input rows for the functions added so that no answer is silently wrong:
collectives.local_copy_time (one rank: a copy in HBM) and
measurements.check_nvlink_status (what a capture is missing). Collected by
tests/models/test_bad_input.py."""
from __future__ import annotations

from bad_values import CHOICE, NONNEG, Case

from gpulab import collectives, measurements

MODULES = ()                      # both modules are listed in test_bad_input.py
CASES = [
    Case(collectives.local_copy_time, {"message_bytes": [8, 2**30],
                                       "system": "hgx-h200"},
         {"message_bytes": NONNEG, "system": CHOICE("HGX-H200")}),
    Case(measurements.check_nvlink_status,
         {"text": "GPU 0: NVIDIA H200\n\t Link 0: 26.562 GB/s\n", "n_gpus": 2},
         {"text": [None, 3, 2.5, True, b"GPU 0: x", ["GPU 0: x"]],
          "n_gpus": [0, -1, 2.5, "2", True, 1025, float("nan"), [2]]}),
]
