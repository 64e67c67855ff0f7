"""``compile_cache``: torch.compile's caches live per machine kind under the user's cache folder.

A user's own ``TORCHINDUCTOR_CACHE_DIR`` wins; every fact a cache entry depends on (torch build, Python, processor
and its vector instructions) changes the folder; a second process that compiles the same step through
``CompiledStep`` finds the first one's graph in that folder (Inductor's FX graph cache reports a hit).
"""
import json
import os
import subprocess
import sys

import pytest

from mlagents_plugins.common import compile_cache

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_fact_changes_the_folder():
    facts = compile_cache.machine_facts()
    assert facts["inductor_vec_isa"] and facts["cpu"] and facts["torch"]
    base = compile_cache.cache_folder(facts)
    assert base == compile_cache.cache_folder(dict(facts))  # deterministic
    for name in facts:
        changed = dict(facts, **{name: f"{facts[name]}-other"})
        assert compile_cache.cache_folder(changed) != base, name


def test_cpu_identity_reads_model_and_flags():
    if not os.path.exists("/proc/cpuinfo"):
        pytest.skip("no /proc/cpuinfo")
    ident = json.loads(compile_cache.cpu_identity())
    assert "flags" in ident or "Features" in ident


def test_user_choice_wins_and_the_default_is_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    mine = str(tmp_path / "mine")
    monkeypatch.setenv(compile_cache.CACHE_ENV, mine)
    assert compile_cache.use_machine_cache() == mine and os.environ[compile_cache.CACHE_ENV] == mine
    for start in (None, compile_cache._torch_default()):  # unset, or set to torch's default by torch itself
        if start is None:
            monkeypatch.delenv(compile_cache.CACHE_ENV)
        else:
            monkeypatch.setenv(compile_cache.CACHE_ENV, start)
        folder = compile_cache.use_machine_cache()
        assert folder == os.environ[compile_cache.CACHE_ENV] == compile_cache.cache_folder()
        assert folder.startswith(str(tmp_path / "xdg" / "mlagents_plugins" / "torchinductor"))
        assert os.path.isdir(folder)


