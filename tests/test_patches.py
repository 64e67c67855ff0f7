"""Every change to ML-Agents' behaviour is listed in ``patches``, guarded by version and switched off by its
variable; the list is the one the mlagents-learn hook installs."""
import fnmatch
import importlib
import importlib.util
import os
import pkgutil
import sys

import pytest

from mlagents_plugins.host import hook, patches
from mlagents_plugins.util import process_lifetime


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
PROCESS_PATCHES = [p.name for p in patches.PATCHES if p.kind == "process"]


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
    assert sorted(ATTRIBUTE_PATCHES + IMPORT_PATCHES + PROCESS_PATCHES) == sorted(p.name for p in patches.PATCHES)


@pytest.fixture(params=ATTRIBUTE_PATCHES)
def patch_and_original(request):
    """A patch with its target put back to ML-Agents' original (each installer module keeps ``ORIGINAL``)."""
    patch = next(p for p in patches.PATCHES if p.name == request.param)
    owner, attr_name = _owner_and_attr(patch.target)
    installed = owner.__dict__.get(attr_name) or getattr(owner, attr_name)  # (an inherited method: the base's)
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
        if patch.kind == "process":  # a setting of the process, not an attribute of ML-Agents
            continue
        owner, attr_name = _owner_and_attr(patch.target)
        assert attr_name in owner.__dict__, patch.target


def test_the_mlagents_learn_hook_installs_every_listed_patch(monkeypatch):
    seen = []
    monkeypatch.setattr(patches, "_installer", lambda p: (lambda: seen.append(p.name) or True))
    monkeypatch.setenv(process_lifetime.TRAINER_PID_ENV, "")  # restored afterwards: the hook names this process
    assert hook.stats_writers(None) == []
    assert seen == [p.name for p in patches.PATCHES]
    assert os.environ[process_lifetime.TRAINER_PID_ENV] == str(os.getpid())


def test_importing_the_package_installs_no_patch():
    """Only the entry points install patches: a fresh interpreter that imports the package (and torch, mlagents)
    finds ML-Agents' own ONNX export in place."""
    import subprocess

    code = (
        "import mlagents_plugins, mlagents_plugins.host.onnx_export as o\n"
        "from mlagents.trainers.torch_entities.model_serialization import ModelSerializer\n"
        "assert ModelSerializer.export_policy_model is o.ORIGINAL, ModelSerializer.export_policy_model\n"
        "from mlagents_plugins.host import hook\n"
        "hook.stats_writers(None)\n"
        "assert ModelSerializer.export_policy_model is o.export_policy_model\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLAGENTS_PLUGINS_")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def test_kernel_switches_are_listed_apart_with_unique_names_and_variables():
    names = [p.name for p in patches.PATCHES + patches.KERNEL_SWITCHES]
    opt_outs = [p.opt_out for p in patches.PATCHES + patches.KERNEL_SWITCHES]
    assert len(set(names)) == len(names) and len(set(opt_outs)) == len(opt_outs)
    for switch in patches.KERNEL_SWITCHES:
        assert switch.kind in ("kernel", "compile") and switch.name not in [p.name for p in patches.PATCHES]
        assert switch.why and switch.opt_out.startswith("MLAGENTS_PLUGINS_") and switch.versions == ("1.1.0",)
        assert patches._installer(switch), switch.installer


def _swish_net():
    from mlagents.torch_utils import torch
    from mlagents.trainers.torch_entities.layers import Swish

    return torch.nn.Sequential(torch.nn.Linear(2, 2), Swish(), torch.nn.Sequential(torch.nn.Linear(2, 2), Swish()))


def test_fused_swish_is_guarded_by_version_and_opt_out(monkeypatch):
    from mlagents_plugins.common.fast_kernels import FusedSwish, fuse_swish_

    monkeypatch.setenv("MLAGENTS_PLUGINS_NO_FUSED_SWISH", "1")
    net = _swish_net()
    assert fuse_swish_(net) == 0 and not any(isinstance(m, FusedSwish) for m in net.modules())
    monkeypatch.delenv("MLAGENTS_PLUGINS_NO_FUSED_SWISH")
    monkeypatch.setattr(patches, "mlagents_version", lambda: "0.0.0")
    assert fuse_swish_(net) == 0
    monkeypatch.setattr(patches, "mlagents_version", lambda: "1.1.0")
    assert fuse_swish_(net) == 2 and sum(isinstance(m, FusedSwish) for m in net.modules()) == 2


