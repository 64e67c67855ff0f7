"""``python -m bench profile``: the map from stack frames to phases on synthetic stacks, the sampler's arithmetic,
the report's sums and ratios on synthetic records, and one short real mlagents-learn run through the floor."""
import os
import sys
import threading

import pytest

from bench_fixtures import REPO  # noqa: F401  (puts the repo root on sys.path)
from bench import profiling
from bench.profiling import phases
from bench.profiling.phases import LoopState, classify

ML = "/venv/lib/python3.11/site-packages/mlagents/trainers/"
TORCH = "/venv/lib/python3.11/site-packages/torch/"
OURS = "/repo/mlagents_plugins/"
LOOP = [(ML + "trainer_controller.py", "advance"), (ML + "trainer_controller.py", "start_learning"),
        (ML + "learn.py", "run_training"), (ML + "learn.py", "main")]
TRAINER_ADVANCE = [(ML + "trainer/rl_trainer.py", "advance")] + LOOP
UPDATE = [(OURS + "fast_sac/trainer.py", "update_once"), (OURS + "offpolicy/trainer.py", "_update_policy"),
          (ML + "../../mlagents_envs/timers.py", "wrapped")] + TRAINER_ADVANCE


def test_innermost_named_frame_decides_inside_the_loop():
    take_step = [(OURS + "fast_sac/policy.py", "get_action"), (ML + "subprocess_env_manager.py", "_take_step"),
                 (ML + "subprocess_env_manager.py", "_queue_steps"), (ML + "env_manager.py", "get_steps")] + LOOP
    assert classify([(TORCH + "nn/modules/linear.py", "forward")] + take_step, LoopState.LOOP) == "inference"
    intake = [(ML + "trajectory.py", "to_agentbuffer"), (OURS + "offpolicy/trainer.py", "_process_trajectory")]
    assert classify(intake + TRAINER_ADVANCE, LoopState.LOOP) == "intake"
    stats_in_intake = [(ML + "stats.py", "add_stat")] + intake + TRAINER_ADVANCE
    assert classify(stats_in_intake, LoopState.LOOP) == "stats"
    summary = [(ML + "trainer/rl_trainer.py", "_maybe_write_summary")] + intake + TRAINER_ADVANCE
    assert classify(summary, LoopState.LOOP) == "stats"
    assert classify([(TORCH + "autograd/graph.py", "_engine_run_backward")] + UPDATE, LoopState.LOOP) == "update"
    assert classify([(ML + "stats.py", "set_stat")] + UPDATE, LoopState.LOOP) == "stats"
    processor = [(ML + "agent_processor.py", "_process_step"), (ML + "agent_processor.py", "add_experiences"),
                 (ML + "env_manager.py", "process_steps")] + LOOP
    assert classify(processor, LoopState.LOOP) == "host"
    assert classify([(ML + "stats.py", "add_stat")] + processor, LoopState.LOOP) == "stats"


def test_a_take_step_elsewhere_is_not_inference():
    """The rules name ML-Agents' call sites by file: a function of the same name in another file is host."""
    assert classify([("/somewhere/mine.py", "_take_step")] + LOOP, LoopState.LOOP) == "host"


