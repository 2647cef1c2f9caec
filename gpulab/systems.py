"""System presets: what a whole server looks like to the copy and collective models.

A :class:`System` bundles the GPU, its NVLink fabric, its PCIe host link and the
measured or cited efficiencies of host<->device and GPU<->GPU copies. Presets live
in ``gpulab/data/systems.yaml``; a user describes their own server in a YAML file
with the same schema and loads it with :func:`load` (or passes its path wherever a
system name is accepted, see :func:`resolve`).

Schema of one system (all keys required unless marked optional)::

    systems:
      my-server:
        description: "8x H100 SXM5 with NVSwitch"
        gpu: H100                  # a name from gpulab.specs.gpu_names()
        gpu_variant: SXM5 80GB     # optional free text
        n_gpus: 8                  # GPUs in the whole system
        gpus_per_node: 8
        nvlink: {generation: 4, links_per_gpu: 18, fabric: nvswitch}  # or mesh / none
        pcie: {generation: 5, lanes: 16, max_payload_bytes: 256}
        host_copy:
          source: "where the numbers come from"
          pinned:                  # page-locked host memory, direct DMA
            h2d: {latency_s: 5.0e-6, efficiency: 0.88, issue_floor_s: 2.4e-5}
            d2h: {latency_s: 5.0e-6, efficiency: 0.88, issue_floor_s: 2.4e-5}
          pageable:                # staged through a pinned bounce buffer
            h2d: {latency_s: 6.0e-5, host_memcpy_gb_per_s: 27.0, issue_floor_s: 3.0e-5}
            d2h: {latency_s: 5.0e-5, host_memcpy_gb_per_s: 18.0, issue_floor_s: 3.3e-5}
        p2p: {via: nvlink, latency_s: 1.5e-5, efficiency: 0.88, issue_floor_s: 5.1e-5,
              source: "..."}
        source: "where the hardware description comes from"
        accessed: "2026-11-30"

Units: seconds, fractions, GB/s (1e9 bytes per second, per direction). Write small
numbers with a decimal point (``6.0e-6``): YAML 1.1 reads ``6e-6`` as text.
``efficiency`` is the achieved large-copy bandwidth as a fraction of the nominal
path rate (PCIe: the encoded rate of the link; NVLink: the per-direction rate of the
links between the two GPUs). ``issue_floor_s`` is the shortest time per copy when
copies are issued back to back (the host cannot issue them faster); 0 disables it.
The copy model is in :mod:`gpulab.pcie`.

Examples
--------
>>> from gpulab import systems
>>> systems.names()
['dgx-h100', 'h100-pcie', 'h200-x2-measured', 'hgx-h200']
>>> s = systems.get("hgx-h200")
>>> s.gpu, s.n_gpus, s.nvlink.fabric, s.pcie.generation
('H200', 8, 'nvswitch', 5)
>>> round(s.host_copy.params("pinned", "h2d").efficiency, 2)
0.88
"""
from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass

import yaml

from . import specs, units
from ._validate import check_choice

__all__ = [
    "System", "NVLinkConfig", "PCIeConfig", "CopyParams", "HostCopy", "P2PConfig",
    "FABRICS", "P2P_VIA", "names", "get", "load", "parse", "resolve",
]

#: NVLink fabrics: NVSwitch (every GPU reaches every other over all its links),
#: a direct mesh (links split among the peers), or no NVLink.
FABRICS = ("nvswitch", "mesh", "none")
#: How GPU-to-GPU copies travel.
P2P_VIA = ("nvlink", "pcie", "host")
_DIRECTIONS = ("h2d", "d2h")
_MEMORIES = ("pinned", "pageable")


@dataclass(frozen=True)
class NVLinkConfig:
    """NVLink of each GPU: ``generation`` (None without NVLink), ``links_per_gpu``,
    ``fabric`` (one of :data:`FABRICS`)."""

    generation: int | None
    links_per_gpu: int
    fabric: str


@dataclass(frozen=True)
class PCIeConfig:
    """Host link of each GPU: PCIe ``generation``, ``lanes`` and ``max_payload_bytes``."""

    generation: int
    lanes: int
    max_payload_bytes: int


