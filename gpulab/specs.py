"""Hardware facts, loaded from ``gpulab/data`` (the only place they are written).

Each CSV row carries a ``kind`` (one of :data:`KINDS`: ``spec`` published by a vendor
or standards body, ``measured`` by our own runs, ``derived`` from such values, or
``assumed``), a ``source`` and an ``accessed`` date; so does every record of the
assumption tables. Loaders are cached and read the package data with
:mod:`importlib.resources`; nothing is read at import.
Bandwidths are normalised at load time into :class:`gpulab.units.Bandwidth`
objects, so the direction of every figure is explicit.

Examples
--------
>>> from gpulab import specs
>>> specs.gpu("H100").nvlink_links
18
>>> specs.nvlink(4).nominal_link_bandwidth.to_per_direction().gb_per_s
25.0
>>> specs.pcie(5).transfer_rate_gt_per_s
32.0
>>> specs.gpu("H100", "PCIe 80GB").fp16_dense_flops / 1e12, specs.nvlink(4).kind
(756.0, 'derived')
"""
from __future__ import annotations

import csv
import fractions
import functools
import io
from dataclasses import dataclass
from importlib import resources

import yaml

from . import units
from ._validate import check_choice, check_int

__all__ = [
    "NVLinkGeneration", "PCIeGeneration", "GPUSpec", "NICSpec", "nic", "nics",
    "nvlink", "nvlink_generations", "pcie", "pcie_generations", "gpu", "gpus",
    "gpu_names", "gpu_variants", "read_data_text", "KINDS", "ASSUMPTION_TABLES",
    "assumption", "assumption_record",
]

#: What kind of number a row or record is (``gpulab/data/README.md``): published by a
#: vendor or standards body, our own run, computed from such values, or a course
#: default where no public figure exists.
KINDS = ("spec", "measured", "derived", "assumed")


@dataclass(frozen=True)
class NVLinkGeneration:
    """One NVLink generation (a row of ``data/nvlink.csv``).

    Attributes
    ----------
    generation : int
        NVLink generation number (1-5).
    first_gpu : str
        The GPU that introduced it.
    modulation : str
        ``"NRZ"`` (1 bit per symbol) or ``"PAM4"`` (2 bits per symbol).
    bits_per_symbol : int
        Bits carried by one symbol (unit interval).
    symbol_rate : float
        Symbols per second on one lane (baud). [Bd] NVIDIA publishes the data rate
        per pair only; from NVLink2 on this is back-solved from the per-link rate
        ``nvidia-smi nvlink -s`` prints (derived, see the row's ``source``).
    coding_efficiency : float
        Published data rate divided by the raw signalling rate (line coding and FEC
        overhead); 1.0 where only the data rate is known. The ratios 64/66 and
        16/17 are derived from ``nvidia-smi`` readings, not published. [-]
    lanes_per_direction : int
        Differential pairs carrying one direction of one link.
    nominal_link_bandwidth : units.Bandwidth
        Spec-sheet bandwidth of one link, as published (direction attached).
    links_per_gpu : int
        Links on the flagship GPU of the generation.
    nvidia_smi_link_gb_per_s : float or None
        What ``nvidia-smi nvlink --status`` prints per link [GB/s], if known.
    kind : str
        One of :data:`KINDS`; the weakest kind of the row's fields (the ``source``
        says which fields are derived or assumed).
    """

    generation: int
    first_gpu: str
    year: int
    modulation: str
    bits_per_symbol: int
    symbol_rate: float
    coding_efficiency: float
    lanes_per_direction: int
    nominal_link_bandwidth: units.Bandwidth
    links_per_gpu: int
    nvidia_smi_link_gb_per_s: float | None
    source: str
    accessed: str
    kind: str


@dataclass(frozen=True)
class PCIeGeneration:
    """One PCI Express generation (a row of ``data/pcie.csv``).

    Attributes
    ----------
    transfer_rate_gt_per_s : float
        Transfers per second per lane, in GT/s (one transfer = one bit on the wire).
    encoding : str
        Line encoding (8b/10b, 128b/130b, or FLIT mode for Gen6).
    encoding_efficiency : float
        Payload bits per transferred bit of the line encoding. [-]
    kind : str
        One of :data:`KINDS`.
    """

    generation: int
    year: int
    transfer_rate_gt_per_s: float
    modulation: str
    encoding: str
    encoding_efficiency: float
    source: str
    accessed: str
    kind: str


