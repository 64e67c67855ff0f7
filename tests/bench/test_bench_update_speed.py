"""The update-speed benchmark without timing assertions: its timer, that each minimal loop does the same work
as the trainer it is compared with (layers, backward passes, the algorithm's targets), the Speed table and
the replay memory of mlagents-learn runs."""
import itertools
import json
import time

import numpy as np
import pytest
import torch
from bench_fixtures import rec  # noqa: F401  (also puts the repo root on sys.path)

from bench.speed import common as speed
from bench.speed import update as update_speed
from bench.report import render_report

ENV = {"invocation": "inv-A", "date": "2026-11-22 01:00 UTC", "machine": "2 cores"}


# ---------------------------------------------------------------------------------------------- timer
def test_time_interleaved_is_median_of_interleaved_blocks(monkeypatch):
    clock = {"now": 0.0}
    calls = []
    # A's third block is slow (a busy machine): the median ignores it.
    costs = {"A": itertools.chain([0.002] * 4, [0.002] * 4, [0.050] * 4, itertools.repeat(0.002)),
             "B": itertools.repeat(0.005)}

    def make(name):
        def step():
            calls.append(name)
            clock["now"] += next(costs[name])
        return step

    monkeypatch.setattr(time, "perf_counter", lambda: clock["now"])
    ms = speed.time_interleaved({"A": make("A"), "B": make("B")}, updates=20, warmup=0, blocks=5)
    assert ms == {"A": pytest.approx(2.0), "B": pytest.approx(5.0)}
    assert calls == (["A"] * 4 + ["B"] * 4) * 5  # blocks interleaved A B A B ...


def test_time_interleaved_warms_up_and_rejects_bad_counts():
    n = {"x": 0}

    def step():
        n["x"] += 1

    speed.time_interleaved({"x": step}, updates=3, warmup=7, blocks=3)
    assert n["x"] == 7 + 3
    with pytest.raises(ValueError, match="updates >= 1"):
        speed.time_interleaved({"x": step}, updates=0)


def test_updates_within_budget_uses_the_warmup_pace(monkeypatch):
    clock = {"now": 0.0}
    monkeypatch.setattr(time, "perf_counter", lambda: clock["now"])

    def slow():
        clock["now"] += 0.5  # 0.5 s per call: 2 calls fit a 1-second budget, but never fewer than 5 blocks

    def fast():
        clock["now"] += 2.0 ** -10  # about 1 ms, exact in binary

    assert update_speed.updates_within({"a": fast}, 200, 4, budget_s=10.0) == 200  # 10 s / 1 ms > 200
    assert update_speed.updates_within({"a": fast, "b": fast}, 10 ** 6, 4, budget_s=10.0) == 5120  # 10 / 2^-9
    assert update_speed.updates_within({"a": slow}, 200, 2, budget_s=1.0) == 5


def test_backward_counter_counts_and_restores():
    original = torch.autograd.backward
    x = torch.ones(2, requires_grad=True)
    with speed.BackwardCounter() as c:
        (x * 2).sum().backward()
        (x * 3).sum().backward()
    assert c.calls == 2 and torch.autograd.backward is original
    assert x.grad.tolist() == [5.0, 5.0]