def test_compile_save_and_startup_take_the_whole_stack():
    compiling = [(TORCH + "_inductor/compile_fx.py", "compile_fx_inner"),
                 (TORCH + "_functorch/_aot_autograd/runtime_wrappers.py", "backward")] + UPDATE
    assert classify(compiling, LoopState.LOOP) == "compile"
    dynamo = [(TORCH + "_dynamo/convert_frame.py", "_compile"), (TORCH + "_dynamo/eval_frame.py", "_fn")] + UPDATE
    assert classify(dynamo, LoopState.LOOP) == "compile"
    running_compiled = [(TORCH + "_dynamo/eval_frame.py", "_fn")] + UPDATE  # a compiled step, not compiling
    assert classify(running_compiled, LoopState.LOOP) == "update"
    importing = [(TORCH + "_inductor/codecache.py", "<module>"), ("<frozen importlib._bootstrap>", "_find_and_load")]
    assert classify(importing, LoopState.BEFORE) == "startup"
    class_body = [(TORCH + "_dynamo/convert_frame.py", "CaptureOutput"), (TORCH + "_dynamo/convert_frame.py", "<module>"),
                  ("<frozen importlib._bootstrap>", "_call_with_frames_removed"),
                  ("<frozen importlib._bootstrap_external>", "exec_module"), (ML + "learn.py", "main")]
    assert classify(class_body, LoopState.BEFORE) == "startup"  # importing torch._dynamo compiles nothing
    assert classify(class_body[:-1] + UPDATE, LoopState.LOOP) == "update"
    import_while_compiling = class_body[:-1] + compiling  # a module the compiler imports is compile time
    assert classify(import_while_compiling, LoopState.LOOP) == "compile"
    checkpoint = [(ML + "model_saver/torch_model_saver.py", "save_checkpoint"),
                  (ML + "trainer/rl_trainer.py", "_checkpoint"), (ML + "trainer/rl_trainer.py", "_maybe_save_model"),
                  (OURS + "offpolicy/trainer.py", "_process_trajectory")] + TRAINER_ADVANCE
    assert classify(checkpoint, LoopState.LOOP) == "save"
    new_behavior = [(OURS + "fast_sac/networks.py", "__init__"),
                    (ML + "trainer_controller.py", "_create_trainer_and_manager"),
                    (ML + "trainer_controller.py", "_register_new_behaviors")] + LOOP
    assert classify(new_behavior, LoopState.LOOP) == "startup"
    close = [(ML + "subprocess_env_manager.py", "close"), (ML + "learn.py", "run_training")]
    assert classify(close, LoopState.AFTER) == "save"


def test_outside_the_loop_the_state_decides():
    imports = [("<frozen importlib._bootstrap>", "_find_and_load"), ("<string>", "<module>")]
    assert classify(imports, LoopState.BEFORE) == "startup"
    assert classify([(ML + "learn.py", "write_timing_tree")], LoopState.AFTER) == "save"
    assert classify([("/usr/lib/python3.11/threading.py", "_shutdown")], LoopState.AFTER) == "save"
    assert classify([], LoopState.LOOP) == "host"


def test_tensorboard_writer_thread_is_stats():
    writer = [("/venv/site-packages/tensorboard/summary/writer/event_file_writer.py", "_run"),
              ("/usr/lib/python3.11/threading.py", "run")]
    assert classify(writer, LoopState.LOOP) == "stats"


def test_split_sample_gives_unknown_threads_to_the_main_threads_phase():
    parts = phases.split_sample(0.010, {1: 0.004, 2: 0.001, 3: 0.0}, {1: "update", 2: "stats"}, main=1)
    assert sorted(parts) == sorted([("update", 0.004), ("stats", 0.001), ("update", 0.005)])
    assert sum(s for _, s in parts) == pytest.approx(0.010, abs=1e-15)


def test_accounts_refuse_an_unknown_phase():
    acc = phases.PhaseAccounts()
    acc.add("host", 0.5)
    acc.add("startup", 1.0, sample=False)
    assert acc.total() == 1.5 and acc.samples["host"] == 1 and acc.samples["startup"] == 0
    with pytest.raises(ValueError, match="phase 'gpu' is unknown"):
        acc.add("gpu", 1.0)


