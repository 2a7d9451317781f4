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
