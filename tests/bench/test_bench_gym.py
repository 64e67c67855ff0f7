"""``python -m bench gym``: evaluation returns, the report's per-seed statistics and anchors, ``--continue``'s keys,
option checks, and one tiny invocation (fast_sac through mlagents-learn and SB3's SAC, a few hundred steps)."""
import json
import os

import numpy as np
import pytest
import torch

from bench_fixtures import REPO  # noqa: F401  (puts the repo on sys.path)

gym = pytest.importorskip("gymnasium", reason="the gym extra (requirements/gym.txt) is not installed")

from bench import gym as bench_gym  # noqa: E402


class Ramp(gym.Env):
    """Reward a[0] * t at step t; terminated after 3 steps (returns by hand: a * (1 + 2 + 3))."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.array([self.t], np.float32), float(action[0]) * self.t, self.t >= 3, False, {}


if "BenchRamp-v0" not in gym.registry:
    gym.register(id="BenchRamp-v0", entry_point=Ramp)


def test_evaluate_returns_mean_and_std_of_episode_returns():
    calls = []

    def act(obs):
        calls.append(obs.shape)
        # first episode 0.5 per unit, then 0.25: returns 3.0 and 1.5
        return np.array([0.5 if len(calls) <= 3 else 0.25], np.float32)

    got = bench_gym.evaluate(act, "BenchRamp-v0", episodes=2, seed=1)
    assert calls == [(1, 1)] * 6
    assert got["return_mean"] == pytest.approx(2.25) and got["return_std"] == pytest.approx(0.75)


def _counter_policy(path):
    """An ONNX policy with one memory value m (starting at 0): action m / 10, recurrent_out m + 1."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Add", ["recurrent_in", "one"], ["recurrent_out"]),
         helper.make_node("Mul", ["recurrent_in", "tenth"], ["scaled"]),
         helper.make_node("Reshape", ["scaled", "shape"], ["deterministic_continuous_actions"])],
        "counter",
        [helper.make_tensor_value_info("obs_0", TensorProto.FLOAT, ["batch", 1]),
         helper.make_tensor_value_info("recurrent_in", TensorProto.FLOAT, ["batch", 1, 1])],
        [helper.make_tensor_value_info("deterministic_continuous_actions", TensorProto.FLOAT, ["batch", 1]),
         helper.make_tensor_value_info("recurrent_out", TensorProto.FLOAT, ["batch", 1, 1])],
        [helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]), helper.make_tensor("tenth", TensorProto.FLOAT, [], [0.1]),
         helper.make_tensor("shape", TensorProto.INT64, [2], [-1, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


def test_onnx_actor_carries_memories_within_an_episode_and_resets_them(tmp_path):
    pytest.importorskip("onnxruntime")
    actor = bench_gym.OnnxActor(_counter_policy(tmp_path / "counter.onnx"), "BenchRamp-v0")
    # memory 0, 1, 2 at steps 1, 2, 3 -> actions 0, 0.1, 0.2 -> return 0 * 1 + 0.1 * 2 + 0.2 * 3 = 0.8 per episode
    # (without the reset the second episode would play 0.3, 0.4, 0.5: 2.6)
    got = bench_gym.evaluate(actor, "BenchRamp-v0", episodes=2, seed=0)
    assert got["return_mean"] == pytest.approx(0.8, rel=1e-6) and got["return_std"] == pytest.approx(0.0, abs=1e-6)


def _rec(trainer, seed, evals, steps=10_000, error=None, scene="HalfCheetah-v5", **extra):
    return {"trainer": trainer, "scene": scene, "seed": seed, "max_steps": steps, "steps": steps + 48,
            "eval": [{"step": s, "return_mean": v, "return_std": 0.0} for s, v in evals], "error": error,
            "train_return": extra.get("train", 10.0), "steps_per_cpu_s": extra.get("speed", 50.0),
            "wall_s": 100.0, "cpu_s": 90.0, "eval_every": 5000}


def test_final_eval_is_the_last_checkpoint_unless_the_run_was_cut_short():
    r = _rec("fast_sac", 0, [(5_024, 1.0), (9_960, 7.0), (10_064, 9.0)])
    assert bench_gym.final_eval(r, 10_000, tolerance=256) == 9.0
    assert bench_gym.final_eval(_rec("sac", 0, [(9_900, 3.0)]), 10_000, tolerance=256) == 3.0
    assert bench_gym.final_eval(r, 20_000, tolerance=256) is None
    assert bench_gym.final_eval(_rec("sac", 0, []), 10_000, tolerance=256) is None


def test_summary_rows_are_per_trainer_over_seeds_with_ours_bold():
    records = [_rec("fast_sac", 0, [(10_048, 100.0)], speed=40.0), _rec("fast_sac", 1, [(10_040, 300.0)], speed=60.0),
               _rec("sb3_sac", 0, [(10_000, 250.0)], train=-5.0),
               _rec("sac", 0, [(10_048, 999.0)], error="RuntimeError: boom"),  # errors are left out
               _rec("fast_sac", 2, [(10_048, 5000.0)], scene="Hopper-v5")]
    rows = bench_gym.summary_rows(records, "HalfCheetah-v5", 10_000, tolerance=256)
    assert rows == [["**fast_sac**", "2", "200 ± 100", "10 ± 0", "50.0 ± 10.0", "100 ± 0", "90 ± 0"],
                    ["sb3_sac", "1", "250", "-5", "50.0", "100", "90"]]


def test_a_redone_run_replaces_its_failed_record_in_the_report():
    failed = _rec("taac", 0, [], error="ValueError: x")
    redone = _rec("taac", 0, [(10_048, 5.0)])
    other = _rec("sac", 0, [(10_048, 1.0)])
    shorter = _rec("taac", 0, [(5_000, 2.0)], steps=5_000)
    assert bench_gym.latest_records([failed, other, shorter, redone]) == [redone, other, shorter]


def test_done_keys_skip_only_runs_without_error():
    records = [_rec("fast_sac", 0, []), _rec("sac", 1, [], error="x"), _rec("sb3_sac", 2, [], scene="Hopper-v5")]
    assert bench_gym.done_keys(records) == {("fast_sac", "HalfCheetah-v5", 0), ("sb3_sac", "Hopper-v5", 2)}


@pytest.mark.parametrize("argv, message", [(["--trainers", "fast_sac,ppo"], "trainer ['ppo'] unknown"),
                                           (["--seeds", "0,x"], "comma-separated integers"),
                                           (["--steps", "0"], "--steps")])
def test_bad_options_are_refused_clearly(argv, message, capsys):
    with pytest.raises(SystemExit):
        bench_gym.build_parser().parse_args(argv)
    assert message in capsys.readouterr().err


def test_task_sets_expand_in_place_and_the_validation_set_is_not_tuned_on():
    parse = bench_gym.build_parser().parse_args
    assert parse([]).tasks == ["HalfCheetah-v5", "Hopper-v5"]
    assert parse(["--tasks", "validation"]).tasks == ["Walker2d-v5", "Ant-v5"]
    assert parse(["--tasks", "Ant-v5,tuning,Ant-v5"]).tasks == ["Ant-v5", "HalfCheetah-v5", "Hopper-v5"]
    assert not set(bench_gym.TASKS) & set(bench_gym.VALIDATION_TASKS)
    for task in bench_gym.TASKS + bench_gym.VALIDATION_TASKS:  # every task has its published anchors
        assert {"SAC", "CrossQ", "MR.Q"} <= set(bench_gym.ANCHORS[(task.split("-")[0], 100_000)]), task


def test_validation_configs_are_the_tuning_configs_with_the_task_renamed():
    import yaml

    for trainer in bench_gym.ML_TRAINERS:
        with open(bench_gym.config_path(trainer, "Hopper-v5")) as f:
            (hopper,) = yaml.safe_load(f)["behaviors"].values()
        for task in bench_gym.VALIDATION_TASKS:
            with open(bench_gym.config_path(trainer, task)) as f:
                behaviors = yaml.safe_load(f)["behaviors"]
            assert list(behaviors) == [task.split("-")[0]], (trainer, task)  # the build's behavior name
            assert behaviors[task.split("-")[0]] == hopper, (trainer, task)


def test_every_trainer_has_a_config_for_every_task():
    for trainer in bench_gym.ML_TRAINERS:
        for task in bench_gym.TASKS + bench_gym.VALIDATION_TASKS:
            assert os.path.isfile(bench_gym.config_path(trainer, task)), (trainer, task)


def test_each_config_trains_its_rows_trainer_and_the_crossq_preset_is_fast_sac_with_crossqs_critic():
    import yaml

    for trainer in bench_gym.ML_TRAINERS:
        assert bench_gym.ORIGIN[trainer] in ("ours", "builtin"), trainer
        for task in bench_gym.TASKS + bench_gym.VALIDATION_TASKS:
            with open(bench_gym.config_path(trainer, task)) as f:
                (behavior,) = yaml.safe_load(f)["behaviors"].values()
            expected = "fast_sac" if trainer.startswith("fast_sac") else trainer
            assert behavior["trainer_type"] == expected, (trainer, task)
            hyper = behavior["hyperparameters"]
            # the preset is the 100k study's crossq256: CrossQ's critic, critics as wide as the actor
            assert hyper.get("critic_batch_renorm", False) == (trainer == "fast_sac_crossq"), (trainer, task)
            assert "critic_hidden_units" not in hyper, (trainer, task)
            # the precision presets are fast_sac's config with the update's precision set, nothing else
            precision = {"fast_sac_bf16": "bf16", "fast_sac_fp32": "fp32"}.get(trainer)
            assert hyper.get("update_precision") == precision, (trainer, task)
            if precision:
                with open(bench_gym.config_path("fast_sac", task)) as f:
                    (plain,) = yaml.safe_load(f)["behaviors"].values()
                assert dict(plain, hyperparameters=dict(plain["hyperparameters"], update_precision=precision)) == behavior


@pytest.mark.e2e
def test_tiny_invocation_writes_records_and_report_and_continues(tmp_path, monkeypatch, capsys):
    pytest.importorskip("mujoco", reason="MuJoCo (gymnasium[mujoco]) is not installed")
    trainers = "fast_sac,sb3_sac"
    try:
        import stable_baselines3  # noqa: F401
    except ImportError:
        trainers = "fast_sac"  # the bench-only extra is optional
    monkeypatch.setenv("MLAGENTS_PLUGINS_COMPILE", "0")  # a one-off torch.compile would take most of the run
    out = tmp_path / "out"
    argv = ["--steps", "400", "--seeds", "0", "--trainers", trainers, "--tasks", "HalfCheetah-v5",
            "--eval-every", "200", "--eval-episodes", "1", "--buffer-init-steps", "100", "--out", str(out)]
    assert bench_gym.main(argv) == 0
    records = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert [r["trainer"] for r in records] == trainers.split(",")
    for r in records:
        assert r["error"] is None and r["scene"] == "HalfCheetah-v5" and r["seed"] == 0
        assert r["steps"] >= 400 and r["wall_s"] > 0 and r["cpu_s"] > 0 and r["steps_per_cpu_s"] > 0
        steps = [e["step"] for e in r["eval"]]
        assert steps == sorted(steps) and len(steps) >= 2 and steps[-1] >= 400
        assert all(np.isfinite(e["return_mean"]) for e in r["eval"])
        split = r["cpu_by_process"]
        assert sum(split[role] for role in bench_gym.PROCESS_ROLES) == pytest.approx(r["cpu_s"])
        assert split["trainer"] > 0
    ml = records[0]["cpu_by_process"]  # mlagents-learn: the stand-in build was seen, and an environment worker
    # only where inprocess_env is switched off (at --num-envs 1 the trainer steps the build itself, and the build
    # guard, role "other", is the third process)
    worker_process = os.environ.get("MLAGENTS_PLUGINS_ENV_WORKER") == "1"
    assert (ml["env_worker"] > 0) is worker_process and ml["build"] > 0 and ml["processes"] >= 3
    from bench.invocation import machine_kind

    assert all(r["machine_kind"] == machine_kind() and r["commit"] and r["command"].startswith("python -m bench gym")
               for r in records)
    printed = capsys.readouterr().out
    assert "[bench gym] run 1/" in printed and "started: fast_sac HalfCheetah-v5 seed 0" in printed
    assert f"[1/{len(records)}] fast_sac HalfCheetah-v5 seed 0: " in printed and "ETA" in printed
    assert records[0]["config"]["max_steps"] == 400 and records[0]["config"]["hyperparameters"]["buffer_init_steps"] == 100
    report = (out / "REPORT.md").read_text()
    assert "## HalfCheetah-v5, 400 steps" in report and "| HalfCheetah | 100k | 6156 ± 700 | 8112 ± 896 |" in report
    assert (out / "curves.png").is_file() and "## CPU by process" in report
    assert f"Last invocation's plan: {len(records)} runs (0 already recorded): fast_sac HalfCheetah-v5 seed 0" in report
    # --continue: everything is recorded, nothing runs again
    assert bench_gym.main(argv + ["--continue"]) == 0
    assert len((out / "runs.jsonl").read_text().splitlines()) == len(records)


def test_console_summaries_parse():
    text = ("[INFO] HalfCheetah. Step: 5000. Time Elapsed: 22.987 s. Mean Reward: -385.556. Std of Reward: 43.704. "
            "Training.\n[INFO] HalfCheetah. Step: 10000. Time Elapsed: 110.8 s. No episode was completed since last "
            "summary. Training.\n[INFO] Hopper. Step: 15000. Time Elapsed: 185.632 s. Mean Reward: 8. Std of Reward: "
            "8.3. Training.\n[INFO] HalfCheetah. Step: 20000. Time Elapsed: 200.5 s. Mean Reward: 1.5e+03. Std\n")
    assert bench_gym.parse_console(text, "HalfCheetah") == [[5000, 22.987, -385.556], [20000, 200.5, 1500.0]]
    assert bench_gym.parse_console(text, "Hopper") == [[15000, 185.632, 8.0]]


def test_process_roles_name_the_trainer_its_worker_the_build_and_compile_workers():
    root_cmd = "/venv/bin/python /venv/bin/mlagents-learn config.yaml --env=builds/HalfCheetah"
    assert bench_gym.process_role(10, 10, 1, root_cmd, root_cmd) == "trainer"
    assert bench_gym.process_role(11, 10, 10, root_cmd, root_cmd) == "env_worker"  # a forked worker
    assert bench_gym.process_role(11, 10, 10, "python -c from multiprocessing.spawn import spawn_main", root_cmd) \
        == "env_worker"
    assert bench_gym.process_role(12, 10, 11, "python -m mlagents_plugins.envs.standin --gym-env X", root_cmd) \
        == "build"
    assert bench_gym.process_role(13, 10, 10, "python -m torch._inductor.compile_worker", root_cmd) == "compile"
    probe = 'python -c import sys\nfrom ctypes import cdll\ncdll.LoadLibrary("/tmp/torchinductor_root/73/c73e.so")'
    assert bench_gym.process_role(16, 10, 10, probe, root_cmd) == "compile"
    assert bench_gym.process_role(14, 10, 10, "gcc -O3 x.cpp", root_cmd) == "other"
    assert bench_gym.process_role(15, 10, 11, root_cmd, root_cmd) == "other"  # same program, not the trainer's child


# A root that burns about 0.4 CPU s, then starts a "build" (a child whose command line names the stand-in module)
# that burns about 0.8 CPU s and lingers so a poll sees it, and waits for it.
_BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"
_ROOT = (_BURN.format(s=0.4) + "import subprocess, sys\nsubprocess.run([sys.executable, '-c', {child!r}, "
         "'mlagents_plugins.envs.standin'], check=True)\n")
_CHILD = _BURN.format(s=0.8) + "time.sleep(1.2)\n"


def test_run_child_splits_the_tree_cpu_by_process(tmp_path):
    import sys

    split = {}
    code, wall, cpu = bench_gym.run_child([sys.executable, "-c", _ROOT.format(child=_CHILD)],
                                          str(tmp_path / "log"), dict(os.environ), str(tmp_path), 60, split)
    assert code == 0, (tmp_path / "log").read_text()
    assert split["processes"] == 2
    assert split["build"] >= 0.7 and split["trainer"] >= 0.3  # CPU clocks tick at 10 ms; the polls are 0.5 s apart
    assert split["build"] > split["trainer"]
    assert sum(split[role] for role in bench_gym.PROCESS_ROLES) == pytest.approx(cpu)
    assert split["env_worker"] == split["compile"] == 0.0


def test_process_rows_give_cpu_per_1k_steps_and_share_per_role():
    record = _rec("fast_sac", 0, [(2_000, 1.0)], steps=2_000)
    record.update(steps=2_000, cpu_s=20.0, cpu_by_process={"trainer": 14.0, "env_worker": 3.0, "build": 2.0, "compile": 0.5,
                                              "other": 0.0, "unseen": 0.5, "processes": 4})
    old = _rec("sac", 0, [(2_000, 1.0)], steps=2_000)  # a record from before the split: left out
    lines = bench_gym.process_rows([record, old])
    assert lines[0] == "## CPU by process"
    assert lines[-2] == ("| fast_sac | HalfCheetah-v5 | 0 | 2000 | 10.00 | 7.00 (70%) | 1.50 (15%) | 1.00 (10%) | "
                         "0.25 (2%) | 0.00 (0%) | 0.25 (2%) |")
    assert bench_gym.process_rows([old]) == []


def test_gym_split_config_and_table_per_1k_steps():
    from bench.profiling import COLUMNS, gym_split

    config = gym_split.run_config("fast_sac", "HalfCheetah-v5", 3000, 2500, 500, {"batch_size": 64})
    (behavior, cfg), = config["behaviors"].items()
    assert behavior == "HalfCheetah" and cfg["trainer_type"] == "fast_sac"
    assert (cfg["max_steps"], cfg["summary_freq"], cfg["keep_checkpoints"]) == (3000, 500, 1)
    assert cfg["checkpoint_interval"] > cfg["max_steps"]  # one checkpoint, at the end
    assert cfg["hyperparameters"]["buffer_init_steps"] == 2500 and cfg["hyperparameters"]["batch_size"] == 64
    phases = {c: 0.0 for c in COLUMNS}
    phases.update(env=4.0, host=1.0, inference=0.5, update=10.0, startup=2.5)
    record = {"agents": 1, "note": "x", "steps": 2000, "cpu_s": 20.0, "phases": phases,
              "cpu_by_process": {"trainer": 14.0, "env_worker": 2.0, "build": 2.0, "compile": 1.0, "other": 0.5,
                                 "unseen": 0.5}}
    lines = gym_split.table([record, {"agents": 8, "note": "y", "error": "RuntimeError: boom"}])
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    assert cells[:11] == ["1", "x", "2000", "100.0", "10.00", "7.00", "1.00", "1.00", "0.50", "0.25", "0.25"]
    assert cells[11] == "2.00" and cells[-1] == "2.75"  # env, and env + host + inference + intake + stats
    assert "error: RuntimeError: boom" in lines[3]
# ------------------------------------------------------------------------------------------------ progress
def test_progress_reports_runs_in_flight_from_their_logs_with_an_eta_over_steps(tmp_path):
    import argparse

    from bench import gym_peers

    now = {"t": 0.0}
    prog = bench_gym.Progress(4, 10_000, clock=lambda: now["t"])
    assert prog.begin("fast_sac", "HalfCheetah-v5", 0) == ("[bench gym] run 1/4 started: fast_sac HalfCheetah-v5 "
                                                           "seed 0  | elapsed 0:00, ETA ?")
    prog.begin("sb3_sac", "HalfCheetah-v5", 0)
    args = argparse.Namespace(progress=prog, steps=10_000)
    ml, peer = bench_gym.live_run(args, "fast_sac", "HalfCheetah-v5", 0), bench_gym.live_run(args, "sb3_sac",
                                                                                              "HalfCheetah-v5", 0)
    assert (ml.number, peer.number) == (1, 2)
    assert prog.poll() == []  # no log yet: nothing to say
    ml_log, peer_log = tmp_path / "learn.log", tmp_path / "peer.log"
    ml.watch(str(ml_log))
    peer.watch(str(peer_log))
    ml_log.write_text("[INFO] Connected.\n[INFO] HalfCheetah. Step: 2000. Time Elapsed: 9.1 s. Mean Reward: -385.556. "
                      "Std of Reward: 4.7. Training.\n[INFO] HalfCheetah. Step: 4000. Time Elapsed: 20.0 s. No episode "
                      "was completed since last summary. Training.\n[INFO] HalfCheetah. Step: 600")  # a line in writing
    peer_log.write_text(gym_peers.summary_line(1000, 12.5) + "\n" + gym_peers.summary_line(2000, 20.25, 345.5) + "\n")
    now["t"] = 60.0
    # 4000 + 2000 of 40000 planned steps in 60 s: 340 s left
    assert prog.poll() == [
        "[bench gym] run 1/4 fast_sac HalfCheetah-v5 seed 0: 4,000/10,000 steps, train return -385.6"
        "  | elapsed 1:00, ETA ~5:40",
        "[bench gym] run 2/4 sb3_sac HalfCheetah-v5 seed 0: 2,000/10,000 steps, train return 20.2, last eval 345.5 "
        "at 2,000  | elapsed 1:00, ETA ~5:40"]
    assert prog.poll() == []  # nothing new
    with open(ml_log, "a") as f:
        f.write("0. Time Elapsed: 30.0 s. Mean Reward: 1.5e+03. Std of Reward: 3. Training.\n")
    ml.phase = "trained, evaluating 2 checkpoints"
    (line,) = prog.poll()
    assert line.startswith("[bench gym] run 1/4 fast_sac HalfCheetah-v5 seed 0: 6,000/10,000 steps, train return "
                           "1500.0; trained, evaluating 2 checkpoints")
    now["t"] = 100.0
    done = _rec("fast_sac", 0, [(5_024, 1.0), (10_048, 9.0)])
    done.update(steps=10_048, steps_per_cpu_s=111.64)
    # 10000 (finished) + 2000 of 40000 in 100 s: 233 s left
    assert prog.end(done) == ("[1/4] fast_sac HalfCheetah-v5 seed 0: 10048 steps, eval 9.0 at 10048, 100 s wall, 90 s "
                              "CPU (111.6 env steps / CPU s)  | elapsed 1:40, ETA ~3:53")
    failed = _rec("sb3_sac", 0, [], error="RuntimeError: boom")
    assert prog.end(failed).startswith("[2/4] sb3_sac HalfCheetah-v5 seed 0: FAILED RuntimeError: boom  | elapsed")
    assert prog.live == {}
    # a run made outside an invocation gets a detached LiveRun
    assert bench_gym.live_run(argparse.Namespace(steps=5), "sac", "Hopper-v5", 1).number == 0


def test_ticker_prints_what_poll_returns_until_stopped():
    import io
    import time

    from bench import progress

    out, calls = io.StringIO(), []

    def poll():
        calls.append(1)
        return [f"line {len(calls)}"] if len(calls) <= 2 else []

    with progress.Ticker(poll, 0.01, out=out):
        deadline = time.monotonic() + 10
        while len(calls) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    n = len(calls)
    time.sleep(0.05)
    assert len(calls) == n and out.getvalue() == "line 1\nline 2\n"
    assert progress.timing(90.0, 3, 4) == "  | elapsed 1:30, ETA ~0:30" and progress.eta_seconds(5.0, 0, 4) is None


# ------------------------------------------------------------------------------------------------ README table, kinds
EPYC, XEON = "2 cores, AMD EPYC 7B13", "2 cores, Intel(R) Xeon(R) Processor @ 2.50GHz"


def _stamped(trainer, seed, final, speed, kind=EPYC, scene="HalfCheetah-v5", steps=100_000, error=None,
             invocation="inv-A", commit="abc123def456"):
    r = _rec(trainer, seed, [(steps // 2, final / 2), (steps + 48, final)] if error is None else [], steps=steps,
             scene=scene, speed=speed, error=error)
    r.update(machine_kind=kind, commit=commit, invocation=invocation, eval_episodes=10,
             command=f"python -m bench gym --steps {steps}", origin=bench_gym.ORIGIN[trainer])
    return r


def _field_records():
    return [
        _stamped("fast_sac", 0, 4000.0, 60.0), _stamped("fast_sac", 1, 5000.0, 62.0),
        # continued on another kind of machine: its return counts, its speed does not
        _stamped("fast_sac", 2, 4500.0, 30.0, kind=XEON, invocation="inv-B"),
        _stamped("sb3_sac", 0, 5800.0, 40.0), _stamped("sb3_sac", 1, 0.0, 0.0, error="RuntimeError: x"),
        _stamped("sb3_crossq", 0, 100.0, 20.0, steps=10_000),  # a short run for its cost only
        _stamped("fast_sac", 0, 800.0, 58.0, scene="Hopper-v5"),
    ]


def test_readme_block_has_medians_ranges_one_kinds_speeds_and_the_published_columns():
    block = bench_gym.readme_block(_field_records(), 100_000, report_link="bench/results/gym/REPORT.md")
    lines = block.splitlines()
    assert lines[0] == bench_gym.GYM_BEGIN and lines[-1] == bench_gym.GYM_END
    assert ("From `python -m bench gym`: 7 runs in 2 invocations continued into one records folder, code `abc123d` "
            "(7 runs); each run's command in [report](bench/results/gym/REPORT.md).") in block
    assert "at 100k env steps (10 episodes)" in block
    assert f"on {EPYC} (1 run on other machine kinds count in the returns only)" in block
    assert "dojeon-ai/SimbaV2" in block and "facebookresearch/MRQ" in block
    table = lines[lines.index(next(x for x in lines if x.startswith("| task |"))):-1]
    assert table[0] == ("| task | trainer | seeds | return at 100k | env steps / CPU s | SAC (published) "
                        "| CrossQ (published) | MR.Q (published) |")
    assert table[2:] == [
        "| HalfCheetah-v5 | **fast_sac** | 3 | 4500 (4000 – 5000) | 61.0 | 6156 ± 700 | 8112 ± 896 | 7872 |",
        "| HalfCheetah-v5 | sb3_sac | 1 of 2 | 5800 | 40.0 |  |  |  |",
        "| HalfCheetah-v5 | sb3_crossq | 1 | — (ran 10k steps: speed only) | 20.0 |  |  |  |",
        "| Hopper-v5 | **fast_sac** | 1 | 800 | 58.0 | 1103 ± 368 | 2764 ± 781 | 2249 |",
    ]
    # the other kind on request: only its records give speeds
    other = bench_gym.readme_block(_field_records(), 100_000, wanted_kind="xeon")
    assert "| HalfCheetah-v5 | **fast_sac** | 3 | 4500 (4000 – 5000) | 30.0 |" in other
    assert "| HalfCheetah-v5 | sb3_sac | 1 of 2 | 5800 | — |" in other
    with pytest.raises(ValueError, match="matches 2 of the records' machine kinds"):
        bench_gym.readme_block(_field_records(), 100_000, wanted_kind="2 cores")
    with pytest.raises(ValueError, match=r"no finished run at 300000 env steps .*\[10000, 100000\]"):
        bench_gym.readme_block(_field_records(), 300_000)


def _write_records(out, records):
    out.mkdir(parents=True, exist_ok=True)
    (out / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_report_only_update_readme_writes_the_block_between_its_markers(tmp_path, capsys):
    out = tmp_path / "bench" / "results" / "gym"
    _write_records(out, _field_records())
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\nbefore\n\n{bench_gym.GYM_BEGIN}\nold table\n{bench_gym.GYM_END}\n\nafter\n")
    assert bench_gym.main(["--report-only", "--update-readme", str(readme), "--out", str(out)]) == 0
    text = readme.read_text()
    assert text.startswith("# Title\n\nbefore\n\n<!-- gym:begin -->\nFrom `python -m bench gym`: ")
    assert "each run's command in [report](bench/results/gym/REPORT.md)." in text
    assert text.endswith("<!-- gym:end -->\n\nafter\n") and "old table" not in text
    assert "| Hopper-v5 | **fast_sac** | 1 | 800 | 58.0 |" in text
    # the same records give the same file
    assert bench_gym.main(["--report-only", "--update-readme", str(readme), "--out", str(out)]) == 0
    assert readme.read_text() == text
    # a README without the markers, or records without a run at --steps: an error, the file as it was
    bare = tmp_path / "BARE.md"
    bare.write_text("no markers\n")
    capsys.readouterr()
    assert bench_gym.main(["--report-only", "--update-readme", str(bare), "--out", str(out)]) == 2
    assert "must hold exactly one <!-- gym:begin -->" in capsys.readouterr().err and bare.read_text() == "no markers\n"
    assert bench_gym.main(["--report-only", "--update-readme", str(readme), "--out", str(out),
                           "--steps", "300000"]) == 2
    assert "no finished run at 300000" in capsys.readouterr().err and readme.read_text() == text
    # a folder without records (a mistyped --out): said so, the README as it was, no folder made
    missing = tmp_path / "bench" / "results" / "gmy"
    assert bench_gym.main(["--report-only", "--update-readme", str(readme), "--out", str(missing)]) == 2
    assert f"no records at {missing / 'runs.jsonl'}" in capsys.readouterr().err
    assert readme.read_text() == text and not missing.exists()


def test_the_repository_readme_has_one_gym_block():
    with open(os.path.join(REPO, "README.md")) as f:
        text = f.read()
    assert text.count(bench_gym.GYM_BEGIN) == 1 and text.count(bench_gym.GYM_END) == 1
    assert text.index(bench_gym.GYM_BEGIN) < text.index(bench_gym.GYM_END)


def test_report_of_records_from_two_machine_kinds_takes_costs_from_one(tmp_path, capsys):
    out = tmp_path / "out"
    _write_records(out, _field_records())
    assert bench_gym.main(["--report-only", "--out", str(out)]) == 0
    report = (out / "REPORT.md").read_text()
    assert (f"Records from 2 machine kinds: returns from all of them; the cost columns (env steps / CPU s, wall s, "
            f"CPU s) only from the 5 runs on {EPYC} (left out of them: {XEON}: 1 run).") in report
    # returns over all three seeds (mean ± std), speed over the two EPYC seeds
    assert "| **fast_sac** | 3 | 4500 ± 408 | 10 ± 0 | 61.0 ± 1.0 | 100 ± 0 | 90 ± 0 |" in report
    assert f"seed 2 (100048 steps, 100 s wall, 90 s CPU on {XEON})" in report
    assert bench_gym.main(["--report-only", "--out", str(out), "--speed-kind", "Xeon"]) == 0
    assert "| **fast_sac** | 3 | 4500 ± 408 | 10 ± 0 | 30.0 | 100 | 90 |" in (out / "REPORT.md").read_text()
    capsys.readouterr()
    assert bench_gym.main(["--report-only", "--out", str(out), "--speed-kind", "ARM"]) == 2
    assert "--speed-kind 'ARM' matches 0" in capsys.readouterr().err
    assert bench_gym.main(["--out", str(out), "--speed-kind", "Xeon"]) == 2
    # records of one kind (or older records without the field) say so and keep every cost
    _write_records(out, [r for r in _field_records() if r["machine_kind"] == EPYC])
    assert bench_gym.main(["--report-only", "--out", str(out)]) == 0
    assert f"Machine kind: {EPYC}." in (out / "REPORT.md").read_text()


def test_speed_kind_passes_over_a_kind_marked_not_comparable_unless_it_is_the_only_one():
    shared = XEON + ", shared (load 4-8: CPU seconds not comparable)"
    records = [_stamped("sb3_sac", s, 5000.0, 40.0, kind=shared) for s in (0, 1)] + [_stamped("fast_sac", 0, 4500.0, 60.0)]
    # the shared kind has more records, yet the clean kind gives the seconds
    assert bench_gym.speed_kind(records) == EPYC
    assert bench_gym.speed_kind(records[:2]) == shared
    assert bench_gym.speed_kind(records, "load 4-8") == shared


def test_speed_kind_named_in_full_wins_over_a_longer_kind_containing_it():
    """The clean Xeon kind is part of the shared Xeon kind's name: naming it in full picks it, a part of both is refused."""
    shared = XEON + ", shared (load 4-8: CPU seconds not comparable)"
    records = ([_stamped("sb3_sac", s, 5000.0, 40.0, kind=shared) for s in (0, 1)]
               + [_stamped("fast_sac", s, 4500.0, 60.0, kind=XEON) for s in (0, 1)]
               + [_stamped("fast_sac_crossq", s, 7000.0, 70.0) for s in (0, 1, 2)])
    assert bench_gym.speed_kind(records) == EPYC  # the most records
    assert bench_gym.speed_kind(records, XEON) == XEON
    assert bench_gym.speed_kind(records, XEON.upper()) == XEON
    with pytest.raises(ValueError, match="matches 2"):
        bench_gym.speed_kind(records, "Xeon")


def _timed(trainer, scene, steps, wall, evals, kind=EPYC, command="python -m bench gym", **extra):
    r = {"trainer": trainer, "scene": scene, "seed": 0, "max_steps": steps, "wall_s": wall, "eval_s": evals,
         "cpu_s": wall * 0.9, "eval_cpu_s": evals, "eval_every": 10_000, "machine_kind": kind, "command": command,
         "error": None, "buffer_init_steps": None}
    r.update(extra)
    return r


def test_plan_estimates_each_run_from_earlier_gym_records_of_this_machine_kind(tmp_path, monkeypatch, capsys):
    from bench import cost

    lr = "--set hyperparameters.learning_rate=0.001"
    _write_records(tmp_path / "a", [
        _timed("fast_sac", "HalfCheetah-v5", 100_000, 600.0, 60.0),  # 11 min
        _timed("fast_sac", "HalfCheetah-v5", 100_000, 1200.0, 60.0, command=f"python -m bench gym {lr}"),  # 21
        _timed("sb3_sac", "HalfCheetah-v5", 100_000, 900.0, 0.0, command=f"python -m bench gym {lr}"),  # 15: a peer
        _timed("fast_sac", "Hopper-v5", 20_000, 200.0, 40.0),  # 4 min at 20k: 20 at 100k
        _timed("fast_sac", "HalfCheetah-v5", 100_000, 60.0, 0.0, kind=XEON),  # another machine kind
        _timed("fast_sac", "HalfCheetah-v5", 100_000, 6.0, 0.0, error="RuntimeError: x"),
    ])
    # a bench learn record (no eval_every) in a study's sub-folder is not a gym run
    (tmp_path / "a" / "sub").mkdir()
    (tmp_path / "a" / "sub" / "runs.jsonl").write_text(json.dumps(
        {"trainer": "fast_sac", "scene": "Hopper-v5", "max_steps": 100_000, "wall_s": 1.0, "machine_kind": EPYC}) + "\n")
    monkeypatch.setattr(cost, "gym_history_folders", lambda repo: [str(tmp_path / "a"), str(tmp_path / "a" / "sub")])
    monkeypatch.setattr(bench_gym, "machine_kind", lambda: EPYC)
    out = tmp_path / "out"
    base = ["--plan", "--trainers", "fast_sac,sb3_sac", "--tasks", "HalfCheetah-v5,Hopper-v5", "--seeds", "0,1",
            "--out", str(out)]
    assert bench_gym.main(base) == 0
    text = capsys.readouterr().out
    assert not out.exists()  # a plan runs nothing and writes nothing
    assert f"plan: 8 run(s) to make, 1 at a time, machine kind '{EPYC}'" in text
    assert "HalfCheetah-v5             fast_sac     100000 steps  seeds 0 1      ~11.0 min each (1 record(s)" in text
    assert "HalfCheetah-v5             sb3_sac      100000 steps  seeds 0 1      ~15.0 min each" in text
    assert "Hopper-v5                  fast_sac     100000 steps  seeds 0 1      ~20.0 min each (scaled from 1" in text
    assert "Hopper-v5                  sb3_sac      100000 steps  seeds 0 1      no estimate (no record)" in text
    assert "estimate: 92.0 run-minutes, 92.0 wall-minutes at --jobs 1" in text
    # with the overrides: fast_sac's runs estimated from the records made with them, the peer's as before
    assert bench_gym.main(base + ["--set", "hyperparameters.learning_rate=0.001", "--jobs", "2"]) == 0
    text = capsys.readouterr().out
    assert "HalfCheetah-v5             fast_sac     100000 steps  seeds 0 1      ~21.0 min each" in text
    assert "Hopper-v5                  fast_sac     100000 steps  seeds 0 1      no estimate" in text
    assert "estimate: 72.0 run-minutes, 36.0 wall-minutes at --jobs 2" in text
    # --plan with --report-only: an error, nothing written
    assert bench_gym.main(["--plan", "--report-only", "--out", str(out)]) == 2
    # the invocation's own folder counts: a continuation there is estimated from its earlier runs
    _write_records(out, [_timed("sb3_sac", "Hopper-v5", 100_000, 1500.0, 0.0)])
    assert bench_gym.main(base) == 0
    assert "Hopper-v5                  sb3_sac      100000 steps  seeds 0 1      ~25.0 min each" in capsys.readouterr().out


def test_report_sets_the_last_invocations_estimate_beside_its_runs():
    runs = [_timed("fast_sac", "HalfCheetah-v5", 100_000, 600.0, 60.0, invocation="inv-B"),
            _timed("sb3_sac", "HalfCheetah-v5", 100_000, 900.0, 30.0, invocation="inv-A")]  # an earlier invocation's
    meta = {"invocation": "inv-B", "estimate_kind": EPYC, "estimate": [
        {"run": "fast_sac HalfCheetah-v5 seed 0", "seconds": 540.0, "basis": "1 record(s) in 1 folder(s)"},
        {"run": "sb3_sac HalfCheetah-v5 seed 0", "seconds": None, "basis": "no record"}]}
    rows = bench_gym.estimate_rows(runs, meta)
    assert "| fast_sac HalfCheetah-v5 seed 0 | 9.0 | 11.0 | 1 record(s) in 1 folder(s) |" in rows
    assert "| sb3_sac HalfCheetah-v5 seed 0 | - | - | no record |" in rows  # not this invocation's run
    assert bench_gym.estimate_rows(runs, {}) == []


@pytest.mark.parametrize("fp32_ms, bf16_ms, precision, ratio, onednn_s, aten_s, kernel",
                         [(1.438, 0.691, "bf16", 0.48, 0.004, 0.009, "oneDNN"),
                          (1.436, 2.571, "fp32", 1.79, 0.009, 0.004, "default")])
def test_update_numerics_are_read_from_fast_sac_log_lines(monkeypatch, caplog, fp32_ms, bf16_ms, precision, ratio,
                                                           onednn_s, aten_s, kernel):
    """The lines are the ones auto's probe and the matmul kernel chooser log (mocked timings), so a change of their
    wording fails here."""
    from mlagents_plugins.common import bf16_matmul, fast_kernels

    bf16_matmul._bf16_is_faster.cache_clear()
    monkeypatch.setattr(bf16_matmul, "probe_product_times", lambda: {"fp32": fp32_ms, "bf16": bf16_ms})
    chooser = fast_kernels.MatmulKernelChooser(torch.device("cpu"), enabled=False)  # only its decision's log line
    chooser.seconds = {True: [onednn_s] * 3, False: [aten_s] * 3}
    try:
        with caplog.at_level("INFO", logger=bf16_matmul.__name__), \
                caplog.at_level("INFO", logger=fast_kernels.__name__):
            bf16_matmul.bf16_is_faster()
            chooser._decide()
    finally:
        bf16_matmul._bf16_is_faster.cache_clear()
    text = "[INFO] HalfCheetah. Step: 5000. Time Elapsed: 22.9 s. Mean Reward: 1.0. Std of Reward: 0.5.\n" + caplog.text
    assert bench_gym.parse_update_numerics(text) == {"update_precision": precision, "bf16_probe_ratio": ratio,
                                                     "matmul_kernel": kernel}
    assert bench_gym.parse_update_numerics("[INFO] Hopper. Step: 5000.\n") == {
        "update_precision": None, "bf16_probe_ratio": None, "matmul_kernel": None}


@pytest.mark.parametrize("default_s, onednn_s, kernel", [(2e-4, 3e-4, "default"), (3e-4, 1e-4, None)])
def test_matmul_kernel_when_the_start_up_probe_decides(monkeypatch, caplog, default_s, onednn_s, kernel):
    """Where the start-up probe finds oneDNN no faster, no update is timed and its line says the default kernel;
    where it finds it faster, the record waits for the chooser's line (none here: None)."""
    from mlagents_plugins.common import fast_kernels

    times = iter([default_s, onednn_s])
    monkeypatch.setattr(fast_kernels, "_time_matmul", lambda a, b: next(times))
    monkeypatch.setattr(fast_kernels, "_ONEDNN_MATMUL_OK", None)
    # the speed rule alone: whether oneDNN's "medium" is exact to fp32 depends on the CPU (not with AMX)
    monkeypatch.setattr(fast_kernels, "accept_matmul_kernel", lambda rel_err, default, candidate: candidate < 0.9 * default)
    with caplog.at_level("INFO", logger=fast_kernels.__name__):
        assert fast_kernels.onednn_fp32_matmul_available() == (kernel is None)
    assert bench_gym.parse_update_numerics(caplog.text)["matmul_kernel"] == kernel
