"""`python -m rota ...`: the `rota` command (as Celery, Dramatiq and RQ allow)."""

from __future__ import annotations

import sys

from rota.cli import main

if __name__ == "__main__":
    sys.exit(main())
