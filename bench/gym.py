"""``python -m bench gym``: our trainers and ML-Agents' built-in sac on Gymnasium MuJoCo tasks through real
``mlagents-learn`` (the ``configs/gym/`` YAMLs on the ``--gym-env`` stand-in build, one agent), with SB3's SAC and
sb3-contrib's CrossQ as same-machine peers (``bench/gym_peers.py``), against the published anchors (issue #45).

Evaluation as the papers do: every ``--eval-every`` steps, ``--eval-episodes`` episodes of the deterministic policy
on a separate copy of the task (seeded ``EVAL_SEED_OFFSET + seed``).  For the ML-Agents trainers that is the
checkpoint ONNX the run exported at that step (its deterministic action output, run in onnxruntime, scaled to the
task's bounds exactly as the build does) - the very artifact Unity runs; the step recorded is the checkpoint's.
The training return is the last console summary's mean episode return (SB3: the mean of the last 10 episodes).

Cost per run: wall seconds and CPU seconds of the run's process tree (``os.wait4`` of the child: its own and
every waited-for descendant's user+system time, so ``--jobs`` > 1 does not mix runs); evaluation is timed apart
(``eval_s``) and not counted in ``cpu_s``.  Env steps per CPU second = ``steps / cpu_s``.

One record per (trainer, task, seed) is appended to ``OUT/runs.jsonl`` as soon as the run ends; ``--continue``
skips every (trainer, scene, seed) that already has a record without ``error`` there, so an invocation cut short is
resumed by running it again.  ``OUT/REPORT.md`` (tables, the anchor table) and ``OUT/curves.png`` are rewritten
after every run; ``--report-only`` re-renders them from ``runs.jsonl``.
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from bench import resume
from bench.invocation import code_commit, machine, new_id, utc_now

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG_DIR = os.path.join(REPO, "configs", "gym")
ML_TRAINERS = ("fast_sac", "taac", "muzero_repr", "sac")
PEERS = ("sb3_sac", "sb3_crossq")
ALL_TRAINERS = ML_TRAINERS + PEERS
TASKS = ("HalfCheetah-v5", "Hopper-v5")
EVAL_SEED_OFFSET = 10_000
LEARN_TIMEOUT_S = 6 * 3600
#: the peer's program: a fresh interpreter calling bench.gym_peers.main with the arguments after ``-c``
PEER_MAIN = "import sys; from bench.gym_peers import main; sys.exit(main(sys.argv[1:]))"
ORIGIN = {"fast_sac": "ours", "taac": "ours", "muzero_repr": "ours", "sac": "builtin",
          "sb3_sac": "sb3", "sb3_crossq": "sb3"}
#: published evaluation returns (v4 tasks, 10 seeds): dojeon-ai/SimbaV2 results/baseline/*.csv; the MR.Q column
#: equals facebookresearch/MRQ results/gym_results.txt.  (mean, std) or mean only.
ANCHORS: Dict[Tuple[str, int], Dict[str, Any]] = {
    ("HalfCheetah", 100_000): {"SAC": (6156, 700), "CrossQ": (8112, 896), "MR.Q": 7872, "SimbaV2": 7328},
    ("HalfCheetah", 300_000): {"SAC": (8593, 964), "CrossQ": (10012, 1112), "MR.Q": 10835, "SimbaV2": 9892},
    ("Hopper", 100_000): {"SAC": (1103, 368), "CrossQ": (2764, 781), "MR.Q": 2249, "SimbaV2": 2821},
    ("Hopper", 300_000): {"SAC": (2160, 981), "CrossQ": (2644, 886), "MR.Q": 2469, "SimbaV2": 3502},
}
CONSOLE_LINE = re.compile(r"\b(?P<behavior>\w+)\. Step: (?P<step>\d+)\. Time Elapsed: (?P<secs>[0-9.]+) s\. "
                          r"Mean Reward: (?P<reward>-?(?:nan|inf|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?))\.")


def task_key(env_id: str) -> str:
    """``HalfCheetah-v5`` -> ``halfcheetah`` (the configs/gym/ file suffix)."""
    return re.sub(r"-v\d+$", "", env_id.rsplit("/", 1)[-1]).lower()


def config_path(trainer: str, env_id: str) -> str:
    return os.path.join(CONFIG_DIR, f"{trainer}_{task_key(env_id)}.yaml")


# ------------------------------------------------------------------------------------------------ evaluation
def evaluate(act: Callable[[np.ndarray], Any], env_id: str, episodes: int, seed: int) -> Dict[str, float]:
    """Mean and std of ``episodes`` returns of ``act`` (obs ``[1, D]`` float32 -> the task's action) on a fresh copy
    of the task, first reset with ``seed`` and then continuing its generator.  An ``act`` with a ``reset()`` method
    (a policy with memories) is reset at every episode start, as Unity starts each episode's memories from zeros."""
    from mlagents_plugins.envs.gym_env import import_gymnasium

    gym = import_gymnasium()
    env = gym.make(env_id)
    returns = []
    try:
        obs, _ = env.reset(seed=seed)
        for _ in range(episodes):
            if hasattr(act, "reset"):
                act.reset()
            total, done = 0.0, False
            while not done:
                obs, r, terminated, truncated, _ = env.step(act(np.asarray(obs, np.float32).reshape(1, -1)))
                total += float(r)
                done = terminated or truncated
            returns.append(total)
            obs, _ = env.reset()
    finally:
        env.close()
    return {"return_mean": float(np.mean(returns)), "return_std": float(np.std(returns))}


class OnnxActor:
    """An exported policy's deterministic action for one observation, as the build applies it to the task; a policy
    with memories (``recurrent_in``, e.g. taac's act-or-repeat state) gets its last ``recurrent_out`` back, from
    zeros after ``reset()``, as Unity feeds it."""

    def __init__(self, onnx_path: str, env_id: str):
        import onnxruntime as ort

        from mlagents_plugins.envs.gym_env import ActionScaler, import_gymnasium

        self.sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
        inputs = {i.name: i for i in self.sess.get_inputs()}
        gym = import_gymnasium()
        probe = gym.make(env_id)
        self.space = probe.action_space
        probe.close()
        if isinstance(self.space, gym.spaces.Discrete):
            self.out_name, self.scaler, self.start = "deterministic_discrete_actions", None, int(self.space.start)
        else:
            self.out_name, self.start = "deterministic_continuous_actions", 0
            self.scaler = ActionScaler(self.space.low, self.space.high, env_id)
        self.feed: Dict[str, np.ndarray] = {}
        if "action_masks" in inputs:
            self.feed["action_masks"] = np.ones([d if isinstance(d, int) else 1 for d in inputs["action_masks"].shape],
                                                np.float32)
        self.memory_shape = None
        if "recurrent_in" in inputs:
            self.memory_shape = [d if isinstance(d, int) else 1 for d in inputs["recurrent_in"].shape]
        self.outputs = [self.out_name] + (["recurrent_out"] if self.memory_shape else [])
        self.reset()

    def reset(self) -> None:
        if self.memory_shape:
            self.feed["recurrent_in"] = np.zeros(self.memory_shape, np.float32)

    def __call__(self, obs: np.ndarray):
        got = self.sess.run(self.outputs, {"obs_0": obs, **self.feed})
        if self.memory_shape:
            self.feed["recurrent_in"] = np.asarray(got[1], np.float32).reshape(self.memory_shape)
        if self.scaler is None:
            return int(got[0][0, 0]) + self.start
        return self.scaler.to_task(got[0])[0].astype(self.space.dtype)


def checkpoint_onnx(model_dir: str, behavior: str) -> List[Tuple[int, str]]:
    """(step, path) of the run's checkpoint exports ``<Behavior>-<step>.onnx``, by step."""
    found = []
    pattern = re.compile(rf"^{re.escape(behavior)}-(\d+)\.onnx$")
    for name in os.listdir(model_dir) if os.path.isdir(model_dir) else ():
        m = pattern.match(name)
        if m:
            found.append((int(m.group(1)), os.path.join(model_dir, name)))
    return sorted(found)


# ------------------------------------------------------------------------------------------------ one run
def run_child(cmd: List[str], log_path: str, env: Dict[str, str], cwd: str, timeout: float) -> Tuple[int, float, float]:
    """Run ``cmd`` with stdout+stderr to ``log_path``; (exit code, wall s, CPU s of its process tree)."""
    with open(log_path, "w") as log:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
    return proc.returncode, wall, usage.ru_utime + usage.ru_stime


def child_env() -> Dict[str, str]:
    """One thread per run (the issue's numbers are one-core numbers); our worktree first on the path."""
    path = os.environ.get("PYTHONPATH", "")
    return dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1",
                PYTHONPATH=REPO + (os.pathsep + path if path else ""))


