"""Where the CPU of a ``bench gym`` run goes: by process and, inside the trainer, by phase (issue #55).

One ``mlagents-learn`` run per ``--agents`` value on a Gymnasium task's stand-in build (``--num-areas`` copies of the
task, one agent each) with the ``configs/gym/<trainer>_<task>.yaml`` settings (``max_steps`` = ``--steps``,
``buffer_init_steps`` = ``--buffer-init-steps``, summaries every ``--summary-freq``, one checkpoint at the end),
run as ``python -m bench profile`` runs it (``bench.profiling.child``: ML-Agents' own ``learn.main()`` with the
phase sampler) and timed as ``python -m bench gym`` times it (``bench.gym.run_child``: the process tree's CPU and
its split by process).  Each run's record (phases in CPU s, ``cpu_by_process``, the most sampled stacks of the
non-update phases) is appended to ``--out``; a table of CPU seconds per 1000 env steps is printed.

    python -m bench gym-split --trainer fast_sac --task HalfCheetah-v5 --agents 1 8 --steps 6000 \\
        --buffer-init-steps 1000 --out /tmp/split.jsonl

The torch.compile cache is the user's own (as a second run on a machine finds it); the compile column says what
tracing and cache lookups still cost.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
from typing import Any, Dict, List, Optional

from bench import gym as bench_gym
from bench.profiling import CHILD_CODE, COLUMNS, phases_of
from bench.profiling.child import INTERVAL_ENV, OUT_ENV, STACKS_ENV

PER_STEP = ("env", "host", "inference", "intake", "stats")


def run_config(trainer: str, env_id: str, steps: int, buffer_init_steps: Optional[int], summary_freq: int,
               overrides: Dict[str, Any]) -> Dict[str, Any]:
    """The behavior block: the gym config with the run's length, one checkpoint, no replay saved."""
    import yaml

    with open(bench_gym.config_path(trainer, env_id)) as f:
        raw = yaml.safe_load(f)
    (behavior, cfg), = raw["behaviors"].items()
    cfg.update(max_steps=steps, summary_freq=summary_freq, checkpoint_interval=10 * steps, keep_checkpoints=1)
    if buffer_init_steps is not None:
        cfg["hyperparameters"]["buffer_init_steps"] = buffer_init_steps
    cfg["hyperparameters"].update(overrides)
    return {"behaviors": {behavior: cfg}}


def profile_run(trainer: str, env_id: str, agents: int, args: argparse.Namespace, builds: str) -> Dict[str, Any]:
    import yaml

    from mlagents_plugins.testing.ports import free_base_port

    config = run_config(trainer, env_id, args.steps, args.buffer_init_steps, args.summary_freq, args.overrides)
    (behavior, cfg), = config["behaviors"].items()
    record: Dict[str, Any] = {"trainer": trainer, "task": env_id, "agents": agents, "max_steps": args.steps,
                              "config": cfg, "note": args.note, "python": sys.version.split()[0], "error": None}
    try:
        import google.protobuf

        record["protobuf"] = google.protobuf.__version__
    except ImportError:
        pass
    work = tempfile.mkdtemp(prefix="gym_split_")
    try:
        cfg_path, result_path = os.path.join(work, "config.yaml"), os.path.join(work, "profile.json")
        with open(cfg_path, "w") as f:
            yaml.safe_dump(config, f)
        cmd = [sys.executable, "-c", CHILD_CODE, cfg_path, f"--env={os.path.join(builds, behavior)}", "--run-id=run",
               f"--results-dir={work}", f"--base-port={free_base_port(1)}", "--num-envs=1",
               f"--num-areas={agents}", "--no-graphics", "--seed=0", "--force", "--torch-device=cpu"]
        env = dict(bench_gym.child_env(), **{OUT_ENV: result_path, INTERVAL_ENV: str(args.interval_s),
                                            STACKS_ENV: str(args.stacks)})
        by_process: Dict[str, float] = {}
        code, wall, cpu = bench_gym.run_child(cmd, os.path.join(work, "learn.log"), env, work,
                                              bench_gym.LEARN_TIMEOUT_S, by_process)
        if code != 0 or not os.path.isfile(result_path):
            with open(os.path.join(work, "learn.log"), errors="replace") as f:
                raise RuntimeError(f"mlagents-learn exited with {code}: {f.read()[-2000:]}")
        with open(result_path) as f:
            child = json.load(f)
        record.update(wall_s=wall, cpu_s=cpu, cpu_by_process=by_process, steps=sum(child["steps"].values()),
                      phases=phases_of(child, cpu), samples=child["samples"], top_stacks=child.get("top_stacks", {}),
                      profiler_cpu_s=child["handler_cpu_s"] + child.get("snapshot_cpu_s", 0.0))
    except Exception as err:  # noqa: BLE001 - recorded
        record["error"] = f"{type(err).__name__}: {err}"[:3000]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return record


