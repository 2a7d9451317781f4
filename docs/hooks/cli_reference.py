"""mkdocs hook: the CLI reference page (docs/cli.md) built from rota's own argparse parser.

The page holds a marker line; at build time this hook replaces it with every subcommand's
usage, description and arguments, read from `rota.cli.build_parser()` (the parser the
`rota` command runs), so the reference cannot drift from the code. Registered in
mkdocs.yml under `hooks:`.
"""

from __future__ import annotations

import argparse
import functools
import html
from typing import Any

MARKER = "<!-- cli-reference -->"
PAGE = "cli.md"
WIDTH = 88  # usage lines are wrapped here, whatever the terminal that runs mkdocs


def _formatted(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    # The parser's own formatter class (raw or not), at a fixed width.
    parser.formatter_class = functools.partial(parser.formatter_class, width=WIDTH)
    return parser


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _summaries(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each subcommand's one-line `help=`, as `rota -h` lists it."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {choice.dest: choice.help or "" for choice in action._choices_actions}
    return {}


def _cell(text: str) -> str:
    return html.escape(" ".join(text.split()), quote=False).replace("|", "\\|")


def _argument(action: argparse.Action) -> tuple[str, str] | None:
    if action.help == argparse.SUPPRESS or isinstance(
            action, (argparse._SubParsersAction, argparse._HelpAction)):
        return None  # -h is on every command; subcommands get their own sections
    if action.option_strings:
        metavar = ""
        if action.nargs != 0:
            metavar = " " + (action.metavar if isinstance(action.metavar, str)
                             else action.dest.upper())
        name = ", ".join(f"`{option}{metavar}`" for option in action.option_strings)
    else:
        name = f"`{action.metavar if isinstance(action.metavar, str) else action.dest}`"
    text = action.help or ""
    if "%(" in text:
        text = text % {**vars(action), "prog": "rota",
                       "default": action.default, "choices": action.choices}
    if action.choices and not isinstance(action, argparse._SubParsersAction):
        text += " (one of: " + ", ".join(str(choice) for choice in action.choices) + ")"
    if action.required and action.option_strings:
        text += " (required)"
    return name, text


def _section(name: str, parser: argparse.ArgumentParser, summary: str, level: int) -> list[str]:
    parser = _formatted(parser)
    lines = [f"{'#' * level} `{parser.prog}`", ""]
    if summary:
        lines += [summary[:1].upper() + summary[1:] + ".", ""]
    lines += ["```text", parser.format_usage().strip(), "```", ""]
    if parser.description:
        lines += [html.escape(" ".join(parser.description.split()), quote=False), ""]
    rows = [row for action in parser._actions if (row := _argument(action))]
    if rows:
        lines += ["| argument | meaning |", "|---|---|"]
        lines += [f"| {argument} | {_cell(text)} |" for argument, text in rows]
        lines.append("")
    if parser.epilog:
        lines += [html.escape(" ".join(parser.epilog.split()), quote=False), ""]
    children = _subparsers(parser)
    summaries = _summaries(parser)
    for child_name, child in children.items():
        lines += _section(child_name, child, summaries.get(child_name, ""), level + 1)
    return lines


def reference() -> str:
    from rota.cli import build_parser

    parser = _formatted(build_parser())
    summaries = _summaries(parser)
    lines = ["```text", parser.format_usage().strip(), "```", ""]
    rows = [row for action in parser._actions if (row := _argument(action))]
    lines += ["| argument | meaning |", "|---|---|"]
    lines += [f"| {argument} | {_cell(text)} |" for argument, text in rows]
    lines += ["", "| command | what it does |", "|---|---|"]
    children = _subparsers(parser)
    lines += [f"| [`rota {name}`](#rota-{name}) | {_cell(summaries.get(name, ''))} |"
              for name in children]
    lines.append("")
    for name, child in children.items():
        lines += _section(name, child, summaries.get(name, ""), 2)
    return "\n".join(lines)


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    if page.file.src_uri != PAGE or MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, reference())