@dataclass(frozen=True)
class CopyParams:
    """Parameters of one copy kind.

    Attributes
    ----------
    latency_s : float
        Fixed cost per copy on the device side (the alpha of alpha-beta). [s]
    issue_floor_s : float
        Shortest time per copy when copies are issued back to back. [s]
    efficiency : float or None
        Large-copy bandwidth / nominal path bandwidth (pinned copies, P2P). [-]
    host_memcpy_bandwidth : units.Bandwidth or None
        Host memcpy rate into or out of the pinned bounce buffer (pageable copies).
    """

    latency_s: float
    issue_floor_s: float
    efficiency: float | None = None
    host_memcpy_bandwidth: units.Bandwidth | None = None


@dataclass(frozen=True)
class HostCopy:
    """Host<->device copy parameters for pinned and pageable memory, both directions."""

    pinned_h2d: CopyParams
    pinned_d2h: CopyParams
    pageable_h2d: CopyParams
    pageable_d2h: CopyParams
    source: str

    def params(self, memory, direction):
        """The :class:`CopyParams` of ``memory`` ("pinned"/"pageable") and
        ``direction`` ("h2d"/"d2h")."""
        check_choice("memory", memory, _MEMORIES)
        check_choice("direction", direction, _DIRECTIONS)
        return getattr(self, f"{memory}_{direction}")


@dataclass(frozen=True)
class P2PConfig:
    """GPU-to-GPU copy parameters: the path (``via``, one of :data:`P2P_VIA`), the
    :class:`CopyParams` and the source."""

    via: str
    params: CopyParams
    source: str


@dataclass(frozen=True)
class System:
    """One server or cluster preset (see the module docstring for the schema)."""

    name: str
    description: str
    gpu: str
    gpu_variant: str | None
    n_gpus: int
    gpus_per_node: int
    nvlink: NVLinkConfig
    pcie: PCIeConfig
    host_copy: HostCopy
    p2p: P2PConfig
    source: str
    accessed: str

    @property
    def n_nodes(self):
        """Number of nodes (``n_gpus / gpus_per_node``)."""
        return self.n_gpus // self.gpus_per_node

    @property
    def gpu_spec(self):
        """The :class:`gpulab.specs.GPUSpec` of the GPU."""
        return specs.gpu(self.gpu)

    @property
    def nvlink_links_to_peer(self):
        """NVLink links a copy between two GPUs of one node can use.

        NVSwitch: all links of the GPU; mesh: the links of one GPU split evenly
        among its peers; no NVLink: 0.
        """
        if self.nvlink.fabric == "nvswitch":
            return self.nvlink.links_per_gpu
        if self.nvlink.fabric == "mesh":
            return self.nvlink.links_per_gpu // max(self.gpus_per_node - 1, 1)
        return 0


# --- parsing with line numbers -------------------------------------------------------
class _Doc:
    """A parsed YAML document and the line of every key path (for error messages)."""

    def __init__(self, text, source):
        self.source = source
        self.lines = {}
        loader = None
        try:
            loader = yaml.SafeLoader(text)
            node = loader.get_single_node()
            self._index(node, ())
            self.data = None if node is None else loader.construct_document(node)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark",
                                                                   None)
            if mark is not None:
                line = mark.line + 1
            elif isinstance(getattr(exc, "position", None), int):   # ReaderError
                line = text[:exc.position].count("\n") + 1
            else:
                line = None
            where = f"line {line}: " if line else ""
            problem = getattr(exc, "problem", None)
            if problem is None and isinstance(exc, yaml.reader.ReaderError):
                problem = f"unacceptable character #x{exc.character:04x}"
            raise ValueError(f"{source}: {where}not valid YAML: "
                             f"{problem or exc}") from None
        except (TypeError, OverflowError, RecursionError) as exc:
            raise ValueError(f"{source}: not valid YAML: {exc}") from None
        except ValueError as exc:       # e.g. a date such as 2026-13-45
            if str(exc).startswith(f"{source}:"):
                raise
            raise ValueError(f"{source}: not valid YAML: {exc}") from None
        finally:
            if loader is not None:
                loader.dispose()

    def _index(self, node, path):
        if node is None:
            return
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for k, v in node.value:
                line = k.start_mark.line + 1
                if not isinstance(k, yaml.ScalarNode):
                    self.fail(path, "keys must be plain names", line=line)
                if k.value in seen:
                    self.fail(path + (k.value,), "duplicate key", line=line)
                seen.add(k.value)
                self.lines[path + (k.value,)] = line
                self._index(v, path + (k.value,))
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                self._index(v, path + (i,))

    def line(self, path):
        while path and path not in self.lines:
            path = path[:-1]
        return self.lines.get(path)

    def fail(self, path, msg, line=None):
        line = self.line(path) if line is None else line
        where = f"line {line}: " if line else ""
        key = ".".join(str(p) for p in path) or "(top level)"
        raise ValueError(f"{self.source}: {where}{key}: {msg}")


