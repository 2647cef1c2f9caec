"""Reading systems: the YAML schema checked with line numbers, the presets of
``gpulab/data/systems.yaml``, user files, and the lookups (:func:`get`,
:func:`resolve`, :func:`nvlink_peers`). The schema is in :mod:`gpulab.systems`.
"""
from __future__ import annotations

import functools
import math
import os

import yaml

from .. import specs, units
from .._validate import check_choice
from .copies import (HARDWARE_COPY_FIELDS, HARDWARE_COPY_KEYS, HOST_COPY_DIRECTIONS,
                     CopyHardware, CopyParams, HardwareCopy, HostCopy)
from .model import (FABRICS, NETWORK_FABRICS, NETWORK_TOPOLOGIES, HOST_CPUS, P2P_VIA, NetworkConfig, NVLinkConfig,
                    P2PConfig, PCIeConfig, System)


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

    def boolean(self, key, default=False):
        if key not in self.value:
            return default
        v = self.value.get(key)
        if not isinstance(v, bool):
            self.fail(key, f"must be true or false; got {v!r}")
        return v

    def sub(self, key, allowed, optional=()):
        return _Reader(self.doc, self.path + (key,), self.value.get(key), allowed,
                       optional)


_TOP = ("description", "gpu", "gpu_variant", "n_gpus", "gpus_per_node", "nvlink",
        "pcie", "host_copy", "p2p", "network", "source", "accessed",
        "collective_model", "copy_hardware")
_CM_COLLECTIVE_KEYS = ("launch_s", "efficiency", "efficiency_8", "fill", "fill_bytes",
                       "launch_gpu_s", "gpu_latency_s")
_CM_PROTOCOL_KEYS = ("base_latency_s", "hop_latency_s", "bandwidth")
_NVLINK_KEYS = ("generation", "links_per_gpu", "fabric", "nvls", "domain_gpus",
                "peer_links", "switch_chips")


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
    r = _Reader(doc, path, value, _TOP, optional=("gpu_variant", "network",
                                                  "collective_model", "copy_hardware"))
    gpu = r.choice("gpu", specs.gpu_names())
    n_gpus = r.integer("n_gpus", 1)
    per_node = r.integer("gpus_per_node", 1, n_gpus)
    if n_gpus % per_node:
        r.fail("n_gpus", f"must be a multiple of gpus_per_node ({per_node}); "
                         f"got {n_gpus}")
    nvlink = _nvlink(r.sub("nvlink", _NVLINK_KEYS, optional=_NVLINK_KEYS[3:]),
                     n_gpus, per_node)
    fabric = nvlink.fabric
    domain = nvlink.domain_gpus
    pc = r.sub("pcie", ("generation", "lanes", "max_payload_bytes", "p2p"),
               optional=("p2p",))
    pcie = PCIeConfig(
        generation=pc.choice("generation",
                             [g.generation for g in specs.pcie_generations()]),
        lanes=pc.choice("lanes", list(specs.assumption("pcie", "link_widths"))),
        max_payload_bytes=pc.choice("max_payload_bytes",
                                    list(specs.assumption("pcie", "max_payload_bytes"))),
        p2p=pc.boolean("p2p", True))
    hc = r.sub("host_copy", ("source", "pinned", "pageable"))
    parts = {}
    for mem, kind in (("pinned", "efficiency"), ("pageable", "memcpy")):
        m = hc.sub(mem, HOST_COPY_DIRECTIONS)
        for d in HOST_COPY_DIRECTIONS:
            keys = ("latency_s", "issue_floor_s",
                    "efficiency" if kind == "efficiency" else "host_memcpy_gb_per_s")
            parts[f"{mem}_{d}"] = _copy_params(m.sub(d, keys, optional=("issue_floor_s",)),
                                               kind)
    host_copy = HostCopy(source=hc.text("source"), **parts)
    pp = r.sub("p2p", ("via", "latency_s", "issue_floor_s", "efficiency", "source"),
               optional=("issue_floor_s",))
    via = pp.choice("via", P2P_VIA)
    if via == "pcie" and not pcie.p2p:
        pp.fail("via", "is 'pcie' but pcie.p2p is false (the driver refuses PCIe "
                       "peer-to-peer): use via 'host' (copies staged through host "
                       "memory)")
    if via == "nvlink" and fabric == "none":
        pp.fail("via", "is 'nvlink' but nvlink.fabric is 'none'")
    if via == "nvlink" and fabric == "mesh" and nvlink.peer_links is None \
            and nvlink.links_per_gpu < domain - 1:
        pp.fail("via", f"is 'nvlink' but a mesh of {domain} GPUs with "
                       f"{nvlink.links_per_gpu} links per GPU has no link per peer")
    if via == "nvlink" and nvlink.peer_links is not None and domain > 1 \
            and not nvlink.peer_links[0][1]:
        pp.fail("via", "is 'nvlink' but nvlink.peer_links has no link between GPU 0 "
                       "and GPU 1 (the pair the copy model uses)")
    p2p = P2PConfig(via=via, params=_copy_params(pp, "efficiency"),
                    source=pp.text("source"))
    network = None
    if "network" in r.value:
        network = _network(r.sub("network", _NETWORK_KEYS,
                                 optional=_NETWORK_KEYS[3:]))
    elif n_gpus // per_node > 1 and domain < n_gpus:
        r.fail("n_gpus", f"spans {n_gpus // per_node} nodes whose GPUs are not all in "
                         f"one NVLink domain ({domain} GPUs), so the system needs a "
                         "'network' section (nic, nics_per_node, fabric)")
    accessed = r.raw("accessed")
    if hasattr(accessed, "isoformat"):          # YAML reads 2026-11-30 as a date
        accessed = accessed.isoformat()
    if not isinstance(accessed, str) or not accessed.strip():
        r.fail("accessed", f"must be a date such as '2026-11-30'; got {accessed!r}")
    cm = None
    if "collective_model" in r.value:
        cm = _collective_model(r.sub("collective_model", ("transports", "protocols",
                                                          "source"),
                                     optional=("transports", "protocols")))
    hw = None
    if "copy_hardware" in r.value:
        hw = _copy_hardware(r.sub("copy_hardware", ("source", "accessed", "kind")
                                  + HARDWARE_COPY_KEYS))
    return System(name=name, description=r.text("description"), gpu=gpu,
                  gpu_variant=r.text("gpu_variant", None), n_gpus=n_gpus,
                  gpus_per_node=per_node, nvlink=nvlink, pcie=pcie,
                  host_copy=host_copy, p2p=p2p, source=r.text("source"),
                  accessed=accessed, network=network, collective_model=cm,
                  copy_hardware=hw)


