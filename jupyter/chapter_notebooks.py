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
  bold title, ``{math}`` becomes ``$$ ... $$``, cross-reference roles keep their text.

A copy is rewritten only when its chapter changed since (the source's SHA-256 is kept in
the copy's metadata) or when ``--force`` is given. The learner may edit and save a copy
freely: the tracked sources are never written.

Usage::

    python jupyter/chapter_notebooks.py [--out _build/chapters] [--force] [book/nvlink.md ...]
"""
from __future__ import annotations

import argparse
import hashlib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
DEFAULT_OUT = ROOT / "_build" / "chapters"
CACHE = ROOT / ".jupyter_cache"
GLUE_PREFIX = "application/papermill.record/"
TIMEOUT = 300  # s per cell, as generous as the book's execution timeout allows

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


def myst_to_markdown(text: str) -> str:
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

    def role(match: re.Match) -> str:
        name, content = match.group("name"), match.group("text")
        if name.startswith("glue"):
            return match.group(0)
        if name == "eq":
            return f"({content})"
        if "<" in content and content.endswith(">"):
            content = content[:content.index("<")].strip()
        return f"`{content}`" if name == "kbd" else content

    return ROLE.sub(role, "\n".join(out))


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
        old = nbformat.read(out, as_version=4)
        if old.metadata.get("gpulab_course", {}).get("source_sha256") == digest:
            return out, "up to date"
    nb = jupytext.read(source, fmt="md:myst")
    executed = from_cache(nb)
    how = "from the book's cache"
    if executed is None:
        executed = execute(nb, source.parent)
        how = "executed"
    values = glue_values(executed)
    for cell in executed.cells:
        if cell.cell_type == "markdown":
            cell.source = myst_to_markdown(render_glue(cell.source, values))
    executed.metadata.pop("jupytext", None)   # an .ipynb of its own, not paired
    executed.metadata["gpulab_course"] = {
        "source": display_path(source), "source_sha256": digest,
        "note": "Generated copy: edit freely; the chapter source is not changed."}
    out_dir.mkdir(parents=True, exist_ok=True)
    nbformat.write(executed, out)
    return out, how


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
