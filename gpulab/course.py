"""The course itself as data: teaching tracks, the source article's claims, the glossary.

Three data files in ``gpulab/data`` hold what the instructor guide, the claims appendix
and the notation page show, so that no timing, verdict or translation is typed into a
page:

* ``course_tracks.yaml``: the half-day and one-day tracks, an agenda of timed items
  (chapter sections to run and to skip, lab parts, breaks, discussion prompts);
* ``article_claims.yaml``: every numbered claim of the source article with its verdict
  (``right``, ``misleading``, ``wrong``, ``unverifiable``), the evidence and where the course discusses
  it; the evidence text names quantities that :func:`evidence_values` computes with the
  other ``gpulab`` modules;
* ``glossary.yaml``: every term of the notation page with its Chinese term and a
  one-line definition.

This is a model module: it reads data and computes, and imports no UI library.
"""
from __future__ import annotations

import functools
import re
import string
from dataclasses import dataclass

import yaml

from . import collectives, links, measurements, specs, units
from ._validate import check_choice
from .parallelism import model, model_state_bytes, parameter_count, slowdown, speedup
from .parallelism import activation_memory_per_layer, bubble_fraction, tp_allreduce_count
from .pcie import effective_bandwidth, encoded_bandwidth, raw_bandwidth

__all__ = [
    "VERDICTS", "ITEM_KINDS", "clear_cache", "AgendaItem", "Track", "Claim", "Term",
    "track_names", "track", "track_total", "agenda_rows",
    "claims", "claim", "claim_sections", "chapter_titles", "article_info", "verdict_counts",
    "evidence_values", "evidence_text", "evidence_fields", "glossary", "glossary_sections",
]

#: Verdicts a claim may carry. ``misleading`` (shown as "misleading / oversimplified")
#: is a claim that holds in part or as a rule of thumb but misleads as stated; ``wrong``
#: is false, impossible or mislabelled; ``context`` marks a numbered item of the fact list
#: that is background to another claim, not a claim of the article.
VERDICTS = ("right", "misleading", "wrong", "unverifiable", "context")
#: Kinds of agenda item in a track.
ITEM_KINDS = ("intro", "chapter", "lab", "break", "discussion", "assessment")

_LABEL = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def _load(name):
    return yaml.safe_load(specs.read_data_text(name))


def clear_cache():
    """Forget the loaded data files, so the next call reads them again (for tests)."""
    for f in (_tracks, _claims_data, _claims, evidence_values, _glossary):
        f.cache_clear()


# --- tracks -----------------------------------------------------------------------
@dataclass(frozen=True)
class AgendaItem:
    """One timed item of a track.

    ``duration`` is in seconds. ``doc`` is a chapter file name (``"nvlink"``) or a lab
    notebook name (``"lab01_link_math"``); ``run`` and ``skip`` are chapter section
    labels or lab part titles (``"Part A"``).
    """

    kind: str
    title: str
    duration: float
    doc: str = ""
    run: tuple = ()
    skip: tuple = ()
    prompt: str = ""


@dataclass(frozen=True)
class Track:
    """A teaching track: an agenda that must fit ``budget`` ± ``tolerance`` seconds."""

    key: str
    title: str
    audience: str
    budget: float
    tolerance: float
    items: tuple


def _item(raw, where):
    kind = raw.get("kind")
    if kind not in ITEM_KINDS:
        raise ValueError(f"{where}: kind must be one of {', '.join(ITEM_KINDS)}; "
                         f"got {kind!r}")
    minutes = raw.get("minutes")
    if not isinstance(minutes, (int, float)) or isinstance(minutes, bool) or minutes <= 0:
        raise ValueError(f"{where}: minutes must be a positive number; got {minutes!r}")
    if kind in ("chapter", "lab") and not raw.get("doc"):
        raise ValueError(f"{where}: a {kind} item needs doc")
    return AgendaItem(kind=kind, title=str(raw.get("title", "")),
                      duration=float(minutes) * 60.0,
                      doc=str(raw.get("doc", "")), run=tuple(raw.get("run", ())),
                      skip=tuple(raw.get("skip", ())), prompt=str(raw.get("prompt", "")))


@functools.lru_cache(maxsize=1)
def _tracks():
    data = _load("course_tracks.yaml")["tracks"]
    out = {}
    for key, raw in data.items():
        items = tuple(_item(it, f"course_tracks.yaml {key} item {i}")
                      for i, it in enumerate(raw["items"], start=1))
        out[key] = Track(key=key, title=raw["title"], audience=raw.get("audience", ""),
                         budget=float(raw["budget_minutes"]) * 60.0,
                         tolerance=float(raw["tolerance_minutes"]) * 60.0, items=items)
    return out