def ml_config(trainer: str, env_id: str, args: argparse.Namespace) -> Dict[str, Any]:
    import yaml

    with open(config_path(trainer, env_id)) as f:
        raw = yaml.safe_load(f)
    (behavior, cfg), = raw["behaviors"].items()
    cfg["max_steps"] = int(args.steps)
    cfg["checkpoint_interval"] = int(args.eval_every)
    cfg["keep_checkpoints"] = int(args.steps // args.eval_every) + 5
    cfg["summary_freq"] = int(min(cfg.get("summary_freq", 5000), args.eval_every))
    if args.buffer_init_steps is not None:
        cfg["hyperparameters"]["buffer_init_steps"] = int(args.buffer_init_steps)
    for path, value in getattr(args, "overrides", None) or []:
        apply_override(cfg, path, value)
    return {"behaviors": {behavior: cfg}}


def parse_override(text: str) -> Tuple[List[str], Any]:
    """``--set KEY.PATH=VALUE`` -> (the key path, the value read as YAML): ``hyperparameters.adam_beta1=0.5``."""
    import yaml

    key, sep, value = text.partition("=")
    path = [part for part in key.strip().split(".")]
    if not sep or not all(path):
        raise argparse.ArgumentTypeError(f"--set {text!r}: KEY.PATH=VALUE, e.g. hyperparameters.adam_beta1=0.5")
    return path, yaml.safe_load(value)


def apply_override(cfg: Dict[str, Any], path: Sequence[str], value: Any) -> None:
    """Set ``cfg[path[0]][path[1]]... = value`` in a behavior's settings, creating the sections on the way."""
    node = cfg
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value


def parse_console(text: str, behavior: str) -> List[List[float]]:
    """[step, seconds, mean episode return] of ``behavior`` from mlagents-learn's console summaries."""
    return [[int(m.group("step")), float(m.group("secs")), float(m.group("reward"))]
            for m in CONSOLE_LINE.finditer(text) if m.group("behavior") == behavior]


def run_ml(trainer: str, env_id: str, seed: int, args: argparse.Namespace, record: Dict[str, Any]) -> None:
    """One mlagents-learn run on the task's build, then every checkpoint evaluated."""
    import yaml

    config = ml_config(trainer, env_id, args)
    (behavior, cfg), = config["behaviors"].items()
    record["config"] = cfg
    work = tempfile.mkdtemp(prefix=f"gym_{trainer}_", dir=args.work_dir)
    try:
        cfg_path = os.path.join(work, "config.yaml")
        with open(cfg_path, "w") as f:
            yaml.safe_dump(config, f)
        from mlagents_plugins.testing.ports import free_base_port

        learn = os.path.join(os.path.dirname(sys.executable), "mlagents-learn")
        cmd = [learn, cfg_path, f"--env={os.path.join(args.builds, behavior)}", "--run-id=run",
               f"--results-dir={work}", f"--base-port={free_base_port(1)}", "--num-envs=1", "--no-graphics",
               f"--seed={seed}", "--force", "--torch-device=cpu", "--timeout-wait=120"]
        log_path = os.path.join(work, "learn.log")
        code, wall, cpu = run_child(cmd, log_path, child_env(), work, LEARN_TIMEOUT_S)
        with open(log_path, errors="replace") as f:
            text = f.read()
        record.update(wall_s=wall, cpu_s=cpu)
        if code != 0:
            raise RuntimeError(f"mlagents-learn exited with {code}: {text[-2000:]}")
        curve = parse_console(text, behavior)
        record["train_curve"] = curve
        record["train_return"] = curve[-1][2] if curve else None
        model_dir = os.path.join(work, "run", behavior)
        checkpoints = checkpoint_onnx(model_dir, behavior)
        record["steps"] = checkpoints[-1][0] if checkpoints else (curve[-1][0] if curve else 0)
        start = time.process_time()
        wall0 = time.perf_counter()
        evals = []
        for step, path in checkpoints:
            result = evaluate(OnnxActor(path, env_id), env_id, args.eval_episodes, EVAL_SEED_OFFSET + seed)
            evals.append({"step": step, **result})
        record["eval"] = evals
        record["eval_s"] = time.perf_counter() - wall0
        record["eval_cpu_s"] = time.process_time() - start
        if args.keep_runs:
            dest = os.path.join(args.out, "runs", f"{trainer}_{task_key(env_id)}_s{seed}")
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(work, dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_peer(trainer: str, env_id: str, seed: int, args: argparse.Namespace, record: Dict[str, Any]) -> None:
    """One SB3 run in its own process (``bench/gym_peers.py``); it evaluates in-line and reports its eval time."""
    work = tempfile.mkdtemp(prefix=f"gym_{trainer}_", dir=args.work_dir)
    try:
        out_json = os.path.join(work, "result.json")
        cmd = [sys.executable, "-c", PEER_MAIN, "--algo", trainer, "--env", env_id, "--seed", str(seed),
               "--steps", str(args.steps), "--eval-every", str(args.eval_every), "--eval-episodes",
               str(args.eval_episodes), "--eval-seed", str(EVAL_SEED_OFFSET + seed), "--json", out_json]
        if args.buffer_init_steps is not None:
            cmd += ["--learning-starts", str(args.buffer_init_steps)]
        log_path = os.path.join(work, "peer.log")
        code, wall, cpu = run_child(cmd, log_path, child_env(), REPO, LEARN_TIMEOUT_S)
        if code != 0 or not os.path.isfile(out_json):
            with open(log_path, errors="replace") as f:
                raise RuntimeError(f"{trainer} exited with {code}: {f.read()[-2000:]}")
        with open(out_json) as f:
            got = json.load(f)
        # The peer's in-line evaluation ran inside its process: it is taken out of the run's cost.
        record.update(wall_s=wall - got["eval_s"], cpu_s=cpu - got["eval_cpu_s"], steps=got["steps"],
                      eval=got["eval"], eval_s=got["eval_s"], eval_cpu_s=got["eval_cpu_s"],
                      train_return=got["train_return"], train_curve=got["train_curve"], config=got["config"])
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_one(trainer: str, env_id: str, seed: int, args: argparse.Namespace, invocation: str) -> Dict[str, Any]:
    """The record of one (trainer, task, seed); a failing run gives a record with ``error`` set."""
    record: Dict[str, Any] = {
        "invocation": invocation, "trainer": trainer, "origin": ORIGIN[trainer], "scene": env_id, "seed": seed,
        "max_steps": args.steps, "steps": 0, "wall_s": None, "cpu_s": None, "eval": [], "train_return": None,
        "train_curve": [], "eval_every": args.eval_every, "eval_episodes": args.eval_episodes,
        "buffer_init_steps": args.buffer_init_steps, "started": utc_now(), "error": None,
    }
    try:
        (run_peer if trainer in PEERS else run_ml)(trainer, env_id, seed, args, record)
    except Exception as err:  # noqa: BLE001 - one broken run must not stop the invocation
        record["error"] = f"{type(err).__name__}: {err}"[:3000]
    if record["cpu_s"] and record["steps"]:
        record["steps_per_cpu_s"] = record["steps"] / record["cpu_s"]
    return record


# ------------------------------------------------------------------------------------------------ records
def latest_records(records: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The last record of each (trainer, scene, seed, max_steps), in first-seen order: a run redone after an error
    (``--continue``) replaces its failed record in the report; ``runs.jsonl`` keeps both."""
    last: Dict[Tuple[str, str, int, int], Dict[str, Any]] = {}
    for r in records:
        last[(r["trainer"], r["scene"], int(r["seed"]), int(r["max_steps"]))] = r
    return list(last.values())


def done_keys(records: Sequence[Dict[str, Any]]) -> set:
    """(trainer, scene, seed) of the records without an error (what ``--continue`` skips)."""
    return {(r["trainer"], r["scene"], int(r["seed"])) for r in records if not r.get("error")}


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.7g}")
    if isinstance(value, list):
        return [_round(v) for v in value]
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    return value


def append_record(out: str, record: Dict[str, Any], lock: threading.Lock) -> None:
    """``resume.append_record`` (one flushed line of ``runs.jsonl``) of the rounded record, one thread at a time."""
    with lock:
        resume.append_record(out, _round(record))


# ------------------------------------------------------------------------------------------------ report
def _fmt(values: Sequence[float], digits: int = 0) -> str:
    if not values:
        return "-"
    mean = float(np.mean(values))
    if len(values) == 1:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {float(np.std(values)):.{digits}f}"


def final_eval(record: Dict[str, Any], step: int, tolerance: int) -> Optional[float]:
    """The evaluation of the run's last checkpoint (the policy after its ``step`` env steps: mlagents-learn's final
    export lands a few steps past ``max_steps``, a checkpoint a few steps before it); None when the last one is more
    than ``tolerance`` steps short of ``step`` (a run cut short)."""
    evals = record.get("eval") or []
    if not evals or int(evals[-1]["step"]) < step - tolerance:
        return None
    return evals[-1]["return_mean"]


def summary_rows(records: Sequence[Dict[str, Any]], env_id: str, step: int, tolerance: int) -> List[List[str]]:
    rows = []
    by_trainer: Dict[str, List[Dict[str, Any]]] = {}
    for r in records:
        if r["scene"] == env_id and not r.get("error"):
            by_trainer.setdefault(r["trainer"], []).append(r)
    for trainer in [t for t in ALL_TRAINERS if t in by_trainer] + sorted(set(by_trainer) - set(ALL_TRAINERS)):
        runs = by_trainer[trainer]
        ev = [v for v in (final_eval(r, step, tolerance) for r in runs) if v is not None]
        name = f"**{trainer}**" if ORIGIN.get(trainer) == "ours" else trainer
        rows.append([
            name, str(len(runs)), _fmt(ev), _fmt([r["train_return"] for r in runs if r.get("train_return") is not None]),
            _fmt([r["steps_per_cpu_s"] for r in runs if r.get("steps_per_cpu_s")], 1),
            _fmt([r["wall_s"] for r in runs if r.get("wall_s")]), _fmt([r["cpu_s"] for r in runs if r.get("cpu_s")]),
        ])
    return rows


def anchor_rows(step: int) -> List[str]:
    lines = []
    for (task, at), cols in sorted(ANCHORS.items()):
        if at != step:
            continue
        cells = [f"{v[0]} ± {v[1]}" if isinstance(v, tuple) else str(v) for v in cols.values()]
        lines.append(f"| {task} | {at // 1000}k | " + " | ".join(cells) + " |")
    return lines


def plot_curves(records: Sequence[Dict[str, Any]], path: str) -> Optional[str]:
    """Evaluation return against environment steps, one panel per task, mean over seeds (band: min..max), the
    published 100k/300k anchors as markers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = sorted({r["scene"] for r in records if not r.get("error") and r.get("eval")})
    if not tasks:
        return None
    fig, axes = plt.subplots(1, len(tasks), figsize=(6 * len(tasks), 4.5), squeeze=False)
    for ax, env_id in zip(axes[0], tasks):
        by_trainer: Dict[str, Dict[int, List[float]]] = {}
        for r in records:
            if r["scene"] != env_id or r.get("error"):
                continue
            # checkpoints of different seeds land a few steps apart: bin to the evaluation interval, one value per
            # run and bin (its last checkpoint there: the final export rather than a checkpoint just before it)
            every = int(r.get("eval_every") or 10_000)
            binned = {int(round(e["step"] / every) * every): e["return_mean"] for e in r.get("eval") or []}
            for step, value in binned.items():
                by_trainer.setdefault(r["trainer"], {}).setdefault(step, []).append(value)
        for trainer, points in sorted(by_trainer.items()):
            steps = sorted(points)
            mean = [float(np.mean(points[s])) for s in steps]
            ax.plot(steps, mean, marker="o", label=trainer, linewidth=2.2 if ORIGIN.get(trainer) == "ours" else 1.2)
            ax.fill_between(steps, [min(points[s]) for s in steps], [max(points[s]) for s in steps], alpha=0.15)
        base = task_key(env_id)
        longest = max((int(r["max_steps"]) for r in records if r["scene"] == env_id), default=0)
        for (task, at), cols in ANCHORS.items():
            if task.lower() != base or at > longest * 1.05:  # anchors beyond the runs stay in the table only
                continue
            for marker, (name, value) in zip("s^Dv", cols.items()):
                v = value[0] if isinstance(value, tuple) else value
                ax.scatter([at], [v], marker=marker, color="grey", zorder=3,
                           label=f"{name} (published)" if at == 100_000 else None)
        ax.set_title(f"{env_id}: evaluation return (deterministic policy)")
        ax.set_xlabel("environment steps")
        ax.set_ylabel("return")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def write_report(out: str, meta: Dict[str, Any]) -> str:
    records = latest_records(resume.read_records(out)[0])
    png = plot_curves(records, os.path.join(out, "curves.png"))
    lines = ["# bench gym: Gymnasium MuJoCo tasks through mlagents-learn, against SB3 and the published anchors", "",
             f"Rendered {utc_now()} from `runs.jsonl` ({len(records)} records).  Last invocation: "
             f"`{meta.get('command', '?')}`; code {meta.get('commit', '?')}; {meta.get('machine', '?')}.", "",
             "Evaluation: every checkpoint (ML-Agents trainers: the exported ONNX, deterministic action, in "
             "onnxruntime) for the episodes stated per record, on a separate copy of the task.  Cost: wall and CPU "
             "seconds of the run's process tree without evaluation; env steps per CPU second = steps / CPU s.  "
             "Cells: mean ± std over seeds; ours in bold.", ""]
    steps = sorted({int(r["max_steps"]) for r in records})
    for env_id in sorted({r["scene"] for r in records}):
        for step in steps:
            rows = summary_rows([r for r in records if int(r["max_steps"]) == step], env_id, step,
                                tolerance=max(256, step // 50))
            if not rows:
                continue
            lines += [f"## {env_id}, {step} steps", "",
                      f"| trainer | seeds | eval return at {step} | train return (last summary) | env steps / CPU s "
                      "| wall s | CPU s |", "| --- | --- | --- | --- | --- | --- | --- |"]
            lines += ["| " + " | ".join(row) + " |" for row in rows]
            lines.append("")
    lines += ["## Published anchors (v4 tasks, 10 seeds, evaluation return)", "",
              "dojeon-ai/SimbaV2 `results/baseline/*.csv`; the MR.Q column equals facebookresearch/MRQ "
              "`results/gym_results.txt`.  Ours run the v5 tasks.", "",
              "| task | steps | SAC | CrossQ | MR.Q | SimbaV2 |", "| --- | --- | --- | --- | --- | --- |"]
    lines += anchor_rows(100_000) + anchor_rows(300_000)
    lines += ["", "## Evaluation curves (per run)", ""]
    for r in records:
        if r.get("error"):
            lines.append(f"- {r['trainer']} {r['scene']} seed {r['seed']}: **error** {r['error'][:300]}")
            continue
        curve = ", ".join(f"{e['step']}: {e['return_mean']:.0f}" for e in r.get("eval") or [])
        lines.append(f"- {r['trainer']} {r['scene']} seed {r['seed']} ({r['steps']} steps, {r['wall_s']:.0f} s wall, "
                     f"{r['cpu_s']:.0f} s CPU): {curve}")
    run_minutes = sum((r.get("wall_s") or 0) + (r.get("eval_s") or 0) for r in records) / 60
    lines += ["", f"Measured run-minutes (training + evaluation, all records): {run_minutes:.1f}."]
    if meta.get("plan") is not None:
        lines.append(f"Last invocation's plan: {len(meta['plan'])} runs ({meta.get('skipped', 0)} already recorded): "
                     + ", ".join(meta["plan"]) + ".")
    lines.append("")
    if png:
        lines += [f"![evaluation curves]({os.path.basename(png)})", ""]
    path = os.path.join(out, "REPORT.md")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path


# ------------------------------------------------------------------------------------------------ CLI
def _csv(kind: str, allowed: Optional[Sequence[str]] = None):
    def parse(text: str) -> List[str]:
        items = [t.strip() for t in text.replace(" ", ",").split(",") if t.strip()]
        bad = [t for t in items if allowed is not None and t not in allowed]
        if not items or bad:
            raise argparse.ArgumentTypeError(f"{kind} {bad or text!r} unknown; allowed: {', '.join(allowed or [])}")
        return items
    return parse


def _seeds(text: str) -> List[int]:
    try:
        seeds = [int(t) for t in text.replace(" ", ",").split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seeds {text!r}: comma-separated integers, e.g. 0,1,2")
    if not seeds or any(s < 0 for s in seeds):
        raise argparse.ArgumentTypeError(f"--seeds {text!r}: one or more integers >= 0")
    return seeds


def build_parser() -> argparse.ArgumentParser:
    from mlagents_plugins.util.cli_args import number

    p = argparse.ArgumentParser(prog="python -m bench gym", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=number("--steps", int, low=1), default=100_000, help="env steps per run")
    p.add_argument("--seeds", type=_seeds, default=[0, 1, 2], help="comma-separated seeds (default 0,1,2)")
    p.add_argument("--trainers", type=_csv("trainer", ALL_TRAINERS), default=list(ALL_TRAINERS),
                   help=f"comma-separated, from {', '.join(ALL_TRAINERS)} (default all)")
    p.add_argument("--tasks", type=_csv("task"), default=list(TASKS),
                   help=f"comma-separated Gymnasium ids with configs/gym/<trainer>_<task>.yaml (default {','.join(TASKS)})")
    p.add_argument("--jobs", type=number("--jobs", int, low=1), default=1, help="runs at a time (one thread each)")
    p.add_argument("--eval-every", type=number("--eval-every", int, low=1), default=10_000,
                   help="env steps between evaluations (= checkpoint_interval)")
    p.add_argument("--eval-episodes", type=number("--eval-episodes", int, low=1), default=10)
    p.add_argument("--buffer-init-steps", type=number("--buffer-init-steps", int, low=0), default=None,
                   help="override the random steps before learning (configs: 5000; SB3: learning_starts)")
    p.add_argument("--out", default=os.path.join(REPO, "results", "bench-gym"), help="records and report folder")
    p.add_argument("--continue", dest="resume", action="store_true",
                   help="skip (trainer, task, seed) already recorded without error in OUT/runs.jsonl")
    p.add_argument("--keep-runs", action="store_true", help="keep each run's results folder under OUT/runs/")
    p.add_argument("--report-only", action="store_true", help="re-render REPORT.md and curves.png from runs.jsonl")
    p.add_argument("--work-dir", default=None, help="where runs write their results while they go (default: tmp)")
    p.add_argument("--set", dest="overrides", type=parse_override, action="append", default=[], metavar="KEY=VALUE",
                   help="override a setting of the ML-Agents trainers' configs (repeatable), a dotted path into the "
                        "behavior's settings and a YAML value: --set hyperparameters.adam_beta1=0.5")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    meta = {"command": "python -m bench gym " + " ".join(argv if argv is not None else sys.argv[1:]),
            "commit": code_commit(), "machine": machine()}
    if args.report_only:
        print(write_report(args.out, meta))
        return 0
    missing = [config_path(t, e) for t in args.trainers if t in ML_TRAINERS for e in args.tasks
               if not os.path.isfile(config_path(t, e))]
    if missing:
        print(f"python -m bench gym: no config for {', '.join(missing)}", file=sys.stderr)
        return 2
    from mlagents_plugins.envs.standin import write_gym_build

    args.builds = os.path.join(args.out, "builds")
    for env_id in args.tasks:
        write_gym_build(args.builds, env_id)
    skip = done_keys(resume.read_records(args.out)[0]) if args.resume else set()
    plan = [(t, e, s) for e in args.tasks for t in args.trainers for s in args.seeds if (t, e, s) not in skip]
    invocation = new_id()
    meta.update(plan=[f"{t} {e} seed {s}" for t, e, s in plan], skipped=len(skip))
    print(f"bench gym {invocation}: {len(plan)} runs ({len(skip)} already recorded), {args.jobs} at a time -> "
          f"{args.out}", flush=True)
    lock = threading.Lock()

    def one(job):
        trainer, env_id, seed = job
        record = run_one(trainer, env_id, seed, args, invocation)
        append_record(args.out, record, lock)
        with lock:
            write_report(args.out, meta)
        last = record["eval"][-1]["return_mean"] if record["eval"] else math.nan
        print(f"  {trainer} {env_id} seed {seed}: {record['steps']} steps, eval {last:.1f}, "
              f"{record['wall_s'] or 0:.0f} s wall, {record['cpu_s'] or 0:.0f} s CPU"
              + (f", ERROR {record['error'][:300]}" if record["error"] else ""), flush=True)
        return record

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        records = list(pool.map(one, plan))
    print(write_report(args.out, meta))
    return 1 if any(r["error"] for r in records) else 0
