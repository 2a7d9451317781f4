"""`rota.cli.display.boxed_table` lays a long table out exactly as rich's `Table` does, and
`rota simulate` uses it for the served table above 200 Queues (rich's Table is slow over
10,000 tenant Queues)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.table import Table

from rota.cli import main, simulate
from rota.cli.display import FULL_WIDTH, boxed_table, user_text

FIVE = [("Queue", False), ("weight", True), ("target", True), ("served", True),
        ("share", True)]
THREE = [("Queue", False), ("served", True), ("share", True)]


def console() -> Console:
    return Console(file=io.StringIO(), width=FULL_WIDTH, highlight=False, emoji=False)


def by_rich(columns: list[tuple[str, bool]], rows: list[list[str]]) -> str:
    table = Table(title="served")
    for header, right in columns:
        table.add_column(header, justify="right" if right else "left")
    for row in rows:
        table.add_row(*[user_text(cell) for cell in row])
    out = console()
    out.print(table)
    return out.file.getvalue()  # type: ignore[attr-defined]


def by_boxed_table(columns: list[tuple[str, bool]], rows: list[list[str]]) -> str:
    out = console()
    out.print(boxed_table("served", columns, rows), no_wrap=True, crop=False)
    return out.file.getvalue()  # type: ignore[attr-defined]


@pytest.mark.parametrize(("columns", "rows"), [
    (FIVE, [["a", "6", "60.0%", "6", "60.0%"], ["bb", "3", "30.0%", "3", "30.0%"]]),
    (THREE, [["x" * 30, "1", "100.0%"]]),  # an odd width: the title's centring
    (THREE, [["日本語キュー", "1", "50.0%"], ["a[bold]b", "1", "50.0%"]]),  # wide, markup
    (THREE, [["ctl\x1bq", "1", "100.0%"]]),  # a control character, shown escaped
    (THREE, []),
], ids=["five-columns", "odd-width", "wide-and-markup", "control", "no-rows"])
def test_a_boxed_table_is_what_rich_prints(
    columns: list[tuple[str, bool]], rows: list[list[str]],
) -> None:
    assert by_boxed_table(columns, rows) == by_rich(columns, rows)


def test_simulate_over_many_queues_prints_the_table_rich_would(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a Weighted policy over more Queues than rich's Table is used for
    queues = simulate._RICH_TABLE_ROWS + 50
    spec = ",".join(f"t{i:03d}={1 + i % 5}" for i in range(queues))
    args = ["simulate", "--weighted", spec, "--pool", "20", "--passes", "3"]
    # When it is simulated with the fast table, and with rich's Table for every size
    assert main(args) == 0
    fast = capsys.readouterr().out
    monkeypatch.setattr(simulate, "_RICH_TABLE_ROWS", 10**9)
    assert main(args) == 0
    # Then the output is the same, every Queue in its row
    assert fast == capsys.readouterr().out
    assert fast.count("│ t") == queues
