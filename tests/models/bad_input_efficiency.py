"""Bad-input rows for gpulab.parallelism.layer_efficiency (collected by
tests/models/test_bad_input.py)."""
from __future__ import annotations

from bad_values import CHOICE, INT, Case

from gpulab import parallelism as par

MODULES = ()

CASES = [
    Case(par.layer_efficiency,
         {"hidden": 8192, "heads": 64, "tp": 8, "seq_len": 2048, "micro_batch": 1,
          "gpu": "H200", "precision": "bf16"},
         {"hidden": INT(1, 10**7), "heads": INT(1, 8192) + [48],
          "tp": INT(1, 64) + [3], "seq_len": INT(1, 10**8),
          "micro_batch": INT(1, 10**6), "gpu": CHOICE("h200", "H200 SXM"),
          "precision": CHOICE("BF16", "fp16")}),
    Case(par.layer_efficiency,
         {"hidden": 8192, "heads": 64, "tp": 8, "seq_len": 2048, "micro_batch": 1,
          "gpu": "A100", "precision": "bf16"},
         {"precision": ["fp8"]},
         exempt={p: "covered by the row above" for p in
                 ("hidden", "heads", "tp", "seq_len", "micro_batch", "gpu")}),
]
