"""Every trainer through ``mlagents-learn --torch-device cuda`` with ``threaded: true``, then ``--resume``.

Why: ML-Agents applies ``--torch-device`` with ``torch.set_default_device``, which is thread-local, and with
``threaded: true`` each trainer advances in its own thread; a tensor made without a device there, a CPU-only
kernel switch, a compiled graph or an ONNX export that assumes CPU breaks only on a GPU.  Each case runs a
shipped config (the one users start from) with ``threaded: true`` and short step counts through a stand-in
build, then checks:

* the run ends cleanly, without falling back from a compiled update to eager, and writes its ONNX file, which
  onnxruntime runs to finite actions;
* the saved networks' tensors are on the GPU (the checkpoint keeps each tensor's device), so the run did not
  quietly fall back to the CPU;
* ``--resume`` loads that checkpoint (and the replay buffer where the config saves one) and trains on.

The same runs cover curiosity and RND (ML-Agents' reward providers, trained by our trainers in that thread) and
ML-Agents' own ``sac``/``ppo`` with ``threaded: true``, which need the ``trainer_thread_device`` host patch; one
case checks that built-in sac still fails there with the patch switched off (the fault the patch exists for).

Skipped where torch sees no CUDA device (CI, these CPU machines).  ``MLAGENTS_PLUGINS_TEST_DEVICE=cpu`` runs the
same checks on the CPU, to check the test itself without a GPU.
"""
import os
import subprocess
import sys
from typing import Optional

import numpy as np
import pytest
import torch
import yaml

from mlagents_plugins.testing.ports import free_base_port

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from bench import plan  # noqa: E402

DEVICE = os.environ.get("MLAGENTS_PLUGINS_TEST_DEVICE", "cuda")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(DEVICE == "cuda" and not torch.cuda.is_available(), reason="torch sees no CUDA device"),
]

MLAGENTS_LEARN = os.path.join(os.path.dirname(sys.executable), "mlagents-learn")
FIRST_STEPS = 1500
RESUMED_STEPS = 2500

# (config in configs/, behavior): every trainer, every action kind it supports, vector and pixel observations.
CASES = [
    ("fast_sac_balance.yaml", "Balance"),
    ("fast_sac_hybrid.yaml", "Hybrid"),
    ("fast_sac_camera.yaml", "Camera"),
    ("taac_balance.yaml", "Balance"),
    ("impala_balance.yaml", "Balance"),
    ("impala_branches.yaml", "Branches"),
    ("muzero_repr_balance.yaml", "Balance"),
    ("muzero_repr_camera.yaml", "Camera"),
]


def _short_config(config_name: str, behavior: str, max_steps: int, path, intrinsic: bool = False,
                  demo: str = "", hyper: Optional[dict] = None, network: Optional[dict] = None) -> str:
    """The shipped config with ``threaded: true`` and step counts sized for a check, nothing else changed
    (``intrinsic``: curiosity and RND added beside the extrinsic reward; ``demo``: GAIL and, where the trainer
    takes it, behavioral cloning from that .demo file; ``hyper`` / ``network``: hyperparameters / network
    settings set on top)."""
    with open(os.path.join(REPO, "configs", config_name)) as f:
        cfg = yaml.safe_load(f)
    b = cfg["behaviors"][behavior]
    small = {"hidden_units": 32, "num_layers": 1}
    if intrinsic:
        b["reward_signals"].update(curiosity={"gamma": 0.9, "strength": 0.05, "network_settings": small},
                                   rnd={"gamma": 0.9, "strength": 0.05, "network_settings": small})
    if demo:
        if b["trainer_type"] != "muzero_repr":  # its model predicts the environment reward: extrinsic only
            b["reward_signals"]["gail"] = {"gamma": 0.9, "strength": 0.1, "demo_path": demo,
                                           "network_settings": small}
        if b["trainer_type"] != "taac":  # taac refuses behavioral_cloning (tests/taac/test_trainer.py)
            b["behavioral_cloning"] = {"demo_path": demo, "strength": 0.5, "steps": 1000, "batch_size": 32,
                                       "num_epoch": 1}
    b["hyperparameters"].update(hyper or {})
    b.setdefault("network_settings", {}).update(network or {})
    b.update(threaded=True, max_steps=max_steps, summary_freq=500, checkpoint_interval=1000, keep_checkpoints=5)
    hp = b["hyperparameters"]
    if "buffer_init_steps" in hp:
        hp["buffer_init_steps"] = min(hp["buffer_init_steps"], 300)
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f)
    return str(path)


