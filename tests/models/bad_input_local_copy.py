"""Bad-input rows for gpulab.collectives.local_copy_time (one rank: a copy in HBM;
collected by tests/models/test_bad_input.py)."""
from __future__ import annotations

from bad_values import CHOICE, NONNEG, Case

from gpulab import collectives

MODULES = ()                      # collectives is listed in test_bad_input.py
CASES = [
    Case(collectives.local_copy_time, {"message_bytes": [8, 2**30],
                                       "system": "hgx-h200"},
         {"message_bytes": NONNEG, "system": CHOICE("HGX-H200")}),
]
