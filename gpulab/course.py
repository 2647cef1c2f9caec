"""The course itself as data: teaching tracks, the source article's claims, the glossary.

Three data files in ``gpulab/data`` hold what the instructor guide, the claims appendix
and the notation page show, so that no timing, verdict or translation is typed into a
page:

* ``course_tracks.yaml``: the half-day, one-day and serving tracks, an agenda of timed
  items (chapter sections to run and to skip, lab parts, breaks, discussion prompts with
  their talking points), and the assumed rates at which :func:`lab_estimate` turns a
  lab part's measured size (answers, prose, code to write) into minutes;
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
import html
import json
import re
import string
from dataclasses import dataclass
from pathlib import Path

import yaml

from . import collectives, inference, links, measurements, specs, units
from ._validate import check_choice
from .inference import kv, published, roi
from .parallelism import model, model_state_bytes, parameter_count, slowdown, speedup
from .parallelism import activation_memory_per_layer, bubble_fraction, tp_allreduce_count
from .pcie import effective_bandwidth, encoded_bandwidth, raw_bandwidth
from .tables import html_table

__all__ = [
    "VERDICTS", "ITEM_KINDS", "clear_cache", "AgendaItem", "Track", "Claim", "Term",
    "track_names", "track", "track_total", "agenda_rows", "runs_between_breaks",
    "max_run_without_break", "talking_points", "lab_needs", "LabSection",
    "repository_root", "lab_sections", "lab_rates", "section_minutes", "lab_estimate",
    "lab_block_estimates", "section_titles", "section_title", "agenda_table",
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
    for f in (_tracks_data, _tracks, _claims_data, _claims, evidence_values, _glossary):
        f.cache_clear()


# --- tracks -----------------------------------------------------------------------
@dataclass(frozen=True)
class AgendaItem:
    """One timed item of a track.

    ``duration`` is in seconds. ``doc`` is a chapter file name (``"nvlink"``) or a lab
    notebook name (``"lab01_link_math"``); ``run`` and ``skip`` are chapter section
    labels or lab part titles (``"Part A"``). ``prompt`` is a question for the room and
    ``talking_points`` what the instructor should hear or say in answer: templates whose
    ``{name}`` fields :func:`evidence_values` fills (:func:`talking_points`).
    """

    kind: str
    title: str
    duration: float
    doc: str = ""
    run: tuple = ()
    skip: tuple = ()
    prompt: str = ""
    talking_points: tuple = ()


@dataclass(frozen=True)
class Track:
    """A teaching track: an agenda planned to fill at most ``1 - slack`` of ``budget``.

    ``budget`` is the length of the session in seconds; ``slack`` the fraction of it
    left unplanned (questions, a slow start, a lab that runs long).
    """

    key: str
    title: str
    audience: str
    budget: float
    slack: float
    items: tuple

    @property
    def planned_limit(self):
        """The most the agenda may fill: ``budget * (1 - slack)`` [s]."""
        return self.budget * (1.0 - self.slack)


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
    points = raw.get("talking_points", ())
    if isinstance(points, str) or not all(isinstance(p, str) and p.strip()
                                          for p in points):
        raise ValueError(f"{where}: talking_points must be a list of non-empty strings")
    return AgendaItem(kind=kind, title=str(raw.get("title", "")),
                      duration=float(minutes) * 60.0,
                      doc=str(raw.get("doc", "")), run=tuple(raw.get("run", ())),
                      skip=tuple(raw.get("skip", ())), prompt=str(raw.get("prompt", "")),
                      talking_points=tuple(points))


@functools.lru_cache(maxsize=1)
def _tracks_data():
    return _load("course_tracks.yaml")


@functools.lru_cache(maxsize=1)
def _tracks():
    data = _tracks_data()["tracks"]
    out = {}
    for key, raw in data.items():
        items = tuple(_item(it, f"course_tracks.yaml {key} item {i}")
                      for i, it in enumerate(raw["items"], start=1))
        slack = raw.get("slack_fraction")
        if not isinstance(slack, (int, float)) or isinstance(slack, bool) \
                or not 0 <= slack < 1:
            raise ValueError(f"course_tracks.yaml {key}: slack_fraction must be in "
                             f"[0, 1); got {slack!r}")
        out[key] = Track(key=key, title=raw["title"], audience=raw.get("audience", ""),
                         budget=float(raw["budget_minutes"]) * 60.0,
                         slack=float(slack), items=items)
    return out


def track_names():
    """Keys of the tracks (``["half-day", "one-day", "serving"]``)."""
    return list(_tracks())


def track(name):
    """The :class:`Track` called ``name`` (a key of :func:`track_names`)."""
    check_choice("name", name, tuple(_tracks()))
    return _tracks()[name]


def track_total(name, kind=None):
    """Total time of a track in seconds, or of its items of one ``kind`` only.

    >>> track_total("half-day") <= track("half-day").planned_limit
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


