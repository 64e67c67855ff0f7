"""The gRPC stand-in against mlagents' own UnityEnvironment (the real Python side of the protocol)."""
import os
import subprocess
import time

import numpy as np
import pytest

from mlagents_envs.base_env import ActionTuple
from mlagents_envs.environment import UnityEnvironment
from mlagents_envs.exception import UnityWorkerInUseException
from mlagents_envs.side_channel.engine_configuration_channel import EngineConfigurationChannel
from mlagents_envs.side_channel.environment_parameters_channel import EnvironmentParametersChannel
from mlagents_envs.side_channel.stats_side_channel import StatsSideChannel

from mlagents_plugins.envs.academy import STAT_DIFFICULTY, STAT_SUCCESS_RATE
from mlagents_plugins.envs.inprocess import SceneEnv
from mlagents_plugins.envs.scenes import ALL_SCENES, SCENES, scene_behaviors
from mlagents_plugins.envs.scenes.variants import VARIANT_SPECS
from mlagents_plugins.envs.standin import EXIT_TRAINER_LOST, main, split_unity_args

from tests.envs.conftest import ON_EDITOR_PORT, free_base_port, popen_standin, wait_for_editor_port


def open_env(builds, scene, tmp_path, **kwargs):
    for _ in range(3):
        try:
            return UnityEnvironment(
                os.path.join(builds, ALL_SCENES[scene].behavior_name), base_port=free_base_port(),
                no_graphics=True, timeout_wait=30, log_folder=str(tmp_path), **kwargs,
            )
        except UnityWorkerInUseException:
            continue
    raise RuntimeError("could not get a free port")


def random_actions(spec, dec, rng):
    n = len(dec)
    cont = rng.uniform(-1, 1, (n, spec.continuous_size)).astype(np.float32)
    disc = np.zeros((n, spec.discrete_size), dtype=np.int32)
    for b, size in enumerate(spec.discrete_branches):
        for i in range(n):
            disc[i, b] = rng.choice(np.nonzero(~dec.action_mask[b][i])[0])
    return ActionTuple(continuous=cont, discrete=disc)


def trace(env, names, steps, seed=0):
    """Every step's decision and terminal steps of each behavior in ``names``, under random actions."""
    rng = np.random.default_rng(seed)
    env.reset()
    out = []
    for _ in range(steps):
        for name in names:
            dec, term = env.get_steps(name)
            out.append((dec.agent_id.copy(), [o.copy() for o in dec.obs], dec.reward.copy(),
                        None if dec.action_mask is None else [m.copy() for m in dec.action_mask],
                        term.agent_id.copy(), [o.copy() for o in term.obs], term.reward.copy(),
                        term.interrupted.copy()))
            env.set_actions(name, random_actions(env.behavior_specs[name].action_spec, dec, rng))
        env.step()
    return out


# Every base scene, the variants that change what goes over the wire (image size and channels, vector and
# action sizes), and a scene with two behaviors.
@pytest.mark.parametrize("scene", sorted(SCENES) + ["camera_gray18", "camera36", "balance_distractors",
                                                    "reach_sparse_distractors", "reach_continuous_camera32",
                                                    "balance_and_reach"])
def test_grpc_matches_in_process_exactly(builds, scene, tmp_path):
    """Handshake, specs, episode ends (success/failure/time-out), masks, PNG images: all bit-identical, for
    every behavior of the scene."""
    names = [f"{cls.behavior_name}?team=0" for cls in scene_behaviors(scene)]
    remote = open_env(builds, scene, tmp_path, seed=5, additional_args=["--max-episode-steps", "6", "-screen-width", "84"])
    try:
        assert list(remote.behavior_specs) == []  # like Unity: specs arrive with the first agent infos
        remote_trace = trace(remote, names, 25)
        local = SceneEnv(scene, seed=5, max_episode_steps=6)
        local_trace = trace(local, names, 25)
        assert list(remote.behavior_specs) == list(local.behavior_specs) == names
        for name in names:
            assert remote.behavior_specs[name] == local.behavior_specs[name]
    finally:
        remote.close()
    n_term = n_interrupted = 0
    for r, l in zip(remote_trace, local_trace):
        for a, b in zip(r, l):
            if isinstance(a, list):
                for x, y in zip(a, b):
                    np.testing.assert_array_equal(x, y)
            elif a is None:
                assert b is None
            else:
                np.testing.assert_array_equal(a, b)
        n_term += len(r[4])
        n_interrupted += int(r[7].sum())
    assert n_term > 0 and n_interrupted > 0  # the trace did cover episode ends and time-outs


