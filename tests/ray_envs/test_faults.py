"""Faults mid-run on a local two-node cluster: a copy's build is killed, then a copy's actor, then a whole
worker node.  Training must finish, the restarts must be counted in the run's summaries, and the run must
go on with the two copies that lost their node dropped (no other node has room for them).
"""
import os
import signal

import pytest

pytest.importorskip("ray")  # the ray extra is optional; without it these tests skip
import yaml

from tests.impala.test_e2e_learning import scalars
from tests.ray_envs.conftest import (  # noqa: F401  (local_cluster is a fixture)
    REPO, LearnProcess, build_pids, learn_cmd, local_cluster, parent_pid,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
MAX_STEPS = 16000  # the three faults are over by about step 6000


def impala_config(tmp_path, max_steps: int) -> str:
    with open(os.path.join(REPO, "configs", "impala_balance.yaml")) as f:
        cfg = yaml.safe_load(f)
    cfg["behaviors"]["Balance"].update(max_steps=max_steps, summary_freq=1000, checkpoint_interval=max_steps)
    path = tmp_path / "impala.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_build_actor_and_node_faults(builds, local_cluster, tmp_path):  # noqa: F811
    results = tmp_path / "results"
    run = LearnProcess(
        learn_cmd(impala_config(tmp_path, MAX_STEPS), local_cluster.address, f"--env={builds}/Balance",
                  "--run-id=faults", "--num-envs=4", f"--results-dir={results}", "--seed", "1"),
        str(tmp_path / "learn.log"),
    )
    try:
        run.wait_for("Step: 2000.", timeout=240)
        logs = str(results / "faults" / "run_logs")
        pids = build_pids(logs)
        assert sorted(pids) == [0, 1, 2, 3], pids
        nodes = {i: local_cluster.node_of_pid(pid) for i, pid in pids.items()}
        on_a = sorted(i for i, n in nodes.items() if n == "node_a")
        assert sorted(nodes.values()) == ["node_a", "node_a", "node_b", "node_b"], nodes  # spread 2 + 2

        # 1. a build dies: its actor relaunches it
        os.kill(pids[on_a[0]], signal.SIGKILL)
        run.wait_for(f"restarting environment copy {on_a[0]}", timeout=60)
        run.wait_for("Step: ", timeout=60, count=run.output().count("Step: ") + 1)

        # 2. an actor dies (the build's parent process): a new actor takes the copy, on the same node
        actor_pid = parent_pid(pids[on_a[1]])
        os.kill(actor_pid, signal.SIGKILL)
        run.wait_for(f"restarting environment copy {on_a[1]}", timeout=60)
        run.wait_for("Step: ", timeout=60, count=run.output().count("Step: ") + 1)
        assert local_cluster.node_of_pid(build_pids(logs)[on_a[1]]) == "node_a"

        # 3. a whole worker node goes: its two copies are dropped with a warning, training goes on
        local_cluster.remove("node_b")
        run.wait_for("training goes on with 3 copies", timeout=90)
        run.wait_for("training goes on with 2 copies", timeout=90)
        assert run.finish(timeout=400) == 0, run.output()[-4000:]
    finally:
        if run.proc.poll() is None:
            run.finish(timeout=1)
    out = run.output()
    assert f"Step: {MAX_STEPS}." in out, out[-3000:]
    assert os.path.isfile(results / "faults" / "Balance.onnx")
    stats = scalars(str(results / "faults"), "Balance")
    assert max(v for _, v in stats["Ray/Restarts"]) == 2.0, stats["Ray/Restarts"]
    assert stats["Ray/Copies Alive"][-1][1] == 2.0, stats["Ray/Copies Alive"]