def test_sampler_attributes_a_threads_cpu_to_its_own_stack():
    """Driven by hand (no signal): the main thread's CPU goes to its phase, a busy worker thread's to the worker's."""
    clock = {"t": 10.0}
    sampler = phases.PhaseSampler(process_clock=lambda: clock["t"], keep_stacks=2)
    sampler._last_process = clock["t"]
    sampler.state = LoopState.LOOP
    stop = threading.Event()

    def _update_policy():  # named as the update's entry point; runs in its own thread
        x = 0
        while not stop.is_set():
            x += 1

    worker = threading.Thread(target=_update_policy, daemon=True)
    worker.start()
    try:
        sampler.sample(sys._getframe())  # first read of every thread's clock: deltas 0
        while phases.time.clock_gettime(phases.time.pthread_getcpuclockid(worker.ident)) < 0.05:
            pass
        clock["t"] += 1.0  # the process's clock: 1 s since the last sample
        sampler.sample(sys._getframe())
    finally:
        stop.set()
        worker.join()
    cpu = sampler.accounts.cpu
    assert cpu["update"] > 0.0 and cpu["host"] < 1.0
    assert cpu["update"] + cpu["host"] == pytest.approx(1.0, abs=1e-9)  # the process delta, split
    assert any("_update_policy" in sig for sig, _ in sampler.top_stacks()["update"])


def test_the_sampler_stays_out_of_a_compiled_whole_step():
    """Samples taken while a ``torch.compile(fullgraph=True)`` step runs (fast_sac's whole step traces
    ``torch.autograd.grad``) must not reach TorchDynamo: unwrapped, it tried to compile the handler's frames and the
    step raised ("Attempt to trace generator"), so profiled runs fell back to the slower two-graph update."""
    import torch

    sampler = phases.PhaseSampler(interval_s=0.001)
    weight = torch.randn(48, 48, requires_grad=True)

    def step(x, w):
        y = torch.tanh(x @ w).sum()
        (g,) = torch.autograd.grad(y, [w])
        return y.detach(), g

    compiled = torch.compile(step, fullgraph=True, dynamic=False)
    x = torch.randn(16, 48)
    sampler.start()
    try:
        sampler.hide_from_compiler(torch.compiler.disable)
        with torch._dynamo.config.patch(trace_autograd_ops=True):
            for i in range(20000):  # until enough signals arrived (fewer per call on a loaded machine)
                compiled(x, weight)
                if i >= 2000 and i % 500 == 0 and sum(sampler.accounts.samples.values()) > 200:
                    break
    finally:
        sampler.stop()
    assert sum(sampler.accounts.samples.values()) > 100  # signals did arrive, also during compiled calls


def test_descendants_and_roles_from_proc(tmp_path):
    """A real child tree: this process -> sleeping child -> its child, found from /proc with their command lines."""
    import subprocess
    import time

    code = "import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); time.sleep(30)"
    parent = subprocess.Popen([sys.executable, "-c", code, "mlagents_plugins.envs.standin"])
    try:
        for _ in range(100):
            found = phases.descendants(os.getpid())
            if len(found) >= 2:
                break
            time.sleep(0.05)
        assert parent.pid in found and len(found) >= 2
        assert all(cpu >= 0.0 for cpu, _ in found.values())
        assert phases.role(parent.pid, found[parent.pid][1], []) == "build"
        grandchild = next(p for p in found if p != parent.pid)
        assert phases.role(grandchild, found[grandchild][1], [grandchild]) == "env_worker"
        assert phases.role(7, "python -m torch._inductor.compile_worker", []) == "compile"
        by_role = phases.cpu_by_role(found, [grandchild])
        assert set(by_role) == {"build", "env_worker", "compile", "other"}
    finally:
        parent.kill()
        parent.wait()


# ---------------------------------------------------------------------------------------------- report
CHILD = {"trainer_cpu": {"host": 1.0, "inference": 2.0, "intake": 0.5, "update": 4.0, "stats": 0.25, "startup": 3.0,
                         "compile": 6.0, "save": 0.25},
         "process_cpu_s": 17.0,
         "children_at_loop_start": {"build": 0.5, "env_worker": 0.25, "compile": 0.0, "other": 0.0, "reaped": 0.5},
         "children_at_close": {"build": 2.5, "env_worker": 1.25, "compile": 1.5, "other": 0.0, "reaped": 4.5}}