def test_side_channels_samplers_stats_engine_config_and_log_file(builds, tmp_path):
    params, stats, engine = EnvironmentParametersChannel(), StatsSideChannel(), EngineConfigurationChannel()
    log = tmp_path / "player.log"
    env = open_env(builds, "branches", tmp_path, seed=1, side_channels=[params, stats, engine],
                   additional_args=["--max-episode-steps", "2", "-logFile", str(log)])
    try:
        params.set_uniform_sampler_parameters("difficulty", 0.2, 0.4, seed=3)
        engine.set_configuration_parameters(time_scale=17.0, width=64, height=48)
        env.reset()
        name = "Branches?team=0"
        for _ in range(6):
            env.set_actions(name, ActionTuple(discrete=np.zeros((len(env.get_steps(name)[0]), 2), np.int32)))
            env.step()
        got = stats.get_and_reset_stats()
    finally:
        env.close()
    values = [v for v, _ in got[STAT_DIFFICULTY]]
    assert len(values) == 12 and all(0.2 <= v <= 0.4 for v in values) and len(set(values)) == 12
    assert [v for v, _ in got[STAT_SUCCESS_RATE]] == [0.0] * 12
    text = log.read_text()
    assert "'time_scale': 17.0" in text and "'width': 64" in text
    assert "ignoring Unity player arguments: -nographics -batchmode" in text


def test_reset_mid_run_and_clean_close(builds, tmp_path):
    env = open_env(builds, "hybrid", tmp_path, seed=2, additional_args=["--num-areas", "2"])
    proc = env._process
    name = "Hybrid?team=0"
    env.reset()
    first = env.get_steps(name)[0].agent_id.copy()
    assert len(first) == 8  # --num-areas from the command line reaches the scene
    for _ in range(3):
        env.step()
    env.reset()
    dec, term = env.get_steps(name)
    assert len(term) == 0 and len(dec) == 8 and set(dec.agent_id).isdisjoint(first)
    env.close()
    assert proc.returncode == 0


def test_step_cost_makes_every_step_take_that_long(builds, tmp_path):
    env = open_env(builds, "balance", tmp_path, seed=0, additional_args=["--step-cost-ms", "100"])
    try:
        env.reset()
        start = time.perf_counter()
        for _ in range(5):
            env.step()
        assert time.perf_counter() - start >= 0.5
    finally:
        env.close()


def test_trainer_that_vanishes_or_stops_answering_ends_the_standin(builds, tmp_path):
    env = open_env(builds, "balance", tmp_path, seed=0, additional_args=["--timeout-wait", "2"])
    proc = env._process
    env.reset()
    start = time.time()
    # Never answer: the stand-in's deadline fires and it exits with the "trainer lost" code.
    assert proc.wait(timeout=20) == EXIT_TRAINER_LOST
    assert time.time() - start < 15
    env._process = None
    env.close()

    env = open_env(builds, "balance", tmp_path, seed=0)
    proc = env._process
    env.reset()
    env._communicator.server.stop(None)  # server gone without the 400 goodbye
    assert proc.wait(timeout=20) in (0, EXIT_TRAINER_LOST)
    env._process = None
    env.close()


