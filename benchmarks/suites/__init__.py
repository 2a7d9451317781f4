"""The suites: drain, enqueue, latency, ceiling, fairness, memory, pickup, queues. Each prints
progress as it goes and returns a SuiteResult; none asserts a timing."""
