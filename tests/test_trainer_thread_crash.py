"""A ``threaded: true`` trainer that raises ends mlagents-learn with the error (status 1, models saved), and
``--resume`` continues from there; ML-Agents alone hangs on the dead trainer's full trajectory queue."""
import os
import signal
import subprocess
import sys
import threading

import pytest
import yaml

from mlagents_plugins.testing.ports import free_base_port

pytestmark = pytest.mark.e2e

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# mlagents-learn with a fault injected into fast_sac's update (after the first update, so there is something
# to save): mlagents' own entry point, run after the injection in the same process.
LAUNCHER = """
import sys
from mlagents_plugins.fast_sac.trainer import FastSACTrainer
update_once = FastSACTrainer.update_once
calls = []
def update_once_then_fail(self):
    calls.append(1)
    if len(calls) > 1:
        raise RuntimeError("injected fault in the update")
    return update_once(self)
if "--inject-fault" in sys.argv:
    sys.argv.remove("--inject-fault")
    FastSACTrainer.update_once = update_once_then_fail
from mlagents.trainers.learn import main
sys.argv[0] = "mlagents-learn"
main()
"""


def _config(path, max_steps):
    cfg = {"behaviors": {"Balance": {
        "trainer_type": "fast_sac", "threaded": True,
        "hyperparameters": {"batch_size": 32, "buffer_size": 5000, "buffer_init_steps": 200, "steps_per_update": 4.0,
                            "save_replay_buffer": True, "compile_update": False},
        "network_settings": {"hidden_units": 16, "num_layers": 1},
        "reward_signals": {"extrinsic": {"gamma": 0.99, "strength": 1.0}},
        "max_steps": max_steps, "time_horizon": 16, "summary_freq": 200, "checkpoint_interval": 100000,
    }}}
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f)
    return str(path)


def _learn(tmp_path, builds, config, *extra, timeout=180):
    argv = [sys.executable, "-c", LAUNCHER, config, f"--env={builds}/Balance", "--run-id=crash",
            f"--results-dir={tmp_path / 'results'}", "--no-graphics", f"--base-port={free_base_port()}",
            "--torch-device=cpu", "--timeout-wait=60", *extra]
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    # SIGINT ignored, as in a process started in the background of a non-interactive shell (CI): the interrupt
    # must not rely on SIGINT's handler (it did once, and the run hung there).
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=timeout, env=env,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    return proc.returncode, proc.stdout + proc.stderr


def test_a_crashing_trainer_thread_ends_the_run_and_resume_continues(tmp_path, builds):
    # Without the patch this run never ends (subprocess.run's timeout would fail the test).
    returncode, out = _learn(tmp_path, builds, _config(tmp_path / "a.yaml", 3000), "--inject-fault")
    assert returncode == 1, out[-4000:]
    assert "TrainerThreadError" in out and "injected fault in the update" in out, out[-4000:]
    assert "the trainer of behavior Balance (threaded: true) stopped with RuntimeError" in out, out[-4000:]
    run = tmp_path / "results" / "crash" / "Balance"
    assert (run / "checkpoint.pt").is_file() and (run / "replay_buffer.mlreplay").is_file()

    returncode, out = _learn(tmp_path, builds, _config(tmp_path / "b.yaml", 600), "--resume")
    assert returncode == 0, out[-4000:]
    assert "Loaded replay buffer" in out, out[-4000:]


def test_the_interrupt_handler_is_installed_only_on_the_main_thread_and_restored():
    from mlagents_plugins.host import trainer_thread_crash as ttc

    sig = ttc.INTERRUPT_SIGNAL
    before = signal.getsignal(sig)
    previous = ttc.install_interrupt_handler()
    try:
        assert previous is before and signal.getsignal(sig) is ttc._raise_keyboard_interrupt
        assert ttc.install_interrupt_handler() is ttc.NOT_INSTALLED  # ours (a handler of the program's) is kept
    finally:
        signal.signal(sig, previous)
    seen = []
    worker = threading.Thread(target=lambda: seen.append(ttc.install_interrupt_handler()))
    worker.start()
    worker.join()
    assert seen == [ttc.NOT_INSTALLED] and signal.getsignal(sig) is before
