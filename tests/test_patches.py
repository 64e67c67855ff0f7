"""Every change to ML-Agents' behaviour is listed in ``patches``, guarded by version and switched off by its
variable; the list is the one the mlagents-learn hook installs."""
import importlib
import os

import pytest

from mlagents_plugins import lifetime, patches, plugin_hooks


def _owner_and_attr(target):
    parts = target.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:-1]:
            owner = getattr(owner, name)
        return owner, parts[-1]
    raise AssertionError(f"cannot resolve {target}")


@pytest.fixture(params=[p.name for p in patches.PATCHES])
def patch_and_original(request):
    """A patch with its target put back to ML-Agents' original (each installer module keeps ``ORIGINAL``)."""
    patch = next(p for p in patches.PATCHES if p.name == request.param)
    owner, attr_name = _owner_and_attr(patch.target)
    installed = owner.__dict__[attr_name]
    if installed.__module__.startswith("mlagents_plugins"):
        original = importlib.import_module(patch.installer.split(":")[0]).ORIGINAL
        setattr(owner, attr_name, original)
    yield patch, owner, attr_name
    setattr(owner, attr_name, installed)


def test_each_patch_is_guarded_by_version_and_opt_out(monkeypatch, patch_and_original):
    patch, owner, attr_name = patch_and_original
    installer = patches._installer(patch)
    assert patch.why and patch.opt_out.startswith("MLAGENTS_PLUGINS_") and patch.versions == ("1.1.0",)
    original = owner.__dict__[attr_name]
    assert original.__module__.startswith(("mlagents.", "mlagents_envs."))  # ML-Agents' trainer or env package
    monkeypatch.setenv(patch.opt_out, "1")
    assert installer() is False and owner.__dict__[attr_name] is original
    monkeypatch.delenv(patch.opt_out)
    monkeypatch.setattr(patches, "mlagents_version", lambda: "0.0.0")
    assert installer() is False and owner.__dict__[attr_name] is original
    monkeypatch.setattr(patches, "mlagents_version", lambda: "1.1.0")
    assert installer() is True
    replaced = owner.__dict__[attr_name]
    assert replaced is not original and replaced.__module__.startswith("mlagents_plugins")


def test_targets_exist_in_the_installed_mlagents_and_names_are_unique():
    assert len({p.name for p in patches.PATCHES}) == len(patches.PATCHES)
    assert len({p.opt_out for p in patches.PATCHES}) == len(patches.PATCHES)
    for patch in patches.PATCHES:
        owner, attr_name = _owner_and_attr(patch.target)
        assert attr_name in owner.__dict__, patch.target


def test_the_mlagents_learn_hook_installs_every_listed_patch(monkeypatch):
    seen = []
    monkeypatch.setattr(patches, "_installer", lambda p: (lambda: seen.append(p.name) or True))
    monkeypatch.setenv(lifetime.TRAINER_PID_ENV, "")  # restored afterwards: the hook names this process
    assert plugin_hooks.stats_writers(None) == []
    assert seen == [p.name for p in patches.PATCHES]
    assert os.environ[lifetime.TRAINER_PID_ENV] == str(os.getpid())
