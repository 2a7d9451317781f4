"""rota's benchmark harness: rota against procrastinate and pgqueuer, same machine, same run.

Run it with `python3 -m benchmarks run --suite all` (or `make bench`). Figures are printed
and written to benchmarks/results/latest.json; nothing here asserts a timing. The peers
are benchmark-only dependencies, installed into benchmarks/.venv (see requirements.txt).
"""
