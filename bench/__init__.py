"""Benchmarks of the trainer plugins against ML-Agents' built-in sac/ppo (``python -m bench <command>``; see README.md).

Never part of the default test run: ``pytest.ini`` collects ``tests/`` only.
"""