def _date(r, key):
    value = r.raw(key)
    if hasattr(value, "isoformat"):              # YAML reads 2026-12-01 as a date
        value = value.isoformat()
    if not isinstance(value, str) or not value.strip():
        r.fail(key, f"must be a date such as '2026-12-01'; got {value!r}")
    return value


def _copy_hardware(r):
    """The optional ``copy_hardware`` section (hardware copy latency and bandwidth)."""
    kind = r.choice("kind", specs.KINDS)
    copies = {}
    for key in HARDWARE_COPY_KEYS:
        if key not in r.value:
            continue
        c = r.sub(key, HARDWARE_COPY_FIELDS, optional=(
            "kind", "source", "knee_bytes", "bandwidth_above_knee_gb_per_s"))
        knee = above = None
        if "knee_bytes" in c.value or "bandwidth_above_knee_gb_per_s" in c.value:
            knee = c.number("knee_bytes", 0.0, 2.0 ** 60, low_inclusive=False)
            above = units.Bandwidth.from_gb_per_s(
                c.number("bandwidth_above_knee_gb_per_s", 0.0, 1e6, low_inclusive=False),
                units.PER_DIRECTION)
        copies[key] = HardwareCopy(
            latency_s=c.number("latency_s", 0.0, 1.0),
            pipelined_s=c.number("pipelined_s", 0.0, 1.0),
            bandwidth=units.Bandwidth.from_gb_per_s(
                c.number("bandwidth_gb_per_s", 0.0, 1e6, low_inclusive=False),
                units.PER_DIRECTION),
            cuda_issue_s=c.number("cuda_issue_s", 0.0, 1.0),
            kind=c.choice("kind", specs.KINDS) if "kind" in c.value else kind,
            source=c.text("source", None), knee_bytes=knee, bandwidth_above_knee=above)
    return CopyHardware(copies=tuple(copies.items()), source=r.text("source"),
                        accessed=_date(r, "accessed"), kind=kind)