def runs_between_breaks(name):
    """The stretches of a track between breaks: a list of ``(start, duration)`` [s].

    A lunch is an item of kind ``break``. The rule the tracks follow is in
    ``course_tracks.yaml`` (``max_minutes_without_break``, :func:`max_run_without_break`).
    """
    runs, start, t = [], 0.0, 0.0
    for it in track(name).items:
        if it.kind == "break":
            if t > start:
                runs.append((start, t - start))
            start = t + it.duration
        t += it.duration
    if t > start:
        runs.append((start, t - start))
    return runs


def max_run_without_break():
    """The longest a room should sit without a break [s] (``course_tracks.yaml``)."""
    return float(_tracks_data()["max_minutes_without_break"]) * 60.0


def talking_points(item):
    """The talking points of an agenda item with their computed numbers filled in."""
    if not isinstance(item, AgendaItem):
        raise ValueError(f"item must be an AgendaItem of a track; got {item!r}")
    values = evidence_values()
    return tuple(p.format(**values) for p in item.talking_points)


def lab_needs(lab):
    """The chapter sections each part of a lab builds on: ``{part: ("doc#label", ...)}``.

    A lab block of a track should come after chapter blocks that present these sections
    (``lab_needs`` in ``course_tracks.yaml``; unlisted parts need nothing).
    """
    needs = _tracks_data().get("lab_needs", {})
    if not isinstance(lab, str) or not _LAB_NAME.match(lab):
        raise ValueError(f"lab must be a lab notebook name like 'lab01_link_math'; "
                         f"got {lab!r}")
    return {part: tuple(anchors) for part, anchors in needs.get(lab, {}).items()}


# --- what a lab part asks of a learner --------------------------------------------
_LAB_NAME = re.compile(r"^lab\d\d_[a-z0-9_]+$")
_PART_HEADING = re.compile(r"^## (.+?)\s*$")
_CHECK_CALL = re.compile(r"\bcheck(?:_slips)?\(\s*[rf]?([\"'])(.*?)\1")
_PLACEHOLDER = re.compile(r"YOUR CODE|\bTODO\b|^\s*(?:[\w.]+\s*=\s*)?\.\.\.\s*(?:#.*)?$")
_FENCE = re.compile(r"^```.*?^```", flags=re.S | re.M)
_CHECK_CELL = re.compile(r"^# (?:✓ check|Reveal and ✓ check)")
_WORD = re.compile(r"\S*\w\S*")          # a token with a letter or digit, not "#" or "—"


