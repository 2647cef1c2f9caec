"""gpulab.tables: the HTML tables of the chapters."""
from __future__ import annotations

import html.parser

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import settings  # noqa: F401  (loads the bounded "ci" profile)

from gpulab.tables import HTMLTable, html_table

TWO_BY_TWO = ('<table class="table"><thead><tr><th>Link</th><th>GB/s</th></tr></thead>'
              "<tbody><tr><td>NVLink4</td><td>450</td></tr>"
              "<tr><td>PCIe Gen5 x16</td><td>63.0</td></tr></tbody></table>")


def test_exact_html():
    t = html_table(["Link", "GB/s"], [["NVLink4", 450], ("PCIe Gen5 x16", 63.0)])
    assert isinstance(t, HTMLTable)
    assert t.html == TWO_BY_TWO
    assert str(t) == TWO_BY_TWO
    assert t._repr_html_() == TWO_BY_TWO
    assert repr(t) == "<HTMLTable: 2 columns, 2 rows>"


def test_markup_is_kept_by_default():
    t = html_table(["Lanes<br>per dir.", "<code>x</code>"], [["<b>18</b>", "a & b"]])
    assert str(t) == ('<table class="table"><thead><tr><th>Lanes<br>per dir.</th>'
                      "<th><code>x</code></th></tr></thead><tbody><tr><td><b>18</b></td>"
                      "<td>a & b</td></tr></tbody></table>")


def test_escape():
    t = html_table(["<h>"], [["a & <b>"]], caption="x<y", escape=True)
    assert str(t) == ('<table class="table"><caption>x&lt;y</caption><thead><tr>'
                      "<th>&lt;h&gt;</th></tr></thead><tbody><tr><td>a &amp; &lt;b&gt;"
                      "</td></tr></tbody></table>")


def test_options():
    t = html_table(["a"], [[1]], caption="Cap", small=True, scroll=True)
    assert str(t) == ('<div style="overflow-x:auto"><table class="table" '
                      'style="font-size: 0.85em"><caption>Cap</caption><thead><tr>'
                      "<th>a</th></tr></thead><tbody><tr><td>1</td></tr></tbody>"
                      "</table></div>")


def test_no_rows_and_generator_rows():
    assert str(html_table(["a", "b"], [])) == (
        '<table class="table"><thead><tr><th>a</th><th>b</th></tr></thead>'
        "<tbody></tbody></table>")
    rows = ([i, i * i] for i in range(3))
    assert html_table(["i", "i²"], rows).n_rows == 3


def test_frozen():
    t = html_table(["a"], [[1]])
    with pytest.raises(AttributeError):
        t.html = "<p>changed</p>"


@pytest.mark.parametrize("rows, index", [
    ([[1, 2], [3]], 1),
    ([[1, 2, 3]], 0),
    ([[1, 2], [3, 4], []], 2),
])
def test_ragged_rows_name_the_row(rows, index):
    with pytest.raises(ValueError, match=rf"rows\[{index}\] has {len(rows[index])} cells"):
        html_table(["a", "b"], rows)


@pytest.mark.parametrize("header, match", [
    ("ab", "header must be a sequence of str"),
    (None, "header must be a sequence of str"),
    ({"a", "b"}, "header must be a sequence of str"),
    (["a", 2], r"header\[1\] must be a str"),
])
def test_bad_header(header, match):
    with pytest.raises(TypeError, match=match):
        html_table(header, [])


@pytest.mark.parametrize("rows, match", [
    (None, "rows must be an iterable"),
    ("ab", "rows must be an iterable"),
    ([["a", "b"], "ab"], r"rows\[1\] must be a sequence"),
    ([5], r"rows\[0\] must be a sequence"),
])
def test_bad_rows(rows, match):
    with pytest.raises(TypeError, match=match):
        html_table(["a", "b"], rows)


class _Parser(html.parser.HTMLParser):
    """Collect the text of every <th> and <td> and check the tags nest."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.header, self.rows, self._text = [], [], [], None

    def handle_starttag(self, tag, attrs):
        self.stack.append(tag)
        if tag == "tr" and "tbody" in self.stack:
            self.rows.append([])
        if tag in ("th", "td"):
            self._text = ""

    def handle_data(self, data):
        if self._text is not None:
            self._text += data

    def handle_endtag(self, tag):
        assert self.stack.pop() == tag
        if tag == "th":
            self.header.append(self._text)
        elif tag == "td":
            self.rows[-1].append(self._text)
        if tag in ("th", "td"):
            self._text = None


texts = st.text(max_size=12)


@given(st.integers(1, 5).flatmap(lambda n: st.tuples(
    st.lists(texts, min_size=n, max_size=n),
    st.lists(st.lists(texts, min_size=n, max_size=n), max_size=6))))
def test_escaped_table_round_trips(table):
    """With escape=True any text survives: parsing the HTML gives back the cells."""
    header, rows = table
    p = _Parser()
    p.feed(str(html_table(header, rows, escape=True)))
    p.close()
    assert p.stack == []
    assert p.header == header
    assert p.rows == rows


@given(st.lists(st.floats(allow_nan=False) | st.integers(), min_size=1, max_size=8))
def test_one_row_one_cell_per_value(values):
    t = html_table([f"c{i}" for i in range(len(values))], [values])
    assert t.n_columns == len(values) and t.n_rows == 1
    assert str(t).count("<td>") == len(values) == str(t).count("<th>")
    assert "".join(f"<td>{v}</td>" for v in values) in str(t)
