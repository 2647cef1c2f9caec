"""Small HTML tables for the book's chapters and the labs.

The chapters compute every cell of a table with ``gpulab`` and show the result as plain
HTML (no pandas).  :func:`html_table` is the one place that turns a header and rows into
that HTML; it returns an :class:`HTMLTable`, which Jupyter displays as a table (it has a
``_repr_html_`` method) and ``str()`` turns into the HTML text.

This module is model-free and imports neither IPython, matplotlib nor ipywidgets.
"""
from __future__ import annotations

import html as _html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["HTMLTable", "html_table"]

SMALL_STYLE = "font-size: 0.85em"
"""The inline style of a ``small=True`` table."""


@dataclass(frozen=True)
class HTMLTable:
    """An HTML table that Jupyter renders as HTML.

    Parameters
    ----------
    html : str
        The complete HTML text of the table.
    n_columns, n_rows : int
        The number of columns (header cells) and body rows, for the plain-text
        representation.

    Notes
    -----
    Build one with :func:`html_table`.  ``str(table)`` and ``table.html`` give the HTML
    text; ``repr(table)`` is a short summary, so a terminal does not print the markup.
    """

    html: str
    n_columns: int = 0
    n_rows: int = 0

    def _repr_html_(self) -> str:
        return self.html

    def __str__(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return f"<HTMLTable: {self.n_columns} columns, {self.n_rows} rows>"


def _cell(value: object, escape: bool) -> str:
    text = f"{value}"
    return _html.escape(text) if escape else text


def html_table(
    header: Sequence[str],
    rows: Iterable[Sequence[object]],
    *,
    caption: str | None = None,
    small: bool = False,
    scroll: bool = False,
    escape: bool = False,
) -> HTMLTable:
    """Render a header and rows as an HTML table.

    Parameters
    ----------
    header : sequence of str
        The column titles, one per column.  They may contain HTML markup
        (``"Lanes<br>per dir."``).
    rows : iterable of sequences
        The body rows.  Every row has exactly one cell per header entry; a cell is
        written with ``f"{cell}"``, so numbers should be formatted by the caller.
    caption : str, optional
        A ``<caption>`` for the table.  None (the default) writes no caption.
    small : bool, default False
        Set the table's font size to 0.85em (wide reference tables).
    scroll : bool, default False
        Wrap the table in a ``<div style="overflow-x:auto">`` so that a wide table
        scrolls sideways instead of widening the page.
    escape : bool, default False
        Escape ``&``, ``<``, ``>`` and quotes in the header, the cells and the caption.
        Off by default: the chapters put ``<code>``, ``<b>`` and ``<br>`` markup in cells.

    Returns
    -------
    HTMLTable
        The table; Jupyter displays it as HTML and ``str()`` gives the HTML text.

    Raises
    ------
    TypeError
        If ``header`` is a string or not a sequence of strings, or a row is a string
        or not a sequence.
    ValueError
        If a row does not have one cell per header entry; the message names
        ``rows[i]``.

    Examples
    --------
    >>> from gpulab.tables import html_table
    >>> t = html_table(["Link", "GB/s"], [["NVLink4", 450], ["PCIe Gen5 x16", 63]])
    >>> print(t)
    <table class="table"><thead><tr><th>Link</th><th>GB/s</th></tr></thead><tbody><tr><td>NVLink4</td><td>450</td></tr><tr><td>PCIe Gen5 x16</td><td>63</td></tr></tbody></table>
    >>> t
    <HTMLTable: 2 columns, 2 rows>
    >>> print(html_table(["a"], [[1]], caption="One cell", small=True))
    <table class="table" style="font-size: 0.85em"><caption>One cell</caption><thead><tr><th>a</th></tr></thead><tbody><tr><td>1</td></tr></tbody></table>
    """
    if isinstance(header, (str, bytes)) or not isinstance(header, Sequence):
        raise TypeError(
            f"header must be a sequence of str, got {type(header).__name__}")
    for j, h in enumerate(header):
        if not isinstance(h, str):
            raise TypeError(
                f"header[{j}] must be a str, got {type(h).__name__}: {h!r}")
    if isinstance(rows, (str, bytes)) or not isinstance(rows, Iterable):
        raise TypeError(
            f"rows must be an iterable of sequences, got {type(rows).__name__}")
    body_rows = []
    for i, row in enumerate(rows):
        if isinstance(row, (str, bytes)) or not isinstance(row, Sequence):
            raise TypeError(
                f"rows[{i}] must be a sequence of cells, got {type(row).__name__}")
        if len(row) != len(header):
            raise ValueError(
                f"rows[{i}] has {len(row)} cells but the header has {len(header)} "
                "columns")
        body_rows.append(
            "<tr>" + "".join(f"<td>{_cell(c, escape)}</td>" for c in row) + "</tr>")
    head = "".join(f"<th>{_cell(h, escape)}</th>" for h in header)
    style = f' style="{SMALL_STYLE}"' if small else ""
    cap = "" if caption is None else f"<caption>{_cell(caption, escape)}</caption>"
    text = (f'<table class="table"{style}>{cap}<thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body_rows)}</tbody></table>")
    if scroll:
        text = f'<div style="overflow-x:auto">{text}</div>'
    return HTMLTable(text, n_columns=len(header), n_rows=len(body_rows))
