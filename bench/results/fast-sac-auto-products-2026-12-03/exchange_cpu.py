"""CPU per environment step of the Python side of ML-Agents' protocol (UnityEnvironment stepping the HalfCheetah-v5
stand-in build with random actions, our host patches installed as mlagents-learn installs them), by process.
usage: exchange_cpu.py BUILD STEPS   (env vars under test are inherited by both processes)"""
import os, sys, time, json
import numpy as np
build, steps = sys.argv[1], int(sys.argv[2])
from mlagents_plugins.host import patches
patches.install_all()
from mlagents_envs.environment import UnityEnvironment
env = UnityEnvironment(file_name=build, no_graphics=True, base_port=int(os.environ.get("PORT", "5101")), seed=0)
env.reset()
name = list(env.behavior_specs)[0]
spec = env.behavior_specs[name]
rng = np.random.default_rng(0)
from mlagents_envs.base_env import ActionTuple
def step():
    d, t = env.get_steps(name)
    if len(d) > 0:
        env.set_actions(name, ActionTuple(continuous=rng.uniform(-1, 1, (len(d), spec.action_spec.continuous_size)).astype(np.float32)))
    env.step()
for _ in range(200):
    step()
TICK = os.sysconf("SC_CLK_TCK")
def stat_cpu(path):
    f = open(path).read().rsplit(")", 1)[1].split(); return (int(f[11]) + int(f[12])) / TICK
def kids(pid):
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        for c in open(f"/proc/{pid}/task/{tid}/children").read().split():
            out += [int(c)] + kids(int(c))
    return out
def threads():
    return {t: stat_cpu(f"/proc/self/task/{t}/stat") for t in os.listdir("/proc/self/task")}
me = os.getpid(); kid = kids(me)
def cpu(p): return stat_cpu(f"/proc/{p}/stat")
c0 = {p: cpu(p) for p in kid}; s0 = time.process_time(); w0 = time.perf_counter()
th0 = threads()
for _ in range(steps):
    step()
th1 = threads()
s1 = time.process_time(); c1 = {p: cpu(p) for p in kid}; w1 = time.perf_counter()
threads = sorted(((th1[k] - th0.get(k, 0)) / steps * 1e3 for k in th1), reverse=True)
out = {"env": {k: v for k, v in os.environ.items() if k.startswith("GRPC")}, "steps": steps,
       "server_ms": round((s1 - s0) / steps * 1e3, 4), "build_ms": round(sum(c1[k] - c0[k] for k in c1) / steps * 1e3, 4),
       "wall_ms": round((w1 - w0) / steps * 1e3, 4), "server_threads_ms": [round(x, 4) for x in threads[:8]]}
print(json.dumps(out), flush=True)
env.close()
