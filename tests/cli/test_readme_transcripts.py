"""The README's `rota simulate` transcripts are real output, kept so by this test."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from rota.cli import main

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"```\n\$ (rota simulate [^\n]*)\n(.*?)```", re.DOTALL)


def transcripts() -> list[tuple[str, str]]:
    return BLOCK.findall(README.read_text(encoding="utf-8"))


def test_the_readme_has_simulate_transcripts() -> None:
    assert len(transcripts()) >= 2


@pytest.mark.parametrize(("command", "shown"), transcripts())
def test_each_transcript_is_what_the_command_prints(
    command: str, shown: str, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(shlex.split(command)[1:]) == 0
    printed = capsys.readouterr().out
    assert [line.rstrip() for line in printed.splitlines()] == shown.rstrip("\n").splitlines()
