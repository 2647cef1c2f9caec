"""Bad-input rows for the model-state accounting of gpulab.parallelism (collected by
tests/models/test_bad_input.py; the module itself is listed in bad_input_parallelism)."""
from __future__ import annotations

from bad_values import CHOICE, INT, POS, SCALAR_ONLY, Case

from gpulab import parallelism as par

MODULES = ()

#: None is the documented default of the number formats and of fp32_grad_copy.
_DTYPE_BAD = [v for v in CHOICE("BF16", "float32", "fp8") if v is not None]
_OPT_FLAG = [1, 0, "yes", [True]]
_BYTES_BAD = [v for v in POS if v is not None] + SCALAR_ONLY + [16.5, 1e308]

CASES = [
    Case(par.model_state_bytes,
         {"dp": 8, "zero": 1, "param_dtype": "bf16", "grad_dtype": "fp32",
          "fp32_grad_copy": False, "weight_bytes": 2, "grad_bytes": 4},
         {"dp": INT(1, 1_000_000), "zero": INT(0, 3), "param_dtype": _DTYPE_BAD,
          "grad_dtype": _DTYPE_BAD, "fp32_grad_copy": _OPT_FLAG,
          "weight_bytes": _BYTES_BAD, "grad_bytes": _BYTES_BAD}),
]
