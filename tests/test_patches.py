"""Every change to ML-Agents' behaviour is listed in ``patches``, guarded by version and switched off by its
variable; the list is the one the mlagents-learn hook installs."""
import fnmatch
import importlib
import importlib.util
import os
import pkgutil
import sys

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


ATTRIBUTE_PATCHES = [p.name for p in patches.PATCHES if p.kind == "attribute"]
IMPORT_PATCHES = [p.name for p in patches.PATCHES if p.kind == "import"]


def _import_targets(target):
    """The modules an import-hook patch's target names (the last part may be a glob)."""
    package, _, pattern = target.rpartition(".")
    spec = importlib.util.find_spec(package)
    assert spec is not None, target
    if not any(c in pattern for c in "*?["):
        return [target] if importlib.util.find_spec(target) is not None else []
    return [f"{package}.{m.name}" for m in pkgutil.iter_modules(spec.submodule_search_locations)
            if fnmatch.fnmatch(m.name, pattern)]


def test_every_patch_is_of_a_known_kind():
    assert sorted(ATTRIBUTE_PATCHES + IMPORT_PATCHES) == sorted(p.name for p in patches.PATCHES)


@pytest.fixture(params=ATTRIBUTE_PATCHES)
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


@pytest.mark.parametrize("name", IMPORT_PATCHES)
def test_each_import_hook_is_guarded_by_version_and_opt_out(monkeypatch, name):
    """An import-hook patch's installer adds its finder only when allowed, once, and reports whether the
    installed stack needs it; the start-up (.pth) path checks the same opt-out variable."""
    patch = next(p for p in patches.PATCHES if p.name == name)
    module = importlib.import_module(patch.installer.split(":")[0])
    installer = patches._installer(patch)
    finder_type = module._FINDERS[name]
    assert patch.why and patch.opt_out.startswith("MLAGENTS_PLUGINS_") and patch.versions == ("1.1.0",)
    assert module.OPT_OUT[name] == patch.opt_out and module.VERSIONS == patch.versions
    assert isinstance(module.ORIGINAL, dict)
    saved = list(sys.meta_path)
    try:
        monkeypatch.setenv(patch.opt_out, "1")
        assert installer() is False and module.finder(name) is None
        monkeypatch.delenv(patch.opt_out)
        monkeypatch.setattr(patches, "mlagents_version", lambda: "0.0.0")
        assert installer() is False and module.finder(name) is None
        monkeypatch.setattr(patches, "mlagents_version", lambda: "1.1.0")
        active = installer()
        assert active is module.NEEDED[name]()
        assert installer() is active  # idempotent
        assert sum(isinstance(f, finder_type) for f in sys.meta_path) == 1
        assert module.finder(name).check_guard is False
    finally:
        sys.meta_path[:] = saved


def test_the_start_up_hook_checks_the_same_guard(monkeypatch):
    import mlagents_plugins_boot as boot

    monkeypatch.setitem(sys.modules, "fake_mlagents_pkg", type(sys)("fake_mlagents_pkg"))
    sys.modules["fake_mlagents_pkg"].__version__ = "1.1.0"
    for name, patch in ((p.name, p) for p in patches.PATCHES if p.kind == "import"):
        monkeypatch.delenv(patch.opt_out, raising=False)
        assert boot._boot_allowed(name, "fake_mlagents_pkg") is True
        monkeypatch.setenv(patch.opt_out, "1")
        assert boot._boot_allowed(name, "fake_mlagents_pkg") is False
        monkeypatch.delenv(patch.opt_out)
        sys.modules["fake_mlagents_pkg"].__version__ = "0.0.0"
        assert boot._boot_allowed(name, "fake_mlagents_pkg") is False
        sys.modules["fake_mlagents_pkg"].__version__ = "1.1.0"


def test_targets_exist_in_the_installed_mlagents_and_names_are_unique():
    assert len({p.name for p in patches.PATCHES}) == len(patches.PATCHES)
    assert len({p.opt_out for p in patches.PATCHES}) == len(patches.PATCHES)
    for patch in patches.PATCHES:
        if patch.kind == "import":
            assert _import_targets(patch.target), patch.target
            continue
        owner, attr_name = _owner_and_attr(patch.target)
        assert attr_name in owner.__dict__, patch.target


def test_the_mlagents_learn_hook_installs_every_listed_patch(monkeypatch):
    seen = []
    monkeypatch.setattr(patches, "_installer", lambda p: (lambda: seen.append(p.name) or True))
    monkeypatch.setenv(lifetime.TRAINER_PID_ENV, "")  # restored afterwards: the hook names this process
    assert plugin_hooks.stats_writers(None) == []
    assert seen == [p.name for p in patches.PATCHES]
    assert os.environ[lifetime.TRAINER_PID_ENV] == str(os.getpid())
