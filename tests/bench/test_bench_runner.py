"""bench.runner helpers that need no training: console parsing, timer trees, replay memory, CLI checks."""
import json

import numpy as np
import pytest

from bench_fixtures import rec  # noqa: F401  (also puts the repo root on sys.path)
from bench import runner
from bench.learn import parse_args, progress_line

CONSOLE = """\
[INFO] Connected new brain: Balance?team=0
[INFO] Balance. Step: 1000. Time Elapsed: 12.345 s. Mean Reward: -0.401. Std of Reward: 0.5. Training.
[INFO] Other. Step: 1000. Time Elapsed: 12.400 s. Mean Reward: 9.000. Std of Reward: 0.1. Training.
[INFO] Balance. Step: 2000. Time Elapsed: 20.000 s. No episode was completed since last summary. Training.
[INFO] Balance. Step: 3000. Time Elapsed: 31.5 s. Mean Reward: 4.250. Std of Reward: 0.2. Training.
"""


def test_parse_console_keeps_one_behavior_and_signs():
    assert runner.parse_console(CONSOLE, "Balance") == [[1000, 12.345, -0.401], [3000, 31.5, 4.25]]
    assert runner.parse_console(CONSOLE, "Other") == [[1000, 12.4, 9.0]]


def test_timer_tree_sums_outermost_named_nodes():
    tree = {"total": 100.0, "children": {
        "a": {"total": 50.0, "children": {"_update_policy": {"total": 7.0, "children": {
            "_update_policy": {"total": 6.5}}}}},
        "b": {"total": 20.0, "children": {"c": {"total": 5.0, "children": {"_update_policy": {"total": 2.5}}}}},
    }}
    assert runner._sum_named_dict(tree, "_update_policy") == pytest.approx(9.5)
    assert runner._sum_named_dict(tree, "missing") == 0.0


def test_replay_bytes_of_ours_and_of_on_policy():
    class Replay:
        nbytes = 123456

    class Ours:
        replay = Replay()

    assert runner.replay_bytes(Ours()) == 123456
    assert runner.replay_bytes(object()) is None


def test_py_bytes_counts_view_data():
    base = np.zeros(1000, dtype=np.float64)
    owned, view = runner._py_bytes([base]), runner._py_bytes([base[:500]])
    assert owned >= 8000 and view >= 4000 and view < owned


def test_cli_rejects_bad_numbers(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--jobs", "0"])
    assert "--jobs=0 is invalid" in capsys.readouterr().err


def test_progress_line_reports_threshold_and_eta():
    line = progress_line(rec("fast_sac", 1, [[100, 1.0, 0.2], [200, 2.0, 1.5]], final=1.5, wall=20.0), 2, 4, 60.0)
    assert "fast_sac" in line and "seed 1" in line and "reached at 200" in line and "ETA ~1:00" in line
    failed = progress_line(rec("sac", 0, [], error="RuntimeError: x"), 1, 4, 10.0)
    assert "FAILED RuntimeError: x" in failed


def _write_out(tmp_path, invocation_of_runs):
    import json

    from bench.learn import append_run

    env = {"invocation": "inv-A", "date": "2026-11-21 22:00 UTC", "machine": "2 cores"}
    (tmp_path / "invocation.json").write_text(json.dumps({"environment": env, "speed": [], "skipped": []}))
    for r in (rec("fast_sac", 0, [[100, 1.0, 0.5], [200, 2.0, 1.5]], invocation=invocation_of_runs, final=1.0),
              rec("sac", 0, [[100, 3.0, 0.1], [200, 6.0, 0.2]], invocation=invocation_of_runs, final=0.2)):
        append_run(str(tmp_path), r)


def test_write_report_renders_the_one_invocation_on_disk(tmp_path):
    from bench.learn import write_report

    _write_out(tmp_path, "inv-A")
    text = open(write_report(str(tmp_path))).read()
    assert "`inv-A`" in text and "| balance | **fast_sac** | sac |" in text
    assert (tmp_path / "balance.png").stat().st_size > 5000


def test_write_report_refuses_runs_of_another_invocation(tmp_path):
    from bench.learn import write_report

    _write_out(tmp_path, "inv-OLD")
    with pytest.raises(ValueError, match="another invocation"):
        write_report(str(tmp_path))


def test_runs_file_keeps_every_finished_run_and_reports_a_cut_line(tmp_path, capsys):
    from bench.learn import append_run, read_runs

    first = rec("fast_sac", 0, [[100, 1.0, 0.5]], invocation="inv-A", final=0.5)
    second = rec("sac", 1, [[100, 3.0, 0.1]], invocation="inv-A", final=0.1)
    append_run(str(tmp_path), first)
    append_run(str(tmp_path), second)
    assert [(r["trainer"], r["seed"]) for r in read_runs(str(tmp_path))] == [("fast_sac", 0), ("sac", 1)]
    with open(tmp_path / "runs.jsonl", "a") as f:
        f.write('{"trainer": "ppo", "cur')  # a bench killed while writing its third record
    assert [r["trainer"] for r in read_runs(str(tmp_path))] == ["fast_sac", "sac"]
    assert "line 3 is not a whole JSON record" in capsys.readouterr().err
    with open(tmp_path / "runs.jsonl", "a") as f:
        f.write("\n" + json.dumps(second) + "\n")  # the cut line is now in the middle: the file is damaged
    with pytest.raises(ValueError, match="runs.jsonl line 3 is not a JSON run record"):
        read_runs(str(tmp_path))
