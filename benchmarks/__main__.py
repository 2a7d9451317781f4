"""`python3 -m benchmarks ...`: bootstrap benchmarks/.venv, then run the harness inside it."""

from __future__ import annotations

import sys

from benchmarks.venv import ensure_inside_venv

if __name__ == "__main__":
    ensure_inside_venv(sys.argv[1:])
    from benchmarks.cli import main

    sys.exit(main(sys.argv[1:]))