@dataclass(frozen=True)
class NICSpec:
    """One network adapter (a row of ``data/nics.csv``).

    Attributes
    ----------
    line_rate : units.Bandwidth
        Signalling data rate of one port (Ethernet/InfiniBand rates are quoted
        per direction: a 400 Gb/s port sends 400 Gb/s while it receives 400 Gb/s).
    kind : str
        One of :data:`KINDS`.
    """

    name: str
    generation: str
    year: int
    line_rate: units.Bandwidth
    ports: int
    source: str
    accessed: str
    kind: str


@dataclass(frozen=True)
class GPUSpec:
    """One GPU (a row of ``data/gpus.csv``).

    Attributes
    ----------
    fp16_dense_flops : float
        Dense FP16/BF16 Tensor Core peak (no 2:4 sparsity). [FLOP/s]
    fp8_dense_flops : float or None
        Dense FP8 Tensor Core peak; ``None`` where the GPU has no FP8. [FLOP/s]
    memory_bytes : float
        HBM capacity as marketed (decimal GB). [B]
    memory_bandwidth : float
        HBM bandwidth (reads + writes share it; no direction applies). [B/s]
    nvlink_generation, nvlink_links : int
        NVLink generation and number of links.
    pcie_generation : int
        Host interface generation (x16).
    power_limit : float or None
        The board's power limit as shipped (its TDP); ``None`` where the table has none. [W]
    compute_capability : float or None
        CUDA compute capability (8.9 for an L40S): NCCL picks its tuning constants by
        it, not by the NVLink generation. ``None`` where the table has none.
    kind : str
        One of :data:`KINDS`; the weakest kind of the row's fields.
    """

    name: str
    variant: str
    year: int
    fp16_dense_flops: float
    fp8_dense_flops: float | None
    memory_bytes: float
    memory_type: str
    memory_bandwidth: float
    nvlink_generation: int
    nvlink_links: int
    pcie_generation: int
    source: str
    accessed: str
    kind: str
    power_limit: float | None = None
    compute_capability: float | None = None

    @property
    def nvlink(self) -> NVLinkGeneration:
        """The NVLink generation record of this GPU."""
        return nvlink(self.nvlink_generation)


#: The files of model assumptions and constants (values that are not spec-sheet facts),
#: by table name. Every model reads them through :func:`assumption`.
ASSUMPTION_TABLES = {
    "course": "assumptions.yaml",
    "parallelism": "parallelism_assumptions.yaml",
    "topology": "topology_assumptions.yaml",
    "pcie": "pcie_protocol.yaml",
    "nccl": "nccl_model.yaml",
    "layer_efficiency": "layer_efficiency.yaml",
    "layer_recipes": "layer_recipes.yaml",
}


@functools.lru_cache(maxsize=None)
def _assumption_table(table):
    return yaml.safe_load(read_data_text(ASSUMPTION_TABLES[table]))


def assumption_record(table, name):
    """The entry ``name`` of an assumption table, as stored.

    Parameters
    ----------
    table : str
        A key of :data:`ASSUMPTION_TABLES` (``"course"``, ``"parallelism"``,
        ``"topology"``, ``"pcie"``, ``"nccl"``, ``"layer_efficiency"`` or
        ``"layer_recipes"``).
    name : str
        The entry's path; levels separated by ``/`` or ``.``
        (``"protocols/LL128/bandwidth"``, ``"flit.tlp_bytes"``, ``"mfu"``).

    Returns
    -------
    object
        A record ``{value, kind, meaning, source, accessed}`` or a subtree (a copy).

    Examples
    --------
    >>> assumption_record("course", "mfu")["kind"]
    'assumed'
    """
    import copy

    return copy.deepcopy(_assumption_node(table, name))


@functools.lru_cache(maxsize=4096)
def _lookup(table, name):
    fname = ASSUMPTION_TABLES[table]
    keys = name.strip("/.").replace(".", "/").split("/")
    node = _assumption_table(table)
    for i, key in enumerate(keys):
        if not isinstance(node, dict) or key not in node:
            where = "/".join(keys[:i]) or "top level"
            have = sorted(map(str, node)) if isinstance(node, dict) else []
            raise ValueError(f"name must name an entry of {fname}; {key!r} is not "
                             f"under {where} (keys: {', '.join(have)})")
        node = node[key]
    return node


