"""The benchmark virtualenv: benchmarks/.venv holds rota (editable, with [postgres] and
[dashboard]) and the peers from benchmarks/requirements.txt, so rota's own dependencies
stay few.

Standard library only: this module runs under whatever `python3` started the harness.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
VENV = BENCH_DIR / ".venv"
PYTHON = VENV / "bin" / "python"
STAMP = VENV / ".bench-installed"
REQUIREMENTS = BENCH_DIR / "requirements.txt"


def _wanted_stamp() -> str:
    digest = hashlib.sha256()
    for path in (REQUIREMENTS, ROOT / "pyproject.toml"):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _inside_venv() -> bool:
    return Path(sys.prefix).resolve() == VENV.resolve()


def ensure_venv() -> None:
    """Create benchmarks/.venv and install what it needs, unless it is up to date."""
    wanted = _wanted_stamp()
    if STAMP.exists() and STAMP.read_text() == wanted:
        return
    if not PYTHON.exists():
        print("benchmarks: creating benchmarks/.venv (first run only)", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    print("benchmarks: installing rota[postgres,dashboard] and the peers into "
          "benchmarks/.venv", flush=True)
    rc = subprocess.call(
        [str(PYTHON), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "-e", f"{ROOT}[postgres,dashboard]", "-r", str(REQUIREMENTS)],
        cwd=ROOT,
    )
    if rc != 0:
        sys.exit(f"benchmarks: pip install failed (exit {rc})")
    STAMP.write_text(wanted)


def ensure_inside_venv(argv: list[str]) -> None:
    """Re-execute `python -m benchmarks argv` inside benchmarks/.venv if not there yet."""
    if sys.version_info < (3, 11):  # noqa: UP036 - may be started by an older python3
        sys.exit(f"the benchmarks need Python 3.11 or newer; this is {sys.version.split()[0]}")
    ensure_venv()
    if _inside_venv():
        return
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    os.chdir(ROOT)
    os.execve(str(PYTHON), [str(PYTHON), "-m", "benchmarks", *argv], env)
