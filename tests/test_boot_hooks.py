"""The import-time fixes of ``mlagents_plugins_boot``: ML-Agents' message modules rebuilt for protobuf 4-6 (same
names, same bytes as the modules mlagents-envs ships), refused protobuf versions, and numpy 2's np.float."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy
import pytest
from google.protobuf import __version__ as PROTOBUF_VERSION
from google.protobuf import descriptor_pb2

import mlagents_plugins_boot as boot
from mlagents_plugins.testing import protobuf_dump

ROOT = Path(__file__).resolve().parents[1]
VECTORS = json.loads((ROOT / "tests" / "data" / "protobuf_vectors.json").read_text())
MODE = boot.protobuf_mode()


def _run(code, env_extra=None, drop=()):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLAGENTS_PLUGINS_") and k not in drop}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)


def _dump(env_extra=None):
    # run by path: importing the mlagents_plugins package would import torch (slow) and install the hooks itself
    proc = _run(f"import runpy; runpy.run_path({protobuf_dump.__file__!r}, run_name='__main__')", env_extra)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("module", protobuf_dump.module_names())
def test_each_shipped_module_embeds_one_descriptor_of_its_own_proto_file(module):
    source = Path(boot.ORIGINAL[module].origin if module in boot.ORIGINAL else
                  __import__("importlib").util.find_spec(module).origin).read_text(encoding="utf-8")
    proto = descriptor_pb2.FileDescriptorProto.FromString(boot.serialized_file(source))
    assert proto.name == module.replace(".", "/")[: -len("_pb2")] + ".proto"
    assert proto.message_type or proto.enum_type or proto.service


def test_a_source_without_exactly_one_descriptor_is_an_error_not_a_guess():
    with pytest.raises(ImportError, match="found 0"):
        boot.serialized_file("x = 1\n")
    two = "a = _p.AddSerializedFile(b'x')\nb = _d.FileDescriptor(serialized_pb=_b('y'))\n"
    with pytest.raises(ImportError, match="found 2"):
        boot.serialized_file(two)
    assert boot.serialized_file("D = FileDescriptor(name='n', serialized_pb=_b('\\xe9\\n'))") == b"\xe9\n"


@pytest.mark.parametrize(
    "version, force, expected",
    [
        ("3.6.1", False, "original"),
        ("3.19.6", True, "original"),  # no internal.builder before 3.20: cannot rebuild even when asked
        ("3.20.3", False, "original"),
        ("3.20.3", True, "rebuild"),
        ("4.21.0", False, "rebuild"),
        ("4.25.8", False, "rebuild"),
        ("5.29.5", False, "rebuild"),
        ("6.33.1", False, "rebuild"),
        ("7.0.0", False, "refuse"),
        ("7.34.0", True, "refuse"),
        ("dev", False, "refuse"),
    ],
)
def test_protobuf_mode_by_version(monkeypatch, version, force, expected):
    monkeypatch.delenv(boot.FORCE_REBUILD, raising=False)
    if force:
        monkeypatch.setenv(boot.FORCE_REBUILD, "1")
    assert boot.protobuf_mode(version) == expected


def test_the_modules_this_process_uses_match_the_shipped_ones_byte_for_byte():
    """Whatever this stack gives (rebuilt on protobuf 4-6, the originals on 3.20): same names, and every message,
    filled field by field, serializes to the bytes the original modules produced under protobuf 3.20."""
    here = _dump()
    expected_loader = "_RebuildLoader" if MODE == "rebuild" else "SourceFileLoader"
    assert set(here["modules"]) == set(VECTORS["modules"])
    for name, module in VECTORS["modules"].items():
        got = here["modules"][name]
        assert got["loader"] == expected_loader, name
        assert got["names"] == module["names"], name
        assert got["messages"] == module["messages"], name
        for message, data in got["messages"].items():
            assert data["filled"] == data["reparsed"], message
    filled = [m["filled"] for module in here["modules"].values() for m in module["messages"].values()]
    assert sum(bool(data) for data in filled) >= len(filled) - 2  # only field-less messages serialize to b""
    if MODE == "rebuild":
        assert here["implementation"] == "upb", "protobuf 4+ should run its compiled backend"


@pytest.mark.skipif(MODE != "original", reason="needs a protobuf that loads the shipped modules (3.20)")
def test_rebuilt_modules_match_the_originals_on_this_protobuf():
    """The same comparison within one process stack: the shipped modules against the ones the hook builds when
    forced to (protobuf 3.20; on 4-6 the test above compares with the vectors those modules produced)."""
    original = _dump()
    rebuilt = _dump({boot.FORCE_REBUILD: "1"})
    assert original["protobuf"] == rebuilt["protobuf"] == PROTOBUF_VERSION
    for name, module in original["modules"].items():
        assert module["loader"] == "SourceFileLoader"
        assert rebuilt["modules"][name]["loader"] == "_RebuildLoader"
        assert rebuilt["modules"][name]["names"] == module["names"], name
        assert rebuilt["modules"][name]["messages"] == module["messages"], name


@pytest.mark.skipif(MODE != "rebuild", reason="protobuf 3.20 loads the shipped modules")
def test_without_the_hook_this_protobuf_refuses_the_shipped_modules():
    proc = _run("import mlagents_envs.communicator_objects.header_pb2", {boot.OPT_OUT[boot.PROTOBUF]: "1"})
    assert proc.returncode != 0 and "Descriptors cannot be created directly" in proc.stderr


def test_mlagents_learn_imports_the_rebuilt_modules_before_anything_of_ours():
    """mlagents-learn's console script imports mlagents.trainers.learn first; the .pth hook must already act."""
    proc = _run(
        "import sys; from mlagents.trainers.learn import main\n"
        "m = sys.modules['mlagents_envs.communicator_objects.unity_rl_output_pb2']\n"
        "print(type(m.__spec__.loader).__name__, 'mlagents_plugins' in sys.modules)"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    loader, ours_imported = proc.stdout.split()
    assert loader == ("_RebuildLoader" if MODE == "rebuild" else "SourceFileLoader")
    assert ours_imported == "False"  # the hook came from the .pth file, not from importing our package


@pytest.mark.parametrize("entry", ["import mlagents_envs.environment", "from mlagents.trainers.learn import main"])
def test_an_unknown_protobuf_is_refused_with_one_line_naming_both_versions(entry):
    proc = _run(f"import google.protobuf as p; p.__version__ = '7.1.0'\n{entry}")
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if line.strip() and "pkg_resources" not in line]
    assert lines == [boot.refusal("7.1.0")], proc.stderr[-3000:]
    assert "7.1.0" in lines[0] and "4.21 to 6.x" in lines[0] and "Traceback" not in proc.stderr


