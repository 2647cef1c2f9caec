"""Messages of gpulab.scaling's refusals, written to kill the mutants other tests let live.

The scaling formulas themselves are covered by tests/models/test_scaling.py (efficiency,
effective GPUs, the 6PD step and the break-even batch); what survived there were the words
a learner reads when a GPU name or metric is wrong.
"""
from __future__ import annotations

import pytest

from gpulab import scaling

ONE_OF = r"must be one of ('[^',]+', )+'[^',]+'; got 'X1'$"


@pytest.mark.parametrize("call, name", [
    (lambda: scaling.breakeven_tokens_per_gpu("X1"), "gpu"),
    (lambda: scaling.growth("X1", "H100", "memory_bytes"), "from_gpu"),
    (lambda: scaling.growth("V100", "X1", "memory_bytes"), "to_gpu"),
    (lambda: scaling.growth_table(["X1"]), "gpus"),
    (lambda: scaling.growth_table(["H100"], baseline="X1"), "baseline"),
])
def test_unknown_gpu_lists_the_known_ones(call, name):
    with pytest.raises(ValueError, match=rf"^{name} {ONE_OF}"):
        call()


def test_fp8_growth_from_a_gpu_without_fp8():
    with pytest.raises(ValueError, match=r"^metric 'fp8_dense_flops' is not defined for V100 "
                                         r"\(it has no FP8 Tensor Cores\)$"):
        scaling.growth("V100", "H100", "fp8_dense_flops")


def test_empty_gpu_list():
    with pytest.raises(ValueError, match=r"^gpus must name at least one GPU$"):
        scaling.growth_table([])
