"""How the `rota` command shows text it did not write: Queue names, job names, errors, URLs.

Every piece of user text a command prints through rich goes through `user_text` (or
`line`), never into a markup string: rich would parse `[bold]` in a Queue name as a style
(swallowing it), crash on `[/]` with a `MarkupError`, and turn `:smile:` into an emoji.
A `Text` is never parsed, so it shows the text exactly. Control characters (an ANSI escape
in an error message, say) are shown as `\\x1b` escapes instead of being sent to the
terminal. `rich.markup.escape` is not used: it doubles a trailing backslash.

Use:
    table.add_row(user_text(job.name), user_text(job.queue), str(job.id))
    console.print(line(("rota demo", "bold"), ": running on ", user_text(url)))
    console = make_console()   # highlight and emoji codes off

Imports only rich.
"""

from __future__ import annotations

import os
import sys
import unicodedata
from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

# Kept as they are: a table cell may hold a multi-line error message.
_KEPT_CONTROLS = frozenset("\n\t")


def shown(value: object) -> str:
    """`str(value)` with control characters (other than newline and tab) written as escapes
    (`\\x00`, `\\x1b`, ...), so that they cannot act on the terminal."""
    text = str(value)
    if text.isprintable():
        return text  # the common case: nothing to replace
    return "".join(
        repr(char)[1:-1]
        if unicodedata.category(char) == "Cc" and char not in _KEPT_CONTROLS else char
        for char in text
    )


def user_text(value: object, style: str = "") -> Text:
    """User text as a rich `Text`: shown exactly, never parsed as markup or emoji codes."""
    return Text(shown(value), style=style, end="")


def line(*parts: str | Text | tuple[str, str]) -> Text:
    """One line assembled from parts: a plain str is the command's own text, a
    `(text, style)` pair is the command's own styled text, a `Text` is user text (make it
    with `user_text`). Nothing in it is parsed as markup."""
    return Text.assemble(*parts)


# The width a console assumes when its output is not a terminal (a pipe, a file, a CI log)
# and COLUMNS is not set: wide enough that nothing is wrapped or cut with an ellipsis.
# Tables take their natural width (they do not expand), so this adds no padding.
FULL_WIDTH = 100_000


def make_console(*, stderr: bool = False) -> Console:
    """A Console for the command's output (stdout, or stderr): no automatic highlighting
    of numbers and strings, no emoji codes. When the output is not a terminal (a pipe, a
    file, a subprocess, a CI log) and COLUMNS is not set, every column is printed whole,
    however wide the table (rich would otherwise assume 80 columns and cut or wrap
    values, a worker id or a timestamp included). In a terminal rich fits the output to
    the terminal's width; COLUMNS sets a width anywhere."""
    width = None
    stream = sys.stderr if stderr else sys.stdout
    if not stream.isatty() and "COLUMNS" not in os.environ:
        width = FULL_WIDTH
    return Console(highlight=False, emoji=False, stderr=stderr, width=width)


def print_whole(console: Console, table: Table) -> None:
    """Print `table` with every cell whole, never an id, a number or a name cut with an
    ellipsis: when its natural width is wider than the console's (COLUMNS=80, as CI
    systems and test runners set it, or a narrow terminal), at that width; a terminal
    then wraps its lines, and every value is still there to read or copy."""
    needed = console.measure(table, options=console.options.update_width(FULL_WIDTH)).maximum
    if needed > console.width:
        console.width = needed
    console.print(table)


def boxed_table(
    title: str, columns: Sequence[tuple[str, bool]], rows: Sequence[Sequence[str]],
) -> Text:
    """A table laid out as rich's default `Table` lays it out (the HEAVY_HEAD box, one
    space of padding, the title centred above it, the header bold), for tables too long
    for rich: `Table` measures and wraps every cell, ~4 s for the 10,000 rows of a
    simulation over 10,000 tenant Queues, where this takes ~0.1 s. `columns`: (header,
    right-justified). Cells are user text, shown as `user_text` shows them. Unlike
    `Table`, lines are not fitted to a narrow terminal: print it with `no_wrap=True`."""
    cells = [[shown(cell) for cell in row] for row in rows]
    widths = [max([cell_len(header)] + [cell_len(row[index]) for row in cells])
              for index, (header, _) in enumerate(columns)]

    def fitted(text: str, width: int, right: bool) -> str:
        gap = " " * (width - cell_len(text))
        return gap + text if right else text + gap

    def rule(left: str, fill: str, middle: str, right: str) -> str:
        return left + middle.join(fill * (width + 2) for width in widths) + right

    def row_line(edge: str, values: Sequence[str], justify: Sequence[bool]) -> str:
        return edge + edge.join(
            f" {fitted(value, width, right)} "
            for value, width, right in zip(values, widths, justify, strict=True)) + edge

    total = sum(widths) + 3 * len(widths) + 1
    left = (total - cell_len(title)) // 2
    text = Text(end="")
    text.append(" " * left + title + " " * (total - left - cell_len(title)), "italic")
    text.append("\n" + rule("┏", "━", "┳", "┓") + "\n")
    text.append("┃")
    for (header, right), width in zip(columns, widths, strict=True):
        text.append(" ")
        text.append(fitted(header, width, right), "bold")
        text.append(" ┃")
    text.append("\n" + rule("┡", "━", "╇", "┩"))
    justify = [right for _, right in columns]
    text.append("".join("\n" + row_line("│", row, justify) for row in cells))
    text.append("\n" + rule("└", "─", "┴", "┘"))
    return text