def _collective_model(r):
    """The optional ``collective_model`` section: calibrated overrides."""
    out = {"source": r.text("source")}
    if "transports" in r.value:
        tr = r.sub("transports", ("p2p", "shm"), optional=("p2p", "shm"))
        out["transports"] = {}
        for t in ("p2p", "shm"):
            if t not in tr.value:
                continue
            keys = ("fill", "fill_bytes", "launch_gpu_s", "channel_s")
            tt = tr.sub(t, keys + ("collectives",), optional=keys + ("collectives",))
            d = {k: tt.number(k, 0) for k in keys if k in tt.value}
            if "collectives" in tt.value:
                # the collectives the shared model (nccl_model.yaml) calibrates
                modelled = tuple(specs.assumption("nccl", f"transports/{t}/collectives"))
                cs = tt.sub("collectives", modelled, optional=modelled)
                d["collectives"] = {}
                for c in modelled:
                    if c not in cs.value:
                        continue
                    e = cs.sub(c, _CM_COLLECTIVE_KEYS, optional=_CM_COLLECTIVE_KEYS)
                    vals = {}
                    for k in _CM_COLLECTIVE_KEYS:
                        if k in e.value:
                            vals[k] = e.number(k, 0, 1, low_inclusive=False) \
                                if k.startswith("efficiency") else e.number(k, 0)
                    d["collectives"][c] = vals
            out["transports"][t] = d
    if "protocols" in r.value:
        ps = r.sub("protocols", ("LL", "LL128", "Simple"),
                   optional=("LL", "LL128", "Simple"))
        out["protocols"] = {}
        for p in ("LL", "LL128", "Simple"):
            if p in ps.value:
                e = ps.sub(p, _CM_PROTOCOL_KEYS, optional=_CM_PROTOCOL_KEYS)
                out["protocols"][p] = {
                    k: (e.number(k, 0, 1, low_inclusive=False) if k == "bandwidth"
                        else e.number(k, 0)) for k in _CM_PROTOCOL_KEYS if k in e.value}
    return out


def _nvlink(nv, n_gpus, per_node):
    """The ``nvlink`` section: generation, links, fabric, nvls, domain, peer links."""
    fabric = nv.choice("fabric", FABRICS)
    gens = [g.generation for g in specs.nvlink_generations()]
    generation = nv.integer("generation", min(gens), max(gens),
                            allow_none=fabric == "none")
    links_per_gpu = nv.integer("links_per_gpu", 0 if fabric == "none" else 1, 1024)
    if fabric == "none" and links_per_gpu:
        nv.fail("links_per_gpu", "must be 0 when fabric is 'none'")
    nvls = nv.boolean("nvls")
    if nvls and fabric != "nvswitch":
        nv.fail("nvls", f"is true but fabric is {fabric!r}: in-switch reduction "
                        "needs fabric 'nvswitch'")
    if nvls and generation is not None and generation < 4:
        nv.fail("nvls", f"is true but NVLink {generation} predates the "
                        "third-generation NVSwitch (NVLink 4), the first with "
                        "in-switch reduction")
    if "domain_gpus" in nv.value:
        domain = nv.integer("domain_gpus", 1, n_gpus)
    else:
        domain = 1 if fabric == "none" else per_node
    if fabric == "none" and domain != 1:
        nv.fail("domain_gpus", f"must be 1 when fabric is 'none'; got {domain}")
    if n_gpus % domain or (domain % per_node and per_node % domain):
        nv.fail("domain_gpus", f"must divide n_gpus ({n_gpus}) and either divide or be "
                               f"a multiple of gpus_per_node ({per_node}); got {domain}")
    if domain > per_node and fabric != "nvswitch":
        nv.fail("domain_gpus", f"spans several nodes ({domain} > gpus_per_node "
                               f"{per_node}), which needs fabric 'nvswitch'; got "
                               f"{fabric!r}")
    peer_links = None
    if "peer_links" in nv.value:
        if fabric not in ("hybrid_cube_mesh", "mesh"):
            nv.fail("peer_links", f"applies to direct fabrics (hybrid_cube_mesh, mesh) "
                                  f"only; fabric is {fabric!r}")
        peer_links = _peer_links(nv, domain, links_per_gpu)
    elif fabric == "hybrid_cube_mesh":
        nv.fail("fabric", "is 'hybrid_cube_mesh', which needs nvlink.peer_links (the "
                          "links between every pair of GPUs)")
    switch_chips = None
    if "switch_chips" in nv.value:
        if fabric != "nvswitch":
            nv.fail("switch_chips", f"applies to fabric 'nvswitch' only; fabric is "
                                    f"{fabric!r}")
        switch_chips = nv.integer("switch_chips", 1, 1024)
    return NVLinkConfig(generation=generation, links_per_gpu=links_per_gpu,
                        fabric=fabric, nvls=nvls, domain_gpus=domain,
                        peer_links=peer_links, switch_chips=switch_chips)


def _peer_links(nv, domain, links_per_gpu):
    """Validate the ``peer_links`` matrix: square (``domain``), symmetric, zero
    diagonal, non-negative integers, row sums at most ``links_per_gpu``."""
    m = nv.value["peer_links"]
    path = nv.path + ("peer_links",)
    if not isinstance(m, list) or len(m) != domain:
        nv.fail("peer_links", f"must be a list of {domain} rows (domain_gpus); got "
                              f"{m!r}"[:200])
    rows = []
    for i, row in enumerate(m):
        if not isinstance(row, list) or len(row) != domain or any(
                isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in row):
            nv.doc.fail(path + (i,), f"must be a list of {domain} integers >= 0; "
                                     f"got {row!r}"[:200])
        if row[i]:
            nv.doc.fail(path + (i,), f"GPU {i} cannot link to itself: entry {i} must "
                                     f"be 0; got {row[i]}")
        if sum(row) > links_per_gpu:
            nv.doc.fail(path + (i,), f"GPU {i} uses {sum(row)} links, more than "
                                     f"links_per_gpu ({links_per_gpu})")
        rows.append(tuple(row))
    for i in range(domain):
        for j in range(i):
            if rows[i][j] != rows[j][i]:
                nv.doc.fail(path + (i,), f"must be symmetric: GPU {i} -> {j} has "
                                         f"{rows[i][j]} links but GPU {j} -> {i} has "
                                         f"{rows[j][i]}")
    return tuple(rows)