@dataclass(frozen=True)
class LabSection:
    """A ``## `` section of a lab notebook, measured.

    ``title`` is the heading text (``"Part A — Units and direction"``); the text before
    the first heading is the section ``""``. ``words`` counts the prose (Markdown
    without code blocks), ``answers`` the names the ✓ checks check (an answer checked by
    ``check_slips`` and ``check`` counts once), ``functions`` the cells where the
    learner completes a ``def`` with placeholders, ``lines_to_write`` the placeholder
    lines (``YOUR CODE``, ``TODO``, a bare ``...``) in the learner's cells, and
    ``cells_to_run`` the given code cells (neither solution, check, nor placeholder).
    """

    title: str
    words: int
    answers: tuple
    functions: int
    lines_to_write: int
    cells_to_run: int

    def matches(self, part):
        """Whether ``part`` names this section: its whole title, or the title before
        an em dash (``"Part A"`` for ``"Part A — Units and direction"``)."""
        return part in (self.title, self.title.split(" — ", 1)[0])

    @property
    def is_part(self):
        return self.title.startswith("Part ")


def repository_root():
    """The course's repository (the folder above the ``gpulab`` package).

    The labs and the book are read from there; ``gpulab`` must be installed from the
    repository (``pip install -e .``)."""
    root = Path(__file__).resolve().parents[1]
    if not (root / "labs").is_dir() or not (root / "book").is_dir():
        raise ValueError(f"root: {root} holds no labs/ and book/; gpulab must be "
                         "installed from the course repository (pip install -e .)")
    return root


def _root(root):
    if root is None:
        return repository_root()
    root = Path(root)
    if not (root / "labs").is_dir() or not (root / "book").is_dir():
        raise ValueError(f"root must be the course repository (with labs/ and book/); "
                         f"got {str(root)!r}")
    return root


def lab_sections(notebook):
    """Measure every ``## `` section of a lab notebook: a tuple of :class:`LabSection`.

    Parameters
    ----------
    notebook : dict or path
        The notebook as parsed JSON (nbformat 4), or the path of an ``.ipynb`` file.
    """
    if isinstance(notebook, (str, Path)):
        notebook = json.loads(Path(notebook).read_text(encoding="utf-8"))
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise ValueError("notebook must be a notebook (parsed JSON with 'cells') or "
                         f"the path of one; got {type(notebook).__name__}")
    sections = [["", 0, [], 0, 0, 0]]
    for cell in notebook["cells"]:
        src = cell.get("source", "")
        src = "".join(src) if isinstance(src, list) else str(src)
        if cell.get("cell_type") == "markdown":
            prose = _FENCE.sub("", src)
            for line in prose.splitlines():
                m = _PART_HEADING.match(line)
                if m:
                    sections.append([m.group(1), 0, [], 0, 0, 0])
                sections[-1][1] += len(_WORD.findall(line))
            continue
        if cell.get("cell_type") != "code" or "solution" in cell.get(
                "metadata", {}).get("tags", ()):
            continue
        sec = sections[-1]
        names = [m.group(2) for m in _CHECK_CALL.finditer(src)]
        sec[2] += [n for i, n in enumerate(names)
                   if n not in sec[2] and n not in names[:i]]
        holes = [ln for ln in src.splitlines() if _PLACEHOLDER.search(ln)]
        if _CHECK_CELL.match(src.lstrip()) or names:
            continue
        if holes:
            sec[4] += len(holes)
            sec[3] += bool(re.search(r"^\s*def ", src, flags=re.M))
        else:
            sec[5] += 1
    return tuple(LabSection(title=t, words=w, answers=tuple(a), functions=f,
                            lines_to_write=n, cells_to_run=c)
                 for t, w, a, f, n, c in sections if t or w or a or c)


def lab_rates():
    """The assumed rates that turn a lab section's size into minutes (a dict).

    ``words_per_minute``, ``minutes_per_answer``, ``minutes_per_function``,
    ``minutes_per_cell`` (see ``course_tracks.yaml``; kind: assumed).
    """
    return dict(_tracks_data()["lab_rates"])


