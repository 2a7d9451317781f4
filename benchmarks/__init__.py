"""rota's benchmark harness: rota against procrastinate and pgqueuer, same machine, same run,
and rota against itself across source trees.

`python3 -m benchmarks --help` lists the commands (cli.py). Figures are printed and written
to benchmarks/results/ (gitignored); nothing here asserts a timing. The peers are
benchmark-only dependencies, installed into benchmarks/.venv (see requirements.txt).
"""
