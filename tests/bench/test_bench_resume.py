"""Resumable bench invocations (issue 44): bench.resume, bench.cost, the pinning to a commit, the report's refusals,
and one tiny real invocation killed mid-run and continued on its starting commit."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from bench_fixtures import REPO, rec
from bench import cost, resume
from bench.metrics import same_commit_and_machine

FIELDS = ("mode", "trainer", "scene", "seed")


def _key(r):
    return (r["mode"], r["trainer"], r["scene"], r["seed"])


# ---------------------------------------------------------------------------------------------- bench.resume
def test_progress_counts_complete_records_and_reruns_cut_off_runs(tmp_path):
    out = str(tmp_path)
    a, b, c = rec("sac", 0, []), rec("sac", 1, []), rec("ppo", 0, [])
    planned = [_key(a), _key(b), _key(c)]
    resume.append_record(out, a)
    resume.mark_started(out, _key(a))
    resume.mark_started(out, _key(b))
    with open(os.path.join(out, resume.RUNS_FILE), "a") as f:  # b was being written when the bench was killed
        f.write(json.dumps(b)[:40])
    p = resume.progress(out, planned, FIELDS)
    assert p.done == [_key(a)] and p.todo == [_key(b), _key(c)] and p.cut_off == [_key(b)]
    assert p.torn_tail == json.dumps(b)[:40]
    assert resume.repair_tail(out) == json.dumps(b)[:40]
    assert open(os.path.join(out, resume.CUT_FILE)).read() == json.dumps(b)[:40] + "\n"
    resume.append_record(out, b)  # the re-run lands on a line of its own
    p = resume.progress(out, planned, FIELDS)
    assert p.done == [_key(a), _key(b)] and p.todo == [_key(c)] and p.cut_off == [] and p.torn_tail is None


def test_a_whole_record_without_its_newline_is_kept(tmp_path):
    out = str(tmp_path)
    a = rec("sac", 0, [])
    with open(os.path.join(out, resume.RUNS_FILE), "w") as f:
        f.write(json.dumps(a))
    assert resume.repair_tail(out) is None
    resume.append_record(out, rec("sac", 1, []))
    records, torn = resume.read_records(out)
    assert [r["seed"] for r in records] == [0, 1] and torn is None


def test_a_run_recorded_twice_or_planned_twice_is_refused(tmp_path):
    out = str(tmp_path)
    a = rec("sac", 0, [])
    resume.append_record(out, a)
    resume.append_record(out, a)
    with pytest.raises(ValueError, match="more than once"):
        resume.progress(out, [_key(a)], FIELDS)
    with pytest.raises(ValueError, match="twice"):
        resume.progress(str(tmp_path / "empty"), [_key(a), _key(a)], FIELDS)


def test_records_outside_the_plan_are_reported_and_a_missing_key_field_named(tmp_path):
    out = str(tmp_path)
    resume.append_record(out, rec("sac", 5, []))
    p = resume.progress(out, [("in_process", "sac", "balance", 0)], FIELDS)
    assert p.unplanned == [("in_process", "sac", "balance", 5)] and p.todo == [("in_process", "sac", "balance", 0)]
    with pytest.raises(KeyError, match="task"):
        resume.key_of({"trainer": "sac", "seed": 0}, ("trainer", "task", "seed"))


def test_lock_refuses_a_second_writer(tmp_path):
    with resume.Lock(str(tmp_path)):
        with pytest.raises(resume.Busy, match="in use"):
            with resume.Lock(str(tmp_path)):
                pass
    with resume.Lock(str(tmp_path)):  # released at the end of the block
        pass


# ---------------------------------------------------------------------------------------------- bench.cost
def _past(trainer, steps, seconds, source, kind="2 cores, AMD EPYC", run=None, cpu=None, scene="balance"):
    return cost.Past(kind, "in_process", trainer, scene, steps, run, seconds, cpu, source)


def test_estimate_is_the_fastest_folders_median_and_scales_other_steps():
    history = [_past("sac", 1000, 10.0, "a"), _past("sac", 1000, 30.0, "a"), _past("sac", 1000, 14.0, "a"),
               _past("sac", 1000, 40.0, "b"), _past("sac", 1000, 50.0, "b"),
               _past("sac", 1000, 1.0, "c", kind="16 cores, Xeon"), _past("sac", 4000, 100.0, "d")]
    e = cost.estimate_run("in_process", "sac", "balance", 1000, history, "2 cores, AMD EPYC")
    assert e.seconds == 14.0  # folder a's median (10, 14, 30); b's is 45; the other machine kind is left out
    assert e.basis.startswith("5 record(s) in 2 folder(s)")
    # 2000 steps: per-step medians per folder a 0.014, b 0.045, d 0.025 -> 0.014 x 2000
    e = cost.estimate_run("in_process", "sac", "balance", 2000, history, "2 cores, AMD EPYC")
    assert e.seconds == pytest.approx(28.0) and "scaled" in e.basis
    e = cost.estimate_run("in_process", "ppo", "balance", 1000, history, "2 cores, AMD EPYC")
    assert e.seconds is None and e.basis == "no record"


def test_training_only_records_get_the_measured_start_up():
    history = [_past("sac", 1000, 20.0, "old"), _past("ppo", 1000, 5.0, "new", run=11.0, cpu=9.0),
               _past("ppo", 1000, 6.0, "new", run=14.0, cpu=12.0), _past("ppo", 1000, 7.0, "new", run=13.0)]
    assert cost.startup_seconds(history, "2 cores, AMD EPYC") == 6.0  # gaps 6, 8, 6
    e = cost.estimate_run("in_process", "sac", "balance", 1000, history, "2 cores, AMD EPYC")
    assert e.seconds == 26.0 and "training-only + 6 s start-up" in e.basis
    e = cost.estimate_run("in_process", "ppo", "balance", 1000, history, "2 cores, AMD EPYC")
    assert e.seconds == 13.0 and e.cpu_seconds == 10.5


def test_makespan_takes_runs_in_order_on_the_first_free_worker():
    assert cost.makespan([5.0, 3.0, 4.0, 1.0], 2) == 7.0  # w1: 5, w2: 3+4=7, then 1 -> w1 at 6
    assert cost.makespan([5.0, 3.0, 4.0, 1.0], 1) == 13.0
    assert cost.makespan([5.0, 3.0], 8) == 5.0
    assert cost.makespan([], 2) == 0.0


def test_plan_cost_and_lines_say_what_has_no_record():
    history = [_past("sac", 1000, 60.0, "a"), _past("sac", 1000, 120.0, "a")]
    keys = [("in_process", "sac", "balance", 1000)] * 3 + [("in_process", "ppo", "balance", 1000)]
    c = cost.plan_cost(keys, 2, history, "2 cores, AMD EPYC")
    assert (c.runs, c.estimated) == (4, 3)
    assert c.run_minutes == pytest.approx(4.5) and c.wall_minutes == pytest.approx(3.0)
    lines = cost.plan_lines(c, [(("in_process", "sac", "balance", 1000), [0, 1, 2]),
                                (("in_process", "ppo", "balance", 1000), [0])], done=2)
    text = "\n".join(lines)
    assert "4 run(s) to make (2 already recorded), 2 at a time" in lines[0]
    assert "~1.5 min each" in text and "no estimate (no record)" in text
    assert "4.5 run-minutes, 3.0 wall-minutes at --jobs 2" in text and "1 run(s) have no record" in text
    none = cost.plan_cost(keys, 2, [], "2 cores, AMD EPYC")
    assert "estimate: none" in "\n".join(cost.plan_lines(none, []))


def test_history_reads_machine_kind_from_invocation_or_report(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for d in (a, b, c):
        d.mkdir()
    (a / "invocation.json").write_text(json.dumps({"environment": {
        "machine": "2 cores, Intel(R) Xeon(R) Processor, Linux 6.1; load average at start 2.0"}}))
    (b / "REPORT.md").write_text("# x\n\n- **Machine:** 16 cores, AMD EPYC 9654, Linux 6.2; load average at start 0.1\n")
    for d in (a, b, c):
        with open(d / "runs.jsonl", "w") as f:
            f.write(json.dumps(rec("sac", 0, [], wall=12.0)) + "\n")
            f.write(json.dumps(rec("ppo", 0, [], wall=3.0, error="RuntimeError: x")) + "\n")
            f.write("{cut")
    history = cost.load_history([str(a), str(b), str(c)])
    assert sorted(p.machine_kind for p in history) == ["16 cores, AMD EPYC 9654", "2 cores, Intel(R) Xeon(R) Processor"]
    assert all(p.trainer == "sac" and p.train_seconds == 12.0 and p.run_seconds is None for p in history)
    assert cost.kind_of_machine_line("shared 2-core Intel Xeon") is None


# ---------------------------------------------------------------------------------------------- report refusals
def test_report_refuses_records_of_two_commits_and_keeps_seconds_of_one_machine_kind(tmp_path):
    from bench.learn import write_report
    from bench.metrics import ratios, summarize_timed, timing_kind

    epyc, xeon = "2 cores, AMD EPYC", "16 cores, Xeon"
    one = [dict(rec("sac", s, [[1000, 1.0, 2.0]]), commit="aaaa", machine_kind=epyc) for s in (0, 1)]
    same_commit_and_machine(one)
    other_commit = one + [dict(one[0], seed=2, commit="bbbb")]
    with pytest.raises(ValueError, match=r"2 commits: aaaa \(2 runs\), bbbb \(1 runs\)"):
        same_commit_and_machine(other_commit)
    # continued on another kind of machine: steps and returns from every run, seconds from the starting kind's
    runs = [dict(rec("sac", s, [[1000, 4.0, 2.0]], wall=10.0, final=2.0), commit="aaaa", machine_kind=epyc)
            for s in (0, 1)]
    runs += [dict(rec("fast_sac", 0, [[500, 2.0, 2.0]], wall=5.0, final=4.0), commit="aaaa", machine_kind=epyc),
             dict(rec("fast_sac", 1, [[1500, 30.0, 2.0]], wall=100.0, final=6.0), commit="aaaa", machine_kind=xeon)]
    with pytest.raises(ValueError, match="2 machine kinds"):
        same_commit_and_machine(runs)
    assert timing_kind(runs[:2]) is None and timing_kind(runs) == epyc and timing_kind(runs, xeon) == xeon
    assert timing_kind(runs, "a kind without runs") == epyc  # the kind of most runs
    ours = next(s for s in summarize_timed(runs, epyc) if s.trainer == "fast_sac")
    assert (ours.seeds, ours.median_steps_to_threshold, ours.final_mean) == (2, 1000.0, 5.0)  # every run
    assert (ours.median_seconds_to_threshold, ours.steps_per_second) == (2.0, 200.0)  # the EPYC run only
    assert next(s for s in summarize_timed(runs, xeon) if s.trainer == "sac").steps_per_second is None
    (ratio,) = ratios(runs, kind=epyc)
    assert (ratio.speed, ratio.sample_efficiency, ratio.time_to_threshold) == (2.0, 1.0, 2.0)
    (tmp_path / "invocation.json").write_text(json.dumps(
        {"kind": "defaults", "environment": {"invocation": "inv-A", "machine_kind": epyc}, "speed": [],
         "skipped": []}))
    for r in runs:
        resume.append_record(str(tmp_path), r)
    report = open(write_report(str(tmp_path))).read()
    assert (f"- **Machine kinds:** continued on another kind of machine; steps and returns from every run, seconds, "
            f"speeds and their ratios only from the 3 runs on {epyc} (left out of them: {xeon}: 1 runs)") in report
    assert "| balance | **fast_sac** | 2/2 | 1,000 | 2.0 | 5.00 ± 1.41 | 0/2 | 200 |" in report
    assert "## Results table (README-ready)" in report  # the results block takes runs of both kinds
    for r in other_commit:
        resume.append_record(str(tmp_path), r)
    with pytest.raises(ValueError, match="2 commits"):
        write_report(str(tmp_path))


# ---------------------------------------------------------------------------------------------- options
def test_jobs_auto_is_one_per_core_with_one_torch_thread(capsys):
    from bench.learn import parse_args

    args = parse_args(["--jobs", "auto"], "defaults")
    assert args.jobs == len(os.sched_getaffinity(0)) and args.jobs_auto and args.torch_threads == 1
    with pytest.raises(SystemExit):
        parse_args(["--jobs", "auto", "--torch-threads", "2"], "defaults")
    assert "--torch-threads=2 is not allowed" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse_args(["--jobs", "0"], "learn")
    assert "--jobs=0 is invalid; allowed: an integer >= 1 or 'auto'" in capsys.readouterr().err


def test_continue_refuses_options_that_change_the_plan(capsys):
    from bench.learn import SCREEN_OUT, parse_args

    with pytest.raises(SystemExit):
        parse_args(["--continue", "x", "--seeds", "1", "--scenes", "camera36"], "defaults")
    assert "--scenes, --seeds cannot be given with it" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse_args(["--worktree", "x"], "learn")
    assert "--worktree is only used with --continue" in capsys.readouterr().err
    assert parse_args(["--screen"], "defaults").out == SCREEN_OUT


def test_screen_tier_is_one_seed_on_every_validation_scene_with_shorter_budgets():
    from bench import plan
    from mlagents_plugins.envs.scenes import scenes_in

    assert plan.SCREEN.seeds == (0,) and set(plan.SCREEN.scenes) == set(scenes_in("validation"))
    assert set(plan.SCREEN.steps) == set(plan.DEFAULTS.steps)
    assert all(plan.SCREEN.steps[s] <= plan.DEFAULTS.steps[s] for s in plan.SCREEN.scenes)
    assert plan.SCREEN.minimal_configs and plan.SCREEN.learn_scene is None


# ---------------------------------------------------------------------------------------------- a real invocation
def _git(repo, *argv):
    return subprocess.run(["git", "-c", "commit.gpgsign=false", *argv], cwd=repo, check=True, capture_output=True, text=True,
                          env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                                   GIT_COMMITTER_EMAIL="t@t")).stdout.strip()


def _bench(repo, argv, **kw):
    env = dict(os.environ, PYTHONPATH=str(repo), PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-m", "bench", *argv], cwd=repo, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


@pytest.mark.slow  # about 45 s; continuing an invocation is also checked by test_bench_gym's tiny invocation
def test_killed_invocation_continues_on_its_starting_commit_and_records_every_run_once(tmp_path):
    # A repository of its own (a copy of this checkout's code, committed), so the test never depends on whether
    # this checkout has uncommitted changes.
    repo = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "results", "*.pyc")
    for name in ("bench", "mlagents_plugins", "configs"):
        shutil.copytree(os.path.join(REPO, name), repo / name, ignore=ignore)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "start")
    start = _git(repo, "rev-parse", "HEAD")
    out = tmp_path / "inv"
    argv = ["defaults", "--scenes", "balance_distractors", "--trainers", "ppo", "--seeds", "3", "--steps", "300",
            "--jobs", "1", "--out", str(out)]

    first = _bench(repo, argv, start_new_session=True)
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline:  # kill it while its second run is under way
            records, _ = resume.read_records(str(out)) if out.is_dir() else ([], None)
            if len(records) >= 1 and len(resume.started_keys(str(out))) >= 2:
                break
            assert first.poll() is None, first.communicate()
            time.sleep(0.02)
        else:
            pytest.fail("the invocation made no run in time")
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.communicate()
    planned = [tuple(k) for k in json.loads((out / "invocation.json").read_text())["planned"]]
    assert len(planned) == 3
    cut = resume.progress(str(out), planned, FIELDS)
    assert len(cut.done) == 1 and len(cut.cut_off) == 1  # killed mid-run
    with open(out / resume.RUNS_FILE, "a") as f:  # and as if it had been killed while writing a record
        f.write('{"invocation": "x", "trai')

    (repo / "later.txt").write_text("a later commit\n")
    _git(repo, "add", "later.txt")
    _git(repo, "commit", "-qm", "later")
    later = _git(repo, "rev-parse", "HEAD")
    refused = _bench(repo, ["defaults", "--continue", str(out)])
    stdout, stderr = refused.communicate(timeout=120)
    assert refused.returncode == 2, stdout + stderr
    assert start[:12] in stderr and later[:12] in stderr and "--worktree" in stderr
    assert len(resume.read_records(str(out))[0]) == 1

    worktree = tmp_path / "at-start"
    _git(repo, "worktree", "add", "-q", "--detach", str(worktree), start)
    wrong = _bench(repo, ["defaults", "--continue", str(out), "--worktree", str(repo)])
    stdout, stderr = wrong.communicate(timeout=120)
    assert wrong.returncode == 2 and f"starting commit {start[:12]}" in stderr
    done = _bench(repo, ["defaults", "--continue", str(out), "--worktree", str(worktree)])
    stdout, stderr = done.communicate(timeout=300)
    assert done.returncode == 0, stdout[-3000:] + stderr[-3000:]
    assert "started and cut off; it runs again" in stdout and "2 run(s) to make (1 already recorded)" in stdout

    records, torn = resume.read_records(str(out))
    assert torn is None and sorted(_key(r) for r in records) == sorted(planned)  # every planned run exactly once
    assert {r["commit"] for r in records} == {start[:12]}
    assert all(r["error"] is None and r["run_wall_seconds"] >= r["wall_seconds"] > 0 for r in records)
    assert all(r["run_cpu_seconds"] > 0 for r in records)
    inv = json.loads((out / "invocation.json").read_text())
    assert inv["finished"] and len(inv["sessions"]) == 2 and inv["environment"]["commit_full"] == start
    assert (out / resume.CUT_FILE).read_text() == '{"invocation": "x", "trai\n'
    assert (out / "REPORT.md").is_file()


# ---------------------------------------------------------------------------------------------- refusals up front
def test_continue_needs_an_invocation_of_its_kind_started_without_uncommitted_changes(tmp_path, capsys):
    from bench.learn import main_defaults

    assert main_defaults(["--continue", str(tmp_path)]) == 2
    assert "no invocation.json there" in capsys.readouterr().err
    inv = {"kind": "learn", "environment": {"invocation": "X", "commit": "0123456789ab",
                                            "commit_full": "0123456789ab" + "0" * 28}}
    (tmp_path / "invocation.json").write_text(json.dumps(inv))
    assert main_defaults(["--continue", str(tmp_path)]) == 2
    assert "holds a 'learn' invocation, not 'defaults'" in capsys.readouterr().err
    inv.update(kind="defaults")
    inv["environment"]["commit"] = "0123456789ab+changes"
    (tmp_path / "invocation.json").write_text(json.dumps(inv))
    assert main_defaults(["--continue", str(tmp_path)]) == 2
    assert "with uncommitted changes" in capsys.readouterr().err


def test_a_new_invocation_does_not_replace_an_unfinished_one(tmp_path, capsys):
    from bench.learn import main_defaults

    planned = [["in_process", "ppo", "balance_distractors", 0], ["in_process", "ppo", "balance_distractors", 1]]
    (tmp_path / "invocation.json").write_text(json.dumps(
        {"kind": "defaults", "environment": {"invocation": "X"}, "planned": planned, "finished": False}))
    resume.append_record(str(tmp_path), rec("ppo", 0, [], scene="balance_distractors"))
    argv = ["--out", str(tmp_path), "--scenes", "balance_distractors", "--trainers", "ppo", "--seeds", "1"]
    assert main_defaults(argv) == 2
    err = capsys.readouterr().err
    assert "unfinished invocation X (1 of 2 runs recorded)" in err and f"--continue {tmp_path}" in err
    assert len(resume.read_records(str(tmp_path))[0]) == 1  # nothing replaced


def test_a_continuation_on_another_machine_kind_goes_on_with_a_note(tmp_path):
    from bench.invocation import git_state, machine_kind

    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], check=True)
    (repo / "a.txt").write_text("a\n")
    subprocess.run(git + ["add", "a.txt"], check=True)
    subprocess.run(git + ["commit", "-qm", "a"], check=True)
    head = git_state(str(repo))[0]
    env = {"commit_full": head, "commit": head[:12], "machine_kind": machine_kind()}
    assert resume.check_pinned(env, "OUT", str(repo)) is None
    note = resume.check_pinned(dict(env, machine_kind="64 cores, Another CPU"), "OUT", str(repo))
    assert note.startswith("the invocation in OUT started on a '64 cores, Another CPU' machine; this one is")
    assert "seconds and speeds come from the runs on the starting kind" in note
    (repo / "a.txt").write_text("changed\n")
    with pytest.raises(resume.Refused, match="this checkout"):
        resume.check_pinned(env, "OUT", str(repo))
