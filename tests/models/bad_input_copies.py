"""Bad-input rows for the hardware copy model of gpulab.pcie and its CUDA C++ runs
(collected by tests/models/test_bad_input.py)."""
from __future__ import annotations

from bad_values import CHOICE, NONNEG, POS, SCALAR_ONLY, Case

from gpulab import measurements, pcie

MODULES = ()

_SYSTEM_BAD = [None, 3, True, "", "no-such-system", "HGX-H200", ["hgx-h200"], "/",
               "dgx-a100"]                 # dgx-a100: no hardware copy calibration
_NAME_BAD = [None, 3, True, "", "../x", "no_such.csv", ["copies_run1.csv"], ".hidden"]
_HW = {"kind": "h2d", "memory": "pinned", "direction": "both"}
_HW_BAD = {"kind": CHOICE("H2D", "p2p2"), "memory": CHOICE("paged"),
           "direction": CHOICE("One")}

CASES = [
    Case(pcie.hardware_key, dict(_HW), dict(_HW_BAD)),
    Case(pcie.hardware_copy, {**_HW, "system": "hgx-h200"},
         {**_HW_BAD, "system": _SYSTEM_BAD}),
    Case(pcie.copy_latency, {"message_bytes": [8, 1e9], **_HW, "system": "hgx-h200"},
         {"message_bytes": NONNEG, **_HW_BAD, "system": _SYSTEM_BAD}),
    Case(pcie.issue_cost, {**_HW, "caller": "cuda", "system": "hgx-h200"},
         {**_HW_BAD, "system": _SYSTEM_BAD, "caller": CHOICE("CUDA")}),
    Case(pcie.calibrate_copy_hardware, {"run": None, "small_bytes": 65536},
         {"run": [3, "copies_run1.csv", True, {}, ["h2d"]],
          "small_bytes": POS + SCALAR_ONLY + [1]}),
    Case(measurements.copy_latency_run,
         {"filename": "copies_run2.csv", "run": measurements.COPY_LATENCY_RUN},
         {"filename": _NAME_BAD + ["README.md"], "run": _NAME_BAD}),
    Case(measurements.gemm_power_trace,
         {"filename": "power_run2.csv", "run": measurements.OVERLAP_RUN},
         {"filename": _NAME_BAD + ["README.md", "overlap_held.csv"], "run": _NAME_BAD}),
    Case(measurements.full_step_runs,
         {"filenames": measurements.FULL_STEP_FILES, "run": measurements.FULL_STEP_RUN},
         {"filenames": [None, "full_step.csv", (), [3], ("README.md",),
                        ("command.sh",), ("no-such-file.csv",), ("../x.csv",)],
          "run": _NAME_BAD}),
    Case(measurements.kernel_profile,
         {"filename": "kernels_llama.csv", "run": measurements.KERNELS_RUN},
         {"filename": _NAME_BAD + ["README.md", "command.sh"], "run": _NAME_BAD}),
    Case(measurements.attention_kernels, {"run": measurements.ATTENTION_RUN},
         {"run": _NAME_BAD + [measurements.KERNELS_RUN]}),
    Case(measurements.power_clock_sweep, {"run": measurements.POWER_RUN},
         {"run": _NAME_BAD + [measurements.KERNELS_RUN, measurements.ATTENTION_RUN]}),
    Case(measurements.attention_power_trace,
         {"run": measurements.ATTENTION_RUN, "busy_w": 600.0},
         {"run": _NAME_BAD + [measurements.KERNELS_RUN],
          "busy_w": [0, -1.0, 2001, 1999.0, float("nan"), "600", True, None, [600.0]]}),
]
_FIT_SWEEP = measurements.copy_latency_run("copies_run1.csv")   # used by the fit
_SWEEPS_BAD = [None, 3, True, "copies_r1.csv", [], [("x",)], [(3, 4)],
               [("no-such-run", "copies_r1.csv")],
               [(measurements.COPY_REPEAT_RUN, "README.md")],
               list(measurements.COPY_HOLDOUT_SWEEPS[:1]) * 2]     # listed twice
CASES.append(Case(pcie.copy_holdout_errors, {"run": None, "system": "hgx-h200"},
                  {"run": [3, "copies_run2.csv", True, {}, ["h2d"], [], _FIT_SWEEP,
                           [_FIT_SWEEP]],
                   "system": _SYSTEM_BAD[:-1]}))
CASES += [
    Case(measurements.copy_latency_sweeps,
         {"sweeps": measurements.COPY_HOLDOUT_SWEEPS}, {"sweeps": _SWEEPS_BAD}),
    Case(measurements.pooled_copy_latency_run,
         {"sweeps": measurements.COPY_FIT_SWEEPS}, {"sweeps": _SWEEPS_BAD}),
]