def _builtin_config(trainer: str, behavior: str, max_steps: int, path) -> str:
    """The defaults benchmark's minimal config for ML-Agents' own ``sac``/``ppo`` (``bench.plan``), ``threaded: true``."""
    behavior_cfg = plan.minimal_config(trainer)
    behavior_cfg.update(threaded=True, max_steps=max_steps, summary_freq=500, checkpoint_interval=1000,
                        keep_checkpoints=5)
    if "buffer_init_steps" in behavior_cfg["hyperparameters"]:
        behavior_cfg["hyperparameters"]["buffer_init_steps"] = 300
    with open(path, "w") as f:
        yaml.safe_dump({"behaviors": {behavior: behavior_cfg}}, f)
    return str(path)


def _learn(config: str, behavior: str, builds: str, results: str, *extra: str, env=None, expect_ok=True):
    argv = [MLAGENTS_LEARN, config, f"--env={os.path.join(builds, behavior)}", "--run-id=dev", f"--results-dir={results}",
            "--no-graphics", "--num-areas=2", f"--base-port={free_base_port()}", f"--torch-device={DEVICE}",
            "--timeout-wait=60", *extra]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600,
                          env=None if env is None else {**os.environ, **env})
    out = proc.stdout + proc.stderr
    if not expect_ok:
        return proc.returncode, out
    assert proc.returncode == 0, out[-6000:]
    assert "Traceback" not in out, out[-6000:]
    assert "torch.compile failed" not in out, out[-6000:]  # CompiledStep's fallback to eager (compiled_step.py)
    assert "compiling the whole step" not in out, out[-6000:]  # its fallback to the loss-only graph
    return out


def _tensor_devices(obj, prefix=""):
    """(path, device type) of every tensor in a nested checkpoint."""
    if isinstance(obj, torch.Tensor):
        yield prefix, obj.device.type
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _tensor_devices(v, f"{prefix}/{k}")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _tensor_devices(v, f"{prefix}/{i}")


def _check_onnx(path: str) -> None:
    import onnxruntime as ort

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feed = {}
    for inp in sess.get_inputs():
        shape = [1 if not isinstance(d, int) else d for d in inp.shape]
        feed[inp.name] = np.ones(shape, np.float32) if "mask" in inp.name else rng.normal(size=shape).astype(np.float32)
    outs = sess.run(None, feed)
    assert outs and all(np.all(np.isfinite(np.asarray(o, np.float64))) for o in outs)


@pytest.mark.parametrize("config_name,behavior", CASES, ids=[c[0].removesuffix(".yaml") for c in CASES])
def test_threaded_run_on_device_then_resume(tmp_path, builds, config_name, behavior):
    first = _short_config(config_name, behavior, FIRST_STEPS, tmp_path / "first.yaml")
    resumed = _short_config(config_name, behavior, RESUMED_STEPS, tmp_path / "resumed.yaml")
    _run_then_resume(first, resumed, behavior, builds, str(tmp_path / "results"))


@pytest.mark.parametrize("config_name", ["fast_sac_balance.yaml", "impala_balance.yaml"])
def test_intrinsic_reward_signals_threaded_on_device_then_resume(tmp_path, builds, config_name):
    """Curiosity and RND (ML-Agents' reward providers, trained by our trainers) in a device-bound thread."""
    first = _short_config(config_name, "Balance", FIRST_STEPS, tmp_path / "first.yaml", intrinsic=True)
    resumed = _short_config(config_name, "Balance", RESUMED_STEPS, tmp_path / "resumed.yaml", intrinsic=True)
    _run_then_resume(first, resumed, "Balance", builds, str(tmp_path / "results"))


