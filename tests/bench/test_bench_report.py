"""bench.report / bench.plots on synthetic run records: table cells, same-run ratios, PNG output."""
import pytest

from bench_fixtures import rec  # noqa: F401  (also puts the repo root on sys.path)
from bench.plots import mean_curve, plot_scene
from bench.report import fmt, per_seed_table, render_report, summary_table
from bench.metrics import summarize

ENV = {"date": "2026-11-21 22:00 UTC", "machine": "2 cores, Test CPU", "python": "3.11.7", "torch": "2.13.0",
       "mlagents": "1.1.0", "note": "machine shared with test runs"}


def _runs(invocation="inv-A"):
    return [
        rec("fast_sac", 0, [[100, 1.0, 0.5], [200, 2.0, 1.2]], steps=2000, wall=10.0, final=1.0, update=3.0,
            save=0.25, load=0.125, replay=1_500_000, invocation=invocation),
        rec("fast_sac", 1, [[100, 1.5, 0.1], [200, 3.0, 0.4]], steps=2000, wall=10.0, final=2.0, update=3.0,
            save=0.25, load=0.125, replay=1_500_000, invocation=invocation),
        rec("sac", 0, [[100, 4.0, 0.2], [200, 8.0, 1.0]], steps=1000, wall=20.0, final=0.5, update=10.0,
            invocation=invocation),
    ]


def test_summary_row_cells():
    lines = summary_table(summarize(_runs()))
    assert lines[0].count("|") == lines[1].count("|") == 13
    ours = next(line for line in lines if "**fast_sac**" in line)
    cells = [c.strip() for c in ours.strip("|").split("|")]
    assert cells == ["balance", "**fast_sac**", "1/2", "200", "2.0", "1.50 ± 0.71", "0/2", "200", "1.50", "1.5",
                     "0.25", "0.12"]
    sac = next(line for line in lines if "| sac |" in line)
    assert "| 1/1 | 200 | 8.0 | 0.50 ± 0.00 | 0/1 | 50 | 10.00 | — | — | — |" in sac


def test_report_has_environment_ratios_plots_speed_and_skips():
    speed = [{"name": "sac_speed.py", "threads": 1, "command": "python bench/sac_speed.py", "rc": 0, "seconds": 2.0,
              "json": {"fast_sac_updates_per_s": 321.5, "hidden": "2x256"}},
             {"name": "sac_speed.py", "threads": 2, "command": "python bench/sac_speed.py", "rc": 0, "seconds": 2.0,
              "json": {"fast_sac_updates_per_s": 400.25}},
             {"name": "replay", "threads": None, "command": "python -m bench replay", "rc": 0,
              "seconds": 1.0, "text": "file: 8.6 MB"},
             {"name": "impala_speed.py", "threads": 1, "command": "python bench/impala_speed.py", "rc": None,
              "missing": "bench/impala_speed.py does not exist yet"}]
    text = render_report(_runs(), ENV, {"balance": "balance.png"}, speed, ["taac on branches: discrete"])
    for expected in ("`inv-A`", "2026-11-21 22:00 UTC", "2 cores, Test CPU", "3.11.7", "machine shared",
                     "![balance](balance.png)", "| measure | threads 1 | threads 2 |",
                     "| fast_sac_updates_per_s | 321.5 | 400.25 |", "| hidden | 2x256 | — |", "file: 8.6 MB",
                     "does not exist yet",
                     "taac on branches: discrete"):
        assert expected in text, expected
    ratio = next(line for line in text.splitlines() if line.startswith("| balance | **fast_sac** | sac |"))
    # steps/s 200 vs 50; ours reached on 1 of 2 seeds (half): 200 vs 200 steps, 2.0 vs 8.0 s; final 1.5 - 0.5
    assert [c.strip() for c in ratio.strip("|").split("|")][3:] == ["4.00", "1.00", "4.00", "+1.00"]


def test_per_seed_table_rows():
    runs = _runs() + [rec("fast_sac", 2, [[100, 1.0, 2.0], [200, 2.0, 2.0], [300, 3.0, 2.0], [400, 4.0, 0.5]],
                          steps=400, wall=4.0, final=0.5)]
    lines = per_seed_table(runs, "in_process")
    assert lines[0].count("|") == lines[1].count("|") == 9
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    # ours first, then seeds in order; seed 1 never reached 1.0; seed 2 peaked at 2.0 and ended at 0.5 (< 0.8 x 2.0)
    assert cells == [
        ["balance", "**fast_sac**", "0", "200", "2.0", "—", "1.00", "no"],
        ["balance", "**fast_sac**", "1", "—", "—", "—", "2.00", "no"],
        ["balance", "**fast_sac**", "2", "100", "1.0", "2.00", "0.50", "yes"],
        ["balance", "sac", "0", "200", "8.0", "—", "0.50", "no"],
    ]
    assert any(line.startswith("| balance | **fast_sac** | 2 |") for line in render_report(runs, ENV, {}).splitlines())


def test_report_refuses_mixed_invocations():
    runs = _runs("inv-A")[:2] + _runs("inv-B")[2:]
    with pytest.raises(ValueError, match="one bench invocation"):
        render_report(runs, ENV, {})


def test_fmt_dash_for_missing():
    assert fmt(None) == "—" and fmt(1.005, 1) == "1.0" and fmt(-2.5) == "-2.50"


def test_mean_curve_merges_seeds_by_step():
    merged = mean_curve([[[100, 1.0, 0.0], [200, 3.0, 2.0]], [[100, 2.0, 1.0], [300, 7.0, 5.0]]])
    assert merged == [(100, 1.5, 0.5, 0.0, 1.0), (200, 3.0, 2.0, 2.0, 2.0), (300, 7.0, 5.0, 5.0, 5.0)]


def test_plot_scene_writes_png(tmp_path):
    path = plot_scene("balance", _runs(), str(tmp_path / "balance.png"))
    with open(path, "rb") as f:
        head = f.read(8)
    assert head == b"\x89PNG\r\n\x1a\n" and (tmp_path / "balance.png").stat().st_size > 5000


def test_nested_speed_json_becomes_tables():
    from bench.report import json_lines

    out = "\n".join(json_lines({"scene": "balance", "summary": {"ppo": {"steps_per_s": 10.5, "final": 1.0},
                                                               "impala": {"steps_per_s": 20.25}},
                                "runs": [{"trainer": "ppo", "seed": 0}], "odd": {"deep": {"x": [1]}}}))
    assert "- scene: balance" in out
    assert "| summary | steps_per_s | final |" in out and "| impala | 20.25 | — |" in out
    assert "| # | trainer | seed |" in out and "| 0 | ppo | 0 |" in out
    assert '"deep"' in out  # not a table: kept as JSON
