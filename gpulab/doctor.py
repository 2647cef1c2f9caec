"""Pre-flight checks of a learner's environment: what ``gpulab doctor`` runs.

Each check returns a :class:`Check`: a name, a status (``PASS``, ``FAIL`` or ``SKIP``),
a one-line detail and whether it is *required*. The required checks are what the labs
need: the Python version, the packages of ``requirements-learner.txt`` at their minimum
versions, gpulab's own data files, a matplotlib figure rendered to PNG, an ipywidgets
model created and the widget front end installed for JupyterLab. The optional checks
look for NVIDIA hardware (``nvidia-smi``, PyTorch with CUDA, NCCL): a laptop without a GPU
skips them, and they never make the run fail.

Nothing here is imported at ``import gpulab`` time. The libraries it looks for are
imported inside the checks, so that a missing one is a ``FAIL`` (or ``SKIP``) line, not
an ``ImportError``. It is a layer of its own (like :mod:`gpulab.labcheck`): it imports
matplotlib and ipywidgets to see that they work, and nothing in gpulab imports it but
the ``gpulab doctor`` command.

Examples
--------
>>> c = check_python((3, 11, 7))
>>> c.status, c.required
('PASS', True)
>>> check_python((3, 10, 14)).detail
'Python 3.10.14 is too old: the labs need Python >= 3.11'
>>> check_package("numpy", ">=1.24", version_of=lambda name: "1.23.5").status
'FAIL'
"""
from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Check", "MIN_PYTHON", "REQUIRED_PACKAGES", "STATUSES", "release",
           "read_requirements", "check_python", "check_package", "check_gpulab_data", "check_figures",
           "check_widget_model", "check_widget_frontend", "check_nvidia_smi",
           "check_torch_cuda", "check_nccl", "run_checks", "passed",
           "format_check"]

#: The oldest Python the labs support: the single source for ``gpulab doctor`` and the
#: classroom page, which glues it. It equals pyproject.toml's ``requires-python`` (a test
#: fails when the two differ); the pinned packages need it.
MIN_PYTHON = (3, 11)

#: What a learner needs to run the labs: distribution name -> version spec.
#: ``requirements-learner.txt`` pins exactly these (a test keeps the two in step), at
#: the versions the course is tested with; the minimums are those of pyproject.toml.
REQUIRED_PACKAGES = {
    "numpy": ">=1.24",
    "PyYAML": ">=6.0",
    "networkx": ">=3.0",
    "matplotlib": ">=3.7",
    "ipywidgets": ">=8.1",
    "jupyterlab_widgets": ">=3.0",
    "widgetsnbextension": ">=4.0",
    "ipykernel": ">=6.0",
    "jupyterlab": ">=4.0",
    "jupytext": ">=1.14",
}

#: The three outcomes of a check.
STATUSES = ("PASS", "FAIL", "SKIP")

#: JupyterLab's widget manager extension (installed by jupyterlab_widgets).
_WIDGET_EXTENSION = Path("labextensions", "@jupyter-widgets", "jupyterlab-manager",
                         "package.json")


@dataclass(frozen=True)
class Check:
    """One line of the report.

    Attributes
    ----------
    name : str
        What was checked (``"python"``, ``"package numpy"``, ``"nvidia-smi"``, ...).
    status : str
        ``"PASS"``, ``"FAIL"`` or ``"SKIP"``.
    detail : str
        One line: what was found, or what is wrong and how to fix it.
    required : bool
        Whether a ``FAIL`` makes the whole run fail.
    """

    name: str
    status: str
    detail: str
    required: bool = True

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")


def release(version):
    """The leading numeric release of a version string, as a tuple of ints.

    Parameters
    ----------
    version : str
        A version such as ``"1.0.4.post1"`` or ``"2.4.6"``.

    Returns
    -------
    tuple of int

    Examples
    --------
    >>> release("1.0.4.post1"), release("8.1"), release("26.0rc1")
    ((1, 0, 4), (8, 1), (26, 0))
    """
    if not isinstance(version, str):
        raise ValueError(f"version must be a string such as '1.2.3', got {version!r}")
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)", version)
    if not m:
        raise ValueError(f"version must start with a number such as '1.2.3', "
                         f"got {version!r}")
    return tuple(int(p) for p in m.group(1).split("."))


