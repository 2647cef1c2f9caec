"""The instructor's pre- and post-assessment: its questions' inputs, answers and poll.

The assessment page (``book/instructor/assessment.md``) asks twelve questions (1-10 on
training and links, 11 and 12 on serving). Their
inputs are exercise values, chosen so that no question repeats the numbers of a lab
exercise (a post-test should measure a skill, not the recall of a lab's answer); the
answers are computed here from the same models and data the chapters use, and glued
into the page. :func:`poll` gives each question as a multiple-choice item with four
options: one right, three that the common slips produce (a bidirectional figure read
per direction, bits read as bytes, the busbw factor forgotten, GiB read as GB, ...).

This is a model module: it computes, and imports no UI library.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import collectives, inference, links, specs, units
from .course import evidence_values
from .inference import kv
from .parallelism import model, model_state_bytes, parameter_count, tp_allreduce_count

__all__ = ["INPUTS", "LETTERS", "PollItem", "answers", "poll", "poll_item", "score"]

#: Each question's own inputs (exercise values, not hardware data). The hardware
#: figures a question quotes (NVLink, NIC and HBM rates) come from ``gpulab/data``.
INPUTS = {
    1: {"nvlink_generation": 3},                       # an A100 SXM
    2: {"n_ranks": 4, "algbw_gb": 120.0},              # nccl-tests, all_reduce
    3: {"max_size_gib": 4},                            # all_reduce_perf -e 4G
    4: {"nic": "ConnectX-8", "nvlink_generation": 5},  # one 800 Gb/s NIC per GPU
    7: {"layers": 80, "tp": 8},
    10: {"tp": 8, "model": "70b", "gpu": "H100"},
    11: {"model": "llama3-70b", "batch": 64, "tp": 4, "tp_more": 8},   # BF16 decode
    12: {"model": "llama3-70b", "prompt_tokens": 16384},            # BF16 KV cache
}
#: Option letters of the poll.
LETTERS = ("a", "b", "c", "d")


@dataclass(frozen=True)
class PollItem:
    """One question as a poll: ``options`` are four texts, ``right`` the letter of the
    one that is right, ``slips`` what each wrong option comes from (by letter)."""

    number: int
    title: str
    stem: str
    options: tuple
    right: str
    slips: dict

    @property
    def answer(self):
        """The text of the right option."""
        return self.options[LETTERS.index(self.right)]


def answers():
    """Every computed answer and quoted figure of the assessment, by glue name.

    Bandwidths in GB/s of 1e9 bytes, per direction unless the name says ``bidir``.

    >>> round(answers()["q2_busbw"])
    180
    """
    ev = evidence_values()
    out = {}
    # Q1: a bidirectional NVLink figure, per direction
    nv = links.nvlink_gpu_bandwidth(INPUTS[1]["nvlink_generation"])
    out["q1_bidir"] = nv.to_bidirectional().gb_per_s
    out["q1_dir"] = nv.gb_per_s
    # Q2: busbw from algbw
    n, alg = INPUTS[2]["n_ranks"], INPUTS[2]["algbw_gb"]
    out["q2_n"] = n
    out["q2_algbw"] = alg
    out["q2_factor"] = collectives.busbw_factor("all_reduce", n)
    out["q2_busbw"] = collectives.busbw(units.GiB, units.GiB / (alg * units.GB),
                                        "all_reduce", n) / units.GB
    out["q2_line"] = ev["nvl4_dir"]
    # Q3: nccl-tests' binary size suffix
    size = INPUTS[3]["max_size_gib"] * units.GiB
    out["q3_gib"] = INPUTS[3]["max_size_gib"]
    out["q3_cmd"] = f"all_reduce_perf -b 8 -e {INPUTS[3]['max_size_gib']}G"
    out["q3_bytes"] = int(size)
    out["q3_gb"] = size / units.GB
    # Q4: a NIC against NVLink
    nic = specs.nic(INPUTS[4]["nic"]).line_rate
    nv5 = links.nvlink_gpu_bandwidth(INPUTS[4]["nvlink_generation"])
    out["q4_nic_gbit"] = nic.gb_per_s * 8
    out["q4_nic_dir"] = nic.gb_per_s
    out["q4_nvl_dir"] = nv5.gb_per_s
    out["q4_ratio"] = nv5.gb_per_s / nic.gb_per_s
    # Q6: the article's algbw against the line rate
    out["q6_algbw"] = ev["art_alg_max_pct_line"] * ev["nvl4_dir"] / 100
    out["q6_pct"] = ev["art_alg_max_pct_line"]
    out["q6_line"] = ev["nvl4_dir"]
    # Q7: TP AllReduces, forward pass only, no SP, no recomputation
    fwd = tp_allreduce_count(recompute="full") - tp_allreduce_count()
    out["q7_layers"] = INPUTS[7]["layers"]
    out["q7_tp"] = INPUTS[7]["tp"]
    out["q7_per_layer"] = fwd
    out["q7_total"] = INPUTS[7]["layers"] * fwd
    out["q7_fb_total"] = INPUTS[7]["layers"] * tp_allreduce_count()
    # Q8: speedup and slowdown
    for k in ("art_nvlink_sps", "art_pcie_sps", "speedup_pct", "slowdown_pct"):
        out[f"q8_{k}"] = ev[k]
    # Q10: model states per GPU under TP=8
    p = parameter_count(INPUTS[10]["model"])
    per_param = model_state_bytes()["total"]
    zero_paper = model_state_bytes(param_dtype="fp16", grad_dtype="fp16",
                                   fp32_grad_copy=False)["total"]
    tp = INPUTS[10]["tp"]
    out["q10_params_b"] = p / 1e9
    out["q10_bytes_per_param"] = per_param
    out["q10_tp"] = tp
    out["q10_layers"] = model(INPUTS[10]["model"]).layers
    out["q10_hbm_gb"] = specs.gpu(INPUTS[10]["gpu"]).memory_bytes / 1e9
    out["q10_total_gb"] = p * per_param / 1e9
    out["q10_per_gpu_gb"] = p * per_param / tp / 1e9
    out["q10_per_gpu_zero_gb"] = p * zero_paper / tp / 1e9
    out["q10_weights_per_gpu_gb"] = p * 2 / tp / 1e9
    # Q11: the TP all-reduce of a decode step (BF16 activations), at two TP degrees
    q = INPUTS[11]
    m11 = model(q["model"])
    msg = {t: inference.decode_step(q["model"], "hgx-h200", tp=t, batch=q["batch"],
                                    context=m11.seq_len).message_bytes
           for t in (q["tp"], q["tp_more"])}
    out["q11_hidden"] = m11.hidden
    out["q11_batch"] = q["batch"]
    out["q11_tp"] = q["tp"]
    out["q11_tp_more"] = q["tp_more"]
    out["q11_kib"] = msg[q["tp"]] / units.KiB
    out["q11_kib_more"] = msg[q["tp_more"]] / units.KiB
    out["q11_layers"] = m11.layers
    out["q11_per_step"] = 2 * m11.layers
    # Q12: the KV cache a prefill server ships for one prompt (BF16)
    q = INPUTS[12]
    m12 = model(q["model"])
    per_token = kv.model_kv_bytes_per_token(q["model"])
    out["q12_layers"] = m12.layers
    out["q12_kv_heads"] = m12.kv_heads
    out["q12_heads"] = m12.heads
    out["q12_head_dim"] = inference.HEAD_DIM
    out["q12_prompt"] = q["prompt_tokens"]
    out["q12_kib_per_token"] = per_token / units.KiB
    out["q12_gb"] = per_token * q["prompt_tokens"] / units.GB
    out["q12_gib"] = per_token * q["prompt_tokens"] / units.GiB
    out["q12_all_heads_gb"] = out["q12_gb"] * m12.heads / m12.kv_heads
    return out


def _numeric(number, title, stem, letter, right, slips):
    """A poll item whose options are numbers. ``right`` is ``(value, text)`` and goes
    to option ``letter`` (the letters of the right options are spread over a to d);
    ``slips`` is a list of three ``(value, text, why)``, which fill the other options
    in ascending order of value."""
    values = [right[0]] + [s[0] for s in slips]
    if len({round(v, 6) for v in values}) != 4:
        raise ValueError(f"question {number}: the four options must differ; got {values}")
    slips = sorted(slips, key=lambda s: s[0])
    k = LETTERS.index(letter)
    texts = [s[1] for s in slips]
    texts.insert(k, right[1])
    others = [x for x in LETTERS if x != letter]
    return PollItem(number, title, stem, tuple(texts), letter,
                    {x: s[2] for x, s in zip(others, slips)})


def _choice(number, title, stem, options, right, slips):
    return PollItem(number, title, stem, tuple(options), right, dict(slips))


def poll():
    """The twelve questions as four-option poll items (a tuple of :class:`PollItem`)."""
    a = answers()

    def gb(x, nd=0):
        return f"{x:.{nd}f} GB/s"

    items = [
        _numeric(1, "Per direction",
                 f"An A100 SXM datasheet gives NVLink as {a['q1_bidir']:.0f} GB/s, both "
                 "directions added. How much can the GPU send to its peers in one "
                 "direction, at line rate?",
                 "b",
                 (a["q1_dir"], gb(a["q1_dir"])),
                 [(a["q1_bidir"], gb(a["q1_bidir"]), "the bidirectional figure read as "
                   "per direction"),
                  (a["q1_dir"] / 2, gb(a["q1_dir"] / 2), "halved twice"),
                  (a["q1_bidir"] / 8, gb(a["q1_bidir"] / 8), "divided by 8 as if the "
                   "figure were in Gb/s")]),
        _numeric(2, "From algbw to busbw",
                 f"all_reduce on {a['q2_n']} GPUs, one process per GPU: nccl-tests prints "
                 f"algbw {a['q2_algbw']:.0f} GB/s at its largest size. What busbw does "
                 "the same row print?",
                 "d",
                 (a["q2_busbw"], gb(a["q2_busbw"])),
                 [(a["q2_algbw"], gb(a["q2_algbw"]), "busbw read as algbw"),
                  (a["q2_algbw"] * (a["q2_n"] - 1) / a["q2_n"],
                   gb(a["q2_algbw"] * (a["q2_n"] - 1) / a["q2_n"]),
                   "the all_gather factor (n-1)/n"),
                  (2 * a["q2_algbw"], gb(2 * a["q2_algbw"]),
                   "the factor 2 without (n-1)/n")]),
        _numeric(3, "GB or GiB",
                 f"{a['q3_cmd']}: how many GB (10⁹ bytes) is "
                 "the message of its last row?",
                 "a",
                 (a["q3_gb"], f"{a['q3_gb']:.3f} GB"),
                 [(float(a["q3_gib"]), f"{a['q3_gib']:.3f} GB", "G read as 10⁹ bytes"),
                  (a["q3_gib"] * units.GB / units.GiB,
                   f"{a['q3_gib'] * units.GB / units.GiB:.3f} GB",
                   "converted the wrong way (GB to GiB)"),
                  (8 * a["q3_gb"], f"{8 * a['q3_gb']:.3f} GB", "bytes read as bits")]),
        _numeric(4, "A NIC against NVLink",
                 f"On a GB300 system each GPU (NVLink5) has one {a['q4_nic_gbit']:.0f} Gb/s "
                 "ConnectX-8. What is the NIC's rate per direction, and how many times "
                 "less is it than the GPU's NVLink5 per direction?",
                 "c",
                 (a["q4_ratio"], f"{gb(a['q4_nic_dir'])}, {a['q4_ratio']:.0f}× less"),
                 [(2 * a["q4_ratio"], f"{gb(a['q4_nic_dir'])}, {2 * a['q4_ratio']:.0f}× "
                   "less", "NVLink's bidirectional figure against the NIC's one way"),
                  (a["q4_ratio"] / 2, f"{gb(2 * a['q4_nic_dir'])}, "
                   f"{a['q4_ratio'] / 2:.1f}× less", "the NIC counted in both "
                   "directions"),
                  (a["q4_ratio"] / 8, f"{gb(a['q4_nic_gbit'])}, "
                   f"{a['q4_ratio'] / 8:.3g}× less", "Gb/s read as GB/s")]),
        _choice(5, "Where NVLS reduces",
                "With NCCL's NVLS algorithm, where are the gradients added up?",
                ["in each GPU's SMs", "in the NVLink link", "in the NVSwitch chip",
                 "in the NIC"], "c",
                {"a": "the ring's reduction, not NVLS's",
                 "b": "a link carries data; it has no arithmetic",
                 "d": "that is SHARP in an InfiniBand switch, across nodes"}),
        _choice(6, "Can this table be right?",
                f"A table shows all_reduce on 8× H100 SXM with algbw {a['q6_algbw']:.0f} "
                "GB/s at its largest size. Is that possible?",
                ["Yes: it is below the bidirectional NVLink figure",
                 "Yes: NVLS reduces in the switch, so algbw may pass the line rate",
                 "Yes: at large sizes the latency is hidden",
                 "No: algbw above the per-direction line rate is impossible"], "d",
                {"a": "compared with the bidirectional figure",
                 "b": "NVLS lifts busbw past the line rate, not algbw",
                 "c": "hiding latency cannot pass the line rate"}),
        _numeric(7, "Tensor-parallel AllReduces",
                 f"Megatron-LM, TP={a['q7_tp']}, no sequence parallelism, no recomputation, "
                 f"{a['q7_layers']} transformer layers: how many TP AllReduces in the "
                 "forward pass of one micro-batch, transformer layers only?",
                 "a",
                 (a["q7_total"], f"{a['q7_total']:.0f}"),
                 [(a["q7_fb_total"], f"{a['q7_fb_total']:.0f}", "forward and backward "
                   "counted"),
                  (a["q7_layers"], f"{a['q7_layers']:.0f}", "one per layer"),
                  (a["q7_total"] * a["q7_tp"], f"{a['q7_total'] * a['q7_tp']:.0f}",
                   "counted once per GPU of the group")]),
        _choice(8, "Speedup or slowdown",
                f"NVLink server {a['q8_art_nvlink_sps']:.1f} samples/s, PCIe server "
                f"{a['q8_art_pcie_sps']:.1f}. Which statement is right?",
                [f"NVLink is {a['q8_slowdown_pct']:.0f}% faster",
                 f"NVLink is {a['q8_speedup_pct']:.0f}% faster; the extra output you pay "
                 "NVLink for is this speedup",
                 f"PCIe is {a['q8_speedup_pct']:.0f}% slower",
                 f"NVLink is {a['q8_speedup_pct']:.0f}% faster and PCIe "
                 f"{a['q8_speedup_pct']:.0f}% slower"], "b",
                {"a": "the slowdown read as a speedup",
                 "c": "the speedup read as a slowdown",
                 "d": "speedup and slowdown taken as equal"}),
        _choice(9, "Where tensor parallelism belongs",
                "Why do TP groups stay inside one NVLink domain?",
                ["TP's AllReduces sit on every layer's critical path and stop getting "
                 "cheaper outside the NVLink domain",
                 "Across nodes each GPU gets one NIC, so TP runs many times slower",
                 "TP needs NVLS, which only works on one node",
                 "TP's messages are larger than DP's gradients"], "a",
                {"b": "a node's NICs work together: the ratio of one NIC is not the "
                      "slowdown",
                 "c": "TP runs without NVLS, on rings and trees",
                 "d": "one TP AllReduce is smaller than a DP gradient; their number and "
                      "place in the step matter"}),
        _numeric(10, "Does 70B fit on one node?",
                 f"{a['q10_params_b']:.1f} B parameters, {a['q10_bytes_per_param']:.0f} B "
                 f"of model states per parameter, TP={a['q10_tp']} splitting them evenly, "
                 "no ZeRO, no offloading: how many GB (10⁹ bytes) of model states does "
                 "each GPU hold?",
                 "d",
                 (a["q10_per_gpu_gb"], f"{a['q10_per_gpu_gb']:.0f} GB: more than its "
                  f"{a['q10_hbm_gb']:.0f} GB"),
                 [(a["q10_total_gb"], f"{a['q10_total_gb']:.0f} GB", "the total of the "
                   "node, not per GPU"),
                  (a["q10_per_gpu_zero_gb"], f"{a['q10_per_gpu_zero_gb']:.0f} GB",
                   "the ZeRO paper's 16-bit gradients"),
                  (a["q10_weights_per_gpu_gb"], f"{a['q10_weights_per_gpu_gb']:.0f} GB: "
                   "it fits", "the BF16 weights only")]),
        _numeric(11, "The decode all-reduce",
                 f"Llama 3 70B (hidden size {a['q11_hidden']}) decodes a batch of "
                 f"{a['q11_batch']} sequences at TP {a['q11_tp']}, activations in BF16. "
                 "How many KiB is one tensor-parallel all-reduce of a decode step?",
                 "b",
                 (a["q11_kib"], f"{a['q11_kib']:.0f} KiB"),
                 [(a["q11_kib"] / a["q11_tp"], f"{a['q11_kib'] / a['q11_tp']:.0f} KiB",
                   "divided by the TP degree: each rank holds a partial sum of the whole "
                   "activation, not a share of it"),
                  (a["q11_kib"] / 2, f"{a['q11_kib'] / 2:.0f} KiB",
                   "one byte per BF16 element"),
                  (2 * a["q11_kib"], f"{2 * a['q11_kib']:.0f} KiB",
                   "the layer's two all-reduces added into one")]),
        _numeric(12, "Shipping the KV cache",
                 f"A prefill server hands a {a['q12_prompt']}-token Llama 3 70B prompt to a "
                 f"decode server: {a['q12_layers']} layers, {a['q12_kv_heads']} KV heads of "
                 f"{a['q12_head_dim']}, BF16 cache. How many GB (10⁹ bytes) of KV cache "
                 "cross between them?",
                 "c",
                 (a["q12_gb"], f"{a['q12_gb']:.2f} GB"),
                 [(a["q12_gb"] / 2, f"{a['q12_gb'] / 2:.2f} GB",
                   "keys only: the values are cached too"),
                  (a["q12_gib"], f"{a['q12_gib']:.2f} GB", "the size in GiB written as GB"),
                  (a["q12_all_heads_gb"], f"{a['q12_all_heads_gb']:.1f} GB",
                   f"all {a['q12_heads']} attention heads cached instead of the "
                   f"{a['q12_kv_heads']} KV heads")]),
    ]
    return tuple(items)


def poll_item(number):
    """The :class:`PollItem` of question ``number`` (1 to 12)."""
    items = {p.number: p for p in poll()}
    if isinstance(number, bool) or number not in items:
        raise ValueError(f"number must be a question number 1-{len(items)}; got {number!r}")
    return items[number]


def score(letters):
    """Points of a filled-in poll: one per right letter.

    ``letters`` maps question numbers to letters (``{1: "b", ...}``); an unanswered
    question scores 0.

    >>> score({p.number: p.right for p in poll()})
    12
    """
    if not isinstance(letters, dict):
        raise ValueError(f"letters must be a dict {{question number: letter}}; got {letters!r}")
    for k, v in letters.items():
        poll_item(k)
        if v not in LETTERS:
            raise ValueError(f"letters[{k}] must be one of {', '.join(LETTERS)}; got {v!r}")
    return sum(1 for p in poll() if letters.get(p.number) == p.right)
