"""The answer keys of ``make answers`` (``_build/answers``): every lab ran with its
solutions filled in, every ✓ check cell passed, nothing raised; and the builder's
failure detection fails on a lab whose check fails.

Each lab has a one-page key table (``<lab>_key.md`` / ``.html``) with a row per ✓ check:
its answer, in a readable unit and rounding, equals the value the check accepted (the
✓ line of the executed lab), and its common slip comes from ``gpulab/data/lab_slips.yaml``,
which has an entry for every check of every lab.

Run ``make answers`` first (``make test`` does)."""
from __future__ import annotations

import ast
import json
import math
import re

import nbformat
import pytest
import yaml

from instructor_kit import BUILD, ROOT, import_script

ANSWERS = BUILD / "answers"


@pytest.fixture(scope="module")
def summary(skip_or_fail):
    f = ANSWERS / "summary.json"
    if not f.is_file():
        skip_or_fail("answer keys not built: run `make answers` (_build/answers missing)")
    return {r["lab"]: r for r in json.loads(f.read_text(encoding="utf-8"))}


def test_every_lab_has_an_answer_key(summary):
    labs = [p.name for p in import_script("build_answers").lab_paths()]
    assert labs and sorted(summary) == sorted(labs)


@pytest.mark.parametrize("lab", sorted(p.name for p in (ROOT / "labs").glob("lab*.ipynb")))
def test_answer_key_is_complete(summary, lab):
    r = summary[lab]
    assert r["error"] is None
    assert r["check_cells"] > 0 and r["check_cells_passed"] == r["check_cells"]
    nb = nbformat.read(ANSWERS / lab, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code if c.source.strip()), "a cell did not run"
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for c in code for o in c.outputs)
    assert "solutions: on" in text and "not attempted yet" not in text
    assert text.count("✓ ") >= r["check_cells"]
    assert (ANSWERS / lab).with_suffix(".html").stat().st_size > 0


def test_a_failing_check_fails_the_answer_key(tmp_path, monkeypatch):
    build_answers = import_script("build_answers")
    # run_lab turns solutions on in this process's environment (its kernels inherit it);
    # restore it afterwards, or every later test would run the labs' checks strict
    monkeypatch.setenv("GPULAB_LAB_SOLUTIONS", "1")
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("from gpulab.labcheck import check, status_line\n"
                                  "print(status_line())"),
        nbformat.v4.new_code_cell("check('1', 2.0, 2.0)"),
        nbformat.v4.new_code_cell("# ✓ check (run me)\ncheck('2', 400.0, 50.0, "
                                  "unit='GB/s')")])
    lab = tmp_path / "lab99_broken.ipynb"
    nbformat.write(nb, lab)
    out = tmp_path / "out"
    out.mkdir()
    r = build_answers.run_lab(lab, out, timeout=120)
    assert r["error"] and "8x too large" in r["error"]
    assert (r["check_cells"], r["check_cells_passed"]) == (2, 1)


# --- the answer key tables (one page per lab) ---------------------------------------
NUM = r"-?\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?"
PREFIXED = {  # a check's unit -> {unit written in a key or a ✓ line: factor to it}
    "bit/s": {"Tbit/s": 1e12, "Gbit/s": 1e9, "Mbit/s": 1e6, "kbit/s": 1e3, "bit/s": 1},
    "B": {"TB": 1e12, "GB": 1e9, "MB": 1e6, "kB": 1e3, "B": 1},
    "bytes": {"TB": 1e12, "GB": 1e9, "MB": 1e6, "kB": 1e3, "B": 1, "bytes": 1},
    "s": {"s": 1, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9},
}


def key_table(path):
    """The rows of a key's Markdown table: [(check, answer, slip)]."""
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines()
             if ln.startswith("| ")]
    assert lines and lines[0] == "| Check | Answer | Common slip |", path.name
    out = []
    for ln in lines[1:]:
        cells = [c.strip().replace(r"\|", "|") for c in re.split(r"(?<!\\)\|", ln)[1:-1]]
        out.append(tuple(cells))
    return out