class _Reader:
    """Typed access to one mapping of a :class:`_Doc`, with path-aware errors."""

    def __init__(self, doc, path, value, allowed, optional=()):
        self.doc, self.path = doc, path
        if not isinstance(value, dict):
            doc.fail(path, f"must be a mapping with keys {', '.join(allowed)}; "
                           f"got {type(value).__name__}")
        unknown = [k for k in value if k not in allowed]
        if unknown:
            doc.fail(path + (unknown[0],), f"unknown key {unknown[0]!r} (allowed: "
                                           f"{', '.join(allowed)})")
        missing = [k for k in allowed if k not in value and k not in optional]
        if missing:
            doc.fail(path, f"missing key {missing[0]!r}")
        self.value = value

    def raw(self, key, default=None):
        return self.value.get(key, default)

    def fail(self, key, msg):
        self.doc.fail(self.path + (key,), msg)

    def text(self, key, default=None):
        v = self.value.get(key, default)
        if v is default and key not in self.value:
            return v
        if not isinstance(v, str) or not v.strip():
            self.fail(key, f"must be non-empty text; got {v!r}")
        return v

    def integer(self, key, low, high=None, allow_none=False):
        v = self.value.get(key)
        if v is None and allow_none:
            return None
        if isinstance(v, bool) or not isinstance(v, int) or v < low or \
                (high is not None and v > high):
            rng = f">= {low}" if high is None else f"in [{low}, {high}]"
            self.fail(key, f"must be an integer {rng}; got {v!r}")
        return v

    def number(self, key, low, high=None, low_inclusive=True, default=None):
        if key not in self.value and default is not None:
            return default
        v = self.value.get(key)
        hint = ""
        if isinstance(v, str):
            try:
                float(v)
                hint = " (write it with a decimal point, e.g. 6.0e-6: YAML 1.1 " \
                       "reads 6e-6 as text)"
            except ValueError:
                pass
        ok = (isinstance(v, (int, float)) and not isinstance(v, bool)
              and math.isfinite(v) and (v >= low if low_inclusive else v > low)
              and (high is None or v <= high))
        if not ok:
            lb = "[" if low_inclusive else "("
            rng = f">= {low}" if high is None and low_inclusive else (
                f"> {low}" if high is None else f"in {lb}{low}, {high}]")
            self.fail(key, f"must be a number {rng}; got {v!r}{hint}")
        return float(v)

    def choice(self, key, choices):
        v = self.value.get(key)
        if not isinstance(v, (str, int)) or isinstance(v, bool) or v not in choices:
            self.fail(key, f"must be one of {', '.join(map(repr, choices))}; got {v!r}")
        return v

    def sub(self, key, allowed, optional=()):
        return _Reader(self.doc, self.path + (key,), self.value.get(key), allowed,
                       optional)


_TOP = ("description", "gpu", "gpu_variant", "n_gpus", "gpus_per_node", "nvlink",
        "pcie", "host_copy", "p2p", "source", "accessed")


