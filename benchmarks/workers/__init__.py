"""Worker processes, one module per library, started by the suites as subprocesses.

Each registers two jobs: `noop` (does nothing) and `probe` (writes pickup latency: now minus
the enqueue timestamp in its payload, to the file named by BENCH_LATENCY_FILE).
"""