def track_names():
    """Keys of the tracks (``["half-day", "one-day"]``)."""
    return list(_tracks())


def track(name):
    """The :class:`Track` called ``name`` (a key of :func:`track_names`)."""
    check_choice("name", name, tuple(_tracks()))
    return _tracks()[name]


def track_total(name, kind=None):
    """Total time of a track in seconds, or of its items of one ``kind`` only.

    >>> track_total("half-day") <= track("half-day").budget + track("half-day").tolerance
    True
    """
    t = track(name)
    if kind is not None:
        check_choice("kind", kind, ITEM_KINDS)
    return sum(it.duration for it in t.items if kind is None or it.kind == kind)


def agenda_rows(name):
    """The agenda of a track as rows ``(start, minutes, item)``.

    ``start`` is the clock time from the start of the session as ``"h:mm"``; ``item`` is
    the :class:`AgendaItem` (the page formats its links and lists).
    """
    rows, t = [], 0.0
    for it in track(name).items:
        m = int(round(t / 60.0))
        rows.append((f"{m // 60}:{m % 60:02d}", int(round(it.duration / 60.0)), it))
        t += it.duration
    return rows


# --- claims -----------------------------------------------------------------------
@dataclass(frozen=True)
class Claim:
    """One numbered claim of the source article.

    ``en`` paraphrases the claim in English, ``zh`` quotes a few words of the article;
    ``evidence`` is a template whose ``{name}`` fields :func:`evidence_values` fills;
    ``anchor`` is ``"<chapter>#<label>"``, where the course discusses the claim, and
    ``box_key`` (optional) a phrase of the chapter's "what the source article gets
    wrong" box that names the claim.
    """

    id: int
    section: str
    en: str
    zh: str
    verdict: str
    evidence: str
    anchor: str
    box_key: str = ""

    @property
    def chapter(self):
        return self.anchor.split("#")[0]

    @property
    def label(self):
        return self.anchor.split("#")[1] if "#" in self.anchor else ""


@functools.lru_cache(maxsize=1)
def _claims_data():
    return _load("article_claims.yaml")


@functools.lru_cache(maxsize=1)
def _claims():
    data = _claims_data()
    sections = {s["key"] for s in data["sections"]}
    out = []
    for raw in data["claims"]:
        where = f"article_claims.yaml claim {raw.get('id')!r}"
        if raw.get("section") not in sections:
            raise ValueError(f"{where}: section must be one of {', '.join(sorted(sections))}")
        if raw.get("verdict") not in VERDICTS:
            raise ValueError(f"{where}: verdict must be one of {', '.join(VERDICTS)}; "
                             f"got {raw.get('verdict')!r}")
        anchor = str(raw.get("anchor", ""))
        chap, _, label = anchor.partition("#")
        if chap not in data["chapters"] or not _LABEL.match(label):
            raise ValueError(f"{where}: anchor must be 'chapter#label'; got {anchor!r}")
        out.append(Claim(id=int(raw["id"]), section=str(raw["section"]), en=raw["en"],
                         zh=raw.get("zh", ""), verdict=raw["verdict"],
                         evidence=raw["evidence"], anchor=anchor,
                         box_key=raw.get("box_key", "")))
    ids = [c.id for c in out]
    if len(set(ids)) != len(ids):
        raise ValueError("article_claims.yaml: claim ids must be unique")
    return tuple(sorted(out, key=lambda c: c.id))


def claims(verdict=None):
    """Every claim (a tuple of :class:`Claim`, by id), or those with one ``verdict``."""
    if verdict is not None:
        check_choice("verdict", verdict, VERDICTS)
    return tuple(c for c in _claims() if verdict is None or c.verdict == verdict)


def claim(claim_id):
    """The :class:`Claim` numbered ``claim_id`` (1 to the last id of the fact list)."""
    by_id = {c.id: c for c in _claims()}
    if isinstance(claim_id, bool) or claim_id not in by_id:
        raise ValueError(f"claim_id must be one of the numbered claims "
                         f"{min(by_id)}-{max(by_id)}; got {claim_id!r}")
    return by_id[claim_id]


def claim_sections():
    """The article's sections in order: a list of ``(key, title)``."""
    return [(s["key"], s["title"]) for s in _claims_data()["sections"]]


def chapter_titles():
    """``{chapter file name: title}`` of the chapters the claims point into."""
    return dict(_claims_data()["chapters"])


def article_info():
    """What identifies the source article: a dict (title, translation, language, ...)."""
    return dict(_claims_data()["article"])


def verdict_counts():
    """How many claims carry each verdict: ``{verdict: count}``."""
    return {v: len(claims(v)) for v in VERDICTS}


def _article_numbers():
    return dict(_claims_data()["article_numbers"])


