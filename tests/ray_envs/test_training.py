"""impala and fast_sac train through ``mlagents-plugins-learn --ray-address=HOST:PORT`` with stand-in Balance
builds spread over two worker nodes of a local cluster, reach the scene's threshold (5.0, mean of the last
3 reward summaries), write the ONNX, and ``--resume`` carries on from the checkpoint.
"""
import json
import os

import numpy as np
import pytest

pytest.importorskip("ray")  # the ray extra is optional; without it these tests skip
import yaml

from mlagents_plugins.envs.scenes import SCENES
from tests.envs.test_e2e import check_onnx
from tests.impala.test_e2e_learning import scalars
from tests.ray_envs.conftest import REPO, LearnProcess, learn_cmd, local_cluster  # noqa: F401

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
REWARD = "Environment/Cumulative Reward"
THRESHOLD = SCENES["balance"].success_threshold


def config(tmp_path, name: str, **updates) -> str:
    with open(os.path.join(REPO, "configs", f"{name}.yaml")) as f:
        cfg = yaml.safe_load(f)
    cfg["behaviors"]["Balance"].update(updates)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def final_reward(run_dir: str) -> float:
    curve = scalars(run_dir, "Balance")[REWARD]
    return float(np.mean([v for _, v in curve[-3:]])), curve


def spread_over_two_nodes(out: str) -> bool:
    line = next(ln for ln in out.splitlines() if "environment copies running on Ray node(s)" in ln)
    return len(line.split("node(s): ", 1)[1].split(", ")) == 2


def test_impala_reaches_threshold_then_resumes(builds, local_cluster, tmp_path):  # noqa: F811
    cfg = config(tmp_path, "impala_balance", max_steps=30000, summary_freq=2000, checkpoint_interval=10000,
                 threaded=True)
    common = ["--run-id=impala", f"--results-dir={tmp_path / 'results'}", "--num-envs=4", "--seed", "3"]
    proc = LearnProcess(learn_cmd(cfg, local_cluster.address, f"--env={builds}/Balance", *common),
                        str(tmp_path / "first.log"))
    assert proc.finish(timeout=600) == 0, proc.output()[-4000:]
    out = proc.output()
    assert spread_over_two_nodes(out), out[-3000:]
    run_dir = str(tmp_path / "results" / "impala")
    final, curve = final_reward(run_dir)
    print(f"impala through Ray: final {final:.2f}, curve {[round(v, 2) for _, v in curve]}")
    assert curve[0][1] < 2.0 and final >= THRESHOLD, curve
    onnx = os.path.join(run_dir, "Balance.onnx")
    check_onnx(onnx)
    first_onnx_mtime = os.path.getmtime(onnx)

    cfg = config(tmp_path, "impala_balance", max_steps=34000, summary_freq=2000, checkpoint_interval=10000,
                 threaded=True)
    proc = LearnProcess(learn_cmd(cfg, local_cluster.address, f"--env={builds}/Balance", *common, "--resume"),
                        str(tmp_path / "resume.log"))
    assert proc.finish(timeout=300) == 0, proc.output()[-4000:]
    out = proc.output()
    assert "Resuming from" in out and "Step: 32000." in out and "Step: 34000." in out, out[-3000:]
    assert "Step: 2000." not in out  # carried on from the checkpoint, not from scratch
    assert os.path.getmtime(onnx) > first_onnx_mtime
    assert scalars(run_dir, "Balance")[REWARD][-1][1] >= THRESHOLD - 1.0  # the resumed policy still works