# ---------------------------------------------------------------------------------------------- same work
@pytest.mark.parametrize("trainer", update_speed.TRAINERS)
def test_minimal_loop_trains_the_same_layers_with_the_same_backward_passes(tmp_path, trainer, monkeypatch):
    # the same work is the same layers and backward passes, whichever kernels run them: the trainers' updates
    # eager here (compiling them took 30-80 s a trainer in the default run; the benchmark times them compiled)
    monkeypatch.setenv("MLAGENTS_PLUGINS_COMPILE", "0")
    torch.set_num_threads(1)
    bench = update_speed.BUILDERS[trainer](str(tmp_path), 1200, np.random.default_rng(0), with_builtin=False)
    minimal_params = speed.optimized_parameters(*bench.minimal.optimizers)
    assert speed.parameter_shapes(bench.ours_params) == speed.parameter_shapes(minimal_params)
    assert update_speed.backward_passes(bench.ours) == update_speed.backward_passes(bench.minimal.step)

    def moved_shapes(step, params):
        before = [p.detach().clone() for p in params]
        step()
        return speed.parameter_shapes([p for b, p in zip(before, params) if not torch.equal(b, p)])

    # the same tensors receive gradient steps (muzero_repr's policy head of f none, its loss weight being 0)
    moved = moved_shapes(bench.minimal.step, minimal_params)
    assert moved == moved_shapes(bench.ours, bench.ours_params)
    assert len(moved) >= len(minimal_params) - 2
    assert all(torch.isfinite(p).all() for p in minimal_params)


@pytest.mark.parametrize("trainer,module", [("fast_sac", "minimal_sac"), ("taac", "minimal_taac"),
                                            ("impala", "minimal_impala"), ("muzero_repr", "minimal_muzero")])
def test_minimal_loop_accounts_for_every_setting_of_its_trainer(trainer, module):
    """A setting another engineer adds to a trainer must be handled (or declared workless) by its minimal loop."""
    import importlib

    import attr
    from mlagents import plugins as mla_plugins

    from mlagents_plugins.common import config_compat

    speed.register_plugins()
    cls = mla_plugins.all_trainer_settings[trainer]
    # built-in names (config_compat) never reach an update: moved onto our fields, or refused
    fields = {f.name for f in attr.fields(cls)} - set(config_compat.aliases(cls)) - set(config_compat.no_equivalents(cls))
    declared = importlib.import_module(f"bench.{module}").SETTINGS
    assert fields - set(declared) == set(), f"settings of {trainer} the minimal loop does not account for"
    assert set(declared) - fields == set(), f"{module} declares settings {trainer} does not have"


def test_minimal_vtrace_matches_impala_losses():
    from bench.minimal_impala import vtrace
    from mlagents_plugins.impala import losses

    g = torch.Generator().manual_seed(3)
    T, B = 6, 3
    log_rho = torch.randn(T, B, generator=g)
    discount = torch.full((T, B), 0.9)
    discount[-1, 1] = 0.0  # piece 1 ends its episode
    r, v, v_boot = torch.randn(T, B, generator=g), torch.randn(T, B, generator=g), torch.randn(B, generator=g)
    vs, q = vtrace(log_rho, discount, r, v, v_boot, 1.0, 0.8, 0.95)
    ref = losses.vtrace(log_rho, discount, r, v, v_boot, torch.ones(T, B), rho_clip=1.0, c_clip=0.8,
                        pg_rho_clip=1.2, lambda_=0.95)
    assert torch.allclose(vs, ref.vs, atol=1e-5) and torch.allclose(q, ref.q_t, atol=1e-5)
    pg_rho = log_rho.exp().clamp(max=1.2)
    assert torch.allclose(pg_rho * (q - v), ref.pg_advantage, atol=1e-5)


def test_minimal_vtrace_on_policy_is_the_discounted_return_by_hand():
    from bench.minimal_impala import vtrace

    # rho = 1 (log_rho 0), no clipping effect: v_s is the n-step return bootstrapped at the end.
    r = torch.tensor([[1.0], [2.0]])
    v = torch.tensor([[0.5], [-1.0]])
    vs, q = vtrace(torch.zeros(2, 1), torch.full((2, 1), 0.5), r, v, torch.tensor([4.0]), 1.0, 1.0, 1.0)
    # v_1 = 2 + 0.5 * 4 = 4; v_0 = 1 + 0.5 * 4 = 3
    assert vs.flatten().tolist() == pytest.approx([3.0, 4.0])
    # q_0 = 1 + 0.5 * v_1 = 3; q_1 = 2 + 0.5 * 4 = 4
    assert q.flatten().tolist() == pytest.approx([3.0, 4.0])


