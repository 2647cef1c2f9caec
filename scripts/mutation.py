"""Mutation testing of the model modules with mutmut (``make mutation``; not part of ``make test``).

For each target (a model module or package), smallest first, one at a time:

1. copy ``gpulab/``, ``tests/``, ``scripts/``, ``conftest.py``, ``jupyter/`` and
   ``pyproject.toml`` into ``_build/mutation/work/<target>/`` with a ``setup.cfg`` that tells mutmut which file(s)
   to mutate and which test files cover them (so that each target runs only its own tests);
2. let mutmut generate every mutant of the target and record which tests reach which function;
3. run a sample of at most ``--max-mutants`` mutants, drawn with a fixed seed (``--seed``),
   one process at a time (``--jobs``), under ``nice``;
4. read the verdicts from mutmut's result files.

Writes ``_build/mutation/report.md`` (per source file: mutants run, killed, survived,
no test, timeout, score) and ``_build/mutation/survivors/<target>.txt`` (the diff of every
mutant left alive), and prints the report. The score is (killed + timeout) / mutants run;
a mutant that no selected test reaches counts as alive. Mutants judged equivalent are
listed, with their reason, in ``tests/mutation_equivalents.md``; they are not subtracted.

Needs mutmut (``pip install -r requirements-dev.txt``). Usage::

    python scripts/mutation.py                      # every target, 200 mutants each
    python scripts/mutation.py units links --max-mutants 0   # all mutants of two targets
    cp _build/mutation/runs.json before.json        # ... add tests, then:
    python scripts/mutation.py units --only-alive before.json  # rerun the survivors only

With ``--only-alive`` the sample is the previous run's and its kills are kept (tests were only
added, so a killed mutant stays killed); only the mutants it left alive run again.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "_build" / "mutation"
MODELS = "tests/models"
#: tests that every target runs: bad input must be refused with the parameter's name
COMMON_TESTS = (f"{MODELS}/test_bad_input.py",)


@dataclass(frozen=True)
class Target:
    name: str
    sources: tuple[str, ...]       # paths (globs) under the repository root to mutate
    tests: tuple[str, ...]         # test files that cover them (plus test_mutants_<name>*.py)
    keywords: str                  # pytest -k: this target's rows of the shared bad-input table

    def source_files(self) -> list[Path]:
        files: list[Path] = []
        for pattern in self.sources:
            files += sorted(p for p in ROOT.glob(pattern) if p.suffix == ".py")
        return files

    def size(self) -> int:
        return sum(p.stat().st_size for p in self.source_files())

    def test_files(self) -> list[str]:
        own = sorted(str(p.relative_to(ROOT))
                     for p in (ROOT / MODELS).glob(f"test_mutants_{self.name}*.py"))
        return [t for t in (*self.tests, *COMMON_TESTS, *own) if (ROOT / t).exists()]


TARGETS = (
    Target("units", ("gpulab/units.py",), (f"{MODELS}/test_units.py",), "units"),
    Target("links", ("gpulab/links.py",), (f"{MODELS}/test_links.py",), "links"),
    Target("scaling", ("gpulab/scaling.py",), (f"{MODELS}/test_scaling.py",), "scaling"),
    Target("pcie", ("gpulab/pcie/*.py",), (f"{MODELS}/test_pcie.py", f"{MODELS}/test_copies.py"),
           "pcie or link or copies"),
    Target("collectives", ("gpulab/collectives.py",),
           (f"{MODELS}/test_collectives.py", f"{MODELS}/test_collectives_model.py"),
           "collectives"),
    Target("network", ("gpulab/network/*.py",), (f"{MODELS}/test_network.py",),
           "network or perftest"),
    Target("parallelism", ("gpulab/parallelism/*.py",),
           (f"{MODELS}/test_parallelism.py", f"{MODELS}/test_memory.py",
            f"{MODELS}/test_efficiency.py", f"{MODELS}/test_step_oracles.py",
            f"{MODELS}/test_moe.py"),
           "parallelism or memory or efficiency or model or layout or comm or step or chooser"
           " or tp or roi"),
    Target("topology", ("gpulab/topology/*.py",),
           (f"{MODELS}/test_topology.py", f"{MODELS}/test_topo_matrix.py"),
           "topology or topo or paths or graph"),
    Target("specs", ("gpulab/specs.py",), (f"{MODELS}/test_specs.py",), "specs"),
    Target("systems", ("gpulab/systems/*.py",), (f"{MODELS}/test_systems.py",),
           "systems or loader or copies"),
)

#: what the tests need besides gpulab/ and tests/ (test_efficiency.py runs a script)
COPY = ("gpulab", "tests", "jupyter", "scripts", "conftest.py", "pyproject.toml")
#: mutmut's verdicts (mutmut/stats.py), grouped for the report
KILLED = {1, 3}
SURVIVED = {0}
NO_TESTS = {5, 33}
TIMEOUT = {36, -24, 24, 152, 255}
SKIPPED = {34, 37}


def mutmut_exe() -> str:
    exe = Path(sys.executable).with_name("mutmut")
    if exe.exists():
        return str(exe)
    found = shutil.which("mutmut")
    if not found:
        sys.exit("mutation: mutmut is not installed: pip install -r requirements-dev.txt")
    return found


def prepare(target: Target, work: Path) -> None:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    for name in COPY:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, work / name, ignore=ignore)
        elif src.exists():
            shutil.copy2(src, work / name)
    lines = ["[mutmut]", "source_paths = gpulab", "only_mutate ="]
    lines += [f"    {p}" for p in target.sources]
    lines += ["also_copy =", "    conftest.py", "    jupyter", "    scripts",
              "pytest_add_cli_args_test_selection ="]
    lines += [f"    {t}" for t in target.test_files()]
    # the shared bad-input table is large: keep its rows for this target (and the target's
    # own test files, whose names contain a keyword, whole)
    lines += ["    -k", f"    {target.keywords} or mutants"]
    lines += ["pytest_add_cli_args = -p no:cacheprovider -p no:randomly", ""]
    (work / "setup.cfg").write_text("\n".join(lines))


def read_results(work: Path) -> dict[str, dict[str, int | None]]:
    """{source file: {mutant name: exit code or None}} from mutmut's .meta files."""
    results = {}
    for meta in sorted((work / "mutants" / "gpulab").rglob("*.py.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        if codes:
            src = str(meta.relative_to(work / "mutants")).removesuffix(".meta")
            results[src] = codes
    return results


def run_mutmut(args: list[str], work: Path, log: Path) -> int:
    with log.open("a") as fh:
        fh.write(f"\n$ mutmut {' '.join(args[:3])}{' ...' if len(args) > 3 else ''}\n")
        fh.flush()
        return subprocess.call([mutmut_exe(), *args], cwd=work, stdout=fh, stderr=subprocess.STDOUT,
                               env={**os.environ, "PYTHONPATH": "", "PYTHONHASHSEED": "0"})


def survivors_diff(work: Path, names: list[str]) -> str:
    parts = []
    for name in names:
        shown = subprocess.run([mutmut_exe(), "show", name], cwd=work, capture_output=True,
                               text=True).stdout
        parts.append(f"## {name}\n{shown.strip()}\n")
    return "\n".join(parts)


def run_target(target: Target, max_mutants: int, seed: int, jobs: int,
               previous: dict | None = None) -> dict:
    work = OUT / "work" / target.name
    log = OUT / "logs" / f"{target.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    prepare(target, work)
    start = time.monotonic()
    # Generate the mutants and the test map; the pattern matches no mutant, so none runs yet.
    rc = run_mutmut(["run", "--max-children", str(jobs), "gpulab.__no_mutant__*"], work, log)
    generated = read_results(work)
    if not generated:
        sys.exit(f"mutation: {target.name}: mutmut generated no mutants (exit {rc}); see {log}")
    names = sorted(n for codes in generated.values() for n in codes)
    sample = names
    if 0 < max_mutants < len(names):
        sample = sorted(random.Random(f"{seed}:{target.name}").sample(names, max_mutants))
    kept: dict[str, dict[str, int | None]] = {}
    if previous is not None:
        # the same mutants as the previous run; its kills stand (tests were only added)
        old = {n: c for codes in previous["by_file"].values() for n, c in codes.items()}
        missing = sorted(set(old) - set(names))
        if missing:
            sys.exit(f"mutation: {target.name}: the previous run's mutants {missing[:3]} no "
                     "longer exist (the module changed): run without --only-alive")
        sample = sorted(n for n, c in old.items() if c not in KILLED and c not in TIMEOUT)
        kept = {src: {n: c for n, c in codes.items() if n not in sample}
                for src, codes in previous["by_file"].items()}
    if sample:
        rc = run_mutmut(["run", "--max-children", str(jobs), *sample], work, log)
        if rc != 0:
            sys.exit(f"mutation: {target.name}: mutmut failed (exit {rc}); see {log}")
    chosen = set(sample)
    results = {src: {n: c for n, c in codes.items() if n in chosen}
               for src, codes in read_results(work).items()}
    for src, codes in kept.items():
        results.setdefault(src, {}).update(codes)
    alive = sorted(n for codes in results.values() for n, c in codes.items()
                   if c in SURVIVED or c in NO_TESTS)
    surv = OUT / "survivors" / f"{target.name}.txt"
    surv.parent.mkdir(parents=True, exist_ok=True)
    surv.write_text(survivors_diff(work, alive))
    return {"target": target.name, "generated": len(names), "sampled": len(sample),
            "rerun_alive_only": previous is not None,
            "seconds": time.monotonic() - start, "tests": target.test_files(),
            "by_file": {src: codes for src, codes in results.items() if codes}}


def counts(codes: dict[str, int | None]) -> dict[str, int]:
    c = {"mutants": len(codes), "killed": 0, "survived": 0, "no tests": 0, "timeout": 0,
         "other": 0}
    for code in codes.values():
        key = ("killed" if code in KILLED else "survived" if code in SURVIVED else
               "no tests" if code in NO_TESTS else "timeout" if code in TIMEOUT else "other")
        c[key] += 1
    run = c["mutants"]
    c["score"] = 100.0 * (c["killed"] + c["timeout"]) / run if run else float("nan")
    return c


def report(runs: list[dict], max_mutants: int, seed: int) -> str:
    lines = ["# Mutation testing of the model modules", "",
             f"Tool: mutmut {mutmut_version()}. Each target runs only the test files listed; "
             "mutmut runs, for each mutant, the tests among them that reach the mutated "
             "function.",
             ("Sampling: the previous run's sample (`--only-alive`): its kills are kept and "
              "only its survivors ran again; 'generated' is every mutant mutmut made."
              if any(r.get("rerun_alive_only") for r in runs) else
              f"Sampling: at most {max_mutants} mutants per target, drawn with the fixed seed "
              f"{seed} (`--max-mutants`, `--seed`); 'generated' is every mutant mutmut made."
              if max_mutants > 0 else "Sampling: none; every generated mutant ran."),
             "Score = (killed + timeout) / mutants run; 'no tests' (no selected test reaches "
             "the function) counts as alive. Survivors' diffs: `_build/mutation/survivors/`; "
             "equivalent mutants: `tests/mutation_equivalents.md`.", "",
             "| Module | Mutants run | Killed | Survived | No tests | Timeout | Score |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for run in runs:
        total: dict[str, int | None] = {}
        for src, codes in run["by_file"].items():
            total.update(codes)
            if len(run["by_file"]) > 1:
                lines.append(row(f"`{src}`", counts(codes)))
        rerun = (f"; {run['sampled']} alive before, rerun" if run.get("rerun_alive_only")
                 else "")
        lines.append(row(f"**{run['target']}** (of {run['generated']} generated, "
                         f"{run['seconds']:.0f} s{rerun})", counts(total)))
    lines += ["", "Tests per target:", ""]
    lines += [f"- {run['target']}: " + ", ".join(f"`{t}`" for t in run["tests"]) for run in runs]
    return "\n".join(lines) + "\n"


def row(label: str, c: dict) -> str:
    return (f"| {label} | {c['mutants']} | {c['killed']} | {c['survived']} | {c['no tests']} | "
            f"{c['timeout']} | {c['score']:.0f}% |")


def mutmut_version() -> str:
    from importlib.metadata import version
    return version("mutmut")


def main(argv: list[str] | None = None) -> int:
    names = [t.name for t in TARGETS]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", metavar="TARGET",
                        help=f"targets to run (default: all): {', '.join(names)}")
    parser.add_argument("--max-mutants", type=int, default=200,
                        help="mutants per target, sampled with --seed; 0 = all (default 200)")
    parser.add_argument("--seed", type=int, default=16, help="sampling seed (default 16)")
    parser.add_argument("--jobs", type=int, default=1, help="mutmut processes (default 1)")
    parser.add_argument("--nice", type=int, default=15, help="niceness increment (default 15)")
    parser.add_argument("--only-alive", type=Path, metavar="RUNS_JSON",
                        help="rerun only the mutants left alive in a previous run's runs.json "
                             "(same sample; its kills are kept): after adding tests")
    args = parser.parse_args(argv)
    unknown = [t for t in args.targets if t not in names]
    if unknown:
        parser.error(f"unknown target(s) {', '.join(unknown)}; choose from {', '.join(names)}")
    if args.max_mutants < 0 or args.jobs < 1:
        parser.error("--max-mutants must be >= 0 and --jobs >= 1")
    os.nice(args.nice)
    mutmut_exe()
    chosen = sorted((t for t in TARGETS if not args.targets or t.name in args.targets),
                    key=Target.size)
    previous = {}
    if args.only_alive:
        previous = {r["target"]: r for r in json.loads(args.only_alive.read_text())}
    runs = []
    for target in chosen:
        print(f"==> mutation: {target.name} ({', '.join(target.sources)})", flush=True)
        runs.append(run_target(target, args.max_mutants, args.seed, args.jobs,
                               previous.get(target.name)))
        text = report(runs, args.max_mutants, args.seed)
        (OUT / "report.md").write_text(text)
        (OUT / "runs.json").write_text(json.dumps(runs, indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
