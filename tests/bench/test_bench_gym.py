"""``python -m bench gym``: evaluation returns, the report's per-seed statistics and anchors, ``--continue``'s keys,
option checks, and one tiny invocation (fast_sac through mlagents-learn and SB3's SAC, a few hundred steps)."""
import json
import os

import numpy as np
import pytest

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


def test_every_trainer_has_a_config_for_every_task():
    for trainer in bench_gym.ML_TRAINERS:
        for task in bench_gym.TASKS:
            assert os.path.isfile(bench_gym.config_path(trainer, task)), (trainer, task)


@pytest.mark.e2e
def test_tiny_invocation_writes_records_and_report_and_continues(tmp_path, monkeypatch):
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
    ml = records[0]["cpu_by_process"]  # mlagents-learn: its environment worker and the stand-in build were seen
    assert ml["env_worker"] > 0 and ml["build"] > 0 and ml["processes"] >= 3
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