def test_minimal_compare_through_matches_taac_losses():
    from bench.minimal_taac import compare_through
    from mlagents_plugins.taac import losses

    g = torch.Generator().manual_seed(5)
    n, L, gamma = 5, 4, 0.9
    r, v1 = torch.randn(n, L, generator=g), torch.randn(n, L, generator=g)
    switch = torch.rand(n, L, generator=g) < 0.4
    valid = torch.ones(n, L, dtype=torch.bool)
    valid[1, 2:] = False  # window cut short by a segment end
    terminal = torch.zeros(n, L)
    terminal[3, 1] = 1.0  # episode ends at row 1 (later rows belong to no window: invalid)
    valid[3, 2:] = False
    mine = compare_through(r, terminal, v1, switch, valid, gamma)
    ref = losses.compare_through_returns(r, gamma * (1 - terminal), v1, switch, terminal, valid)
    assert torch.allclose(mine[valid], ref[valid], atol=1e-6)


def test_minimal_compare_through_by_hand():
    from bench.minimal_taac import compare_through

    # rows 0..2, no switch at rows 1 and 2: G_0 = r0 + g (r1 + g (r2 + g v1_2))
    r = torch.tensor([[1.0, 2.0, 3.0]])
    v1 = torch.tensor([[10.0, 20.0, 30.0]])
    none = torch.zeros(1, 3, dtype=torch.bool)
    g = compare_through(r, torch.zeros(1, 3), v1, none, torch.ones(1, 3, dtype=torch.bool), 0.5)
    assert g.flatten().tolist() == pytest.approx([1 + 0.5 * (2 + 0.5 * (3 + 0.5 * 30)), 2 + 0.5 * (3 + 15), 18.0])
    switch_at_2 = torch.tensor([[False, False, True]])
    g = compare_through(r, torch.zeros(1, 3), v1, switch_at_2, torch.ones(1, 3, dtype=torch.bool), 0.5)
    assert g[0, 1].item() == pytest.approx(2 + 0.5 * 20)  # cut after row 1: bootstrap from v1_1


def test_minimal_muzero_value_targets_match_unroll_targets():
    from bench.minimal_muzero import value_targets
    from mlagents_plugins.muzero_repr.targets import compute_unroll_targets

    rng = np.random.default_rng(7)
    B, K, n, gamma = 6, 3, 4, 0.9
    W = K + n
    r = rng.normal(size=(B, W)).astype(np.float32)
    v_next = rng.normal(size=(B, W)).astype(np.float32)
    valid = np.ones((B, W), bool)
    terminal = np.zeros((B, W), np.float32)
    valid[1, 4:] = False  # stored data end (bootstraps from row 3)
    valid[2, 2:], terminal[2, 1] = False, 1.0  # terminal at row 1
    valid[4, 6:], terminal[4, 5] = False, 1.0
    boot, sums, disc, z = value_targets(r, terminal, valid, K, n, gamma)[:3] + (None,)
    z = sums + disc * np.take_along_axis(v_next, boot, 1)
    ref = compute_unroll_targets(torch.tensor(r), torch.tensor(terminal > 0), torch.tensor(terminal > 0),
                                 torch.tensor(valid), torch.tensor(v_next), gamma, K, n)
    mask = ref.value_mask_k.numpy()
    assert np.allclose(z[mask], ref.value_target_k.numpy()[mask], atol=1e-5)
    # by hand, window 2 step 0: r0 + gamma r1 and no bootstrap (terminal at row 1)
    assert z[2, 0] == pytest.approx(r[2, 0] + gamma * r[2, 1], abs=1e-6)


