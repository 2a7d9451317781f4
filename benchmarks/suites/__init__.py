"""The suites: drain, enqueue, latency, ceiling, fairness, memory, pickup, queues, scale.
Each prints progress as it goes and returns a SuiteResult; none asserts a timing."""
