"""Write executed notebook copies of the book's chapters, for JupyterLab.

The chapters are MyST Markdown notebooks (``book/*.md``). Opened as they are in JupyterLab,
their prose shows raw ``{glue:text}`` roles instead of numbers (JupyterLab does not render
MyST roles), and saving would rewrite the tracked source in jupytext's own layout. So
``make lab`` opens copies instead: for every chapter notebook this script writes
``_build/chapters/<name>.ipynb`` (a git-ignored folder) that

* holds the chapter's cells with their outputs: taken from the book's execution cache
  (``.jupyter_cache``, filled by the book build) when its code cells match, executed with
  the current kernel otherwise;
* has every ``{glue:text}`key:fmt``` and ``{glue:md}`key``` role in its Markdown replaced
  by the glued value, formatted as the book formats it, so the prose shows its numbers;
* has its MyST directives and roles, which JupyterLab would show as raw text, turned into
  Markdown that JupyterLab renders (:func:`myst_to_markdown`): a ``{dropdown}`` (the quick
  checks' reveals) becomes a closed ``<details>`` element, admonitions and exercises get a
  bold title, ``{math}`` becomes ``$$ ... $$``, cross-references become links titled as
  their targets (:func:`label_index`: a section's heading, a figure's caption, the
  section an equation sits in), a ``{lab}`` role (a lab section, see ``book/_ext/book_html.py``)
  becomes a relative link to that section of the learner's copy of the lab, and links to a
  local JupyterLab become relative;
* collapses the cells the book hides (:func:`hide_as_the_book_does`) and is signed in the
  user's Jupyter trust database (:func:`trust`), so JupyterLab shows its figures and
  explorers on opening, without a re-run.

A copy is rewritten only when its chapter changed since (the source's SHA-256 is kept in
the copy's metadata) or when ``--force`` is given. The learner may edit and save a copy
freely: the tracked sources are never written.

Usage::

    python jupyter/chapter_notebooks.py [--out _build/chapters] [--force] [book/nvlink.md ...]
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
DEFAULT_OUT = ROOT / "_build" / "chapters"
CACHE = ROOT / ".jupyter_cache"
GLUE_PREFIX = "application/papermill.record/"
TIMEOUT = 300  # s per cell, as generous as the book's execution timeout allows
#: Raised when the way copies are written changes, so older copies are rewritten.
COPY_FORMAT = 3

# {glue:text}`key`, {glue:text}`key:.1f`, {glue:md}`key`, {glue}`key`, {glue:}`key`
GLUE_ROLE = re.compile(r"\{glue(?::(?P<kind>text|md|any)?)?\}`(?P<body>[^`]+)`")


def is_chapter_notebook(path: Path) -> bool:
    """Return True for a MyST Markdown notebook (jupytext header with a kernelspec)."""
    if path.suffix != ".md" or not path.is_file():
        return False
    head = path.read_text(encoding="utf-8", errors="replace")[:4000]
    if not head.startswith("---"):
        return False
    header = head.split("\n---", 1)[0]
    return "format_name: myst" in header and "kernelspec" in header


def chapter_sources() -> list[Path]:
    """Every chapter notebook of the book, sorted by name."""
    return sorted(p for p in BOOK.glob("*.md") if is_chapter_notebook(p))


def glue_values(nb) -> dict[str, dict]:
    """Map each glue key of an executed notebook to its MIME bundle (prefix removed)."""
    values = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for output in cell.get("outputs", []):
            meta = output.get("metadata", {}).get("scrapbook")
            if not meta:
                continue
            prefix = meta.get("mime_prefix", "")
            values[meta["name"]] = {k[len(prefix):] if k.startswith(prefix) else k: v
                                    for k, v in output.get("data", {}).items()}
    return values


def render_glue(text: str, values: dict[str, dict]) -> str:
    """Replace the glue roles in Markdown ``text`` by their values.

    A key that was not glued is left as it is (the role stays visible), so a missing value
    is seen rather than hidden.
    """
    from myst_nb.core.variables import format_plain_text

    def one(match: re.Match) -> str:
        body = match.group("body")
        kind = match.group("kind") or "any"
        key, _, fmt = body.partition(":") if kind == "text" else (body, "", "")
        bundle = values.get(key)
        if bundle is None:
            return match.group(0)
        if kind == "md" and "text/markdown" in bundle:
            return str(bundle["text/markdown"]).strip()
        plain = bundle.get("text/plain")
        if plain is None:
            return match.group(0)
        try:
            return format_plain_text(str(plain), fmt)
        except (TypeError, ValueError):
            return match.group(0)

    return GLUE_ROLE.sub(one, text)


FENCE_OPEN = re.compile(r"^(?P<fence>:{3,}|`{3,})\{(?P<name>[\w-]+)\}[ \t]*(?P<arg>[^\n]*)$")
TARGET = re.compile(r"^\([\w:-]+\)=\s*$")
OPTION = re.compile(r"^:[\w-]+:.*$")
ROLE = re.compile(r"\{(?P<name>[\w:-]+)\}`(?P<text>[^`]*)`")
TITLED = {"admonition": "", "note": "Note", "tip": "Tip", "warning": "Warning",
          "important": "Important", "seealso": "See also", "exercise": "Exercise"}


def _directive(name: str, arg: str, options: list[str], body: str) -> str:
    """Markdown for one MyST directive whose body is already converted."""
    body = body.strip("\n")
    if name == "dropdown":
        return (f"<details><summary>{arg or 'Details'}</summary>\n\n{body}\n\n</details>")
    if name == "math":
        return f"$$\n{body}\n$$"
    if name in TITLED:
        title = TITLED[name]
        if name == "exercise":
            title = f"Exercise: {arg}" if arg else title
        elif arg:
            title = f"{title}: {arg}" if title else arg
        return f"**{title}**\n\n{body}" if title else body
    if name == "solution-start":
        return "**Solution**"
    if name in ("solution-end", "include"):
        return ""
    return body


HEADING = re.compile(r"^(?P<hashes>#{1,6})\s+(?P<title>.+?)\s*$")
LABEL_OPT = re.compile(r"^:(?:label|name):\s*(?P<label>[\w:-]+)\s*$")
FIG_NAME = re.compile(r"^\s+name:\s*(?P<label>fig-[\w:-]+)\s*$")
LAB_URL = re.compile(r"https?://localhost:\d+/lab/tree/(?P<path>[^)#\s]+)(?:#[^)\s]*)?")


def _first_sentence(text: str, words: int = 10) -> str:
    """The caption's opening words: up to its first full stop, at most ``words``, with no
    parenthesis left open."""
    out = []
    for w in text.split():
        out.append(w)
        if w.endswith(".") or len(out) == words:
            break
    short = " ".join(out)
    if short.count("(") > short.count(")"):
        short = short[:short.rindex("(")]
    short = short.rstrip(" .,:;")
    return short + ("…" if len(out) == words and not out[-1].endswith(".") else "")


def label_index(book: Path = BOOK) -> dict[str, tuple[str, str, str]]:
    """Every cross-reference target of the book: label -> (kind, title, page stem).

    kind is ``section`` (a heading or an admonition), ``figure`` (its caption's first
    sentence), ``equation`` (the title of the section it sits in), ``exercise`` or
    ``page`` (a page's own title, keyed ``/book/<stem>``).
    """
    index: dict[str, tuple[str, str, str]] = {}
    for path in sorted(book.glob("*.md")) + [book.parent / "intro.md"]:
        if not path.is_file():
            continue
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
        stem, section, fence = path.stem, path.stem, None
        for i, line in enumerate(lines):
            h = HEADING.match(line)
            if h and fence is None:
                section = ROLE.sub(lambda m: m.group("text"), h.group("title"))
                index.setdefault(f"/book/{stem}", ("page", section, stem))
            m = FENCE_OPEN.match(line)
            if m:
                fence = (m.group("name"), m.group("arg").strip())
            elif fence and line.strip().startswith(("```", ":::")):
                fence = None
            if TARGET.match(line):
                label = line.strip()[1:-2]
                nxt = next((x for x in lines[i + 1:] if x.strip()), "")
                hm, fm = HEADING.match(nxt), FENCE_OPEN.match(nxt)
                title = (ROLE.sub(lambda r: r.group("text"), hm.group("title")) if hm
                         else (fm.group("arg").strip() or fm.group("name").title()) if fm
                         else section)
                index[label] = ("section", title, stem)
            lm = LABEL_OPT.match(line)
            if lm and fence:
                kind = {"math": "equation", "exercise": "exercise"}.get(fence[0], "figure")
                title = section if kind == "equation" else (fence[1] or section)
                index[lm.group("label")] = (kind, title, stem)
            fm2 = FIG_NAME.match(line)
            if fm2:
                j = i - 1
                while j > 0 and "caption:" not in lines[j]:
                    j -= 1
                cap = " ".join(x.strip() for x in lines[j + 1:i])
                index[fm2.group("label")] = ("figure", _first_sentence(cap), stem)
    return index


def _anchor(title: str) -> str:
    """JupyterLab's id of a rendered heading: its text with spaces as dashes."""
    return re.sub(r"\s+", "-", re.sub(r"[*`]", "", title.strip()))


def _href(stem: str, title: str | None, book: Path) -> str:
    if is_chapter_notebook(book / f"{stem}.md"):
        return f"{stem}.ipynb" + (f"#{_anchor(title)}" if title else "")
    if stem == "intro":
        return "../../intro.md"
    return f"../../book/{stem}.md"


@functools.lru_cache(maxsize=1)
def _book_html():
    """The book's local Sphinx extension (``book/_ext/book_html.py``), for its lab role."""
    spec = importlib.util.spec_from_file_location("book_html", BOOK / "_ext" / "book_html.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lab_link(target: str) -> str:
    """A ``{lab}`lab02_x.ipynb#PCIe-explorer``` role as a link that JupyterLab opens from a
    copy in ``_build/chapters/``: the learner's lab (``labs/`` of the served folder) at the
    heading, which the notebook scrolls to (``#heading=<anchor>``)."""
    path, section = _book_html().lab_section(target, ROOT / "labs")
    anchor = target.split("#", 1)[1]
    return f"[`{path}`, section “{section}”](../../{path}#heading={anchor})"


def myst_to_markdown(text: str, labels: dict | None = None, book: Path = BOOK) -> str:
    """Turn the MyST directives and roles of one Markdown cell into plain Markdown.

    Reference targets (``(label)=`` lines) are dropped. Directives (colon or backtick
    fences, nested ones too) are replaced by what JupyterLab
    renders (see the module docstring); other fenced blocks are kept. Roles other than glue
    keep their text: ``{ref}`a title <target>``` gives "a title", ``{eq}`label``` gives
    "(label)".
    """
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = FENCE_OPEN.match(lines[i])
        if not m:
            if not TARGET.match(lines[i]):       # "(label)=" lines are for the book only
                out.append(lines[i])
            i += 1
            continue
        fence = m.group("fence")
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != fence:
            j += 1
        inner = lines[i + 1:j]
        options = []
        while inner and OPTION.match(inner[0]):
            options.append(inner.pop(0))
        body = myst_to_markdown("\n".join(inner))
        out.append(_directive(m.group("name"), m.group("arg").strip(), options, body))
        i = j + 1

    labels = labels or {}

    def role(match: re.Match) -> str:
        name, content = match.group("name"), match.group("text")
        if name.startswith("glue"):
            return match.group(0)
        if name == "kbd":
            return f"`{content}`"
        if name == "lab":
            return _lab_link(content)
        text, target = content, content
        if "<" in content and content.endswith(">"):
            text = content[:content.index("<")].strip()
            target = content[content.index("<") + 1:-1].strip()
        elif name in ("ref", "numref", "eq", "doc", "download", "cite"):
            text = ""
        if name == "download":
            return f"[{text or target}](../../book/{target})"
        if name == "cite":
            return f"[{content}]"
        key = target if name != "doc" else (
            target if target.startswith("/") else f"/book/{target}")
        found = labels.get(key)
        if found is None:
            fallback = {"eq": "the equation", "numref": "the figure",
                        "doc": "the page", "ref": "that section"}.get(name, "")
            return text or fallback or target
        kind, title, stem = found
        if name == "eq":
            label = text or f"the equation in “{title}”"
            return f"[{label}]({_href(stem, title, book)})"
        if name == "numref" or kind == "figure":
            label = text.replace("%s", "").strip() if text else f"the figure “{title}”"
            return f"[{label or title}]({_href(stem, None, book)})"
        if kind == "page":
            return f"[{text or title}]({_href(stem, None, book)})"
        return f"[{text or title}]({_href(stem, title, book)})"

    md = ROLE.sub(role, "\n".join(out))
    return LAB_URL.sub(lambda m: f"../../{m.group('path')}", md)


def from_cache(nb):
    """The notebook with outputs from the book's execution cache, or None on a miss."""
    if not CACHE.is_dir():
        return None
    try:
        from jupyter_cache import get_cache

        _pk, merged = get_cache(str(CACHE)).merge_match_into_notebook(nb)
    except Exception:  # noqa: BLE001 - any cache problem means "execute instead"
        return None
    return merged


def execute(nb, cwd: Path):
    """Run every cell of ``nb`` in a fresh kernel, in ``cwd`` (as the book build does)."""
    from nbclient import NotebookClient

    NotebookClient(nb, timeout=TIMEOUT, kernel_name="python3",
                   resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def display_path(path: Path) -> str:
    """``path`` relative to the repository when it lies inside it."""
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def source_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_copy(source: Path, out_dir: Path, *, force: bool = False) -> tuple[Path, str]:
    """Write the executed, number-filled copy of one chapter; return (path, how)."""
    import jupytext
    import nbformat

    out = out_dir / f"{source.stem}.ipynb"
    digest = source_digest(source)
    if out.is_file() and not force:
        old = nbformat.read(out, as_version=4).metadata.get("gpulab_course", {})
        if old.get("source_sha256") == digest and old.get("copy_format") == COPY_FORMAT:
            trust(out)
            return out, "up to date"
    nb = jupytext.read(source, fmt="md:myst")
    executed = from_cache(nb)
    how = "from the book's cache"
    if executed is None:
        executed = execute(nb, source.parent)
        how = "executed"
    values = glue_values(executed)
    labels = label_index(source.parent)
    for cell in executed.cells:
        if cell.cell_type == "markdown":
            cell.source = myst_to_markdown(render_glue(cell.source, values), labels,
                                           source.parent)
        else:
            hide_as_the_book_does(cell)
            for output in cell.get("outputs", []):
                data = output.get("data", {})
                if "application/vnd.jupyter.widget-view+json" in data:
                    # shown where the explorer cannot be drawn from the saved state
                    data["text/plain"] = WIDGET_NOTE
    executed.metadata.pop("jupytext", None)   # an .ipynb of its own, not paired
    executed.metadata["gpulab_course"] = {
        "source": display_path(source), "source_sha256": digest,
        "copy_format": COPY_FORMAT,
        "note": "Generated copy: edit freely; the chapter source is not changed."}
    out_dir.mkdir(parents=True, exist_ok=True)
    nbformat.write(executed, out)
    trust(out)
    return out, how


#: What a saved explorer output says where JupyterLab cannot draw it without a kernel.
WIDGET_NOTE = ("Live explorer: run this cell (or Run → Run All Cells) to start it; the "
               "figure above it is the explorer's initial state.")

#: Cell tags of the book and what JupyterLab should collapse for each.
HIDE_SOURCE = {"remove-cell", "remove-input", "hide-input", "hide-cell"}
HIDE_OUTPUT = {"remove-output", "hide-output", "hide-cell"}


def hide_as_the_book_does(cell) -> None:
    """Collapse in JupyterLab what the book hides: the input of a cell tagged
    ``remove-input``/``hide-input``/``remove-cell`` (bookkeeping), its output where the
    tags say so. The cell stays, so Run All still computes every number."""
    tags = set(cell.get("metadata", {}).get("tags", []))
    jl = cell.metadata.setdefault("jupyter", {})
    if tags & HIDE_SOURCE:
        jl["source_hidden"] = True
    if tags & HIDE_OUTPUT:
        jl["outputs_hidden"] = True
    if not jl:
        cell.metadata.pop("jupyter")


def trust(path: Path) -> None:
    """Sign the copy in this user's Jupyter trust database, as `jupyter trust` does, so
    JupyterLab shows its figures (SVG) and explorers without a re-run."""
    import nbformat
    from nbformat.sign import NotebookNotary

    nb = nbformat.read(path, as_version=4)
    try:
        NotebookNotary().sign(nb)
    except Exception as exc:  # noqa: BLE001 - an unwritable trust database
        print(f"note: could not sign {display_path(path)} ({exc}); run "
              f"`jupyter trust {display_path(path)}` to see its figures in JupyterLab",
              file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", type=Path,
                        help="chapter sources (default: every notebook in book/)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="folder for the copies (default: _build/chapters)")
    parser.add_argument("--force", action="store_true", help="rewrite up-to-date copies")
    args = parser.parse_args(argv)
    sources = [p.resolve() for p in args.chapters] or chapter_sources()
    for src in sources:
        if not is_chapter_notebook(src):
            parser.error(f"chapters: {src} is not a MyST notebook (.md with a kernelspec)")
    for src in sources:
        out, how = write_copy(src, args.out, force=args.force)
        print(f"{display_path(src)} -> {display_path(out)} ({how})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