def section_minutes(section):
    """Estimated time for a learner to work through one :class:`LabSection` [s].

    Notes
    -----
    .. math:: t = \\frac{W}{r_w} + n_a t_a + n_f t_f + n_c t_c

    with the prose's words W, the answers n_a, the functions to write n_f and the
    given cells to run n_c, at the rates of :func:`lab_rates` (assumed, not measured
    in a classroom).
    """
    if not isinstance(section, LabSection):
        raise ValueError(f"section must be a LabSection; got {section!r}")
    r = lab_rates()
    minutes = (section.words / r["words_per_minute"]
               + len(section.answers) * r["minutes_per_answer"]
               + section.functions * r["minutes_per_function"]
               + section.cells_to_run * r["minutes_per_cell"])
    return minutes * 60.0


def lab_estimate(lab, parts, *, opening=True, root=None):
    """Estimated time for the ``parts`` of a lab [s], with its opening if ``opening``.

    The opening is every section before the first part (the introduction, setup and,
    in most labs, the quick checks): a learner works through it once, in the first
    block of a lab.

    >>> round(lab_estimate("lab03_ring_allreduce", ["Part A"], opening=False) / 60) >= 20
    True
    """
    if not isinstance(lab, str) or not _LAB_NAME.match(lab):
        raise ValueError(f"lab must be a lab notebook name like 'lab01_link_math'; "
                         f"got {lab!r}")
    path = _root(root) / "labs" / f"{lab}.ipynb"
    if not path.is_file():
        raise ValueError(f"lab must name a notebook in labs/; got {lab!r}")
    sections = lab_sections(path)
    if isinstance(parts, str) or not parts:
        raise ValueError(f"parts must be a non-empty list of part titles; got {parts!r}")
    chosen = []
    for p in parts:
        found = [s for s in sections if s.matches(p)]
        if not found:
            raise ValueError(f"parts: {lab} has no section {p!r}; it has "
                             f"{', '.join(repr(s.title) for s in sections if s.title)}")
        chosen += found
    if opening:
        first = next((i for i, s in enumerate(sections) if s.is_part), len(sections))
        chosen = list(sections[:first]) + [s for s in chosen if s not in sections[:first]]
    return sum(section_minutes(s) for s in chosen)


def lab_block_estimates(name, root=None):
    """Each lab block of a track with its estimate: ``[(item, seconds)]``.

    The opening of a lab is counted in its first block of the track only.
    """
    seen, out = set(), []
    for it in track(name).items:
        if it.kind == "lab":
            out.append((it, lab_estimate(it.doc, it.run, opening=it.doc not in seen,
                                         root=root)))
            seen.add(it.doc)
    return out


# --- chapter sections by label ----------------------------------------------------
_TARGET = re.compile(r"^\(([A-Za-z0-9_-]+)\)=\s*$")
_HEADING = re.compile(r"^(#{1,6}) (.+?)\s*$")
_ADMONITION = re.compile(r"^`{3,}\{admonition\}\s*(.+?)\s*$")


