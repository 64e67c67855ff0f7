"""Make one run record (see ``bench.metrics``) from a ``plan.Job``: in-process or through ``mlagents-learn``.

Measurements, taken the same way for our trainers and the built-ins:

* curve: the harness' (or mlagents-learn's console) summaries, each stamped with the seconds since the run
  started (a ``StatsWriter`` of ours in-process; "Time Elapsed" through mlagents-learn);
* update seconds: ML-Agents' ``_update_policy`` timers (every trainer's ``RLTrainer.advance`` wraps its
  update in one), difference of the totals before and after the run, over all threads;
* save seconds: the ``TrainerController._save_models`` timer - the final checkpoint: ``.pt``, ``.onnx``
  export and, for off-policy trainers, the replay buffer;
* load seconds: timed here after the run: ``torch.load`` of that checkpoint plus loading its replay file;
* replay bytes: our ``ReplayBuffer.nbytes`` (preallocated arrays); for built-in sac the arrays and Python
  objects of its ``update_buffer`` (``AgentBuffer``) at the end; None for on-policy trainers.  Through
  ``mlagents-learn`` the trainer lives in another process, so the same two measures are taken on the replay
  file the run saved at its end (``save_replay_buffer: true``), loaded back: ours ``load_replay`` rebuilds the
  ring buffer at its saved capacity (the same preallocated arrays, so the same ``nbytes``), sac's
  ``last_replay_buffer.hdf5`` becomes an ``AgentBuffer`` again, measured as in-process (after the reload every
  step is a view of one array per field, so its Python overhead differs: 7.1 MB from the file against 5.8 MB
  in-process for 3000 balance steps in one quick bench).
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Optional

import numpy as np

from bench.plan import Job
from mlagents_plugins.envs.scenes import scene_class
from mlagents_plugins.testing.ports import free_base_port

LEARN_TIMEOUT_S = 1800
FINAL_WINDOW = 3  # summaries averaged for the final return (as the harness does)
UPDATE_TIMER = "_update_policy"
SAVE_TIMER = "TrainerController._save_models"
OUR_REPLAY_FILE = "replay_buffer.mlreplay"
SAC_REPLAY_FILE = "last_replay_buffer.hdf5"
CONSOLE_LINE = re.compile(
    r"\b(?P<behavior>\w+)\. Step: (?P<step>\d+)\. Time Elapsed: (?P<secs>[0-9.]+) s\. Mean Reward: (?P<reward>-?(?:nan|inf|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?))"
)


# ---------------------------------------------------------------------------------------------- timers
def _sum_named(node: Any, name: str) -> float:
    """Total seconds of every timer node called ``name`` in a TimerNode tree (outermost ones only)."""
    total = 0.0
    for child_name, child in node.children.items():
        total += child.total if child_name == name else _sum_named(child, name)
    return total


def _sum_named_dict(node: Dict[str, Any], name: str) -> float:
    """Same over the JSON form of the tree (``run_logs/timers.json``)."""
    total = 0.0
    for child_name, child in (node.get("children") or {}).items():
        total += child.get("total", 0.0) if child_name == name else _sum_named_dict(child, name)
    return total


def timer_total(name: str) -> float:
    """Seconds in timers called ``name`` so far, over every thread's timer stack of this process."""
    from mlagents_envs import timers

    return sum(_sum_named(stack.root, name) for stack in list(timers._thread_timer_stacks.values()))


# ---------------------------------------------------------------------------------------------- memory
def _py_bytes(obj: Any) -> int:
    """Bytes held by nested lists of numpy arrays / numbers, Python object overhead included."""
    if isinstance(obj, np.ndarray):
        return sys.getsizeof(obj) + (obj.nbytes if obj.base is not None else 0)
    if isinstance(obj, (list, tuple)):
        return sys.getsizeof(obj) + sum(_py_bytes(x) for x in obj)
    return sys.getsizeof(obj)


def replay_bytes(trainer: Any) -> Optional[int]:
    """Replay memory of a trainer at the end of its run (see module docstring); None if it has none."""
    replay = getattr(trainer, "replay", None)
    if replay is not None and hasattr(replay, "nbytes"):
        return int(replay.nbytes)
    from mlagents.trainers.trainer.off_policy_trainer import OffPolicyTrainer

    if isinstance(trainer, OffPolicyTrainer):
        return int(sum(_py_bytes(list(field)) for field in trainer.update_buffer.values()))
    return None


