"""The `rota simulate` transcripts of the README and the operations guide are real
output, kept so by this test."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from rota.cli import main

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
OPERATIONS = ROOT / "docs" / "operations.md"
# A fenced block, indented as a whole (inside a list item) or not.
BLOCK = re.compile(r"^( *)```\n\1\$ (rota simulate [^\n]*)\n(.*?)^\1```",
                   re.DOTALL | re.MULTILINE)


def transcripts(path: Path = README) -> list[tuple[str, str]]:
    found = []
    for indent, command, shown in BLOCK.findall(path.read_text(encoding="utf-8")):
        lines = [line.removeprefix(indent) for line in shown.splitlines()]
        found.append((command, "".join(f"{line}\n" for line in lines)))
    return found


def test_the_readme_and_the_operations_guide_have_simulate_transcripts() -> None:
    assert len(transcripts()) >= 2
    assert any("--rate" in command for command, _ in transcripts(OPERATIONS))


@pytest.mark.parametrize(("command", "shown"), transcripts() + transcripts(OPERATIONS))
def test_each_transcript_is_what_the_command_prints(
    command: str, shown: str, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(shlex.split(command)[1:]) == 0
    printed = capsys.readouterr().out
    assert [line.rstrip() for line in printed.splitlines()] == shown.rstrip("\n").splitlines()