@functools.lru_cache(maxsize=1)
def evidence_values():
    """The computed quantities the claims' evidence quotes, by name.

    Every value comes from the ``gpulab`` models and data (bandwidths in GB/s of
    1e9 bytes, per direction unless the name says ``bidir``; times in the unit the
    name ends with). The article's own numbers, which some values compare against,
    are in ``article_claims.yaml`` under ``article_numbers``.

    >>> round(evidence_values()["busbw_factor_8"], 2)
    1.75
    """
    a = _article_numbers()
    h100, v100 = specs.gpu("H100"), specs.gpu("V100")
    nv = {g: links.nvlink_gpu_bandwidth(g) for g in (2, 3, 4, 5)}
    gen3, gen4 = specs.nvlink(3), specs.nvlink(4)
    line = nv[4].gb_per_s
    pcie5 = encoded_bandwidth(5, 16).gb_per_s
    nic = specs.nic("ConnectX-7").line_rate.gb_per_s
    f8 = collectives.wire_factor("all_reduce", 8)
    s_ar = a["ar_mib"] * units.MiB
    ar_any = links.transfer_time(s_ar, 0.0, nv[4])
    ar_pcie = links.transfer_time(f8 * s_ar, 0.0, encoded_bandwidth(5, 16))
    t_fast, t_slow = 1 / a["nvlink_sps"], 1 / a["pcie_sps"]
    up, down = speedup(t_fast, t_slow), slowdown(t_fast, t_slow)
    zero_paper = model_state_bytes(param_dtype="fp16", grad_dtype="fp16",
                                          fp32_grad_copy=False)["total"]
    megatron = model_state_bytes()["total"]
    p70 = parameter_count("70b")
    p13 = parameter_count("13b")
    fwd = tp_allreduce_count(recompute="full") - tp_allreduce_count()   # forward only
    layers = model("70b").layers
    # activations of the whole 70B shape (no parallelism), FlashAttention (no score term)
    act = {b: layers * activation_memory_per_layer("70b", micro_batch=b,
                                                   recompute="selective")
           for b in (1, a["micro_batch"])}
    v = {
        "v100_fp16_tflops": v100.fp16_dense_flops / 1e12,
        "h100_fp16_tflops": h100.fp16_dense_flops / 1e12,
        "h100_fp8_tflops": h100.fp8_dense_flops / 1e12,
        "like_ratio": h100.fp16_dense_flops / v100.fp16_dense_flops,
        "mixed_ratio": h100.fp8_dense_flops / v100.fp16_dense_flops,
        "nv_ratio": nv[4].gb_per_s / nv[2].gb_per_s,
        "nvl2_bidir": nv[2].to_bidirectional().gb_per_s,
        "nvl3_bidir": nv[3].to_bidirectional().gb_per_s,
        "nvl4_bidir": nv[4].to_bidirectional().gb_per_s,
        "nvl4_dir": line,
        "nvl5_dir": nv[5].gb_per_s,
        "nvl4_link_dir": links.nvlink_link_bandwidth(4).gb_per_s,
        "nvl4_links": gen4.links_per_gpu,
        "nvl4_pairs": gen4.lanes_per_direction,
        "nvl3_pairs": gen3.lanes_per_direction,
        "nvl4_lane_gbit": links.lane_rate(gen4.symbol_rate, gen4.bits_per_symbol) / 1e9,
        "nvl3_lane_gbit": links.lane_rate(gen3.symbol_rate, gen3.bits_per_symbol) / 1e9,
        "pam4_bits": gen4.bits_per_symbol,
        "pcie5_dir": pcie5,
        "pcie5_raw_bidir": 2 * raw_bandwidth(5, 16).gb_per_s,
        "pcie_ovh_128_pct": 100 * (1 - effective_bandwidth(5, max_payload_bytes=128)
                                   / raw_bandwidth(5)),
        "pcie_ovh_256_pct": 100 * (1 - effective_bandwidth(5) / raw_bandwidth(5)),
        "pcie_h2d_ovh_pct": 100 * (1 - measurements.copy_bandwidth().peak("h2d_pinned")
                                   / raw_bandwidth(5)),
        "nic_dir": nic,
        "nic_gbit": nic * 8,
        "nvl_over_nic": line / nic,
        "busbw_factor_8": collectives.busbw_factor("all_reduce", 8),
        "mesh_links_per_peer": gen4.links_per_gpu / 7,
        "mesh_pair_dir_lo": 2 * links.nvlink_link_bandwidth(4).gb_per_s,
        "mesh_pair_dir_hi": 3 * links.nvlink_link_bandwidth(4).gb_per_s,
        "nvl72_bidir_tb": 72 * nv[5].to_bidirectional().gb_per_s / 1e3,
        "art_alg_max_pct_line": 100 * a["algbw_max_gb"] / line,
        "art_bus_max_pct_line": 100 * a["busbw_max_gb"] / line,
        "art_t8_us": 8 / (a["algbw_8b_gb"] * 1e9) / units.US,
        "art_t1k_us": 1024 / (a["algbw_1k_gb"] * 1e9) / units.US,
        "latency_floor_us": collectives.model_constant("audit/latency_floor_s") / units.US,
        "ar256_any_ms": ar_any * 1e3,
        "ar256_pcie_ring_ms": ar_pcie * 1e3,
        "art_pcie_busbw": f8 * s_ar / (a["ar_pcie_ms"] * 1e-3) / 1e9,
        "art_nvlink_sps": a["nvlink_sps"],
        "art_pcie_sps": a["pcie_sps"],
        "gib_over_gb_pct": 100 * (units.GiB / units.GB - 1),
        "speedup_pct": 100 * up,
        "slowdown_pct": 100 * down,
        "gpus_equiv": 8 * (1 - down),
        "hours_saved": 24 * down,
        "tp_ar_fwd_layer": fwd,
        "layers_70b": layers,
        "tp_ar_fwd_80": layers * fwd,
        "tp_ar_fb_80": layers * tp_allreduce_count(),
        "params_70b": p70 / 1e9,
        "params_13b": p13 / 1e9,
        "zero_bytes_per_param": zero_paper,
        "megatron_bytes_per_param": megatron,
        "states_70b_megatron_tb": 70e9 * megatron / 1e12,
        "states_70b_shape_tb": p70 * megatron / 1e12,
        "states_70b_tp8_gb": p70 * megatron / 8 / 1e9,
        "grads_70b_gb": 70e9 * 2 / 1e9,
        "states_13b_gb": p13 * megatron / 1e9,
        "hbm_h100_gb": h100.memory_bytes / 1e9,
        "pp2_bubble_m8_pct": 100 * bubble_fraction(2, 8),
        "art_micro_batch": a["micro_batch"],
        "act_70b_mb_gb": act[a["micro_batch"]] / 1e9,
        "act_70b_mb1_gb": act[1] / 1e9,
    }
    return v