@ON_EDITOR_PORT
def test_editor_mode_attach_on_5004(tmp_path):
    wait_for_editor_port()
    log = tmp_path / "editor.log"
    proc = popen_standin("--scene", "balance", "--connect-timeout", "60", log_path=str(log))
    try:
        env = UnityEnvironment(file_name=None, seed=4, timeout_wait=60)  # listens on 5004 like mlagents-learn
        env.reset()
        dec, _ = env.get_steps("Balance?team=0")
        assert len(dec) == 4 and dec.obs[0].shape == (4, 8)
        env.close()
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_no_trainer_is_a_clear_failure(tmp_path):
    log = tmp_path / "p.log"
    proc = popen_standin("--scene", "balance", "--mlagents-port", str(free_base_port()), "--connect-timeout", "1",
                         log_path=str(log))
    assert proc.wait(timeout=30) == EXIT_TRAINER_LOST
    assert "not reachable on port" in log.read_text() or "did not answer" in log.read_text()


def test_unity_arguments_are_ignored_ours_are_checked(capsys):
    ours, log_file, ignored = split_unity_args(
        ["-nographics", "-batchmode", "--mlagents-port", "5005", "-logFile", "/tmp/x.log", "-screen-width", "80",
         "-force-vulkan", "--num-areas", "2"])
    assert ours == ["--mlagents-port", "5005", "--num-areas", "2"]
    assert log_file == "/tmp/x.log"
    assert ignored == ["-nographics", "-batchmode", "-logFile", "/tmp/x.log", "-screen-width", "80", "-force-vulkan"]
    for argv, message in [
        (["--scene", "nope"], "invalid choice: 'nope'"),
        (["--scene", "balance", "--num-areas", "0"], "--num-areas must be >= 1, got 0"),
        (["--scene", "balance", "--mlagents-port", "99999"], "--mlagents-port must be in 1..65535, got 99999"),
        (["--scene", "balance", "--bogus"], "unrecognized arguments: --bogus"),
        (["--scene", "balance", "-weird"], "unrecognized arguments: -weird"),
        (["--scene", "balance", "--step-cost-ms", "-1"], "--step-cost-ms must be >= 0, got -1.0"),
        ([], "--scene is required"),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err


def test_write_builds_launchers(tmp_path):
    assert main(["--write-builds", str(tmp_path / "b")]) == 0
    names = sorted(os.listdir(tmp_path / "b"))
    base = ["Balance.x86_64", "Branches.x86_64", "Camera.x86_64", "Hybrid.x86_64", "Reach.x86_64",
            "ReachContinuous.x86_64", "Switching.x86_64"]
    variants = [f"{v.behavior_name}.x86_64" for v in VARIANT_SPECS]  # one launcher per variant too
    assert names == sorted(base + variants + ["BalanceAndReach.x86_64"]) and len(variants) == 13
    path = tmp_path / "b" / "Camera.x86_64"
    assert os.access(path, os.X_OK)
    out = subprocess.run([str(path), "--bogus"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "unrecognized arguments: --bogus" in out.stderr


HELPER = """
import sys, time
from mlagents_envs.environment import UnityEnvironment
env = UnityEnvironment(sys.argv[1], base_port=int(sys.argv[2]), no_graphics=True, timeout_wait=30)
env.reset()
print(env._process.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            return "\tZ" not in next(line for line in f if line.startswith("State:"))
    except (FileNotFoundError, StopIteration):
        return False


def test_standin_exits_when_the_trainer_process_is_killed(builds):
    import signal
    import sys

    trainer = subprocess.Popen([sys.executable, "-c", HELPER, os.path.join(builds, "Balance"), str(free_base_port())],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        pid = int(trainer.stdout.readline())
        assert _alive(pid)
        trainer.send_signal(signal.SIGKILL)  # no goodbye, no close: the server just vanishes
        trainer.wait(timeout=10)
        deadline = time.time() + 20
        while _alive(pid) and time.time() < deadline:
            time.sleep(0.2)
        assert not _alive(pid), "the stand-in kept running after its trainer was killed"
    finally:
        if trainer.poll() is None:
            trainer.kill()