MEMORY = {"memory": {"memory_size": 16, "sequence_length": 8}}
CROSSQ = {"critic_batch_renorm": True, "learning_rate": 0.001, "adam_beta1": 0.5, "actor_update_every": 3}
# (config, behavior, hyperparameters, network settings): the settings added after the last GPU session, each on a
# GPU for the first time: memory (fast_sac with vector, camera and hybrid actions; impala), CrossQ's critics
# (batch renormalization state saved and restored on the device), muzero_repr's head on h's target copy with
# latent self-prediction.
OPTION_CASES = [
    ("fast_sac_balance.yaml", "Balance", {}, MEMORY),
    ("fast_sac_camera.yaml", "Camera", {}, MEMORY),
    ("fast_sac_hybrid.yaml", "Hybrid", {}, MEMORY),
    ("impala_balance.yaml", "Balance", {}, MEMORY),
    ("fast_sac_balance.yaml", "Balance", CROSSQ, {}),
    ("muzero_repr_balance.yaml", "Balance", {"head_reads_target_repr": True, "head_repr_update_tau": 0.05,
                                             "train_repr_prediction": True, "repr_prediction_target": "target"}, {}),
]
OPTION_IDS = ["fast_sac-memory", "fast_sac-camera-memory", "fast_sac-hybrid-memory", "impala-memory",
              "fast_sac-crossq", "muzero_repr-target-repr"]


@pytest.mark.parametrize("config_name,behavior,hyper,network", OPTION_CASES, ids=OPTION_IDS)
def test_options_threaded_on_device_then_resume(tmp_path, builds, config_name, behavior, hyper, network):
    first = _short_config(config_name, behavior, FIRST_STEPS, tmp_path / "first.yaml", hyper=hyper, network=network)
    resumed = _short_config(config_name, behavior, RESUMED_STEPS, tmp_path / "resumed.yaml", hyper=hyper,
                            network=network)
    results = str(tmp_path / "results")
    _run_then_resume(first, resumed, behavior, builds, results)
    if network.get("memory"):
        import onnx

        model = onnx.load(os.path.join(results, "dev", f"{behavior}.onnx"))
        names = {i.name for i in model.graph.input} | {o.name for o in model.graph.output}
        assert {"recurrent_in", "recurrent_out", "memory_size"} <= names, sorted(names)


# (config, hyperparameters on top): GAIL + behavioral cloning (taac: GAIL only; muzero_repr: behavioral cloning
# only), prioritized replay where the trainer has it.
DEMO_CASES = [
    ("fast_sac_balance.yaml", {"prioritized_replay": True}),
    ("taac_balance.yaml", {}),
    ("impala_balance.yaml", {}),
    ("muzero_repr_balance.yaml", {"prioritized_replay": True}),
]


@pytest.mark.parametrize("config_name,hyper", DEMO_CASES, ids=[c[0].removesuffix(".yaml") for c in DEMO_CASES])
def test_gail_bc_and_prioritized_replay_threaded_on_device_then_resume(tmp_path, builds, config_name, hyper):
    """GAIL and behavioral cloning (ML-Agents' modules, fed from a .demo file and trained in our trainers'
    device-bound threads) and prioritized replay (priorities computed on the device, kept in numpy).  muzero_repr
    takes only the extrinsic reward (its model predicts it), so it runs behavioral cloning without GAIL."""
    from mlagents_plugins.envs.demo_writer import record_demo

    demo = str(tmp_path / "balance.demo")
    record_demo("balance", demo, steps=400, seed=1)
    first = _short_config(config_name, "Balance", FIRST_STEPS, tmp_path / "first.yaml", demo=demo, hyper=hyper)
    resumed = _short_config(config_name, "Balance", RESUMED_STEPS, tmp_path / "resumed.yaml", demo=demo, hyper=hyper)
    results = str(tmp_path / "results")
    _run_then_resume(first, resumed, "Balance", builds, results)
    checkpoint = torch.load(os.path.join(results, "dev", "Balance", "checkpoint.pt"), map_location=None,
                            weights_only=False)
    gail = {path: d for path, d in _tensor_devices(checkpoint) if "Module:GAIL" in path and not path.endswith("/step")}
    assert set(gail.values()) == (set() if config_name.startswith("muzero_repr") else {DEVICE}), gail


