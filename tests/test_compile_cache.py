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