_NETWORK_KEYS = ("nic", "nics_per_node", "fabric", "nic_gbit_per_s", "sharp", "gdr",
                 "topology", "oversubscription", "leaf_nodes", "host_cpu")


def _network(nw):
    """The optional ``network`` section (``nic: null`` needs ``nic_gbit_per_s``)."""
    nic = None if nw.value.get("nic", "") is None \
        else nw.choice("nic", [n.name for n in specs.nics()])
    rate = nw.number("nic_gbit_per_s", 0.0, 1e5, low_inclusive=False) \
        if "nic_gbit_per_s" in nw.value else None
    if nic is None and rate is None:
        nw.fail("nic", "is null: give the NIC's rate in nic_gbit_per_s")
    fabric = nw.value.get("fabric")
    if fabric == "ethernet":                      # older files: RDMA over Ethernet
        fabric = "roce"
    else:
        fabric = nw.choice("fabric", NETWORK_FABRICS)
    leaf = nw.integer("leaf_nodes", 1, 1_000_000) if "leaf_nodes" in nw.value else None
    return NetworkConfig(
        nic=nic, nics_per_node=nw.integer("nics_per_node", 1, 1024), fabric=fabric,
        nic_gbit_per_s=rate, sharp=nw.boolean("sharp", False), gdr=nw.boolean("gdr", True),
        topology=(nw.choice("topology", NETWORK_TOPOLOGIES) if "topology" in nw.value
                  else "rail_optimized"),
        oversubscription=(nw.number("oversubscription", 1.0, 1000.0)
                          if "oversubscription" in nw.value else 1.0),
        leaf_nodes=leaf,
        host_cpu=(nw.choice("host_cpu", HOST_CPUS) if "host_cpu" in nw.value
                  else "unknown"))


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
        if isinstance(value, dict) and "base" in value:
            value = _inherit(doc, name, value)
        out[name] = _system(doc, name, value)
    return out


def _inherit(doc, name, value):
    """``base: <preset>``: start from the preset's YAML mapping, then apply this
    entry's keys (mappings merged key by key, anything else replaced)."""
    base = value["base"]
    raw = yaml.safe_load(specs.read_data_text("systems.yaml"))["systems"]
    if not isinstance(base, str) or base not in raw:
        doc.fail(("systems", name, "base"), f"must name a preset ({', '.join(raw)}); "
                                            f"got {base!r}")

    def merge(a, b):
        if isinstance(a, dict) and isinstance(b, dict):
            return {**a, **{k: merge(a.get(k), v) for k, v in b.items()}}
        return b
    return merge(raw[base], {k: v for k, v in value.items() if k != "base"})


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


def nvlink_peers(system):
    """NVLink links between every pair of GPUs of one NVLink domain.

    Every domain of a system is wired alike, so the answer is given for the GPUs
    ``0 .. nvlink_domain - 1`` of the first one.

    Parameters
    ----------
    system : System or str
        A :class:`System`, a preset name or a YAML file path (see :func:`resolve`).

    Returns
    -------
    dict[int, dict[int, int]]
        ``{gpu: {peer: links}}`` listing only the peers reachable over NVLink and
        the links a transfer between the two can use: through NVSwitch, all the
        GPU's links to every peer of the domain; in a mesh, the ``peer_links``
        matrix or an even split; without NVLink, no peers.

    Examples
    --------
    >>> nvlink_peers("dgx-1-v100")[0]
    {1: 1, 2: 1, 3: 2, 4: 2}
    >>> len(nvlink_peers("gb200-nvl72")[0]), nvlink_peers("gb200-nvl72")[0][71]
    (71, 18)
    >>> nvlink_peers("h100-pcie")[0]
    {}
    """
    s = resolve(system)
    n = s.nvlink_domain
    nv = s.nvlink
    if nv.fabric == "none":
        return {g: {} for g in range(n)}
    if nv.peer_links is not None:
        return {g: {p: k for p, k in enumerate(nv.peer_links[g]) if k}
                for g in range(n)}
    each = nv.links_per_gpu if nv.fabric == "nvswitch" else \
        nv.links_per_gpu // max(n - 1, 1)
    return {g: {p: each for p in range(n) if p != g and each} for g in range(n)}


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