def section_titles(text):
    """``{label: title}`` of every ``(label)=`` target of a MyST chapter.

    A label on a heading gets the heading's text; a label on an admonition gets the
    admonition's title and, in parentheses, the ``##`` section it sits in (the
    chapters have several boxes of one title).

    >>> section_titles("(a)=\\n## Lanes\\n\\n(b)=\\n```{admonition} Box\\n```\\n")
    {'a': 'Lanes', 'b': 'Box (in “Lanes”)'}
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a chapter's MyST text; got {type(text).__name__}")
    out, section = {}, ""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        h = _HEADING.match(line)
        if h and len(h.group(1)) == 2:
            section = h.group(2)
        m = _TARGET.match(line)
        if not m:
            continue
        nxt = next((ln for ln in lines[i + 1:] if ln.strip()), "")
        h, a = _HEADING.match(nxt), _ADMONITION.match(nxt)
        if h:
            out[m.group(1)] = h.group(2)
        elif a:
            out[m.group(1)] = f"{a.group(1)} (in “{section}”)" if section else a.group(1)
    return out


def section_title(doc, label, root=None):
    """The title of the section ``label`` of chapter ``doc`` (``book/<doc>.md``)."""
    if not isinstance(doc, str) or not _LABEL.match(doc.replace("_", "-")):
        raise ValueError(f"doc must be a chapter file name like 'nvlink'; got {doc!r}")
    path = _root(root) / "book" / f"{doc}.md"
    if not path.is_file():
        raise ValueError(f"doc must name a chapter in book/; got {doc!r}")
    titles = section_titles(path.read_text(encoding="utf-8"))
    if label not in titles:
        raise ValueError(f"label: book/{doc}.md has no section labelled {label!r}")
    return titles[label]


def _inline(text):
    """Heading Markdown as HTML: escaped, with `code` spans."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def agenda_table(name, root=None):
    """The agenda of a track as an HTML table (what the instructor guide shows).

    Chapter sections appear by title, linked to their label; lab parts by the part's
    own heading; each discussion prompt with its talking points.
    """
    root = _root(root)
    estimates = {id(it): s for it, s in lab_block_estimates(name, root)}

    def where(item, names):
        if item.kind == "chapter":
            return "<br>".join(f'<a href="../{item.doc}.html#{n}">'
                               f'{_inline(section_title(item.doc, n, root))}</a>'
                               for n in names)
        if item.kind == "lab":
            sections = lab_sections(root / "labs" / f"{item.doc}.ipynb")
            titles = [next((s.title for s in sections if s.matches(n)), None)
                      for n in names]
            if None in titles:
                raise ValueError(f"name: track {name!r} names a part of {item.doc} "
                                 f"that it lacks: {names[titles.index(None)]!r}")
            return "<br>".join(_inline(title) for title in titles)
        return ""

    rows = []
    for start, minutes, it in agenda_rows(name):
        what = f"<b>{html.escape(it.title)}</b>"
        if it.kind == "lab":
            what += (f"<br><small><code>labs/{it.doc}.ipynb</code>; measured size: "
                     f"about {estimates[id(it)] / 60:.0f} min</small>")
        prompt = "—"
        if it.prompt:
            points = "".join(f"<li>{_inline(p)}</li>" for p in talking_points(it))
            prompt = (f"{html.escape(it.prompt)}<br><i>Talking points:</i>"
                      f"<ul>{points}</ul>")
        rows.append([start, minutes, what, where(it, it.run) or "—",
                     where(it, it.skip) or "—", prompt])
    return html_table(["Start", "Min.", "Activity", "Run", "Skip",
                       "Discussion prompt"], rows, small=True)


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
    are in ``article_claims.yaml`` under ``article_numbers``. The ``srv_*`` values are
    the serving track's: the serving chapters' worked example, from
    :mod:`gpulab.inference`.

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
    v.update(_serving_values())
    return v


#: The serving chapters' worked example (book/serving_decode.md, serving_pcie.md):
#: Llama 3 70B in BF16, batch 32, 8192 tokens of context; layouts at a 50 ms TPOT target
#: and 4096 tokens of context. Exercise values, not hardware data.
_SERVING = {"model": "llama3-70b", "batch": 32, "context": 8192,
            "tpot_target_s": 0.050, "buy_context": 4096, "prompt": 8192}


