"""Suite-wide fixtures.

Our trainers are registered in mlagents' plugin tables for every test, the way mlagents-learn's plugin
loader does it (``mlagents.plugins.trainer_type.register_trainer_plugins``), so tests that build
``RunOptions`` or ``TrainerFactory`` directly see ``fast_sac``/``taac``/``impala``/``muzero_repr`` even in a
checkout whose entry points were not (re)installed.
"""
import importlib
import os

import pytest

PLUGIN_MODULES = (
    "mlagents_plugins.fast_sac.plugin",
    "mlagents_plugins.taac.plugin",
    "mlagents_plugins.impala.plugin",
    "mlagents_plugins.muzero_repr.plugin",
)


@pytest.fixture(autouse=True, scope="session")
def _register_our_trainers():
    from mlagents import plugins as mla_plugins

    from mlagents_plugins.host import patches

    # What mlagents-learn's start-up hook does for every run, for the tests that build trainers (which export
    # ONNX at checkpoints) without it; importing the package installs nothing (tests/test_patches.py).
    patches.install("onnx_export")
    patches.install("deterministic_tanh")  # the exported deterministic actions of tanh-squashed policies

    for module in PLUGIN_MODULES:
        types, settings = importlib.import_module(module).get_type_and_setting()
        mla_plugins.all_trainer_types.update(types)
        mla_plugins.all_trainer_settings.update(settings)
    yield


@pytest.fixture(autouse=True)
def _in_process_device():
    """``MLAGENTS_PLUGINS_TEST_DEVICE=cuda`` (the GPU check, ``scripts/device_check.sh``): every test that builds
    trainers in this process (the in-process learning tests, reward signals, replay persistence) runs them on that
    device, as ``mlagents-learn --torch-device`` would; tests/test_cuda.py reads the same variable for its
    subprocess runs.  Unset (CI, these CPU machines): nothing changes."""
    device = os.environ.get("MLAGENTS_PLUGINS_TEST_DEVICE")
    if not device or device == "cpu":
        yield
        return
    from mlagents.torch_utils import set_torch_config, torch
    from mlagents.trainers.settings import TorchSettings

    set_torch_config(TorchSettings(device=device))
    try:
        yield
    finally:
        set_torch_config(TorchSettings(device="cpu"))
        torch.set_default_device("cpu")


@pytest.fixture
def one_thread():
    """torch on one thread for the test (learning tests: the CI machine's 2 cores, one run at a time), restored after."""
    from mlagents.torch_utils import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="session")
def builds(tmp_path_factory):
    """Stand-in "Unity builds" (launchers ``<Behavior>.x86_64``) of every scene, written once per test session."""
    from mlagents_plugins.envs.standin import write_builds

    directory = tmp_path_factory.mktemp("builds")
    write_builds(str(directory))
    return str(directory)
