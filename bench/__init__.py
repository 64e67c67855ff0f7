"""Benchmarks of the trainer plugins against ML-Agents' built-in sac/ppo (``python -m bench.run``; see README.md).

Never part of the default test run: ``pytest.ini`` collects ``tests/`` only.
"""