def test_an_unwritable_cache_home_keeps_torchs_default(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.delenv(compile_cache.CACHE_ENV, raising=False)
    assert compile_cache.use_machine_cache() is None
    assert compile_cache.CACHE_ENV not in os.environ


CHILD = r"""
import json, sys
from mlagents.torch_utils import torch
from torch._dynamo.utils import counters
from mlagents_plugins.common.compiled_step import CompiledStep
def loss(x, w):
    return (torch.tanh(x @ w) ** 2).mean(), x.sum()
step = CompiledStep(loss, True, "cache test")
w = torch.ones(8, 8) / 8
step(torch.arange(32.0).reshape(4, 8), w)
print(json.dumps({"mode": step.mode, "hit": counters["inductor"]["fxgraph_cache_hit"],
                  "miss": counters["inductor"]["fxgraph_cache_miss"],
                  "dir": __import__("os").environ.get("TORCHINDUCTOR_CACHE_DIR")}))
"""


def test_a_second_process_finds_the_first_ones_graph(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in (compile_cache.CACHE_ENV, "MLAGENTS_PLUGINS_COMPILE")}
    env.update(XDG_CACHE_HOME=str(tmp_path / "xdg"), PYTHONPATH=REPO)
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=600,
                              cwd=str(tmp_path))
        assert done.returncode == 0, done.stderr[-3000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert first["mode"] == second["mode"] == "compiled"
    assert first["dir"] == second["dir"] and first["dir"].startswith(str(tmp_path / "xdg"))
    assert first["miss"] >= 1 and first["hit"] == 0
    assert second["hit"] >= 1 and second["miss"] == 0


# ---------------------------------------------------------------------------------------------- isa_probe_memo
class _CountingProbe:
    """Stands in for torch's ``VecISA._probe_load``: counts calls, answers ``passes``."""

    def __init__(self, passes: bool):
        self.passes, self.calls = passes, 0

    def __call__(self, isa, output_path):
        self.calls += 1
        return self.passes


@pytest.fixture
def fake_probe(monkeypatch):
    from torch._inductor.cpu_vec_isa import VecISA

    if not hasattr(VecISA, "_probe_load"):
        pytest.skip("this torch probes the ISA inline (no VecISA._probe_load)")

    def install(passes: bool) -> _CountingProbe:
        probe = _CountingProbe(passes)
        monkeypatch.setattr(VecISA, "_probe_load", probe)  # restored after the test, wrapper and all
        return probe

    return install


def test_a_passed_isa_probe_is_remembered_until_a_fact_changes(tmp_path, fake_probe):
    from torch._inductor.cpu_vec_isa import VecISA

    probe = fake_probe(True)
    library = tmp_path / "isa_test.so"
    library.write_bytes(b"\x7fELF not really")
    assert compile_cache.remember_isa_probes() and compile_cache.remember_isa_probes()  # idempotent
    assert VecISA._probe_load.__wrapped__ is probe
    assert VecISA._probe_load(None, str(library)) is True and probe.calls == 1
    marker = tmp_path / ("isa_test.so" + compile_cache.PROBE_OK_SUFFIX)
    assert marker.read_text() == compile_cache._probe_facts_hash(str(library))
    assert VecISA._probe_load(None, str(library)) is True and probe.calls == 1  # remembered: no probe
    # the library rebuilt (another size, another time): probed again, and the new facts recorded
    library.write_bytes(b"\x7fELF rebuilt, longer")
    os.utime(library, ns=(1, 1))
    assert VecISA._probe_load(None, str(library)) is True and probe.calls == 2
    assert VecISA._probe_load(None, str(library)) is True and probe.calls == 2
    # a record of other facts (another processor or torch sharing the folder): probed again
    marker.write_text("0" * 64)
    assert VecISA._probe_load(None, str(library)) is True and probe.calls == 3


def test_a_failed_isa_probe_is_never_remembered(tmp_path, fake_probe):
    from torch._inductor.cpu_vec_isa import VecISA

    probe = fake_probe(False)
    library = tmp_path / "isa_test.so"
    library.write_bytes(b"broken")
    assert compile_cache.remember_isa_probes()
    assert VecISA._probe_load(None, str(library)) is False
    assert VecISA._probe_load(None, str(library)) is False and probe.calls == 2
    assert not (tmp_path / ("isa_test.so" + compile_cache.PROBE_OK_SUFFIX)).exists()
    missing = str(tmp_path / "gone.so")  # no library: torch's probe answers, nothing is written
    assert VecISA._probe_load(None, missing) is False and probe.calls == 3
    assert not os.path.exists(missing + compile_cache.PROBE_OK_SUFFIX)


def test_isa_probe_memo_is_guarded_by_version_and_opt_out(monkeypatch, fake_probe):
    from torch._inductor.cpu_vec_isa import VecISA

    from mlagents_plugins.host import patches

    probe = fake_probe(True)
    monkeypatch.setenv("MLAGENTS_PLUGINS_PROBE_ISA_EVERY_RUN", "1")
    assert not compile_cache.remember_isa_probes() and VecISA._probe_load is probe
    monkeypatch.delenv("MLAGENTS_PLUGINS_PROBE_ISA_EVERY_RUN")
    monkeypatch.setattr(patches, "mlagents_version", lambda: "0.0.0")
    assert not compile_cache.remember_isa_probes() and VecISA._probe_load is probe


PICK_ISA_CODE = """
import json, subprocess, sys
from mlagents_plugins.common import compile_cache
compile_cache.remember_isa_probes()
probes = []
real_run = subprocess.run
def counting_run(cmd, *args, **kwargs):
    if isinstance(cmd, (list, tuple)) and len(cmd) > 1 and cmd[0] == sys.executable and cmd[1] == "-c":
        probes.append(cmd)
    return real_run(cmd, *args, **kwargs)
subprocess.run = counting_run
from torch._inductor.cpu_vec_isa import pick_vec_isa
print(json.dumps({"isa": str(pick_vec_isa()), "probes": len(probes)}))
"""


def test_a_second_process_picks_the_same_isa_without_probe_processes(tmp_path):
    """Three fresh processes sharing one Inductor cache folder: the first probes (one Python process per test
    library), the second picks the same instruction set with none, the third (switch off) probes as torch does."""

    def pick(extra_env=None):
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"),
                   PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""), **(extra_env or {}))
        done = subprocess.run([sys.executable, "-c", PICK_ISA_CODE], env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = pick()
    if first["probes"] == 0:
        pytest.skip(f"torch probed no ISA test library here ({first['isa']})")
    second = pick()
    assert second == {"isa": first["isa"], "probes": 0}
    assert pick({"MLAGENTS_PLUGINS_PROBE_ISA_EVERY_RUN": "1"}) == first