def ticks(nb):
    """{check name: the value its ✓ line printed} of an executed lab."""
    out = {}
    for c in nb.cells:
        if c.cell_type == "code":
            for o in c.outputs:
                for m in re.finditer(r"(?m)^✓ (.+?): (.*)$", o.get("text", "")):
                    out.setdefault(m.group(1), m.group(2).strip())
    return out


def number(text, unit):
    """(value in the check's unit, significant digits written) of a key or ✓ text."""
    m = re.match(rf"({NUM})\s*(\S*)", text)
    assert m, f"no number in {text!r}"
    mantissa = m.group(1).split("e")[0].replace(",", "").replace(".", "").lstrip("-0")
    value = float(m.group(1).replace(",", ""))
    scale = PREFIXED.get(unit)
    if scale is not None:
        assert m.group(2) in scale, f"{text!r}: unit {m.group(2)!r} for a check in {unit}"
        value *= scale[m.group(2)]
    return value, max(len(mantissa), 1)


def agree(answer, tick, accepted):
    """Whether a key's answer is the value the check accepted (its ✓ line)."""
    want = accepted["expected"]
    if isinstance(want, dict) and "class" in want:
        return answer == f"the {want['class']} object caught" == \
            f"the {tick.split()[0]} object caught"
    if isinstance(want, bool):
        return answer == tick == str(want)
    if isinstance(want, str):
        return answer.casefold() == ast.literal_eval(tick).strip().casefold()
    if isinstance(want, dict):                           # a bandwidth
        words = answer.split(" GB/s ")[1]
        if words != tick.split(" GB/s ")[1]:
            return False
        unit = "GB/s"
    else:
        unit = accepted["unit"]
    got, digits = number(answer, unit)
    shown, _ = number(tick, unit)
    if isinstance(want, int) and not isinstance(want, bool) and unit not in PREFIXED:
        return got == shown == want
    tol = accepted["rel"] + 0.5 * 10 ** (1 - digits) + 1e-5
    return math.isclose(got, shown, rel_tol=tol)


@pytest.fixture(scope="module")
def keys(summary):
    f = ANSWERS / "answer_keys.json"
    assert f.is_file(), "make answers wrote no answer_keys.json"
    return json.loads(f.read_text(encoding="utf-8"))


@pytest.mark.parametrize("lab", sorted(p.name for p in (ROOT / "labs").glob("lab*.ipynb")))
def test_every_lab_has_a_key_table_with_the_answers_its_checks_accept(keys, lab):
    stem = lab.removesuffix(".ipynb")
    table = key_table(ANSWERS / f"{stem}_key.md")
    assert (ANSWERS / f"{stem}_key.html").stat().st_size > 0
    rows = keys[lab]
    assert table == [(r["check"], r["answer"], r["slip"]) for r in rows]
    printed = ticks(nbformat.read(ANSWERS / lab, as_version=4))
    assert [r["check"] for r in rows] == list(printed), "one row per ✓ check, in order"
    for r in rows:
        assert r["slip"].strip(), f"{lab} {r['check']}: no common slip"
        if r["written"]:           # a function or a free answer: the key says it in words
            continue
        assert "e+" not in r["answer"] and "e-" not in r["answer"], r["answer"]
        assert agree(r["answer"], printed[r["check"]], r["accepted"]), (
            f"{lab} {r['check']}: key says {r['answer']!r}, the check accepted "
            f"{printed[r['check']]!r}")
    index = (ANSWERS / "index.html").read_text(encoding="utf-8")
    assert f'href="{stem}_key.html"' in index


def test_the_key_check_catches_a_wrong_scale():
    acc = {"expected": 106.25e9, "rel": 1e-3, "unit": "bit/s"}
    assert agree("106.25 Gbit/s", "1.0625e+11 bit/s", acc)
    assert not agree("106.25 Mbit/s", "1.0625e+11 bit/s", acc)
    assert not agree("13.28 Gbit/s", "1.0625e+11 bit/s", acc)        # bytes, not bits
    bw = {"expected": {"bandwidth": 450e9, "direction": "per_direction"}, "rel": 1e-3,
          "unit": ""}
    assert agree("450 GB/s per direction", "450 GB/s per direction", bw)
    assert not agree("450 GB/s bidirectional", "450 GB/s per direction", bw)
    assert agree("7,340,032 B (7 MiB)", "7.34003e+06 B",
                 {"expected": 7340032.0, "rel": 1e-9, "unit": "B"})


