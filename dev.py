#!/usr/bin/env python3
"""Developer entry point: the README's two commands, with nothing but python3 installed.

    python3 dev.py demo    # the main job: `rota demo` on an embedded SQLite file
    python3 dev.py test    # the whole suite: ruff, mypy, import contracts, the docs site, pytest
    python3 dev.py rota ARGS...   # any `rota` command inside the project's virtualenv

The first run creates `.venv/` beside this file and installs the package in editable mode
with its development extras; later runs reuse it (reinstalling when pyproject.toml changed).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
STAMP = VENV / ".rota-installed"


def _run(*cmd: str | Path) -> int:
    # NO_MKDOCS_2_WARNING: mkdocs-material prints a banner about its successor otherwise.
    return subprocess.call([str(c) for c in cmd], cwd=ROOT,
                           env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def ensure_venv() -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 - dev.py may be run by an older python3
        sys.exit(f"rota needs Python 3.11 or newer; this is {sys.version.split()[0]}")
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == wanted:
        return
    if not (BIN / "python").exists():
        print("dev.py: creating .venv/ (first run only)", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    print("dev.py: installing rota and its development tools into .venv/", flush=True)
    rc = _run(BIN / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
              "-e", ".[dev]")
    if rc != 0:
        sys.exit(f"dev.py: pip install failed (exit {rc})")
    STAMP.write_text(wanted)


def _existing(*names: str) -> list[str]:
    return [name for name in names if (ROOT / name).is_dir()]


def _pytest_passes(extra: list[str]) -> list[tuple[str, list[str | Path]]]:
    pytest: list[str | Path] = [BIN / "python", "-m", "pytest"]
    if extra:
        return [("pytest", [*pytest, *extra])]
    # The whole suite: all but the chaos scenarios in two processes (most of its time is
    # spent waiting on PostgreSQL, worker processes and the browser), a file's tests in one;
    # then the chaos scenarios alone, whose real-time deadlines must not share the machine
    # with other tests (docs/decisions/0078).
    return [("pytest", [*pytest, "-n", "2", "--dist", "loadfile", "--ignore", "tests/chaos"]),
            ("pytest tests/chaos", [*pytest, "tests/chaos"])]


def test(extra: list[str]) -> int:
    steps: list[tuple[str, list[str | Path]]] = [
        ("ruff", [BIN / "ruff", "check", *_existing("src", "tests", "benchmarks"), "dev.py"]),
        ("mypy", [BIN / "mypy"]),
        # The import contracts of pyproject.toml ([tool.importlinter]): rota's layers, what
        # the dashboard and contrib may import, no import cycles.
        ("imports", [BIN / "lint-imports"]),
        # The documentation site (mkdocs.yml): --strict turns a broken link between pages
        # or a docstring the API reference cannot read into a failure. Offline. Not
        # --quiet: mkdocs then stops counting warnings, and --strict passes anything.
        *([("docs", [BIN / "mkdocs", "build", "--strict"])]
          if (ROOT / "mkdocs.yml").is_file() else []),
        *_pytest_passes(extra),
    ]
    for name, cmd in steps:
        print(f"dev.py: {name}", flush=True)
        rc = _run(*cmd)
        if rc != 0:
            # pytest exits 5 when it collected no test: that is a failure here too.
            print(f"dev.py: {name} failed (exit {rc})", flush=True)
            return rc or 1
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"test", "demo", "rota"}:
        print(__doc__)
        return 2
    ensure_venv()
    command, rest = argv[0], argv[1:]
    if command == "test":
        return test(rest)
    if command == "demo":
        return _run(BIN / "rota", "demo", *rest)
    return _run(BIN / "rota", *rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