def _at_least(found, minimum):
    """Compare releases padded with zeros (``8.1 >= 8.1.0``)."""
    a, b = release(found), release(minimum)
    n = max(len(a), len(b))
    return a + (0,) * (n - len(a)) >= b + (0,) * (n - len(b))


def check_python(version_info=None, minimum=MIN_PYTHON):
    """Check the Python version.

    Parameters
    ----------
    version_info : sequence of int, optional
        Major, minor, micro; default: the running interpreter's.
    minimum : tuple of int
        The oldest version accepted.

    Returns
    -------
    Check
    """
    v = tuple(sys.version_info[:3] if version_info is None else version_info[:3])
    text = ".".join(str(p) for p in v)
    need = ".".join(str(p) for p in minimum)
    if v[:len(minimum)] >= tuple(minimum):
        return Check("python", "PASS", f"Python {text} (needs >= {need})")
    return Check("python", "FAIL",
                 f"Python {text} is too old: the labs need Python >= {need}")


def read_requirements(text):
    """Parse a pip requirements file of simple pins into ``{name: spec}``.

    Parameters
    ----------
    text : str
        Lines ``name==1.2.3``, ``name>=1.2`` or ``name``; ``#`` starts a comment.

    Returns
    -------
    dict
        Distribution name -> ``"==1.2.3"``, ``">=1.2"`` or ``""`` (any version).

    Examples
    --------
    >>> read_requirements("numpy==2.4.6  # arrays\\nPyYAML>=6\\n\\nnetworkx")
    {'numpy': '==2.4.6', 'PyYAML': '>=6', 'networkx': ''}
    """
    out = {}
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*"
                         r"(?:(==|>=)\s*([0-9][^\s;,]*))?", line)
        if not m:
            raise ValueError(f"requirements: line {i}: {raw.strip()!r} is not "
                             "'name', 'name==version' or 'name>=version'")
        out[m.group(1)] = f"{m.group(2)}{m.group(3)}" if m.group(2) else ""
    return out


def check_package(name, spec, version_of=None):
    """Check that a distribution is installed and matches ``spec``.

    Parameters
    ----------
    name : str
        Distribution name as pip knows it (``"PyYAML"``).
    spec : str
        ``">=1.24"`` (that version or newer), ``"==2.4.6"`` (exactly) or ``""`` (any).
    version_of : callable, optional
        ``name -> version string``, raising ``importlib.metadata.PackageNotFoundError``
        for a missing package (default :func:`importlib.metadata.version`; tests pass
        their own to simulate a missing or old package).

    Returns
    -------
    Check

    Examples
    --------
    >>> check_package("numpy", ">=1.24", version_of=lambda name: "2.4.6").detail
    'numpy 2.4.6 (needs >= 1.24)'
    """
    version_of = importlib.metadata.version if version_of is None else version_of
    op, want = spec[:2], spec[2:]
    if spec and (op not in ("==", ">=") or not want):
        raise ValueError(f"spec must be '', '==VERSION' or '>=VERSION', got {spec!r}")
    label = f"package {name}"
    need = f" (needs {op} {want})" if spec else ""
    fix = "pip install -r requirements-learner.txt"
    try:
        found = version_of(name)
    except importlib.metadata.PackageNotFoundError:
        return Check(label, "FAIL", f"{name} is not installed{need}: {fix}")
    if op == ">=" and not _at_least(found, want):
        return Check(label, "FAIL", f"{name} {found} is too old{need}: {fix}")
    if op == "==" and release(found) != release(want):
        return Check(label, "FAIL", f"{name} {found} is not the tested version{need}: "
                     f"{fix}")
    return Check(label, "PASS", f"{name} {found}{need}")


