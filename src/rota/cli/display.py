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

from rich.console import Console
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


def make_console(*, stderr: bool = False, piped_width: int | None = None) -> Console:
    """A Console for the command's output (stdout, or stderr): no automatic highlighting
    of numbers and strings, no emoji codes. When the output is not a terminal and
    COLUMNS is not set, values are printed in full (rich would otherwise assume 80
    columns and wrap or cut them): the width is `piped_width` if given, else
    `FULL_WIDTH`. In a terminal rich fits the output to the terminal's width."""
    width = None
    stream = sys.stderr if stderr else sys.stdout
    if not stream.isatty() and "COLUMNS" not in os.environ:
        width = piped_width if piped_width is not None else FULL_WIDTH
    return Console(highlight=False, emoji=False, stderr=stderr, width=width)