def _assumption_node(table, name):
    """The stored node (not a copy: callers must not change it), looked up once
    per (table, name): the models read constants in their inner loops."""
    check_choice("table", table, ASSUMPTION_TABLES)
    if not isinstance(name, str) or not name.strip("/."):
        raise ValueError(f"name must be a path in {ASSUMPTION_TABLES[table]} such as "
                         f"'a/b'; got {name!r}")
    return _lookup(table, name)


def assumption(table, name):
    """The value of entry ``name`` of an assumption table.

    The one accessor of the model assumptions: a record's ``value`` (records hold
    ``value, kind, meaning, source, accessed``), or the stored node itself where the
    table keeps plain values (``nccl_model.yaml``). See :func:`assumption_record`.

    Examples
    --------
    >>> assumption("course", "mfu"), assumption("pcie", "flit.fec_bytes")
    (0.4, 6)
    >>> assumption("nccl", "protocols/LL128/bandwidth")
    0.92
    """
    import copy

    node = _assumption_node(table, name)
    if isinstance(node, dict) and "value" in node:
        node = node["value"]
    # numbers and strings are immutable; containers are copied so that callers
    # cannot change the stored table
    return node if isinstance(node, (int, float, str, bool, type(None))) \
        else copy.deepcopy(node)


def read_data_text(name: str) -> str:
    """Return the text of a file in ``gpulab/data`` (e.g. ``"gpus.csv"``)."""
    parts = name.split("/") if isinstance(name, str) else [""]
    if any(p in ("", ".", "..") or p.startswith(".") for p in parts):
        raise ValueError(f"name must be a file name inside gpulab/data; got {name!r}")
    path = resources.files("gpulab").joinpath("data", *parts)
    if not path.is_file():
        raise ValueError(f"name must be a file inside gpulab/data; {name!r} not found")
    return path.read_text(encoding="utf-8")


def _rows(name):
    rows = list(csv.DictReader(io.StringIO(read_data_text(name))))
    for i, r in enumerate(rows, start=2):
        if r.get("kind") not in KINDS:
            raise ValueError(f"{name} line {i}: kind must be one of "
                             f"{', '.join(KINDS)}; got {r.get('kind')!r}")
    return rows


def _ratio(s):
    """Parse an exact ratio such as ``"128/130"`` or ``"1"`` into a float."""
    return float(fractions.Fraction(s))


def _opt_float(s):
    return float(s) if s not in ("", None) else None


@functools.lru_cache(maxsize=None)
def _nvlink_table():
    out = {}
    for r in _rows("nvlink.csv"):
        g = NVLinkGeneration(
            generation=int(r["generation"]), first_gpu=r["first_gpu"],
            year=int(r["year"]), modulation=r["modulation"],
            bits_per_symbol=int(r["bits_per_symbol"]),
            symbol_rate=float(r["symbol_rate_gbaud"]) * 1e9,
            coding_efficiency=_ratio(r["coding_efficiency"]),
            lanes_per_direction=int(r["lanes_per_direction"]),
            nominal_link_bandwidth=units.Bandwidth.from_gb_per_s(
                float(r["nominal_link_gb_per_s"]), r["nominal_link_direction"]),
            links_per_gpu=int(r["links_per_gpu"]),
            nvidia_smi_link_gb_per_s=_opt_float(r["nvidia_smi_link_gb_per_s"]),
            source=r["source"], accessed=r["accessed"], kind=r["kind"])
        out[g.generation] = g
    return out


@functools.lru_cache(maxsize=None)
def _pcie_table():
    out = {}
    for r in _rows("pcie.csv"):
        g = PCIeGeneration(
            generation=int(r["generation"]), year=int(r["year"]),
            transfer_rate_gt_per_s=float(r["transfer_rate_gt_per_s"]),
            modulation=r["modulation"], encoding=r["encoding"],
            encoding_efficiency=_ratio(r["encoding_efficiency"]),
            source=r["source"], accessed=r["accessed"], kind=r["kind"])
        out[g.generation] = g
    return out