def evidence_text(claim_or_id):
    """The evidence of a claim with its computed quantities filled in (plain text)."""
    c = claim_or_id if isinstance(claim_or_id, Claim) else claim(claim_or_id)
    return c.evidence.format(**evidence_values())


def evidence_fields(text):
    """The quantity names an evidence template uses (``{name:fmt}`` fields)."""
    if not isinstance(text, str):
        raise ValueError(f"text must be an evidence template (a string); got {text!r}")
    return {f for _, f, _, _ in string.Formatter().parse(text) if f}


# --- glossary ---------------------------------------------------------------------
@dataclass(frozen=True)
class Term:
    """A glossary term: English, Chinese, a one-line definition and an HTML anchor.

    ``symbol`` and ``code`` are set for the quantities of the notation table;
    ``article_zh`` is the source article's own wording where it uses the term.
    """

    key: str
    en: str
    zh: str
    definition: str
    section: str
    symbol: str = ""
    code: str = ""
    unit: str = ""
    article_zh: str = ""

    @property
    def anchor(self):
        return f"term-{self.key}"


@functools.lru_cache(maxsize=1)
def _glossary():
    data = _load("glossary.yaml")
    keys = [s["key"] for s in data["sections"]]
    out = []
    for raw in data["terms"]:
        where = f"glossary.yaml term {raw.get('key')!r}"
        if not _LABEL.match(str(raw.get("key", ""))):
            raise ValueError(f"{where}: key must be lowercase letters, digits and '-'")
        if raw.get("section") not in keys:
            raise ValueError(f"{where}: section must be one of {', '.join(keys)}")
        for field in ("en", "zh", "definition"):
            if not str(raw.get(field, "")).strip():
                raise ValueError(f"{where}: {field} must not be empty")
        out.append(Term(**{k: str(raw.get(k, "")) for k in (
            "key", "en", "zh", "definition", "section", "symbol", "code", "unit",
            "article_zh")}))
    if len({t.key for t in out}) != len(out):
        raise ValueError("glossary.yaml: term keys must be unique")
    return tuple(out), tuple((s["key"], s["title"]) for s in data["sections"])


def glossary(section=None):
    """The glossary terms (a tuple of :class:`Term`), or those of one ``section``."""
    terms, sections = _glossary()
    if section is not None:
        check_choice("section", section, tuple(k for k, _ in sections))
    return tuple(t for t in terms if section is None or t.section == section)


def glossary_sections():
    """The glossary's sections in order: a list of ``(key, title)``."""
    return list(_glossary()[1])