def test_phases_add_up_to_the_tree_cpu():
    cols = profiling.phases_of(CHILD, tree_cpu_s=24.0)
    assert cols["env"] == pytest.approx(3.0)  # 3.75 at close - 0.75 at the loop's start
    assert cols["startup"] == pytest.approx(4.25)  # the trainer's 3.0 + the environment's start 0.75 + reaped 0.5
    assert cols["compile"] == pytest.approx(11.5)  # in the trainer 6 + compile workers 1.5 + reaped in the loop 4
    assert cols["exit"] == pytest.approx(24.0 - 17.0 - 3.75 - 1.5 - 4.5)
    assert sum(cols.values()) == pytest.approx(24.0)


def _rec(trainer, agents, rnd, cpu, update=0.0, env=2.0, startup=1.0, steps=1000):
    cols = {c: 0.0 for c in profiling.COLUMNS}
    cols.update(env=env, update=update, startup=startup, host=cpu - env - update - startup)
    return {"trainer": trainer, "agents": agents, "round": rnd, "steps": steps, "cpu_s": cpu, "phases": cols,
            "error": None}


def test_summary_ratios_are_medians_of_per_round_ratios():
    runs = [_rec("floor", 8, 0, 5.0), _rec("sac", 8, 0, 20.0, update=10.0), _rec("fast_sac", 8, 0, 10.0, update=2.0),
            _rec("floor", 8, 1, 10.0), _rec("sac", 8, 1, 40.0, update=20.0), _rec("fast_sac", 8, 1, 10.0, update=4.0),
            _rec("fast_sac", 8, 2, 1.0), dict(_rec("sac", 64, 0, 1.0), error="RuntimeError: x")]
    rows = {(r["agents"], r["trainer"]): r for r in profiling.summarize(runs)}
    fast = rows[(8, "fast_sac")]
    assert fast["vs_sac_rounds"] == pytest.approx([2.0, 4.0]) and fast["vs_sac"] == pytest.approx(3.0)
    # non-update per step: round 0 (10-2)/(5) = 1.6, round 1 (10-4)/10 = 0.6 -> median 1.1
    assert fast["non_update_vs_floor"] == pytest.approx(1.1)
    assert fast["runs"] == 3 and fast["per_1k"]["update"] == pytest.approx(2.0)
    assert rows[(64, "sac")]["failed"] == 1 and "per_1k" not in rows[(64, "sac")]
    lines = profiling.table(profiling.summarize(runs))
    assert all(line.count("|") == lines[0].count("|") for line in lines)
    assert any(line.startswith("| 8 | **fast_sac** | 3 |") and "| 3.00 |" in line for line in lines)
    assert any(line.startswith("| 64 | sac | 0 (1 failed) |") for line in lines)


def test_schedule_alternates_the_order_each_round():
    order = profiling.schedule(["floor", "sac", "fast_sac"], [8, 64], 2)
    first = [(a, t) for r, a, t in order if r == 0]
    second = [(a, t) for r, a, t in order if r == 1]
    assert first == [(8, "floor"), (8, "sac"), (8, "fast_sac"), (64, "floor"), (64, "sac"), (64, "fast_sac")]
    assert second == first[::-1]


def test_profile_config_has_the_issue_settings():
    cfg = profiling.profile_config("fast_sac", 12000, 128, 128, 1000)
    hp = cfg["hyperparameters"]
    assert (hp["batch_size"], hp["steps_per_update"], hp["buffer_init_steps"]) == (128, 2.0, 1000)
    assert cfg["network_settings"]["hidden_units"] == 128 and cfg["network_settings"]["num_layers"] == 2
    assert (cfg["max_steps"], cfg["threaded"], hp["save_replay_buffer"]) == (12000, False, False)
    assert cfg["checkpoint_interval"] > cfg["max_steps"]
    floor = profiling.profile_config("floor", 12000, 128, 128, 1000)
    assert floor["trainer_type"] == "floor" and floor["hyperparameters"] == {}
    assert floor["network_settings"] == cfg["network_settings"] and floor["time_horizon"] == cfg["time_horizon"]


