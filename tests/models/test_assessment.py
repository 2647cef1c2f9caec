"""The instructor's assessment (gpulab.assessment): answers, poll and scoring.

* every answer is recomputed here by hand from the data, not from the module's code path;
* each poll item has four different options, one right, whose text shows the computed
  answer; the three slips are named; the right letters are spread over a to d;
* no question repeats the numbers of a lab exercise (its stem's numbers and its answer are
  not all in one exercise of a lab notebook), and the check flags the questions this page
  used to ask, which did.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from gpulab import assessment, links, specs
from gpulab.parallelism import parameter_count

ROOT = Path(__file__).resolve().parents[2]
NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])")


def numbers(text):
    out = []
    for m in NUMBER.findall(text):
        try:
            out.append(float(m.replace(",", "")))
        except ValueError:
            continue
    return out


def test_answers_recomputed_by_hand():
    a = assessment.answers()
    nv3 = specs.nvlink(3)
    per_dir = nv3.nominal_link_bandwidth.to_per_direction().gb_per_s * nv3.links_per_gpu
    assert a["q1_dir"] == pytest.approx(per_dir) and a["q1_bidir"] == pytest.approx(2 * per_dir)
    n, alg = assessment.INPUTS[2]["n_ranks"], assessment.INPUTS[2]["algbw_gb"]
    assert a["q2_busbw"] == pytest.approx(alg * 2 * (n - 1) / n)
    assert a["q3_bytes"] == assessment.INPUTS[3]["max_size_gib"] * 2 ** 30
    assert a["q3_gb"] == pytest.approx(a["q3_bytes"] / 1e9)
    nic_gbit = specs.nic("ConnectX-8").line_rate.bytes_per_s * 8 / 1e9
    assert a["q4_nic_dir"] == pytest.approx(nic_gbit / 8)
    assert a["q4_ratio"] == pytest.approx(links.nvlink_gpu_bandwidth(5).gb_per_s
                                          / (nic_gbit / 8))
    assert a["q7_total"] == 2 * assessment.INPUTS[7]["layers"]
    # BF16 weight 2 + FP32 gradient 4 + FP32 master, momentum, variance 12
    assert a["q10_bytes_per_param"] == 18
    assert a["q10_per_gpu_gb"] == pytest.approx(parameter_count("70b") * 18 / 8 / 1e9)
    assert a["q10_per_gpu_gb"] > a["q10_hbm_gb"]
    # Q11: batch x hidden x 2 bytes (BF16), whatever the TP degree; two per layer
    q11 = assessment.INPUTS[11]
    assert a["q11_kib"] == pytest.approx(q11["batch"] * 8192 * 2 / 2 ** 10) == 1024
    assert a["q11_kib_more"] == a["q11_kib"] and a["q11_per_step"] == 2 * 80
    # Q12: keys and values x 80 layers x 8 KV heads x 128 x 2 bytes, per prompt token
    per_token = 2 * 80 * 8 * 128 * 2
    assert a["q12_kib_per_token"] * 2 ** 10 == per_token
    assert a["q12_gb"] == pytest.approx(per_token * assessment.INPUTS[12]["prompt_tokens"] / 1e9)
    assert a["q12_gib"] == pytest.approx(a["q12_gb"] * 1e9 / 2 ** 30)


@pytest.mark.parametrize("number, key", [(1, "q1_dir"), (2, "q2_busbw"), (3, "q3_gb"),
                                         (4, "q4_nic_dir"), (7, "q7_total"),
                                         (10, "q10_per_gpu_gb"), (11, "q11_kib"),
                                         (12, "q12_gb")])
def test_poll_right_option_is_the_computed_answer(number, key):
    p = assessment.poll_item(number)
    value = assessment.answers()[key]
    first = numbers(p.answer)[0]
    assert first == pytest.approx(value, rel=5e-3, abs=5e-4), (p.answer, value)
    for x, opt in zip(assessment.LETTERS, p.options):
        if x != p.right:
            assert numbers(opt)[:1] != numbers(p.answer)[:1] or opt != p.answer, opt
    if number == 4:
        assert numbers(p.answer)[1] == pytest.approx(assessment.answers()["q4_ratio"])


def test_poll_items_are_well_formed():
    items = assessment.poll()
    assert [p.number for p in items] == list(range(1, 13))
    for p in items:
        assert len(p.options) == 4 and len(set(p.options)) == 4, p.number
        assert p.right in assessment.LETTERS
        assert set(p.slips) == set(assessment.LETTERS) - {p.right}, p.number
        assert all(p.slips.values()), p.number
    assert assessment.poll_item(6).answer.startswith("No")
    assert "NVSwitch" in assessment.poll_item(5).answer
    counts = Counter(p.right for p in items)
    assert set(counts) == set(assessment.LETTERS) and max(counts.values()) <= 3


def test_score_and_its_errors():
    key = {p.number: p.right for p in assessment.poll()}
    assert assessment.score(key) == 12
    wrong = {k: next(x for x in assessment.LETTERS if x != v) for k, v in key.items()}
    assert assessment.score(wrong) == 0
    assert assessment.score({1: key[1]}) == 1
    with pytest.raises(ValueError, match="letters"):
        assessment.score({1: "e"})
    with pytest.raises(ValueError, match="number"):
        assessment.score({13: "a"})
    with pytest.raises(ValueError, match="number"):
        assessment.poll_item(0)


# --- no question repeats a lab exercise ---------------------------------------------
HEAD = re.compile(r"^#{3,4} (Exercise|Quick check)\b", re.M)


def lab_exercises():
    """``[(lab, title, text)]``: every exercise and quick check of the labs, with the
    cells that follow it up to the next one (its check cell holds the expected value)."""
    out = []
    for path in sorted((ROOT / "labs").glob("lab*.ipynb")):
        cur = None
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            src = "".join(cell["source"])
            m = HEAD.search(src) if cell["cell_type"] == "markdown" else None
            if m:
                cur = [path.stem, src[m.start():].splitlines()[0], src[m.start():]]
                out.append(cur)
            elif cell["cell_type"] == "markdown" and src.startswith("## "):
                cur = None
            elif cur is not None:
                cur[2] += "\n" + src
    return [tuple(x) for x in out]


def _close(x, pool):
    return any(abs(x - y) <= 1e-3 * max(abs(x), abs(y), 1e-9) for y in pool)


def repeats(stem, answer, exercises):
    """The exercises that hold every number of a question's stem and its answer."""
    need = set(numbers(stem)) | set(numbers(answer)[:1])
    if not numbers(stem):
        return []
    return [(lab, title) for lab, title, text in exercises
            if all(_close(x, numbers(text)) for x in need)]


def test_labs_have_exercises_to_compare_with():
    ex = lab_exercises()
    assert len(ex) >= 40 and {lab for lab, _, _ in ex} >= {"lab01_link_math",
                                                            "lab04_accept_a_server"}


def test_no_question_repeats_a_lab_exercise():
    ex = lab_exercises()
    hits = {p.number: repeats(p.stem, p.answer, ex) for p in assessment.poll()}
    assert not any(hits.values()), hits


@pytest.mark.parametrize("stem, answer, lab", [
    # the questions this page asked before: Lab 1's exercises 1, 2, 3, Lab 4's quick check
    ("An H100 SXM datasheet gives NVLink as 900 GB/s.", "450 GB/s", "lab01_link_math"),
    ("Each GPU has one 400 Gb/s NIC.", "50 GB/s", "lab01_link_math"),
    ("A size it calls 1 GB: how many GB?", "1.073741824 GB", "lab01_link_math"),
    ("all_reduce on 8 GPUs prints algbw 200 GB/s", "350 GB/s", "lab04_accept_a_server"),
])
def test_the_repeat_check_flags_the_old_questions(stem, answer, lab):
    assert lab in {lab for lab, _ in repeats(stem, answer, lab_exercises())}
