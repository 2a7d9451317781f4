"""The tiny template format of rota's SQL files, so that a rule written once in SQL serves
every statement that needs it (the claims' room rule; the PostgreSQL claim's CTEs and
RETURNING list, shared by its four statements) instead of being copied into each.

- A placeholder is a word in braces, `{name}` (`{{` and `}}` are left alone: psycopg's
  escaped braces). `fill` replaces each by its value, and the placeholders inside a value
  too. One filled later is named as such (`later`): the schema when a PostgreSQL
  statement is rendered, the arms of a batched SQLite claim when their count is known.
- A file may hold parts after its statement, each from a line `-- @part NAME` to the
  next (`split_parts`): the pieces its compositions choose from.
- A placeholder with no value, or a value no placeholder asks for, raises `TemplateError`
  when the statement loads: a statement never runs with a part missing or left over
  (a misspelt marker used to be found only by reading the SQL).

Imports only the standard library.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Final

__all__ = ["TemplateError", "fill", "placeholders", "split_parts", "strip_comments"]

PLACEHOLDER: Final = re.compile(r"(?<!\{)\{(\w+)\}(?!\})")
_PART: Final = re.compile(r"-- @part (\w+)")
# Deeper than any composition needs: a part that names itself is a mistake, not a loop.
_MAX_DEPTH: Final = 8


class TemplateError(RuntimeError):
    """A statement's template and its values do not match: a packaging mistake, never
    user input."""


def strip_comments(text: str) -> str:
    """`text` without its whole-line comments (`--` first on the line) and blank lines
    (an empty part leaves one)."""
    return "".join(line for line in text.splitlines(keepends=True)
                   if line.strip() and not line.lstrip().startswith("--"))


def placeholders(text: str) -> set[str]:
    """The names of the placeholders in `text`."""
    return set(PLACEHOLDER.findall(text))


def fill(template: str, values: Mapping[str, str], *, what: str,
         later: Collection[str] = ()) -> str:
    """`template` with every placeholder replaced by its value, expanded in turn; those
    named in `later` are left as they are.

    Raises:
        TemplateError: naming `what`, if a placeholder has no value (and is not `later`),
            or a value is used by no placeholder.
    """
    used: set[str] = set()

    def expand(text: str, depth: int) -> str:
        if depth > _MAX_DEPTH:
            raise TemplateError(f"{what}: placeholders nested deeper than {_MAX_DEPTH} "
                                "(does a part name itself?)")

        def one(match: re.Match[str]) -> str:
            name = match[1]
            if name in values:
                used.add(name)
                return expand(values[name], depth + 1)
            if name in later:
                return match[0]
            raise TemplateError(f"{what}: the placeholder {{{name}}} has no value")

        return PLACEHOLDER.sub(one, text)

    filled = expand(template, 0)
    unused = sorted(set(values) - used)
    if unused:
        raise TemplateError(f"{what}: no placeholder takes the value of {', '.join(unused)}")
    return filled


def split_parts(text: str, what: str) -> dict[str, str]:
    """A file's statement (under "") and its parts by name, each without its comment lines
    (which may then name placeholders freely) and trailing newline.

    Raises:
        TemplateError: if a line starting `-- @` is not a part line, or a name repeats.
    """
    parts: dict[str, list[str]] = {"": []}
    current = parts[""]
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith("-- @"):
            match = _PART.fullmatch(stripped)
            if match is None:
                raise TemplateError(f"{what}: {stripped!r} is not a part line "
                                    "(-- @part NAME)")
            if match[1] in parts:
                raise TemplateError(f"{what}: the part {match[1]} is there twice")
            current = parts[match[1]] = []
        else:
            current.append(line)
    return {name: strip_comments("".join(lines)).rstrip("\n") for name, lines in parts.items()}
