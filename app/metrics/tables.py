"""Text tables for the command line and the reports, laid out by rich.

One look everywhere: a header, a rule under it, then the rows, columns left-aligned,
no borders. A table is rendered as plain text at its natural width (`render_table`),
so piped output, logs and the examples in the docs never wrap or carry escape codes;
`print_table` gives a terminal rich's own output instead (bold header, fitted to the
window). Cells are never read as rich markup: a task title may hold `[brackets]`.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


def build_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> Table:
    # rich is imported where it draws: the plain path below needs only its cell widths.
    from rich import box
    from rich.table import Table

    table = Table(*headers, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, highlight=False)
    for row in rows:
        table.add_row(*row)
    return table


def render_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], *, empty: str = "(none)"
) -> str:
    """The table as plain text at its natural width; `empty` when there are no rows."""
    if not rows:
        return empty
    plain = _plain_table(headers, rows)
    if plain is not None:
        return plain
    table = build_table(headers, rows)
    # Wide enough that no column is squeezed or wrapped: the table decides its width.
    measure = _console(io.StringIO(), width=1_000_000).measure(table)
    out = io.StringIO()
    # No colour even where FORCE_COLOR asks for it: this text goes into files and docs.
    _console(out, width=measure.maximum, plain=True).print(table)
    # rich pads every cell to its column's width; the last column needs no padding.
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines())


def _plain_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str | None:
    """What rich renders for this table, laid out directly (rich took a second for a
    thousand rows); None when a cell is not one line of printable text without
    surrounding spaces, which rich would wrap, strip or expand (rich renders those).

    Rich's layout here: each column as wide as its widest cell, cells left-aligned and
    padded one space each side except at the table's edges, columns divided by one
    space, a rule of '─' under the header across the whole width."""
    from rich.cells import cell_len

    table = [list(headers), *(list(row) for row in rows)]
    if any(len(row) != len(headers) for row in table):
        return None
    for row in table:
        for cell in row:
            if not cell.isprintable() or cell != cell.strip():
                return None
    widths = [max(cell_len(row[i]) for row in table) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        pairs = zip(row, widths, strict=True)
        cells = (cell + " " * (width - cell_len(cell)) for cell, width in pairs)
        return "   ".join(cells).rstrip()

    rule = "─" * (sum(widths) + 3 * (len(widths) - 1))
    return "\n".join([line(table[0]), rule, *(line(row) for row in table[1:])])


def print_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], *, empty: str = "(none)"
) -> None:
    """Print the table on stdout: rich's terminal output on a terminal, `render_table`
    elsewhere."""
    if rows and sys.stdout.isatty():
        _console(sys.stdout).print(build_table(headers, rows))
    else:
        print(render_table(headers, rows, empty=empty))


def _console(file: TextIO, width: int | None = None, *, plain: bool = False) -> Console:
    from rich.console import Console

    return Console(
        file=file,
        width=width,
        color_system=None if plain else "auto",
        markup=False,
        highlight=False,
        emoji=False,
    )


@dataclass(frozen=True)
class Section:
    """A titled table with a note under it: one part of a report, printed as text
    (`render_sections`) and shown on an HTML page (`app.metrics.html_report.render_page`)
    from the same cells."""

    title: str
    headers: Sequence[str]
    rows: Sequence[Sequence[str]]
    note: str = ""


def render_sections(sections: Sequence[Section]) -> str:
    """Each section as its title, its table and its note, a blank line between them."""
    parts = []
    for section in sections:
        text = f"{section.title}\n{render_table(section.headers, section.rows)}"
        parts.append(f"{text}\n{section.note}" if section.note else text)
    return "\n\n".join(parts)
