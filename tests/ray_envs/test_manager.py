"""RayEnvManager driven directly (no trainer) on the local two-node cluster: environment parameters - what a
curriculum lesson change sends - reach every copy on both nodes, and a copy restarted after its build died
gets the current ones too.  The scene reports the difficulty it used at every episode end through the stats
side channel, per copy (``EnvironmentStep.worker_id``), which is what is checked here.
"""
import os
import signal
import time
from collections import defaultdict

import pytest

pytest.importorskip("ray")  # the ray extra is optional; without it these tests skip
from mlagents.trainers.settings import ConstantSettings, RunOptions

from mlagents_plugins.envs.academy import STAT_DIFFICULTY
from tests.ray_envs.conftest import build_pids, local_cluster  # noqa: F401  (fixtures)

pytestmark = pytest.mark.slow


def difficulties_per_copy(manager, n_copies: int, min_steps: int = 0, timeout: float = 120.0):
    """Step (zero actions) until every copy made ``min_steps`` steps and ended an episode after them;
    returns {copy: set of difficulties reported after its first ``min_steps`` steps}."""
    seen = defaultdict(set)
    steps = defaultdict(int)
    deadline = time.time() + timeout
    while len(seen) < n_copies:
        assert time.time() < deadline, f"only copies {sorted(seen)} ended an episode within {timeout} s"
        for step in manager._step():
            steps[step.worker_id] += 1
            if steps[step.worker_id] > min_steps:
                for value, _agg in step.environment_stats.get(STAT_DIFFICULTY, []):
                    seen[step.worker_id].add(round(value, 3))
    return dict(seen)


def test_missing_build_then_parameters_reach_every_copy_and_survive_a_restart(builds, local_cluster, tmp_path):  # noqa: F811
    import ray

    from mlagents_plugins.ray_envs.actor import LaunchSpec
    from mlagents_plugins.ray_envs.cli import connect
    from mlagents_plugins.ray_envs.manager import RayEnvError, RayEnvManager, RayOptions

    connect(local_cluster.address, num_envs=4, cpus_per_env=1)
    logs = str(tmp_path / "run_logs")
    missing = LaunchSpec(env_path=f"{tmp_path}/NoSuchBuild", no_graphics=True, no_graphics_monitor=False, seed=0,
                         num_areas=1, timeout_wait=60, env_args=None, log_folder=logs)
    with pytest.raises(RayEnvError, match=f"no build at --env='{tmp_path}/NoSuchBuild' on node"):
        RayEnvManager(missing, RunOptions(), 2, RayOptions(cpus_per_env=1))
    spec = LaunchSpec(env_path=f"{builds}/Balance", no_graphics=True, no_graphics_monitor=False, seed=0, num_areas=1,
                      timeout_wait=60, env_args=["--max-episode-steps", "20"], log_folder=logs)
    manager = RayEnvManager(spec, RunOptions(), 4, RayOptions(cpus_per_env=1))
    try:
        assert len({c.node_id for c in manager.copies}) == 2  # spread over both worker nodes
        manager._reset_env({"difficulty": ConstantSettings(value=0.25)})
        assert difficulties_per_copy(manager, 4) == {i: {0.25} for i in range(4)}

        # a lesson change without a reset (TrainerController.reset_env_if_ready -> set_env_parameters)
        manager.set_env_parameters({"difficulty": ConstantSettings(value=0.75)})
        # episodes of at most 20 decisions that started before the change are over after 21 steps
        seen = difficulties_per_copy(manager, 4, min_steps=21)
        assert seen == {i: {0.75} for i in range(4)}, seen

        os.kill(build_pids(logs)[2], signal.SIGKILL)
        deadline = time.time() + 90
        while manager.restart_counts[2] == 0:
            assert time.time() < deadline, "copy 2 was not restarted"
            manager._step()
        assert difficulties_per_copy(manager, 4)[2] == {0.75}  # the new build started with the current value
        assert manager.restart_counts == [0, 0, 1, 0]
    finally:
        manager.close()
        ray.shutdown()