# --- the slips: data per check, turned into the "Common slip" column -------------------
def literal_check_names(lab):
    nb = json.loads((ROOT / "labs" / lab).read_text(encoding="utf-8"))
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    return set(re.findall(r"\bcheck(?:_slips)?\(\s*\"([^\"]+)\"", code))


@pytest.mark.parametrize("lab", sorted(p.name for p in (ROOT / "labs").glob("lab*.ipynb")))
def test_every_check_of_a_lab_has_a_slip(lab):
    slips = import_script("build_answers").load_slips()
    names = literal_check_names(lab)
    assert names, lab
    missing = names - set(slips.get(lab.removesuffix(".ipynb"), {}))
    assert not missing, f"{lab}: no slip in gpulab/data/lab_slips.yaml for {sorted(missing)}"


def test_slips_file_names_only_labs_that_exist():
    slips = import_script("build_answers").load_slips()
    labs = {p.stem for p in (ROOT / "labs").glob("lab*.ipynb")}
    assert set(slips) == labs


def test_slip_text_from_a_factor_a_direction_an_inverse_or_a_value():
    ba = import_script("build_answers")
    bw = {"expected": {"bandwidth": 450e9, "direction": "per_direction"}, "rel": 1e-3,
          "unit": ""}
    assert ba.slip_text({"factor": 2, "direction": "bidirectional", "why": "w"}, bw) == \
        "900 GB/s bidirectional: w"
    num = {"expected": 106.25e9, "rel": 1e-3, "unit": "bit/s"}
    assert ba.slip_text({"factor": "1/2", "why": "NRZ"}, num) == "53.125 Gbit/s: NRZ"
    ratio = {"expected": 2.0, "rel": 1e-3, "unit": ""}
    assert ba.slip_text({"inverse": True, "why": "upside down"}, ratio) == \
        "0.5: upside down"
    assert ba.slip_text({"value": "PXB", "why": "w"}, {"expected": "PIX", "rel": 1e-3,
                                                        "unit": ""}) == "PXB: w"
    frac = {"expected": 0.33, "rel": 2e-2, "unit": "(fraction)"}
    assert ba.slip_text({"factor": 100, "why": "percent"}, frac) == "33: percent"
    assert ba.slip_text({"why": "in words"}, num) == "in words"


def test_key_rows_refuse_a_missing_or_stale_slip():
    ba = import_script("build_answers")
    acc = {"1": {"expected": 1.0, "rel": 1e-3, "unit": ""}}
    with pytest.raises(ValueError, match=r"no slip .* for check\(s\) \['1'\]"):
        ba.key_rows("lab99", ["1"], acc, {})
    with pytest.raises(ValueError, match=r"names check\(s\) \['2'\]"):
        ba.key_rows("lab99", ["1"], acc, {"1": {"why": "w"}, "2": {"why": "w"}})
    with pytest.raises(ValueError, match="give an 'answer' text"):
        ba.key_rows("lab99", ["f"], {}, {"f": {"why": "w"}})
    rows = ba.key_rows("lab99", ["1", "f"], acc,
                       {"1": {"why": "w", "factor": 2}, "f": {"why": "v", "answer": "a"}})
    assert [(r["check"], r["answer"], r["slip"], r["written"]) for r in rows] == [
        ("1", "1", "2: w", False), ("f", "a", "v", True)]


@pytest.mark.parametrize("entry, match", [
    ({"factor": 2}, "needs a non-empty 'why'"),
    ({"why": "w", "factr": 2}, "unknown field"),
    ({"why": "w", "factor": "two"}, "factor must be a number or 'a/b'"),
    ({"why": "w", "factor": "1/0"}, "factor must be a number or 'a/b'"),
    ({"why": "w", "factor": 2, "value": 3}, "one of factor, inverse, value"),
    ({"why": "w", "factor": 2, "direction": "both"}, "direction must be one of"),
])
def test_bad_slip_entries_are_refused(tmp_path, entry, match):
    f = tmp_path / "slips.yaml"
    f.write_text(yaml.safe_dump({"lab99": {"1": entry}}), encoding="utf-8")
    with pytest.raises(ValueError, match=match):
        import_script("build_answers").load_slips(f)