def test_onednn_matmul_is_guarded_by_version_and_opt_out(monkeypatch):
    from mlagents.torch_utils import torch

    from mlagents_plugins.common import fast_kernels

    monkeypatch.setattr(fast_kernels, "onednn_fp32_matmul_available", lambda: True)  # as on an AVX-512 AMD CPU
    cpu = torch.device("cpu")
    assert fast_kernels.MatmulKernelChooser(cpu).active
    monkeypatch.setenv("MLAGENTS_PLUGINS_NO_ONEDNN_MATMUL", "1")
    chooser = fast_kernels.MatmulKernelChooser(cpu)
    assert not chooser.active and chooser.decided and chooser.use_onednn is False
    monkeypatch.delenv("MLAGENTS_PLUGINS_NO_ONEDNN_MATMUL")
    monkeypatch.setattr(patches, "mlagents_version", lambda: "0.0.0")
    assert not fast_kernels.MatmulKernelChooser(cpu).active


def test_malloc_thresholds_are_guarded_and_set_once(monkeypatch):
    """The process patch calls glibc's mallopt with both thresholds only when allowed; a C library without mallopt
    (not glibc) leaves the process as it is."""
    from mlagents_plugins.host import malloc_thresholds as mt

    calls = []
    monkeypatch.setattr(mt, "_active", False)
    monkeypatch.setattr(mt, "glibc_mallopt", lambda: (lambda param, value: calls.append((param, value)) or 1))
    monkeypatch.setenv("MLAGENTS_PLUGINS_MALLOC_DEFAULTS", "1")
    assert mt.install_malloc_thresholds() is False and calls == []
    monkeypatch.delenv("MLAGENTS_PLUGINS_MALLOC_DEFAULTS")
    monkeypatch.setattr(patches, "mlagents_version", lambda: "0.0.0")
    assert mt.install_malloc_thresholds() is False and calls == []
    monkeypatch.setattr(patches, "mlagents_version", lambda: "1.1.0")
    monkeypatch.setattr(mt, "glibc_mallopt", lambda: None)
    assert mt.install_malloc_thresholds() is False
    monkeypatch.setattr(mt, "glibc_mallopt", lambda: (lambda param, value: calls.append((param, value)) or 1))
    assert mt.install_malloc_thresholds() is True
    assert calls == [(-3, 32 * 1024 * 1024), (-1, 256 * 1024 * 1024)]  # M_MMAP_THRESHOLD, M_TRIM_THRESHOLD
    assert mt.install_malloc_thresholds() is True and len(calls) == 2  # once


def test_malloc_thresholds_keep_an_update_s_pages():
    """In a fresh process, 40 blocks of 256 KiB allocated, written and freed together (an update's temporaries)
    fault their pages in again at every round under glibc's defaults (the freed heap top exceeds the trim threshold
    glibc adjusted to twice 256 KiB), and not with the thresholds fixed (Linux with glibc only)."""
    import subprocess
    import textwrap

    from mlagents_plugins.host import malloc_thresholds as mt

    if mt.glibc_mallopt() is None:
        pytest.skip("not glibc")
    child = textwrap.dedent("""
        import ctypes, resource, sys
        from mlagents_plugins.host import malloc_thresholds as mt
        if sys.argv[1] == "fixed":
            mallopt = mt.glibc_mallopt()
            assert mallopt(mt.M_MMAP_THRESHOLD, mt.MMAP_THRESHOLD) == 1
            assert mallopt(mt.M_TRIM_THRESHOLD, mt.TRIM_THRESHOLD) == 1
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc.restype = ctypes.c_void_p
        libc.malloc.argtypes = [ctypes.c_size_t]
        libc.free.argtypes = [ctypes.c_void_p]
        size = 256 << 10
        faults = []
        for _ in range(6):
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            blocks = [libc.malloc(size) for _ in range(40)]
            for p in blocks:
                ctypes.memset(p, 1, size)
            for p in reversed(blocks):
                libc.free(p)
            faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
        print(min(faults[2:]))
    """)
    pages = 40 * (256 << 10) >> 12
    out = {mode: int(subprocess.run([sys.executable, "-c", child, mode], capture_output=True, text=True,
                                    check=True).stdout.split()[-1]) for mode in ("defaults", "fixed")}
    assert out["defaults"] >= pages // 2, out
    assert out["fixed"] < pages // 20, out


def test_docs_patches_page_lists_every_patch_and_switch_with_its_variable():
    """docs/patches.md mirrors the lists: each name in a table row's first cell with its switch-off variable."""
    docs = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "patches.md")
    with open(docs) as f:
        rows = [line for line in f if line.startswith("| `")]
    for patch in patches.PATCHES + patches.KERNEL_SWITCHES:
        row = [line for line in rows if line.startswith(f"| `{patch.name}` |")]
        assert len(row) == 1 and f"`{patch.opt_out}=1" in row[0], patch.name