def _serving_values():
    """The serving track's quantities (``srv_*``), from :mod:`gpulab.inference`."""
    s = _SERVING
    m = model(s["model"])

    def step(system, tp, **kw):
        return inference.decode_step(s["model"], system, tp=tp, batch=s["batch"],
                                     context=s["context"], **kw)
    nv = {t: step("hgx-h200", t, allreduce="twoshot") for t in (2, 4, 8)}
    pc = {t: step("l40s-x8", t) for t in (1, 2, 4, 8)}
    msg = nv[8].message_bytes
    ar_nccl = inference.allreduce_time(msg, 8, "hgx-h200")
    ar_two = inference.allreduce_time(msg, 8, "hgx-h200", algorithm="twoshot")
    best = {n: roi.best_layout(s["model"], n, tpot_target=s["tpot_target_s"],
                               context=s["buy_context"]) for n in roi.SYSTEMS}
    tpd = {r["system"]: r["tokens_per_usd"] for r in roi.buying_table(
        s["model"], roi.EXAMPLE_PRICES, tpot_target=s["tpot_target_s"],
        context=s["buy_context"])}
    e2e = published.end_to_end_rows()

    def offline(system, name="llama2-70b"):
        return next(r["value"] for r in e2e if r["system"] == system
                    and r["model"] == name and r["scenario"] == "offline")
    sxm, pcie, nvl = "NVIDIA DGX H100", "ASUSTeK ESC8000A-E12", "HPE ProLiant DL380a Gen11"
    kv_token = kv.model_kv_bytes_per_token(s["model"])
    kv_prompt = kv_token * s["prompt"]                     # BF16 cache, as the chapter
    prefill = inference.prefill_time(s["model"], "hgx-h200", tp=8, prompt=s["prompt"],
                                     precision="fp8").ttft
    cx7 = specs.nic("ConnectX-7").line_rate.bytes_per_s    # per direction

    def kv_share(bandwidth):
        return 100 * kv.ttft_share(kv.kv_transfer_time(kv_prompt, bandwidth), prefill)
    return {
        "srv_batch": s["batch"],
        "srv_context": s["context"],
        "srv_layers": m.layers,
        "srv_msg_kib": msg / units.KiB,
        "srv_n_ar": 2 * m.layers,
        "srv_ar_nccl_us": ar_nccl / units.US,
        "srv_ar_two_us": ar_two / units.US,
        "srv_ar_nccl_over_two": ar_nccl / ar_two,
        "srv_nv_share2_pct": 100 * nv[2].comm_share,
        "srv_nv_share8_pct": 100 * nv[8].comm_share,
        "srv_nv_tpot4_ms": nv[4].tpot * 1e3,
        "srv_nv_tpot8_ms": nv[8].tpot * 1e3,
        "srv_nv_tok4": nv[4].tokens_per_s_per_gpu,
        "srv_nv_tok8": nv[8].tokens_per_s_per_gpu,
        "srv_pc_fit_tp": min(t for t, d in pc.items() if d.fits_memory),
        "srv_pc_share8_pct": 100 * pc[8].comm_share,
        "srv_pc_tpot8_ms": pc[8].tpot * 1e3,
        "srv_kv_kib_per_token": kv_token / units.KiB,
        "srv_prompt": s["prompt"],
        "srv_kv_prompt_gb": kv_prompt / units.GB,
        "srv_prefill_ms": prefill * 1e3,
        "srv_kv_rdma8_pct": kv_share(8 * cx7),
        "srv_kv_nic1_pct": kv_share(cx7),
        "srv_target_ms": s["tpot_target_s"] * 1e3,
        "srv_best_hgx": best["hgx-h200"].label,
        "srv_best_pcie": best["h100-pcie"].label,
        "srv_best_hgx_over_pcie": (best["hgx-h200"].tokens_per_s_per_gpu
                                   / best["h100-pcie"].tokens_per_s_per_gpu),
        "srv_price_nvl": roi.EXAMPLE_PRICES["dgx-h100"],
        "srv_price_pcie": roi.EXAMPLE_PRICES["h100-pcie"],
        "srv_tpd_dgx_over_pcie": tpd["dgx-h100"] / tpd["h100-pcie"],
        "srv_breakeven_pcie_price": (roi.EXAMPLE_PRICES["h100-pcie"] * tpd["h100-pcie"]
                                     / tpd["dgx-h100"]),
        "srv_tp_excess": ((offline(sxm) / offline(pcie))
                          / (offline(sxm, "gptj-6b") / offline(pcie, "gptj-6b"))),
        "srv_pcie8_over_nvl4": offline(pcie) / offline(nvl),
    }


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