def test_a_caught_refusal_is_an_ordinary_import_error():
    proc = _run(
        "import google.protobuf as p; p.__version__ = '7.1.0'\n"
        "import mlagents_plugins_boot as b\n"
        "try:\n    import mlagents_envs.communicator_objects.header_pb2\n"
        "except ImportError as e:\n    print(isinstance(e, b.UnsupportedProtobuf), e)\n"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == f"True {boot.refusal('7.1.0')}"


@pytest.mark.skipif(not boot.numpy_needs_aliases(), reason="numpy < 1.24 still has np.float")
def test_mlagents_buffer_imports_on_numpy_2_and_numpy_is_left_as_it_was():
    proc = _run(
        "import numpy, mlagents.trainers.buffer as b, inspect\n"
        "print(hasattr(numpy, 'float'), inspect.signature(b.AgentBufferField.padded_to_batch).parameters['pad_value'].annotation)"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["False", "<class", "'float'>"]
    off = _run("import mlagents.trainers.buffer", {boot.OPT_OUT[boot.NUMPY]: "1"})
    assert off.returncode != 0 and "np.float" in off.stderr or "attribute 'float'" in off.stderr


def test_numpy_alias_is_needed_exactly_from_numpy_1_24():
    major, minor = (int(x) for x in numpy.__version__.split(".")[:2])
    assert boot.numpy_needs_aliases() == ((major, minor) >= (1, 24))


def test_grouped_entry_points_hold_the_same_entry_points_as_importlib_metadata():
    import importlib.metadata

    groups = boot.ENTRY_POINTS_BY_GROUP.entry_points()
    assert isinstance(groups, dict)
    flat = sorted((ep.group, ep.name, ep.value) for eps in groups.values() for ep in eps)
    found = importlib.metadata.entry_points()
    every = [ep for eps in found.values() for ep in eps] if isinstance(found, dict) else list(found)
    assert flat == sorted((ep.group, ep.name, ep.value) for ep in every)
    assert {ep.name for ep in groups["mlagents.trainer_type"]} >= {"fast_sac", "taac", "impala", "muzero_repr"}
    assert boot.ENTRY_POINTS_BY_GROUP.version("mlagents") == "1.1.0"  # everything else is importlib.metadata's


def test_mlagents_registers_our_trainer_plugins_on_this_python():
    proc = _run(
        "from mlagents.plugins.trainer_type import register_trainer_plugins\n"
        "from mlagents.plugins.stats_writer import register_stats_writer_plugins\n"
        "from mlagents.trainers.settings import RunOptions\n"
        "types, _ = register_trainer_plugins()\n"
        "register_stats_writer_plugins(RunOptions())\n"
        "print(sorted(types))"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "fast_sac" in proc.stdout and "muzero_repr" in proc.stdout and "ppo" in proc.stdout
    if boot.entry_points_need_groups():
        off = _run("from mlagents.plugins.trainer_type import register_trainer_plugins as r; r()",
                   {boot.OPT_OUT[boot.ENTRY_POINTS]: "1"})
        assert off.returncode != 0 and "_key" in off.stderr  # what mlagents does on 3.12+ without the hook