def _copy_params(r, kind):
    extra = "efficiency" if kind == "efficiency" else "host_memcpy_gb_per_s"
    c = r  # already a _Reader over the mapping
    params = dict(latency_s=c.number("latency_s", 0.0, 1.0),
                  issue_floor_s=c.number("issue_floor_s", 0.0, 1.0, default=0.0))
    if extra == "efficiency":
        params["efficiency"] = c.number("efficiency", 0.0, 1.0, low_inclusive=False)
    else:
        params["host_memcpy_bandwidth"] = units.Bandwidth.from_gb_per_s(
            c.number("host_memcpy_gb_per_s", 0.0, 1e6, low_inclusive=False),
            units.PER_DIRECTION)
    return CopyParams(**params)


def _system(doc, name, value):
    path = ("systems", name)
    r = _Reader(doc, path, value, _TOP, optional=("gpu_variant",))
    gpu = r.choice("gpu", specs.gpu_names())
    n_gpus = r.integer("n_gpus", 1)
    per_node = r.integer("gpus_per_node", 1, n_gpus)
    if n_gpus % per_node:
        r.fail("n_gpus", f"must be a multiple of gpus_per_node ({per_node}); "
                         f"got {n_gpus}")
    nv = r.sub("nvlink", ("generation", "links_per_gpu", "fabric"))
    fabric = nv.choice("fabric", FABRICS)
    gens = [g.generation for g in specs.nvlink_generations()]
    nvlink = NVLinkConfig(
        generation=nv.integer("generation", min(gens), max(gens),
                              allow_none=fabric == "none"),
        links_per_gpu=nv.integer("links_per_gpu", 0 if fabric == "none" else 1, 1024),
        fabric=fabric)
    if fabric == "none" and nvlink.links_per_gpu:
        nv.fail("links_per_gpu", "must be 0 when fabric is 'none'")
    pc = r.sub("pcie", ("generation", "lanes", "max_payload_bytes"))
    from . import pcie as _pcie  # late: gpulab.pcie imports this module
    pcie = PCIeConfig(
        generation=pc.choice("generation",
                             [g.generation for g in specs.pcie_generations()]),
        lanes=pc.choice("lanes", _pcie.protocol_constant("link_widths")),
        max_payload_bytes=pc.choice("max_payload_bytes",
                                    _pcie.protocol_constant("max_payload_bytes")))
    hc = r.sub("host_copy", ("source", "pinned", "pageable"))
    parts = {}
    for mem, kind in (("pinned", "efficiency"), ("pageable", "memcpy")):
        m = hc.sub(mem, _DIRECTIONS)
        for d in _DIRECTIONS:
            keys = ("latency_s", "issue_floor_s",
                    "efficiency" if kind == "efficiency" else "host_memcpy_gb_per_s")
            parts[f"{mem}_{d}"] = _copy_params(m.sub(d, keys, optional=("issue_floor_s",)),
                                               kind)
    host_copy = HostCopy(source=hc.text("source"), **parts)
    pp = r.sub("p2p", ("via", "latency_s", "issue_floor_s", "efficiency", "source"),
               optional=("issue_floor_s",))
    via = pp.choice("via", P2P_VIA)
    if via == "nvlink" and fabric == "none":
        pp.fail("via", "is 'nvlink' but nvlink.fabric is 'none'")
    if via == "nvlink" and fabric == "mesh" and nvlink.links_per_gpu < per_node - 1:
        pp.fail("via", f"is 'nvlink' but a mesh of {per_node} GPUs with "
                       f"{nvlink.links_per_gpu} links per GPU has no link per peer")
    p2p = P2PConfig(via=via, params=_copy_params(pp, "efficiency"),
                    source=pp.text("source"))
    accessed = r.raw("accessed")
    if hasattr(accessed, "isoformat"):          # YAML reads 2026-11-30 as a date
        accessed = accessed.isoformat()
    if not isinstance(accessed, str) or not accessed.strip():
        r.fail("accessed", f"must be a date such as '2026-11-30'; got {accessed!r}")
    return System(name=name, description=r.text("description"), gpu=gpu,
                  gpu_variant=r.text("gpu_variant", None), n_gpus=n_gpus,
                  gpus_per_node=per_node, nvlink=nvlink, pcie=pcie,
                  host_copy=host_copy, p2p=p2p, source=r.text("source"),
                  accessed=accessed)


