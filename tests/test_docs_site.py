"""The documentation site's build fails on a broken link (mkdocs --strict, as dev.py runs
it), so CI catches one. The real build is a step of `python3 dev.py test`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_mkdocs_strict_fails_on_a_broken_link(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    # Given a copy of the site with one page linking to a page that does not exist
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    (tmp_path / "docs" / "index.md").write_text("# rota\n\n[gone](no-such-page.md)\n")
    # When it is built as dev.py builds it (no API reference page: it needs src/)
    (tmp_path / "docs" / "reference.md").write_text("# API reference\n")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
         str(tmp_path / "site")], cwd=tmp_path, capture_output=True, text=True,
        timeout=120, check=False, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    # Then the build fails, naming the link
    assert done.returncode != 0
    assert "no-such-page.md" in done.stderr


# -- first-day reading: what a reader meets before it is introduced ------------


def _text(name: str) -> str:
    return (ROOT / name).read_text()


def test_the_default_queue_is_stated_before_a_job_without_a_queue_is_shown() -> None:
    # The first pages a reader opens say where a job without `queue=` goes
    for name in ("README.md", "docs/getting-started.md"):
        text = _text(name)
        assert 'Queue named "default"' in text, name


def test_the_policy_shorthands_are_introduced_before_they_are_used() -> None:
    for name in ("README.md", "docs/dispatch.md"):
        text = _text(name)
        first_use = min(i for i in (text.find("rota.Weighted("), text.find("rota.Strict("))
                        if i >= 0)
        introduced = text.find("shorthands for `rota.DispatchPolicy.Strict`")
        assert 0 <= introduced < first_use, name


def test_coming_from_names_the_rate_limit_too() -> None:
    row = next(line for line in _text("docs/coming-from.md").splitlines()
               if line.startswith("| rate / concurrency limits"))
    assert "set_queue_rate" in row


def test_operations_speaks_of_what_a_migration_does_not_its_number() -> None:
    assert "migration 8" not in _text("docs/operations.md")


def test_the_readme_builds_the_docs_without_running_the_whole_test_suite_first() -> None:
    text = _text("README.md")
    assert "mkdocs serve` after `python3 dev.py test`" not in text
    assert "mkdocs serve" in text
