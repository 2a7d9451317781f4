"""`python3 -m benchmarks ...`: check the arguments (standard library only, so `--help`
needs no virtualenv), bootstrap benchmarks/.venv, then run the command inside it."""

from __future__ import annotations

import sys

from benchmarks.cli import parse
from benchmarks.venv import ensure_inside_venv

if __name__ == "__main__":
    parse(sys.argv[1:])  # exits on --help or an argument error
    ensure_inside_venv(sys.argv[1:])
    from benchmarks.cli import main

    sys.exit(main(sys.argv[1:]))
