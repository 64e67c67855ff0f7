"""``python -m bench``: the command list, dispatch, the speed section without training, the defaults command's
README-ready results table and its README update."""
import json
import os
import subprocess
import sys

import pytest

from bench_fixtures import REPO, rec
from bench import __main__ as cli
from bench.report import RESULTS_BEGIN, RESULTS_END, replace_results_block, results_block, results_cell


def test_help_lists_every_command_without_importing_torch():
    code = ("import sys; from bench.__main__ import main; main(['--help']); "
            "print('TORCH' if 'torch' in sys.modules else 'NO-TORCH')")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    for name in ("learn", "defaults", "speed", "profile", "replay", "ray", "holding"):
        assert f"\n  {name} " in out.stdout, name
    assert out.stdout.rstrip().endswith("NO-TORCH")


def test_unknown_command_is_refused_with_the_list(capsys):
    assert cli.main(["bogus"]) == 2
    err = capsys.readouterr().err
    assert "unknown command 'bogus'" in err and "learn, defaults, speed, profile, replay, ray, latent-probe, holding" in err
    assert cli.main([]) == 2


@pytest.mark.parametrize("argv, prog", [(["learn", "--help"], "python -m bench learn"),
                                        (["defaults", "--help"], "python -m bench defaults"),
                                        (["speed", "update", "--help"], "python -m bench speed update"),
                                        (["speed", "--help"], "python -m bench speed [all]"),
                                        (["replay", "--help"], "python -m bench replay"),
                                        (["profile", "--help"], "python -m bench profile"),
                                        (["latent-probe", "--help"], "python -m bench latent-probe")])