@contextmanager
def capture_trainers() -> Iterator[List[Any]]:
    """Collect the trainers TrainerFactory creates inside the block (to read their buffers afterwards)."""
    from mlagents.trainers.trainer.trainer_factory import TrainerFactory

    made: List[Any] = []
    original = TrainerFactory.generate

    def generate(self, behavior_name):
        trainer = original(self, behavior_name)
        made.append(trainer)
        return trainer

    TrainerFactory.generate = generate
    try:
        yield made
    finally:
        TrainerFactory.generate = original


def load_seconds(results_path: str, behavior: str) -> Optional[float]:
    """Seconds to load the run's final checkpoint and its replay file (None if no checkpoint was written)."""
    import torch

    model_dir = os.path.join(results_path, behavior)
    ckpt = os.path.join(model_dir, "checkpoint.pt")
    if not os.path.isfile(ckpt):
        return None
    start = time.perf_counter()
    torch.load(ckpt)
    ours = os.path.join(model_dir, OUR_REPLAY_FILE)
    sac = os.path.join(model_dir, SAC_REPLAY_FILE)
    if os.path.isfile(ours):
        from mlagents_plugins.replay.persistence import load_replay

        load_replay(ours)
    elif os.path.isfile(sac):
        from mlagents.trainers.buffer import AgentBuffer

        with open(sac, "rb") as f:
            AgentBuffer().load_from_file(f)
    return time.perf_counter() - start


def saved_replay_bytes(results_path: str, behavior: str) -> Optional[int]:
    """Replay memory of a run made in another process, from the replay file it saved (see module docstring);
    None when the run saved none (on-policy trainers, or ``save_replay_buffer: false``)."""
    model_dir = os.path.join(results_path, behavior)
    ours = os.path.join(model_dir, OUR_REPLAY_FILE)
    sac = os.path.join(model_dir, SAC_REPLAY_FILE)
    if os.path.isfile(ours):
        from mlagents_plugins.replay.persistence import load_replay

        replay, _ = load_replay(ours)
        return int(replay.nbytes)
    if os.path.isfile(sac):
        from mlagents.trainers.buffer import AgentBuffer

        buf = AgentBuffer()
        with open(sac, "rb") as f:
            buf.load_from_file(f)
        return int(sum(_py_bytes(list(field)) for field in buf.values()))
    return None


# ---------------------------------------------------------------------------------------------- records
def _final(curve: List[List[float]]) -> Optional[float]:
    tail = [c[2] for c in curve[-FINAL_WINDOW:] if not math.isnan(c[2])]
    return float(np.mean(tail)) if tail else None


def base_record(job: Job, invocation: str) -> Dict[str, Any]:
    return {
        "invocation": invocation,
        "trainer": job.trainer,
        "origin": job.origin,
        "scene": job.scene,
        "seed": job.seed,
        "mode": job.mode,
        "threshold": float(scene_class(job.scene).success_threshold),
        "max_steps": job.max_steps,
        "steps": 0,
        "wall_seconds": None,
        "curve": [],
        "final_mean_reward": None,
        "success_rate": None,
        "update_seconds": None,
        "save_seconds": None,
        "load_seconds": None,
        "replay_bytes": None,
        "config": job.config,
        "config_source": job.config_source,
        "error": None,
    }


