"""The CPU of a short mlagents-learn run of fast_sac on HalfCheetah-v5 (300 steps: start-up, 300 steps of acting before
any update, the final save and exit), with and without a start-up switch, alternating.

usage: python startup_ab.py ROUNDS OUT.jsonl [VARIABLE]   (VARIABLE=1 in the "off" runs; default the ISA probe memo's)

Each record: the process tree's CPU (``bench.gym.run_child``, as ``bench gym`` counts a run) and its split by process.
"""
import json
import os
import sys
import tempfile

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, REPO)
from bench import gym as bench_gym  # noqa: E402
from mlagents_plugins.envs.standin import write_gym_build  # noqa: E402
from mlagents_plugins.testing.ports import free_base_port  # noqa: E402

STEPS = 300


def one_run(work: str, switch_off: bool, variable: str) -> dict:
    builds = os.path.join(work, "builds")
    write_gym_build(builds, "HalfCheetah-v5")

    class Args:
        steps, eval_every, buffer_init_steps, overrides = STEPS, 10 ** 6, None, []

    config = bench_gym.ml_config("fast_sac", "HalfCheetah-v5", Args())
    (behavior, _), = config["behaviors"].items()
    with open(os.path.join(work, "config.yaml"), "w") as f:
        yaml.safe_dump(config, f)
    learn = os.path.join(os.path.dirname(sys.executable), "mlagents-learn")
    cmd = [learn, os.path.join(work, "config.yaml"), f"--env={os.path.join(builds, behavior)}", "--run-id=run",
           f"--results-dir={work}", f"--base-port={free_base_port(1)}", "--num-envs=1", "--no-graphics", "--seed=0",
           "--force", "--torch-device=cpu"]
    env = bench_gym.child_env()
    env.pop(variable, None)
    if switch_off:
        env[variable] = "1"
    by_process: dict = {}
    code, wall, cpu = bench_gym.run_child(cmd, os.path.join(work, "learn.log"), env, work, 900, by_process)
    return {"switch_off": switch_off, "variable": variable, "steps": STEPS, "rc": code, "wall_s": round(wall, 3),
            "tree_cpu_s": round(cpu, 3), "by_process": {k: round(v, 3) for k, v in by_process.items()}}


def main() -> int:
    rounds, out = int(sys.argv[1]), sys.argv[2]
    variable = sys.argv[3] if len(sys.argv) > 3 else "MLAGENTS_PLUGINS_PROBE_ISA_EVERY_RUN"
    for r in range(rounds):
        order = (False, True) if r % 2 == 0 else (True, False)
        for switch_off in order:
            with tempfile.TemporaryDirectory() as work:
                record = dict(one_run(work, switch_off, variable), round=r)
            print(json.dumps(record), flush=True)
            with open(out, "a") as f:
                f.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