def test_every_command_has_its_own_help(argv, prog, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: {prog}")


def test_no_other_module_of_bench_is_a_script():
    """One entry point: only bench/__main__.py runs as a program."""
    found = []
    for root, dirs, files in os.walk(os.path.join(REPO, "bench")):
        dirs[:] = [d for d in dirs if d != "results"]
        for name in files:
            path = os.path.join(root, name)
            if name.endswith(".py") and name != "__main__.py" and "__main__" in open(path).read():
                found.append(os.path.relpath(path, REPO))
    assert found == []


def test_speed_all_runs_no_training(tmp_path, monkeypatch):
    from bench import learn

    called = {}
    monkeypatch.setattr(learn, "run_speed", lambda rows, timeout, quick, log: called.setdefault("speed", [
        {"name": "replay", "command": "python -m bench replay --json", "rc": 0, "seconds": 1.0,
         "json": {"bytes_per_transition": 93.0}}]))
    monkeypatch.setattr(learn, "_work", lambda job: pytest.fail(f"a training run was started: {job}"))
    assert cli.main(["speed", "--quick", "--out", str(tmp_path)]) == 0
    assert "speed" in called
    report = (tmp_path / "REPORT.md").read_text()
    assert "bytes_per_transition" in report and "python -m bench speed --quick" in report
    assert not (tmp_path / "runs.jsonl").exists()
    assert json.loads((tmp_path / "invocation.json").read_text())["kind"] == "speed"


# ---------------------------------------------------------------------------------------------- README table
def _defaults_runs():
    hit = [[1000, 1.0, 0.2], [2000, 2.0, 1.5], [3000, 3.0, 1.6]]
    late = [[1000, 1.0, 0.1], [2000, 2.0, 0.5], [3000, 3.0, 1.2]]
    never = [[1000, 1.0, 0.1], [2000, 2.0, 0.2], [3000, 3.0, 0.3]]
    return [rec("fast_sac", 0, hit, final=1.0), rec("fast_sac", 1, late, final=3.0),
            rec("fast_sac", 2, never, final=2.0),
            rec("sac", 0, never, final=0.3), rec("sac", 1, [], error="RuntimeError: x"),
            rec("sac", 0, hit, scene="reach", final=-0.5), rec("fast_sac", 0, never, scene="reach", final=0.25)]


def test_results_cell_is_median_steps_seeds_reaching_and_median_final():
    runs = _defaults_runs()
    fast = [r for r in runs if r["trainer"] == "fast_sac" and r["scene"] == "balance"]
    # thresholds 1.0: seed 0 at 2000, seed 1 at 3000 -> median 2500; finals 1, 3, 2 -> median 2
    assert results_cell(fast) == "2/3 2.5k; 2.00"
    sac = [r for r in runs if r["trainer"] == "sac" and r["scene"] == "balance"]
    assert results_cell(sac) == "0/2 (1 failed); 0.30"
    # a run that learned (best rolling mean 1.43) and ended below 0.8 of it is counted as fallen; steps < 1000 raw
    fell = rec("fast_sac", 3, [[500, 1.0, 1.2], [1000, 2.0, 1.5], [1500, 3.0, 1.6], [2000, 4.0, 0.2]], final=0.5)
    big = rec("fast_sac", 4, [[750, 1.0, 150.0], [1500, 2.0, 160.0], [2250, 3.0, 170.0]], final=223.456)
    assert results_cell([fell, big]) == "2/2 625; 112.0; 1 fell"


def test_results_block_has_markers_one_row_per_scene_ours_first():
    block = results_block(_defaults_runs(), {"date": "2026-12-01 10:00 UTC", "commit": "abc123"},
                          report_link="bench/results/defaults/REPORT.md")
    lines = block.splitlines()
    assert lines[0] == RESULTS_BEGIN and lines[-1] == RESULTS_END
    assert "`inv-A`" in block and "abc123" in block and "(bench/results/defaults/REPORT.md)" in block
    assert "| scene (threshold) | fast_sac | built-in sac |" in block
    assert "| `balance` (1) | 2/3 2.5k; 2.00 | 0/2 (1 failed); 0.30 |" in block
    assert "| `reach` (1) | 0/1; 0.25 | 1/1 2k; -0.50; 1 fell |" in block


def test_replace_results_block_keeps_the_rest_and_refuses_missing_markers():
    text = f"# Title\n\nbefore\n{RESULTS_BEGIN}\nold table\n{RESULTS_END}\nafter\n"
    new = replace_results_block(text, f"{RESULTS_BEGIN}\nnew\n{RESULTS_END}", "README.md")
    assert new == f"# Title\n\nbefore\n{RESULTS_BEGIN}\nnew\n{RESULTS_END}\nafter\n"
    with pytest.raises(ValueError, match="README.md must hold exactly one"):
        replace_results_block("no markers", "x", "README.md")
    with pytest.raises(ValueError, match="exactly one"):
        replace_results_block(text + RESULTS_BEGIN, "x", "README.md")
    with pytest.raises(ValueError, match="comes before"):
        replace_results_block(f"{RESULTS_END}\n{RESULTS_BEGIN}", "x", "README.md")


def _defaults_out(tmp_path, kind="defaults", name="out"):
    from bench.learn import append_run

    out = tmp_path / name
    out.mkdir()
    env = {"invocation": "inv-A", "date": "2026-12-01 10:00 UTC", "machine": "2 cores", "commit": "abc123"}
    (out / "invocation.json").write_text(json.dumps({"kind": kind, "environment": env, "speed": [], "skipped": []}))
    for r in _defaults_runs():
        append_run(str(out), r)
    return out


def test_defaults_report_starts_with_the_block_and_updates_the_readme(tmp_path):
    from bench.learn import main_defaults

    out = _defaults_out(tmp_path)
    readme = tmp_path / "README.md"
    readme.write_text(f"# Project\n\n{RESULTS_BEGIN}\nstale\n{RESULTS_END}\n\n## Limits\n")
    assert main_defaults(["--report-only", "--out", str(out), "--update-readme", str(readme)]) == 0
    report = (out / "REPORT.md").read_text()
    assert report.index(RESULTS_BEGIN) < report.index("## In-process runs")
    assert "| `balance` (1) | 2/3 2.5k; 2.00 |" in report
    text = readme.read_text()
    assert "stale" not in text and text.startswith("# Project\n\n") and text.endswith("\n\n## Limits\n")
    assert "[report](out/REPORT.md)" in text and "| `balance` (1) | 2/3 2.5k; 2.00 |" in text


def test_update_readme_refuses_a_learn_invocation_and_a_readme_without_markers(tmp_path, capsys):
    from bench.learn import main_defaults

    out = _defaults_out(tmp_path, kind="learn")
    readme = tmp_path / "README.md"
    readme.write_text(f"{RESULTS_BEGIN}\nkeep\n{RESULTS_END}\n")
    assert main_defaults(["--report-only", "--out", str(out), "--update-readme", str(readme)]) == 2
    assert "takes the table of a defaults invocation" in capsys.readouterr().err
    assert "keep" in readme.read_text()
    out2 = _defaults_out(tmp_path, name="out2")
    bare = tmp_path / "BARE.md"
    bare.write_text("no markers here\n")
    assert main_defaults(["--report-only", "--out", str(out2), "--update-readme", str(bare)]) == 2
    assert "must hold exactly one" in capsys.readouterr().err
    assert bare.read_text() == "no markers here\n"


def test_set_is_kept_for_continue_and_refused_for_the_readme(tmp_path, capsys):
    """A ``--set`` screen keeps its overrides in invocation.json (``--continue`` plans the same runs), refuses
    ``--update-readme`` at once and, for an invocation that ran with it, at ``--report-only`` too."""
    from bench.learn import PLAN_OPTIONS, main_defaults, parse_args

    assert "overrides" in PLAN_OPTIONS
    args = parse_args(["--set", "hyperparameters.update_precision=bf16", "--set", "network_settings.num_layers=3"],
                      "defaults")
    assert args.overrides == [(["hyperparameters", "update_precision"], "bf16"), (["network_settings", "num_layers"], 3)]
    with pytest.raises(SystemExit):
        parse_args(["--set", "hyperparameters.batch_size=256", "--update-readme"], "defaults")
    assert "--update-readme is not allowed" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse_args(["--set", "batch_size"], "defaults")
    assert "KEY.PATH=VALUE" in capsys.readouterr().err
    out = _defaults_out(tmp_path)
    inv = json.loads((out / "invocation.json").read_text())
    inv["plan_options"] = {"overrides": [[["hyperparameters", "batch_size"], 256]]}
    (out / "invocation.json").write_text(json.dumps(inv))
    readme = tmp_path / "README.md"
    readme.write_text(f"{RESULTS_BEGIN}\nkeep\n{RESULTS_END}\n")
    assert main_defaults(["--report-only", "--out", str(out), "--update-readme", str(readme)]) == 2
    assert "ran with --set hyperparameters.batch_size=256" in capsys.readouterr().err
    assert "keep" in readme.read_text()