# ---------------------------------------------------------------------------------------------- report
def test_report_speed_table_from_update_speed_rows():
    rows = [{"trainer": "fast_sac", "threads": 1, "ours_ms": 3.776, "minimal_ms": 2.716,
             "ratio_ours_over_minimal": 1.39, "builtin": "sac", "builtin_ms": 9.143, "ratio_ours_over_builtin": 0.41,
             "work": "batch 128", "backward_passes": "1 / 1", "trained_parameters": "14855 / 14855", "updates": 200},
            {"trainer": "taac", "threads": 2, "ours_ms": 5.3, "minimal_ms": 3.4, "ratio_ours_over_minimal": 1.56,
             "builtin": None, "builtin_ms": None, "ratio_ours_over_builtin": None, "work": "32 windows x 4",
             "backward_passes": "1 / 1", "trained_parameters": "14984 / 14984"},
            {"trainer": "impala", "threads": None, "error": "ValueError: broken"}]
    speed_entries = [{"name": "speed update", "threads": None, "command": "python -m bench speed update --json",
                      "rc": 0, "seconds": 30.0, "json": {"scene": "balance", "speed_rows": rows}},
                     {"name": "replay", "threads": None, "command": "python -m bench replay", "rc": 0,
                      "seconds": 1.0, "text": "file: 8.6 MB"}]
    text = render_report([rec("fast_sac", 0, [[100, 1.0, 0.5]])], ENV, {}, speed_entries)
    assert "| trainer | torch threads | ours ms / update | minimal ms / update | ratio ours / minimal |" in text
    assert ("| **fast_sac** | 1 | 3.78 | 2.72 | 1.39 | sac | 9.14 | 0.41 | batch 128 | 1 / 1 | 14855 / 14855 | 200 |"
            in text)
    assert "| **taac** | 2 | 5.30 | 3.40 | 1.56 | — | — | — | 32 windows x 4 |" in text
    failed = next(line for line in text.splitlines() if line.startswith("| **impala** |"))
    assert "FAILED: ValueError: broken" in failed and failed.count("|") == 13  # 12 cells like every row
    assert text.index("| **taac** |") < text.index("### Other speed measurements") < text.index("file: 8.6 MB")


def test_update_speed_cli_rejects_bad_numbers(capsys):
    with pytest.raises(SystemExit):
        update_speed.main(["--updates", "0"])
    assert "--updates=0 is invalid" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        update_speed.main(["--budget-s", "0"])
    assert "--budget-s=0.0 is invalid" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        update_speed.main(["--threads", "1", "0"])
    assert "--threads=[1, 0] is invalid" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        update_speed.main(["--hidden-units", "0"])
    assert "--hidden-units=0 is invalid" in capsys.readouterr().err


def test_speed_section_runs_update_first_then_at_issue3_sizes(monkeypatch):
    from bench.speed import section

    seen = []
    monkeypatch.setattr(section, "run_measurement",
                        lambda name, args, timeout_s: seen.append((name, tuple(args))) or {})
    section.run_speed(1000, 60, quick=True, log=lambda m: None)
    assert seen[0] == ("speed update", ("--updates", "40", "--rows", "5000", "--budget-s", "15", "--warmup", "5"))
    assert [s[0] for s in seen] == ["speed update", "speed learn", "replay"]
    assert ("speed learn", ("--pairs", "1", "--steps", "4000")) in seen
    seen.clear()
    section.run_speed(1000, 60, quick=False, log=lambda m: None)
    assert seen[1] == ("speed update", ("--trainers", "fast_sac", "--hidden-units", "256", "--num-layers", "2",
                                        "--batch-size", "256"))
    assert [s[0] for s in seen] == ["speed update", "speed update", "speed learn", "replay"]


