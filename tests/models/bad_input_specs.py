"""Bad-input rows for the GPU-variant lookup of gpulab.specs (collected by
tests/models/test_bad_input.py; specs' older rows live in that file)."""
from __future__ import annotations

from bad_values import CHOICE, Case

from gpulab import specs

MODULES = ()                     # specs is already listed by test_bad_input.py
NO_ARGS = set()

CASES = [
    Case(specs.gpu_variants, {"name": "H100"}, {"name": CHOICE("h100", "H100 PCIe")}),
]
