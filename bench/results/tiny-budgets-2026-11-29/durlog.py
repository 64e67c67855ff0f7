"""pytest plugin for the default-run timing of this study: each test phase over 0.05 s is appended to $DURLOG as it
ends (nodeid, phase, seconds, outcome), so a run cut off by its time limit keeps what it measured.  Use:
``DURLOG=durations.jsonl PYTHONPATH=$PWD:bench/results/tiny-budgets-2026-11-29 python -m pytest -p durlog ...``."""
import json
import os


def pytest_runtest_logreport(report):
    path = os.environ.get("DURLOG")
    if path and report.duration > 0.05:
        with open(path, "a") as f:
            f.write(json.dumps({"id": report.nodeid, "when": report.when, "s": round(report.duration, 2),
                                "outcome": report.outcome}) + "\n")
