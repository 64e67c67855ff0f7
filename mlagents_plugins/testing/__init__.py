"""Helpers shared by the test-suites and benchmarks (importable, so trainers' tests reuse one copy)."""
