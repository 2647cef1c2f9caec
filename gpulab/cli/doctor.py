"""``gpulab doctor``: a learner's pre-flight check before the labs.

One ``PASS``/``FAIL``/``SKIP`` line per check (:mod:`gpulab.doctor` holds the checks),
then a summary line. Exit status 0 when every required check passes, 1 otherwise; the
optional GPU checks (``nvidia-smi``, PyTorch CUDA, NCCL) never change it.
"""
from __future__ import annotations

import json

from .. import doctor
from .base import read_text_file


def register(sub, fmt):
    """Add ``gpulab doctor`` to the ``gpulab`` parser."""
    s = sub.add_parser(
        "doctor", help="check this environment for the labs (PASS/FAIL/SKIP lines)",
        description="Check Python, the packages the labs need, figures and widgets, "
                    "and (optional) NVIDIA GPUs, PyTorch CUDA and NCCL. Exit status 0 "
                    "when every required check passes, 1 otherwise.")
    s.add_argument("--requirements", metavar="FILE",
                   help="check the packages of this requirements file (name==version "
                        "or name>=version lines) instead of the built-in list")
    s.add_argument("--no-gpu", action="store_true",
                   help="skip the optional GPU checks (nvidia-smi, torch CUDA, NCCL)")
    s.add_argument("--format", choices=("table", "json"), default="table",
                   help="output format (default: table)")
    s.set_defaults(func=_cmd_doctor)


def _cmd_doctor(args, out):
    packages = None
    if args.requirements:
        text = read_text_file(args.requirements, "a pip requirements file")
        try:
            packages = doctor.read_requirements(text)
        except ValueError as exc:
            raise ValueError(f"--requirements {args.requirements}: {exc}") from None
    checks = doctor.run_checks(packages=packages, optional=not args.no_gpu)
    ok = doctor.passed(checks)
    if args.format == "json":
        json.dump({"passed": ok, "checks": [
            {"name": c.name, "status": c.status, "required": c.required,
             "detail": c.detail} for c in checks]}, out, indent=2)
        out.write("\n")
        return 0 if ok else 1
    width = max(len(c.name) + (0 if c.required else len(" (optional)"))
                for c in checks)
    for c in checks:
        out.write(doctor.format_check(c, width) + "\n")
    failed = [c.name for c in checks if c.required and c.status != "PASS"]
    n_req = sum(c.required for c in checks)
    if failed:
        out.write(f"gpulab doctor: FAILED {len(failed)} of {n_req} required checks: "
                  f"{', '.join(failed)}\n")
        return 1
    out.write(f"gpulab doctor: all {n_req} required checks passed; "
              "ready for the labs\n")
    return 0