def check_gpulab_data():
    """Check that gpulab's data files are installed and load (the hardware tables).

    Returns
    -------
    Check
    """
    from . import __version__, specs

    try:
        gens = specs.nvlink_generations()
        gpus = specs.gpus()
    except (OSError, ValueError, KeyError) as exc:
        return Check("gpulab data", "FAIL",
                     f"gpulab {__version__} cannot load its data files: {exc}")
    return Check("gpulab data", "PASS",
                 f"gpulab {__version__}: {len(gens)} NVLink generations, "
                 f"{len(gpus)} GPUs in the hardware tables")


def check_figures():
    """Check that matplotlib draws a figure and writes it as PNG (no display needed).

    Returns
    -------
    Check
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        return Check("figures", "FAIL", f"matplotlib cannot be imported: {exc}")
    import io

    fig = Figure(figsize=(2, 1))
    FigureCanvasAgg(fig)
    fig.add_subplot().plot([0, 1], [1, 0])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    png = buf.getvalue()
    if not png.startswith(b"\x89PNG"):
        return Check("figures", "FAIL", "matplotlib wrote no PNG image")
    return Check("figures", "PASS", f"matplotlib drew a PNG figure ({len(png)} bytes)")


def check_widget_model():
    """Check that ipywidgets creates a widget model that a front end can display.

    Returns
    -------
    Check
    """
    name = "widgets model"
    try:
        import ipywidgets as widgets
    except ImportError as exc:
        return Check(name, "FAIL", f"ipywidgets cannot be imported: {exc}")
    try:
        slider = widgets.IntSlider(value=3, min=0, max=8, description="n_gpus")
        state = slider.get_state()  # what the front end receives to draw it
    except Exception as exc:  # noqa: BLE001 - any failure here is the finding
        return Check(name, "FAIL", f"an IntSlider could not be created: "
                     f"{type(exc).__name__}: {exc}")
    if not slider.model_id or state.get("_model_name") != "IntSliderModel":
        return Check(name, "FAIL", "an IntSlider has no widget model to display "
                     "(model_id or model name missing)")
    slider.close()
    return Check(name, "PASS", f"ipywidgets {widgets.__version__} created an IntSlider "
                 f"model ({state.get('_model_module')} "
                 f"{state.get('_model_module_version')})")


def check_widget_frontend(search_paths=None):
    """Check that JupyterLab's widget manager extension is installed.

    Without it, a lab shows ``Error displaying widget: model not found`` instead of the
    sliders.

    Parameters
    ----------
    search_paths : list of path-like, optional
        The Jupyter data folders to search; default: ``jupyter_core``'s data path (the
        environment's ``share/jupyter`` and the user's).

    Returns
    -------
    Check
    """
    name = "widgets front end"
    if search_paths is None:
        try:
            from jupyter_core.paths import jupyter_path
        except ImportError:
            return Check(name, "FAIL", "jupyter_core is missing: pip install -r "
                         "requirements-learner.txt")
        search_paths = jupyter_path()
    for base in search_paths:
        if (Path(base) / _WIDGET_EXTENSION).is_file():
            return Check(name, "PASS",
                         f"JupyterLab widget manager found in {Path(base)}")
    return Check(name, "FAIL", "JupyterLab's widget manager extension is missing (sliders "
                 "would not show): pip install -r requirements-learner.txt")


def check_nvidia_smi(which=shutil.which, run=subprocess.run):
    """Optional: look for ``nvidia-smi`` and the GPUs it lists.

    Parameters
    ----------
    which, run : callable, optional
        :func:`shutil.which` and :func:`subprocess.run` (tests pass their own).

    Returns
    -------
    Check
        ``SKIP`` when there is no ``nvidia-smi`` (no NVIDIA driver: fine for the labs).
    """
    name = "nvidia-smi"
    path = which("nvidia-smi")
    if path is None:
        return Check(name, "SKIP", "not found (no NVIDIA driver here; the labs use "
                     "recorded runs)", required=False)
    try:
        res = run([path, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return Check(name, "FAIL", f"{path} -L did not run: {exc}", required=False)
    gpus = [ln for ln in res.stdout.splitlines() if ln.startswith("GPU ")]
    if res.returncode != 0 or not gpus:
        why = (res.stderr or res.stdout).strip().splitlines()
        return Check(name, "FAIL", f"{path} -L found no GPU"
                     + (f": {why[0]}" if why else ""), required=False)
    first = gpus[0].split("(")[0].split(":", 1)[-1].strip()
    return Check(name, "PASS", f"{len(gpus)} GPU(s): {first}", required=False)


def check_torch_cuda():
    """Optional: PyTorch with CUDA (needed only for ``python -m gpulab.bench``).

    Returns
    -------
    Check
    """
    name = "torch CUDA"
    try:
        import torch
    except ImportError:
        return Check(name, "SKIP", "PyTorch not installed (only the GPU benchmarks "
                     "need it: pip install '.[bench]')", required=False)
    if not torch.cuda.is_available():
        return Check(name, "SKIP", f"torch {torch.__version__} sees no CUDA GPU",
                     required=False)
    n = torch.cuda.device_count()
    return Check(name, "PASS", f"torch {torch.__version__}, CUDA {torch.version.cuda}, "
                 f"{n} GPU(s): {torch.cuda.get_device_name(0)}", required=False)


def check_nccl():
    """Optional: the NCCL library that PyTorch's distributed backend uses.

    Returns
    -------
    Check
    """
    name = "NCCL"
    try:
        import torch
    except ImportError:
        return Check(name, "SKIP", "PyTorch not installed", required=False)
    if not torch.cuda.is_available():
        return Check(name, "SKIP", "no CUDA GPU", required=False)
    try:
        v = torch.cuda.nccl.version()
    except Exception as exc:  # noqa: BLE001 - any failure here is the finding
        return Check(name, "FAIL", f"torch.cuda.nccl.version() failed: {exc}",
                     required=False)
    text = ".".join(str(p) for p in v) if isinstance(v, tuple) else str(v)
    dist = torch.distributed.is_nccl_available() if hasattr(torch, "distributed") \
        else False
    return Check(name, "PASS", f"NCCL {text}"
                 + ("" if dist else " (torch.distributed without NCCL backend)"),
                 required=False)


def run_checks(*, packages=None, version_of=None, optional=True):
    """Run every check, required ones first.

    Parameters
    ----------
    packages : dict, optional
        Distribution name -> version spec (default :data:`REQUIRED_PACKAGES`; see
        :func:`read_requirements` to check a requirements file instead).
    version_of : callable, optional
        Passed to :func:`check_package` (tests simulate missing packages with it).
    optional : bool
        Also run the GPU checks (``nvidia-smi``, PyTorch CUDA, NCCL).

    Returns
    -------
    list of Check
    """
    packages = REQUIRED_PACKAGES if packages is None else packages
    if not isinstance(packages, dict):
        raise ValueError(f"packages must be a dict of name -> version spec, "
                         f"got {type(packages).__name__}")
    out = [check_python()]
    out += [check_package(n, m, version_of=version_of) for n, m in packages.items()]
    out += [check_gpulab_data(), check_figures(), check_widget_model(),
            check_widget_frontend()]
    if optional:
        out += [check_nvidia_smi(), check_torch_cuda(), check_nccl()]
    return out


def passed(checks):
    """Whether every *required* check passed (optional ones never fail a run)."""
    return all(c.status == "PASS" for c in checks if c.required)


def format_check(check, width=20):
    """One report line: ``PASS  name  detail`` (``(optional)`` after an optional name).

    Examples
    --------
    >>> format_check(Check("python", "PASS", "Python 3.11.7 (needs >= 3.11)"))
    'PASS  python                Python 3.11.7 (needs >= 3.11)'
    """
    name = check.name if check.required else f"{check.name} (optional)"
    return f"{check.status:<4}  {name:<{width}}  {check.detail}"