def test_init_replay_from_another_run_on_device(tmp_path, builds):
    """``init_replay_from``: a new run on the device starts from the replay buffer another run saved."""
    hyper = {"save_replay_buffer": True}
    first = _short_config("fast_sac_balance.yaml", "Balance", FIRST_STEPS, tmp_path / "first.yaml", hyper=hyper)
    results = str(tmp_path / "results")
    _learn(first, "Balance", builds, results)
    assert os.path.isfile(os.path.join(results, "dev", "Balance", "replay_buffer.mlreplay"))
    second = _short_config("fast_sac_balance.yaml", "Balance", FIRST_STEPS, tmp_path / "second.yaml",
                           hyper={"init_replay_from": "dev"})
    out = _learn(second, "Balance", builds, results, "--run-id=second")
    assert "Initialised replay buffer from" in out, out[-3000:]


@pytest.mark.parametrize("trainer", ["sac", "ppo"])
def test_builtin_threaded_run_on_device_then_resume(tmp_path, builds, trainer):
    """ML-Agents' own trainers, with the ``trainer_thread_device`` host patch (installed by our hook)."""
    first = _builtin_config(trainer, "Balance", FIRST_STEPS, tmp_path / "first.yaml")
    resumed = _builtin_config(trainer, "Balance", RESUMED_STEPS, tmp_path / "resumed.yaml")
    _run_then_resume(first, resumed, "Balance", builds, str(tmp_path / "results"))


@pytest.mark.skipif(DEVICE == "cpu", reason="the fault is a CPU tensor beside GPU parameters")
def test_builtin_sac_threaded_fails_without_the_thread_device_patch(tmp_path, builds):
    """The fault ``trainer_thread_device`` fixes (why the patch exists): switched off, built-in sac's thread makes
    CPU tensors beside its GPU parameters.  The ``trainer_thread_crash`` patch turns that into exit status 1."""
    config = _builtin_config("sac", "Balance", FIRST_STEPS, tmp_path / "first.yaml")
    code, out = _learn(config, "Balance", builds, str(tmp_path / "results"),
                       env={"MLAGENTS_PLUGINS_THREAD_DEVICE_ORIGINAL": "1"}, expect_ok=False)
    assert code != 0 and "same device" in out, out[-6000:]


def _run_then_resume(first: str, resumed: str, behavior: str, builds: str, results: str) -> None:
    pytest.importorskip("onnxruntime")
    _learn(first, behavior, builds, results)
    run = os.path.join(results, "dev")
    onnx_path = os.path.join(run, f"{behavior}.onnx")
    assert os.path.isfile(onnx_path)
    _check_onnx(onnx_path)

    checkpoint = torch.load(os.path.join(run, behavior, "checkpoint.pt"), map_location=None, weights_only=False)
    devices = dict(_tensor_devices(checkpoint))
    # Adam's step counter stays a CPU scalar unless the optimizer is fused or capturable: not a network tensor.
    network_devices = {path: d for path, d in devices.items()
                       if (path.startswith("/Policy/") or "Optimizer" in path) and not path.endswith("/step")}
    assert network_devices, sorted(devices)[:20]
    off_device = sorted(path for path, d in network_devices.items() if d != DEVICE)
    assert not off_device, f"saved off {DEVICE}: {off_device[:10]}"

    saves_replay = os.path.isfile(os.path.join(run, behavior, "replay_buffer.mlreplay"))
    out = _learn(resumed, behavior, builds, results, "--resume")
    assert "Resuming from" in out or "Resuming training from step" in out, out[-3000:]
    if saves_replay:
        assert "Loaded replay buffer" in out, out[-3000:]
    status = yaml.safe_load(open(os.path.join(run, "run_logs", "training_status.json")))
    assert max(c["steps"] for c in status[behavior]["checkpoints"]) >= RESUMED_STEPS
    _check_onnx(onnx_path)