def run_in_process(job: Job, record: Dict[str, Any], num_areas: int = 1) -> None:
    from mlagents.trainers.stats import StatsReporter, StatsWriter

    from mlagents_plugins.envs.harness import train_in_process

    behavior = scene_class(job.scene).behavior_name
    stamps: Dict[int, float] = {}

    class _Clock(StatsWriter):
        def write_stats(self, category, values, step):
            if category == behavior:
                stamps[int(step)] = time.perf_counter()

    clock = _Clock()
    StatsReporter.add_writer(clock)
    upd0, save0 = timer_total(UPDATE_TIMER), timer_total(SAVE_TIMER)
    out = tempfile.mkdtemp(prefix="bench_run_")
    try:
        start = time.perf_counter()
        with capture_trainers() as trainers:
            res = train_in_process(job.config, job.scene, max_steps=job.max_steps, seed=job.seed,
                                   num_areas=num_areas, output_dir=out, run_id="run")
        record["wall_seconds"] = time.perf_counter() - start
        record["update_seconds"] = timer_total(UPDATE_TIMER) - upd0
        record["save_seconds"] = timer_total(SAVE_TIMER) - save0
        record["steps"] = int(res.steps)
        record["curve"] = [[int(s), stamps.get(int(s), math.nan) - start, float(r)] for s, r in res.reward_curve]
        record["final_mean_reward"] = None if math.isnan(res.final_mean_reward) else float(res.final_mean_reward)
        record["success_rate"] = None if math.isnan(res.success_rate) else float(res.success_rate)
        record["replay_bytes"] = replay_bytes(trainers[-1]) if trainers else None
        record["load_seconds"] = load_seconds(res.results_path, behavior)
    finally:
        with StatsReporter.lock:
            if clock in StatsReporter.writers:
                StatsReporter.writers.remove(clock)
        shutil.rmtree(out, ignore_errors=True)


def parse_console(text: str, behavior: str) -> List[List[float]]:
    """[step, seconds, mean reward] from mlagents-learn's console summaries of ``behavior``."""
    curve = []
    for m in CONSOLE_LINE.finditer(text):
        if m.group("behavior") == behavior:
            curve.append([int(m.group("step")), float(m.group("secs")), float(m.group("reward"))])
    return curve


def run_mlagents_learn(job: Job, record: Dict[str, Any], builds_dir: str) -> None:
    import yaml

    behavior = scene_class(job.scene).behavior_name
    out = tempfile.mkdtemp(prefix="bench_learn_")
    try:
        cfg_path = os.path.join(out, "config.yaml")
        with open(cfg_path, "w") as f:
            yaml.safe_dump({"behaviors": {behavior: job.config}}, f)
        learn = os.path.join(os.path.dirname(sys.executable), "mlagents-learn")
        cmd = [learn, cfg_path, f"--env={os.path.join(builds_dir, behavior)}", "--run-id=run",
               f"--results-dir={out}", f"--base-port={free_base_port(4)}", "--num-envs=1", "--no-graphics",
               f"--seed={job.seed}", "--force"]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        start = time.perf_counter()
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                              timeout=LEARN_TIMEOUT_S, cwd=out)
        record["wall_seconds"] = time.perf_counter() - start
        if proc.returncode != 0:
            raise RuntimeError(f"mlagents-learn exited with {proc.returncode}: {proc.stdout[-1500:]}")
        curve = parse_console(proc.stdout, behavior)
        record["curve"] = curve
        record["steps"] = curve[-1][0] if curve else 0
        record["final_mean_reward"] = _final(curve)
        run_dir = os.path.join(out, "run")
        timers_path = os.path.join(run_dir, "run_logs", "timers.json")
        if os.path.isfile(timers_path):
            with open(timers_path) as f:
                tree = json.load(f)
            record["update_seconds"] = _sum_named_dict(tree, UPDATE_TIMER)
            record["save_seconds"] = _sum_named_dict(tree, SAVE_TIMER)
        record["load_seconds"] = load_seconds(run_dir, behavior)
        record["replay_bytes"] = saved_replay_bytes(run_dir, behavior)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def run_job(job: Job, invocation: str, builds_dir: Optional[str] = None) -> Dict[str, Any]:
    """The run record of ``job``; a failing run gives a record with ``error`` set, never an exception."""
    record = base_record(job, invocation)
    try:
        if job.mode == "in_process":
            run_in_process(job, record)
        elif job.mode == "mlagents-learn":
            if builds_dir is None:
                raise ValueError("mlagents-learn runs need the stand-in builds directory")
            run_mlagents_learn(job, record, builds_dir)
        else:
            raise ValueError(f"mode={job.mode!r} is unknown; allowed: in_process, mlagents-learn")
    except Exception as err:  # noqa: BLE001 - one broken trainer must not stop the bench
        record["error"] = f"{type(err).__name__}: {err}"[:2000]
        record["traceback"] = traceback.format_exc()[-4000:]
    return record