def table(records: List[Dict[str, Any]]) -> List[str]:
    """CPU seconds per 1000 env steps: by process, then the trainer by phase."""
    roles = bench_gym.PROCESS_ROLES
    head = (["agents", "note", "steps", "steps / CPU s", "total"] + [f"proc {r}" for r in roles]
            + list(COLUMNS) + ["per-step"])
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in records:
        if r.get("error"):
            lines.append(f"| {r['agents']} | {r.get('note', '')} | error: {r['error'][:200]} |")
            continue
        k = 1000.0 / r["steps"]
        cells = [str(r["agents"]), r.get("note", ""), str(r["steps"]), f"{r['steps'] / r['cpu_s']:.1f}",
                 f"{r['cpu_s'] * k:.2f}"]
        cells += [f"{r['cpu_by_process'].get(role, 0.0) * k:.2f}" for role in roles]
        cells += [f"{r['phases'][c] * k:.2f}" for c in COLUMNS]
        cells.append(f"{sum(r['phases'][c] for c in PER_STEP) * k:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench gym-split", description=__doc__.split("\n\n")[0])
    p.add_argument("--trainer", default="fast_sac", choices=bench_gym.ML_TRAINERS)
    p.add_argument("--task", default="HalfCheetah-v5")
    p.add_argument("--agents", type=int, nargs="+", default=[1, 8], help="task copies, one agent each")
    p.add_argument("--steps", type=int, default=6000)
    p.add_argument("--buffer-init-steps", type=int, default=1000)
    p.add_argument("--summary-freq", type=int, default=1000)
    p.add_argument("--interval-s", type=float, default=0.005)
    p.add_argument("--stacks", type=int, default=12)
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="hyperparameters (YAML values)")
    p.add_argument("--note", default="", help="a label kept in each record (e.g. the change measured)")
    p.add_argument("--out", required=True, help="JSON lines file the records are appended to")
    args = p.parse_args(argv)
    if min(args.agents) < 1 or args.steps < 1:
        p.error("--agents and --steps must be >= 1")
    import yaml

    args.overrides = {}
    for pair in args.set:
        key, sep, value = pair.partition("=")
        if not sep:
            p.error(f"--set {pair!r}: give KEY=VALUE")
        args.overrides[key] = yaml.safe_load(value)
    from mlagents_plugins.envs.standin import write_gym_build

    builds = tempfile.mkdtemp(prefix="gym_split_builds_")
    records = []
    try:
        write_gym_build(builds, args.task)
        for agents in args.agents:
            record = profile_run(args.trainer, args.task, agents, args, builds)
            with open(args.out, "a") as f:
                f.write(json.dumps(record) + "\n")
            records.append(record)
            print(f"[gym_split] {agents} agents: " + (record["error"] or
                  f"{record['steps']} steps, {record['cpu_s']:.1f} CPU s"), flush=True)
    finally:
        shutil.rmtree(builds, ignore_errors=True)
    print("\n".join(table(records)))
    return 1 if any(r.get("error") for r in records) else 0

