"""One adapter per library measured: how to set it up, enqueue, run a worker, and count."""