def test_impala_defaults_from_a_ppo_config_learn_through_ray(builds, local_cluster, tmp_path):  # noqa: F811
    """A config written for built-in ppo (ppo's own field names, everything else unset: impala's defaults, so the
    epochs update style and kl_stop), threaded, 4 copies over two nodes: the V-trace learner still reaches the
    threshold under the lag this gives (the shipped impala_balance config pins the stream style)."""
    cfg = tmp_path / "impala_ppo.yaml"
    cfg.write_text(yaml.safe_dump({"behaviors": {"Balance": {
        "trainer_type": "impala",
        "hyperparameters": {"learning_rate": 3.0e-4, "batch_size": 256, "buffer_size": 2048, "beta": 5.0e-3,
                            "epsilon": 0.2, "lambd": 0.95, "num_epoch": 3},
        "network_settings": {"hidden_units": 128, "num_layers": 2},
        "reward_signals": {"extrinsic": {"gamma": 0.99, "strength": 1.0}},
        "max_steps": 40000, "time_horizon": 64, "summary_freq": 2000, "checkpoint_interval": 40000,
        "threaded": True,
    }}}))
    proc = LearnProcess(learn_cmd(str(cfg), local_cluster.address, f"--env={builds}/Balance", "--run-id=impala_ppo",
                                  f"--results-dir={tmp_path / 'results'}", "--num-envs=4", "--seed", "1"),
                        str(tmp_path / "impala_ppo.log"))
    assert proc.finish(timeout=600) == 0, proc.output()[-4000:]
    out = proc.output()
    assert spread_over_two_nodes(out), out[-3000:]
    run_dir = str(tmp_path / "results" / "impala_ppo")
    final, curve = final_reward(run_dir)
    lag = scalars(run_dir, "Balance")["IMPALA/Policy Lag"]
    print(f"impala defaults through Ray: final {final:.2f}, lag {[round(v, 1) for _, v in lag]}, "
          f"curve {[round(v, 2) for _, v in curve]}")
    assert curve[0][1] < 2.0 and final >= THRESHOLD, curve
    check_onnx(os.path.join(run_dir, "Balance.onnx"))


def test_fast_sac_reaches_threshold(builds, local_cluster, tmp_path):  # noqa: F811
    cfg = config(tmp_path, "fast_sac_balance", max_steps=9000, summary_freq=1000, checkpoint_interval=9000)
    proc = LearnProcess(learn_cmd(cfg, local_cluster.address, f"--env={builds}/Balance", "--run-id=sac",
                                  f"--results-dir={tmp_path / 'results'}", "--num-envs=2", "--seed", "0"),
                        str(tmp_path / "sac.log"))
    assert proc.finish(timeout=600) == 0, proc.output()[-4000:]
    out = proc.output()
    assert spread_over_two_nodes(out), out[-3000:]
    run_dir = str(tmp_path / "results" / "sac")
    final, curve = final_reward(run_dir)
    print(f"fast_sac through Ray: final {final:.2f}, curve {[round(v, 2) for _, v in curve]}")
    assert final >= THRESHOLD, curve
    check_onnx(os.path.join(run_dir, "Balance.onnx"))


def test_local_ray_instance_with_a_built_in_trainer(builds, tmp_path):  # noqa: F811
    """--ray-address=local (a private loopback instance, no cluster given) and ML-Agents' own ppo."""
    from tests.envs.test_e2e import CONFIG

    cfg = tmp_path / "ppo.yaml"
    cfg.write_text(CONFIG.format(max_steps=1000))
    proc = LearnProcess(learn_cmd(str(cfg), "local", f"--env={builds}/Balance", "--run-id=ppo", "--num-envs=2",
                                  f"--results-dir={tmp_path / 'results'}"), str(tmp_path / "ppo.log"))
    assert proc.finish(timeout=300) == 0, proc.output()[-4000:]
    run_dir = tmp_path / "results" / "ppo"
    check_onnx(str(run_dir / "Balance.onnx"))
    assert sorted(p.name for p in (run_dir / "run_logs").glob("Player-*.log")) == ["Player-0.log", "Player-1.log"]
    stats = scalars(str(run_dir), "Balance")
    assert all(v > 0 for _, v in stats["Ray/Round Trip Latency (ms)"]), stats["Ray/Round Trip Latency (ms)"]
    assert stats["Ray/Copies Alive"][-1][1] == 2.0 and stats["Ray/Restarts"][-1][1] == 0.0
    # the copies' timers are merged into timers.json as the subprocess manager merges its workers'
    with open(run_dir / "run_logs" / "timers.json") as f:
        workers = find_timer(json.load(f), "workers")
    assert workers is not None
    env_step = workers["children"]["worker_root"]["children"]["UnityEnvironment.step"]
    assert env_step["count"] >= 1000 / 2 / 2 and env_step["total"] > 0  # >= 250 steps per copy (2 x 2 agents)


def find_timer(node: dict, name: str):
    for child_name, child in node.get("children", {}).items():
        if child_name == name:
            return child
        found = find_timer(child, name)
        if found is not None:
            return found
    return None
