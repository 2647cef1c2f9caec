"""The package's architecture, checked from its source (no import needed).

* no import cycles between gpulab modules (imports anywhere in a module count,
  including the late ones inside functions);
* one direction of dependency: models <- plotting <- widgets; models <- charts
  (the book's precomputed Vega-Lite charts, a layer of its own); the CLI and the
  benchmark sit on top; models import neither matplotlib, ipywidgets, IPython,
  argparse nor altair;
* no private name (``_x``) of one module used by another, nor by chapters and labs;
* no chapter numbers in code (topics, not chapters, organise the package);
* the import graph stays shallow.

Each rule is also run on a small synthetic package that breaks it, so a checker
that silently passes everything would fail here.
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "gpulab"

#: Layers above the models: a module of a layer may import the layers listed for it
#: (labcheck: the labs' self-checks, which may show tables through IPython; doctor: the
#: environment checks, which import matplotlib and ipywidgets to see that they work).
UPPER = {"plotting": set(), "widgets": {"plotting"}, "cli": {"plotting", "doctor"},
         "bench": set(), "labcheck": set(), "charts": set(), "doctor": set()}
#: Third-party UI/CLI libraries the model layer must not import.
UI_LIBS = ("matplotlib", "ipywidgets", "IPython", "argparse", "PIL", "altair")
#: Deepest allowed chain of imports between modules (floors of the condensed graph).
MAX_FLOORS = 11


# --- the checker ------------------------------------------------------------------
def modules(pkg):
    """{dotted name: path} of every module of package directory ``pkg``."""
    out = {}
    for p in sorted(pkg.rglob("*.py")):
        parts = list(p.relative_to(pkg.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _target(mod, path, node):
    """The absolute module name an ImportFrom node refers to (its base)."""
    if not node.level:
        return node.module or ""
    base = mod.split(".")
    if path.name != "__init__.py":
        base = base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(pkg):
    """{module: [(imported module, imported names, lineno)]} inside the package."""
    mods = modules(pkg)
    top = pkg.name
    out = {}
    for m, path in mods.items():
        found = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for a in node.names:
                    found.append((a.name, (), node.lineno))
            elif isinstance(node, ast.ImportFrom):
                base = _target(m, path, node)
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    if sub in mods:
                        found.append((sub, (), node.lineno))
                    else:
                        found.append((base, (a.name,), node.lineno))
        out[m] = [f for f in found if f[0] == top or f[0].startswith(top + ".")
                  or f[0].split(".")[0] in UI_LIBS]
    return out


def graph(pkg):
    """Directed import graph between the package's modules. A package's
    ``__init__`` importing its own submodules (re-exports) is not an edge."""
    mods = modules(pkg)
    g = nx.DiGraph()
    g.add_nodes_from(mods)
    for m, found in imports(pkg).items():
        for target, _names, _line in found:
            if target in mods and target != m and not (
                    mods[m].name == "__init__.py" and target.startswith(m + ".")):
                g.add_edge(m, target)
    return g


def cycles(pkg):
    return sorted(sorted(c) for c in nx.strongly_connected_components(graph(pkg))
                  if len(c) > 1)


def floors(pkg):
    """Length of the longest import chain, modules of a cycle counted as one."""
    c = nx.condensation(graph(pkg))
    return nx.dag_longest_path_length(c) + 1


def layer(mod, top):
    parts = mod.split(".")
    if parts[1:2] == ["__main__"]:          # ``python -m gpulab`` runs the CLI
        return "cli"
    return parts[1] if len(parts) > 1 and parts[1] in UPPER else "model"


def layer_violations(pkg):
    top = pkg.name
    bad = []
    for m, found in imports(pkg).items():
        mine = layer(m, top)
        for target, _names, line in found:
            lib = target.split(".")[0]
            if lib in UI_LIBS:
                if mine == "model":
                    bad.append(f"{m}:{line} (model) imports {target}")
                continue
            theirs = layer(target, top)
            if theirs == "model" or theirs == mine:
                continue
            if mine == "model" or theirs not in UPPER[mine]:
                bad.append(f"{m}:{line} ({mine}) imports {target} ({theirs})")
    return bad


def private_uses(pkg):
    """``from X import _y`` or ``X._y`` where X is another module of the package."""
    mods = modules(pkg)
    top = pkg.name
    bad = []
    for m, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = _target(m, path, node)
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    if sub in mods:
                        aliases[a.asname or a.name] = sub
                    elif a.name.startswith("_") and not a.name.startswith("__") \
                            and base.startswith(top) and base != m:
                        bad.append(f"{m}:{node.lineno} imports {base}.{a.name}")
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith(top) and a.asname:
                        aliases[a.asname] = a.name
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id in aliases and node.attr.startswith("_") \
                    and not node.attr.startswith("__") and aliases[node.value.id] != m:
                bad.append(f"{m}:{node.lineno} uses {aliases[node.value.id]}."
                           f"{node.attr}")
    return bad


_CHAPTER = re.compile(r"\bChapter \d|\b_?ch\d+_|\bsection owned by the Chapter")


def chapter_marks(pkg):
    bad = []
    for m, path in modules(pkg).items():
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _CHAPTER.search(line):
                bad.append(f"{m}:{i}: {line.strip()}")
    return bad


_NOTEBOOK_PRIVATE = re.compile(
    r"\bgl\.\w+(?:\.\w+)*\._(?!_)\w+|\bfrom gpulab[\w.]* import [^\n]*\b_(?!_)\w+"
    r"|\bgpulab\.\w+(?:\.\w+)*\._(?!_)\w+")


def notebook_private_uses(paths):
    bad = []
    for p in paths:
        text = p.read_text(encoding="utf-8")
        if p.suffix == ".ipynb":
            text = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"]
                             if c["cell_type"] == "code")
        for m in _NOTEBOOK_PRIVATE.finditer(text):
            bad.append(f"{p.name}: {m.group(0)}")
    return bad


# --- the rules, on gpulab ------------------------------------------------------------
def test_no_import_cycles():
    assert cycles(PKG) == []


def test_import_graph_is_shallow():
    n = floors(PKG)
    print(f"gpulab import graph: {graph(PKG).number_of_nodes()} modules, "
          f"{n} floors, {len(cycles(PKG))} cycles")
    assert n <= MAX_FLOORS


def test_layers_point_one_way():
    assert layer_violations(PKG) == []


def charts_ui_imports(pkg):
    """Imports of matplotlib, ipywidgets or IPython by the charts layer (the book's
    charts are Vega-Lite specs: no figure library, no kernel-side widgets)."""
    return [f"{m}:{line} imports {target}" for m, found in imports(pkg).items()
            if layer(m, pkg.name) == "charts"
            for target, _names, line in found
            if target.split(".")[0] in ("matplotlib", "ipywidgets", "IPython")]


def test_charts_import_neither_matplotlib_nor_ipywidgets():
    assert charts_ui_imports(PKG) == []


def test_no_private_name_crosses_modules():
    assert private_uses(PKG) == []


def test_no_chapter_numbers_in_code():
    assert chapter_marks(PKG) == []


def test_chapters_and_labs_use_public_names_only():
    paths = sorted((ROOT / "book").glob("*.md")) + sorted((ROOT / "labs").glob(
        "*.ipynb")) + [ROOT / "intro.md", ROOT / "README.md"]
    assert notebook_private_uses(paths) == []


def test_cli_loads_its_commands_statically():
    for m, path in modules(PKG).items():
        if m != "gpulab":                  # gpulab/__init__: lazy optional layers
            assert "import_module" not in path.read_text(encoding="utf-8"), m


# --- the checker catches what it should ---------------------------------------------
def _write(root, files):
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root / "pkg"


@pytest.fixture
def bad_pkg(tmp_path):
    return _write(tmp_path, {
        "pkg/__init__.py": "from . import a, b\n",
        "pkg/a.py": "from . import b\n_hidden = 1\n",
        "pkg/b.py": "def f():\n    from . import a\n    return a._hidden\n",
        "pkg/c.py": "import matplotlib.pyplot as plt\nfrom .a import _hidden\n",
        "pkg/plotting/__init__.py": "from ..widgets import view\n",
        "pkg/widgets/__init__.py": "",
        "pkg/widgets/view.py": "# Chapter 3 explorer\nimport ipywidgets\n",
    })


def test_checker_finds_a_late_import_cycle(bad_pkg):
    assert cycles(bad_pkg) == [["pkg.a", "pkg.b"]]


def test_checker_finds_layer_violations(bad_pkg):
    found = layer_violations(bad_pkg)
    assert any(v.startswith("pkg.c:1 (model) imports matplotlib") for v in found)
    assert any("pkg.plotting:1 (plotting) imports pkg.widgets.view" in v for v in found)
    assert not any(v.startswith("pkg.widgets.view") for v in found)


def test_checker_finds_private_uses(bad_pkg):
    found = private_uses(bad_pkg)
    assert "pkg.b:3 uses pkg.a._hidden" in found
    assert "pkg.c:2 imports pkg.a._hidden" in found


def test_checker_finds_chapter_marks(bad_pkg):
    assert chapter_marks(bad_pkg) == ["pkg.widgets.view:1: # Chapter 3 explorer"]


def test_checker_counts_floors(tmp_path):
    pkg = _write(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": "from . import b\n",
                            "pkg/b.py": "from . import c\n", "pkg/c.py": ""})
    assert floors(pkg) == 3


def test_checker_finds_private_names_in_notebooks(tmp_path):
    p = tmp_path / "ch.md"
    p.write_text("x = gl.widgets._CACHE\nfrom gpulab.topology import _node, a\n"
                 "y = gl.units.GB\n")
    assert notebook_private_uses([p]) == ["ch.md: gl.widgets._CACHE",
                                          "ch.md: from gpulab.topology import _node"]


def test_checker_finds_charts_ui_imports(tmp_path):
    pkg = tmp_path / "gpulab"
    (pkg / "charts").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "charts" / "__init__.py").write_text("import matplotlib.pyplot as plt\n")
    (pkg / "charts" / "ok.py").write_text("import altair as alt\n")
    assert charts_ui_imports(pkg) == ["gpulab.charts:1 imports matplotlib.pyplot"]
