"""`python -m rota.cli ...`: the `rota` command."""

from __future__ import annotations

import sys

from rota.cli import main

sys.exit(main())
