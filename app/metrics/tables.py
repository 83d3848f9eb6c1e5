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
from typing import TextIO

from rich import box
from rich.console import Console
from rich.table import Table


def build_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> Table:
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
    table = build_table(headers, rows)
    # Wide enough that no column is squeezed or wrapped: the table decides its width.
    measure = _console(io.StringIO(), width=1_000_000).measure(table)
    out = io.StringIO()
    # No colour even where FORCE_COLOR asks for it: this text goes into files and docs.
    _console(out, width=measure.maximum, plain=True).print(table)
    # rich pads every cell to its column's width; the last column needs no padding.
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines())


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
    return Console(
        file=file,
        width=width,
        color_system=None if plain else "auto",
        markup=False,
        highlight=False,
        emoji=False,
    )