def test_speed_measurement_runs_the_bench_command_and_parses_its_json(monkeypatch):
    """Each measurement is ``python -m bench <name> ... --json`` in the checkout; a failure keeps its output."""
    from bench.speed import section

    calls = []

    class Done:
        def __init__(self, rc, out, err=""):
            self.returncode, self.stdout, self.stderr = rc, out, err

    answers = iter([Done(0, 'progress\n{"file_mb": 8.6}\n'), Done(1, "partial", "Traceback: boom")])
    monkeypatch.setattr(section.subprocess, "run", lambda cmd, **kw: calls.append((cmd, kw["cwd"])) or next(answers))
    ok = section.run_measurement("replay", ["--rows", "10"], 60)
    assert calls[0][0][1:] == ["-m", "bench", "replay", "--rows", "10", "--json"] and calls[0][1] == section.REPO
    assert ok["json"] == {"file_mb": 8.6} and ok["rc"] == 0 and ok["command"].startswith("python -m bench replay")
    failed = section.run_measurement("speed update", [], 60)
    assert calls[1][0][1:4] == ["-m", "bench", "speed"] and failed["rc"] == 1
    assert "json" not in failed and "boom" in failed["text"]


def test_update_speed_sizes_reach_every_trainer_and_its_builtin(tmp_path):
    sizes = dict(hidden_units=48, num_layers=3, batch_size=96)
    for trainer in ("fast_sac", "sac", "impala", "ppo"):
        cfg = speed.behavior_config(trainer, sizes=sizes)
        assert cfg["network_settings"]["hidden_units"] == 48 and cfg["network_settings"]["num_layers"] == 3
        assert cfg["hyperparameters"]["batch_size"] == 96
    settings = speed.trainer_settings("fast_sac", sizes=sizes)
    assert settings.network_settings.hidden_units == 48 and settings.hyperparameters.batch_size == 96
    assert speed.behavior_config("fast_sac")["network_settings"]["hidden_units"] != 48
    with pytest.raises(ValueError, match="hidden_size"):
        speed.behavior_config("fast_sac", sizes={"hidden_size": 8})


# ---------------------------------------------------------------------------------------------- replay memory
def test_saved_replay_bytes_of_ours_is_the_preallocated_buffer(tmp_path):
    from bench.runner import saved_replay_bytes
    from mlagents_plugins.replay.buffer import ReplayBuffer
    from mlagents_plugins.replay.persistence import save_replay
    from mlagents_plugins.replay.specs import FieldSpec

    buf = ReplayBuffer(1000, {"obs": FieldSpec((8,), "float32"), "reward": FieldSpec((), "float32")})
    buf.add({"obs": np.ones((10, 8), np.float32), "reward": np.arange(10, dtype=np.float32)})
    (tmp_path / "Balance").mkdir()
    size = save_replay(str(tmp_path / "Balance" / "replay_buffer.mlreplay"), buf)
    got = saved_replay_bytes(str(tmp_path), "Balance")
    assert got == buf.nbytes and got >= 1000 * (8 + 1) * 4 and got > size  # capacity, not the 10 saved rows
    assert saved_replay_bytes(str(tmp_path), "Other") is None


def test_saved_replay_bytes_of_builtin_sac_counts_its_arrays(tmp_path):
    from mlagents.trainers.buffer import AgentBuffer, BufferKey

    from bench.runner import saved_replay_bytes

    ab = AgentBuffer()
    for i in range(50):
        ab[BufferKey.ENVIRONMENT_REWARDS].append(float(i))
        ab[BufferKey.CONTINUOUS_ACTION].append(np.full(2, i, np.float32))
    (tmp_path / "Balance").mkdir()
    with open(tmp_path / "Balance" / "last_replay_buffer.hdf5", "wb") as f:
        ab.save_to_file(f)
    got = saved_replay_bytes(str(tmp_path), "Balance")
    assert got >= 50 * 4 * 3  # the float32 data of both fields, plus Python objects
    assert json.dumps(got)  # a plain int for the run record