def parse(text, *, source="<text>"):
    """Parse systems YAML text into ``{name: System}``.

    Parameters
    ----------
    text : str
        YAML with one top-level key ``systems`` (schema in the module docstring).
    source : str
        Name used in error messages (a file name).

    Raises
    ------
    ValueError
        Naming the file, the line and the key path of the first problem.

    Examples
    --------
    >>> parse("systems: {}")
    Traceback (most recent call last):
    ...
    ValueError: <text>: line 1: systems: must define at least one system
    >>> parse("systems:\\n  a:\\n    gpu: H100\\n")
    Traceback (most recent call last):
    ...
    ValueError: <text>: line 2: systems.a: missing key 'description'
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be YAML text (str); got {type(text).__name__}")
    if not isinstance(source, str):
        raise ValueError(f"source must be a str; got {source!r}")
    doc = _Doc(text, source)
    top = doc.data
    if not isinstance(top, dict) or "systems" not in top:
        doc.fail((), "must be a mapping with the key 'systems'")
    extra = [k for k in top if k != "systems"]
    if extra:
        doc.fail((extra[0],), f"unknown top-level key {extra[0]!r} (allowed: systems)")
    table = top["systems"]
    if not isinstance(table, dict) or not table:
        doc.fail(("systems",), "must define at least one system")
    out = {}
    for name, value in table.items():
        if not isinstance(name, str) or not name.strip() or ":" in name:
            doc.fail(("systems", str(name)), "system names must be text without ':'")
        out[name] = _system(doc, name, value)
    return out


def load(path):
    """Load the systems of a user YAML file (same schema as the presets).

    Parameters
    ----------
    path : str or os.PathLike
        The file.

    Returns
    -------
    dict[str, System]

    Raises
    ------
    ValueError
        If the file cannot be read (naming ``path``) or is not a valid systems file
        (naming the file, line and key).
    """
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise ValueError(f"path must be a file path; got {path!r}")
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, ValueError) as exc:      # ValueError: bad bytes, NUL in path
        why = getattr(exc, "strerror", None) or str(exc)
        raise ValueError(f"path: cannot read {str(path)!r}: {why}") from None
    return parse(text, source=os.fspath(path))


@functools.lru_cache(maxsize=None)
def _presets():
    return parse(specs.read_data_text("systems.yaml"), source="gpulab/data/systems.yaml")


def names():
    """Names of the preset systems, sorted."""
    return sorted(_presets())


def get(name):
    """Return the preset system ``name`` (see :func:`names`).

    >>> get("h100-pcie").p2p.via
    'pcie'
    """
    table = _presets()
    check_choice("name", name, sorted(table))
    return table[name]


def resolve(system):
    """Turn a :class:`System`, a preset name or a YAML file path into a System.

    A path may end in ``:NAME`` to pick one system of a file that defines several
    (``my.yaml:node-a``); a file with one system needs no suffix.

    >>> resolve("dgx-h100") is get("dgx-h100")
    True
    """
    if isinstance(system, System):
        return system
    if not isinstance(system, (str, os.PathLike)) or not str(system).strip():
        raise ValueError("system must be a System, a preset name "
                         f"({', '.join(names())}) or a YAML file path; got {system!r}")
    text = os.fspath(system)
    if text in _presets():
        return _presets()[text]
    path, pick = text, None
    head, sep, tail = text.rpartition(":")
    if sep and head.lower().endswith((".yaml", ".yml")):
        path, pick = head, tail
    if not (path.lower().endswith((".yaml", ".yml")) or os.path.exists(path)):
        raise ValueError(f"system must be a preset name ({', '.join(names())}) or a "
                         f"YAML file path; got {text!r}")
    try:
        table = load(path)
    except ValueError as exc:
        raise ValueError(f"system: {exc}") from None
    if pick is None:
        if len(table) != 1:
            raise ValueError(f"system: {path!r} defines {len(table)} systems "
                             f"({', '.join(table)}); pick one with {path}:NAME")
        return next(iter(table.values()))
    if pick not in table:
        raise ValueError(f"system: {path!r} has no system {pick!r} "
                         f"(it has {', '.join(table)})")
    return table[pick]