def test_cli_refuses_agent_counts_the_scene_cannot_hold(capsys):
    with pytest.raises(SystemExit):
        profiling.parse_args(["--agents", "8", "10"])
    assert "--agents=[10] is invalid" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        profiling.parse_args(["--set", "batch_size"])
    assert "give KEY=VALUE" in capsys.readouterr().err
    assert profiling.parse_args(["--set", "buffer_init_steps=200"]).overrides == {"buffer_init_steps": 200}


# ---------------------------------------------------------------------------------------------- a real run
def test_a_short_real_run_of_built_in_sac_accounts_for_every_cpu_second(tmp_path):
    """mlagents-learn through the stand-in with the sampler and hooks: every phase the run has is seen, and the
    columns add up to the process tree's CPU (``phases_of``)."""
    import json

    from bench.learn import write_builds

    # 800 steps: at 400 the 2 ms sampler missed the short intake phase once on a loaded core (a fresh-clone CI beside
    # another job, 2026-12-01)
    args = profiling.parse_args(["--steps", "800", "--summary-freq", "400", "--set", "buffer_init_steps=100",
                                 "--interval-s", "0.002", "--stacks", "3"])
    builds = write_builds()
    try:
        rec = profiling.run_one("sac", 8, 0, args, builds, "inv-test", 0, str(tmp_path / "inductor"))
    finally:
        import shutil

        shutil.rmtree(builds, ignore_errors=True)
    assert rec["error"] is None, rec["error"]
    assert rec["steps"] >= 800
    cols = rec["phases"]
    for phase in ("env", "host", "inference", "intake", "update", "startup", "save"):
        assert cols[phase] > 0.0, (phase, cols)
    assert rec["samples"]["compile"] == 0  # built-in sac compiles nothing
    assert sum(cols.values()) == pytest.approx(rec["cpu_s"], abs=1e-6)
    own = rec["trainer_process"]
    start, end = rec["children_at_loop_start"], rec["children_at_close"]
    trainer_phases = sum(v for k, v in cols.items() if k not in ("env", "exit")) - (
        start["build"] + start["env_worker"] + end["reaped"] + end["compile"])  # the trainer process's own
    assert 0.0 < trainer_phases <= own["process_cpu_s"]  # the sampler stopped before the result was written
    assert rec["samples"]["update"] > 10 and any("_update_policy" in s for s, _ in rec["top_stacks"]["update"])
    assert json.dumps(rec)


def test_set_reaches_only_trainers_that_take_the_setting():
    assert "buffer_init_steps" in profiling.settable_fields("fast_sac")
    assert "buffer_init_steps" in profiling.settable_fields("sac")
    assert "buffer_init_steps" not in profiling.settable_fields("impala")  # a built-in name impala refuses


def test_cli_takes_a_validation_scene_and_sizes_its_areas(capsys):
    args = profiling.parse_args(["--scene", "Balance_Distractors", "--agents", "8"])
    assert (args.scene, args.behavior, args.agents_per_area) == ("balance_distractors", "BalanceDistractors", 4)
    rc = profiling.parse_args(["--scene", "reach_continuous", "--agents", "8", "16"])
    assert (rc.behavior, rc.agents_per_area) == ("ReachContinuous", 8)
    with pytest.raises(SystemExit):
        profiling.parse_args(["--scene", "reach_continuous", "--agents", "4"])
    assert "--agents=[4] is invalid; the ReachContinuous scene has 8 agents per area" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        profiling.parse_args(["--scene", "balance_and_reach"])
    assert "has 2 behaviors" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        profiling.parse_args(["--scene", "nowhere"])
    assert "--scene='nowhere' is unknown; allowed:" in capsys.readouterr().err