def test_update_speed_reports_a_broken_trainer_and_goes_on(monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise RuntimeError("taac half-finished")

    monkeypatch.setitem(update_speed.BUILDERS, "taac", broken)
    out = update_speed.main(["--trainers", "taac", "--updates", "1", "--json"])
    assert out["speed_rows"] == [{"trainer": "taac", "threads": None, "error": "RuntimeError: taac half-finished"}]
    assert json.loads(capsys.readouterr().out)["speed_rows"][0]["error"].startswith("RuntimeError")


def test_bench_prints_the_speed_table(capsys):
    from bench.learn import print_speed_table

    rows = [{"trainer": "impala", "threads": 2, "ours_ms": 4.0, "minimal_ms": 2.0, "ratio_ours_over_minimal": 2.0,
             "builtin": "ppo", "builtin_ms": 8.0, "ratio_ours_over_builtin": 0.5, "updates": 40}]
    print_speed_table([{"name": "sac_speed.py", "json": {"x": 1}},
                       {"name": "speed update", "json": {"speed_rows": rows}}])
    out = capsys.readouterr().out
    assert "| **impala** | 2 | 4.00 | 2.00 | 2.00 | ppo | 8.00 | 0.50 |" in out and out.count("| **") == 1


def test_learn_speed_gives_both_trainers_the_same_settings():
    """The env-steps/s comparison is only fair if sac and fast_sac share every setting but the trainer type."""
    from mlagents.trainers.settings import RunOptions

    from bench.speed.learn import BEHAVIOR, config

    built = {}
    for trainer in ("sac", "fast_sac"):
        cfg = config(trainer, steps=5000, summary=500, hidden=256, batch=256, threaded=False)
        settings = RunOptions.from_dict(cfg).behaviors[BEHAVIOR]
        assert settings.trainer_type == trainer
        built[trainer] = settings
    sac, ours = built["sac"], built["fast_sac"]
    for name in ("batch_size", "buffer_size", "buffer_init_steps", "steps_per_update", "learning_rate", "tau",
                 "init_entcoef"):
        assert getattr(sac.hyperparameters, name) == getattr(ours.hyperparameters, name), name
    assert sac.hyperparameters.batch_size == 256 and sac.hyperparameters.steps_per_update == 2.0
    assert sac.network_settings == ours.network_settings and ours.network_settings.hidden_units == 256
    assert (sac.max_steps, sac.time_horizon, sac.threaded) == (ours.max_steps, ours.time_horizon, ours.threaded)


def test_learn_speed_counts_the_cpu_time_of_finished_children():
    """``steps_per_cpu_s`` divides by ``children_cpu_s`` deltas: a child that burns CPU must show up in them, and
    one that sleeps must not."""
    import subprocess
    import sys

    from bench.speed.learn import children_cpu_s

    before = children_cpu_s()
    subprocess.run([sys.executable, "-c", "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"],
                   check=True)
    busy = children_cpu_s() - before
    before = children_cpu_s()
    subprocess.run([sys.executable, "-c", "import time; time.sleep(0.3)"], check=True)
    idle = children_cpu_s() - before
    assert busy >= 0.3 and idle < 0.25


def test_time_interleaved_reads_the_clock_it_is_given():
    ticks = iter(range(100))
    ms = speed.time_interleaved({"x": lambda: None}, updates=4, warmup=0, blocks=2, clock=lambda: float(next(ticks)))
    assert ms == {"x": pytest.approx(1000.0 / 2)}  # each block of 2 calls spans one tick


def test_learn_speed_runs_a_camera_scene_under_its_behavior_name():
    from mlagents.trainers.settings import RunOptions

    from bench.speed.learn import behavior_name, config

    name = behavior_name("camera36")
    assert name == "Camera36"
    settings = RunOptions.from_dict(config("fast_sac", 3000, 500, 128, 128, False, name)).behaviors[name]
    assert settings.trainer_type == "fast_sac" and settings.hyperparameters.batch_size == 128


def test_camera_speed_times_each_variant_against_builtin_sac(capsys):
    from bench.speed import camera

    out = camera.main(["--continuous", "2", "--variants", "sac", "fast_sac", "encoded_twice", "--updates", "2",
                       "--warmup", "0", "--rows", "128", "--batch", "8", "--hidden", "16", "--blocks", "2", "--json"])
    assert out["actions"] == {"continuous": 2, "branches": []} and out["observations"] == [[3, 36, 36], [2]]
    rows = {r["variant"]: r for r in out["rows"]}
    assert set(rows) == {"sac", "fast_sac", "encoded_twice"}
    assert rows["fast_sac"]["over_fast_sac"] == 1.0 and all(r["ms"] > 0 for r in rows.values())
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["rows"] == out["rows"]


def test_camera_speed_cli_rejects_bad_numbers(capsys):
    from bench.speed import camera

    with pytest.raises(SystemExit):
        camera.main(["--updates", "0"])
    assert "--updates=0 is invalid" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        camera.main(["--threads", "2"])
    assert "--clock cpu counts the timing thread only" in capsys.readouterr().err


def test_gemm_floor_reads_m_k_n_from_each_product_kind():
    from bench.speed import gemm_floor

    assert gemm_floor.gemm_shape("aten::mm", [[256, 23], [23, 128]]) == (256, 23, 128)
    assert gemm_floor.gemm_shape("aten::addmm", [[128], [256, 23], [23, 128]]) == (256, 23, 128)
    assert gemm_floor.gemm_shape("aten::bmm", [[2, 256, 23], [2, 23, 128]]) == (512, 23, 128)
    assert gemm_floor.gemm_shape("aten::baddbmm", [[2, 256, 128], [2, 256, 23], [2, 23, 128]]) == (512, 23, 128)
    assert gemm_floor.gemm_shape("mkldnn::_linear_pointwise", [[4, 64, 23], [128, 23], [128]]) == (256, 23, 128)
    assert gemm_floor.gemm_shape("aten::mm", [[256, 23]]) is None


def test_gemm_floor_reads_the_operands_dtype():
    from bench.speed import gemm_floor

    assert gemm_floor.gemm_dtype(["float", "float"]) == "float32"
    assert gemm_floor.gemm_dtype(["c10::BFloat16", "c10::BFloat16"]) == "bfloat16"
    assert gemm_floor.gemm_dtype(["", "c10::BFloat16", "c10::BFloat16"]) == "bfloat16"  # addmm's absent bias first
    assert gemm_floor.gemm_dtype([]) == "float32"


def test_gemm_replay_multiplies_in_each_products_dtype(monkeypatch):
    from collections import Counter

    import torch

    from bench.speed import gemm_floor

    seen = []
    real_mm = torch.mm

    def counted(a, b, out=None):
        seen.append((tuple(a.shape), a.dtype, b.dtype, out.dtype))
        return real_mm(a, b, out=out)

    step = gemm_floor.gemm_replay(Counter({(4, 3, 5, "bfloat16"): 1.0, (6, 5, 2, "float32"): 2.0}))
    monkeypatch.setattr(torch, "mm", counted)
    step()
    assert sorted(seen, key=str) == sorted([((4, 3), torch.bfloat16, torch.bfloat16, torch.bfloat16),
                                            ((6, 5), torch.float32, torch.float32, torch.float32),
                                            ((6, 5), torch.float32, torch.float32, torch.float32)], key=str)


def test_trainer_with_the_python_wrapper_is_built_under_the_switch_and_the_switch_restored(monkeypatch):
    import os

    from bench.speed import common

    seen = []
    monkeypatch.setattr(common, "make_trainer",
                        lambda *a, **k: seen.append(os.environ.get("MLAGENTS_PLUGINS_PY_WRAPPER")) or ("t", "s"))
    monkeypatch.delenv("MLAGENTS_PLUGINS_PY_WRAPPER", raising=False)
    assert common.make_trainer_py_wrapper("fast_sac", "out", sizes={}) == ("t", "s")
    assert seen == ["1"] and "MLAGENTS_PLUGINS_PY_WRAPPER" not in os.environ
    monkeypatch.setenv("MLAGENTS_PLUGINS_PY_WRAPPER", "0")
    common.make_trainer_py_wrapper("fast_sac", "out")
    assert seen == ["1", "1"] and os.environ["MLAGENTS_PLUGINS_PY_WRAPPER"] == "0"


def test_gemm_replay_runs_each_product_as_often_as_the_update(monkeypatch):
    from collections import Counter

    import torch

    from bench.speed import gemm_floor

    calls = []
    real_mm = torch.mm

    def counted(a, b, out=None):
        calls.append((tuple(a.shape), tuple(b.shape)))
        return real_mm(a, b, out=out)

    step = gemm_floor.gemm_replay(Counter({(4, 3, 5, "float32"): 2.0, (6, 5, 1, "float32"): 1.0}))
    monkeypatch.setattr(torch, "mm", counted)
    step()
    assert sorted(calls) == [((4, 3), (3, 5)), ((4, 3), (3, 5)), ((6, 5), (5, 1))]


# ---------------------------------------------------------------------------------------------- memory
def test_update_speed_memory_mode_reports_fast_sac_beside_builtin_sac(capsys, monkeypatch):
    """``--memory``: both trainers built with the memory and timed in one run; per update, per step sampled and per
    trained step.  Trajectories are cut at the config's time_horizon (32), so sequences of 64 hold 32 real steps
    in both trainers' counts (built-in sac's padding, fast_sac's window end at its chunk)."""
    monkeypatch.setenv("MLAGENTS_PLUGINS_COMPILE", "0")  # fast_sac without memory compiles its update: not tested
    out = update_speed.main(["--memory", "8:4", "8:64", "none", "--threads", "1", "--updates", "5", "--warmup", "1",
                             "--rows", "640", "--budget-s", "1", "--hidden-units", "16", "--num-layers", "1",
                             "--batch-size", "64", "--json"])
    rows = {r["memory"]: r for r in out["memory_rows"]}
    assert set(rows) == {"8:4", "8:64", "none"} and not any("error" in r for r in rows.values()), rows
    assert json.loads(capsys.readouterr().out)["memory_rows"] == out["memory_rows"]
    for r in rows.values():
        assert (r["trainer"], r["builtin"], r["trajectory_length"]) == ("fast_sac", "sac", 32)
        assert r["ours_ms"] > 0 and r["builtin_ms"] > 0 and r["updates"] >= 5
        assert r["ours_us_per_sampled_step"] == pytest.approx(1000 * r["ours_ms"] / r["ours_sampled_steps"], rel=0.01)
    short, long_, none = rows["8:4"], rows["8:64"], rows["none"]
    assert (short["ours_sequences"], short["builtin_sequences"]) == (16, 16)
    assert short["ours_trained_steps"] == short["builtin_trained_steps"] == 64  # 32 = 8 x 4: no padding
    assert (long_["ours_sequences"], long_["builtin_sequences"], long_["builtin_sampled_steps"]) == (1, 1, 64)
    assert long_["ours_trained_steps"] == long_["builtin_trained_steps"] == 32  # half of each sequence past its chunk
    assert long_["ours_us_per_trained_step"] == pytest.approx(2 * long_["ours_us_per_sampled_step"], rel=0.01)
    assert none["ours_sequences"] == none["builtin_sequences"] == none["ours_trained_steps"] == 64


def test_update_speed_memory_option_rejects_bad_values(capsys):
    assert update_speed.parse_memory("32:8") == {"memory_size": 32, "sequence_length": 8}
    assert update_speed.parse_memory("none") is None
    for bad, says in (("33:8", "even integer"), ("32", "SIZE:SEQ_LEN"), ("32:0", "sequence_length"),
                      ("a:b", "SIZE:SEQ_LEN")):
        with pytest.raises(SystemExit):
            update_speed.main(["--memory", bad])
        assert says in capsys.readouterr().err, bad
    with pytest.raises(SystemExit):
        update_speed.main(["--memory", "32:8", "--trainers", "impala"])
    assert "fast_sac beside built-in sac" in capsys.readouterr().err
