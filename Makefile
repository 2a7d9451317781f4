# Benchmarks: rota against procrastinate and pgqueuer (see docs/benchmarks.md).
.PHONY: bench bench-quick

bench:
	python3 -m benchmarks run --suite all

bench-quick:
	python3 -m benchmarks run --suite all --quick