@functools.lru_cache(maxsize=None)
def _gpu_table():
    out = {}
    for r in _rows("gpus.csv"):
        fp8 = _opt_float(r["fp8_dense_tflops"])
        g = GPUSpec(
            name=r["name"], variant=r["variant"], year=int(r["year"]),
            fp16_dense_flops=float(r["fp16_dense_tflops"]) * units.TFLOPS,
            fp8_dense_flops=None if fp8 is None else fp8 * units.TFLOPS,
            memory_bytes=float(r["memory_gb"]) * units.GB,
            memory_type=r["memory_type"],
            memory_bandwidth=float(r["memory_bandwidth_gb_per_s"]) * units.GB,
            nvlink_generation=int(r["nvlink_generation"]),
            nvlink_links=int(r["nvlink_links"]),
            pcie_generation=int(r["pcie_generation"]),
            source=r["source"], accessed=r["accessed"], kind=r["kind"],
            power_limit=_opt_float(r.get("power_limit_w")),
            compute_capability=_opt_float(r.get("compute_capability")))
        if (g.name, g.variant) in out:
            raise ValueError(f"gpus.csv: {g.name} {g.variant!r} is listed twice")
        out[(g.name, g.variant)] = g
    return out


@functools.lru_cache(maxsize=None)
def _nic_table():
    out = {}
    for r in _rows("nics.csv"):
        n = NICSpec(name=r["name"], generation=r["generation"], year=int(r["year"]),
                    line_rate=units.Bandwidth.from_gbit_per_s(
                        float(r["line_rate_gbit_per_s"]), r["direction"]),
                    ports=int(r["ports"]), source=r["source"], accessed=r["accessed"],
                    kind=r["kind"])
        out[n.name] = n
    return out


def nic(name: str) -> NICSpec:
    """Return the record of network adapter ``name`` (e.g. ``"ConnectX-7"``).

    >>> nic("ConnectX-7").line_rate.gb_per_s
    50.0
    """
    table = _nic_table()
    check_choice("name", name, table)
    return table[name]


def nics() -> list[NICSpec]:
    """All network adapters in the data."""
    return list(_nic_table().values())


def nvlink(generation: int) -> NVLinkGeneration:
    """Return the record of NVLink ``generation``.

    Parameters
    ----------
    generation : int
        NVLink generation, 1-5.

    Raises
    ------
    ValueError
        If the generation is not in the data.
    """
    table = _nvlink_table()
    generation = check_int("generation", generation, low=min(table), high=max(table))
    return table[generation]


def nvlink_generations() -> list[NVLinkGeneration]:
    """All NVLink generations, oldest first."""
    return [v for _, v in sorted(_nvlink_table().items())]


def pcie(generation: int) -> PCIeGeneration:
    """Return the record of PCIe ``generation`` (1-6)."""
    table = _pcie_table()
    generation = check_int("generation", generation, low=min(table), high=max(table))
    return table[generation]


def pcie_generations() -> list[PCIeGeneration]:
    """All PCIe generations, oldest first."""
    return [v for _, v in sorted(_pcie_table().items())]


def gpu(name: str, variant: str | None = None) -> GPUSpec:
    """Return the record of GPU ``name`` (e.g. ``"H100"``).

    Parameters
    ----------
    name : str
        A name from :func:`gpu_names`.
    variant : str, optional
        One of :func:`gpu_variants` of ``name`` (``"PCIe 80GB"``); by default the
        GPU's first row in ``gpus.csv``, its flagship (SXM) part.

    >>> gpu("A100").memory_bytes / 1e9
    80.0
    >>> gpu("H100").variant, gpu("H100", "PCIe 80GB").memory_type
    ('SXM5 80GB', 'HBM2e')
    """
    check_choice("name", name, gpu_names())
    if variant is None:
        variant = gpu_variants(name)[0]
    check_choice("variant", variant, gpu_variants(name))
    return _gpu_table()[(name, variant)]


def gpu_variants(name: str) -> list[str]:
    """The variants of GPU ``name`` in the data, its flagship (default) first.

    >>> gpu_variants("H100")
    ['SXM5 80GB', 'PCIe 80GB', 'SXM5 96GB HBM2e']
    """
    check_choice("name", name, gpu_names())
    return [v for n, v in _gpu_table() if n == name]


def gpus() -> list[GPUSpec]:
    """All GPU rows in the data (every variant), in the data file's order."""
    return list(_gpu_table().values())


def gpu_names() -> list[str]:
    """Names of all GPUs in the data (each once), oldest first."""
    return list(dict.fromkeys(n for n, _ in _gpu_table()))
