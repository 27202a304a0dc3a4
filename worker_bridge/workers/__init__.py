"""Reference workers: `echo` (for tests and benchmarks) and `exec` (any command as a worker)."""
