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

from bench import cost, progress, resume
from bench.overrides import apply_override, override_text, parse_override
from bench.invocation import code_commit, machine, machine_kind, new_id, utc_now

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG_DIR = os.path.join(REPO, "configs", "gym")
#: ML-Agents trainers by the configs/gym/ file prefix: ``fast_sac_crossq`` is fast_sac with CrossQ's recipe (its preset
#: ``configs/gym/fast_sac_crossq_<task>.yaml``, docs/fast_sac_crossq.md), so one invocation can time it beside the default;
#: ``fast_sac_bf16`` / ``fast_sac_fp32`` are fast_sac with ``update_precision: bf16`` / ``fp32`` (its null is auto;
#: docs/fast_sac_precision.md)
ML_TRAINERS = ("fast_sac", "fast_sac_crossq", "fast_sac_bf16", "fast_sac_fp32", "taac", "muzero_repr", "sac")
PEERS = ("sb3_sac", "sb3_crossq")
ALL_TRAINERS = ML_TRAINERS + PEERS
#: the tuning tasks (settings are chosen on them; the default of ``--tasks``) and the validation tasks (reported on,
#: never tuned on): ``--tasks tuning`` / ``--tasks validation`` name each set
TASKS = ("HalfCheetah-v5", "Hopper-v5")
VALIDATION_TASKS = ("Walker2d-v5", "Ant-v5")
TASK_SETS = {"tuning": TASKS, "validation": VALIDATION_TASKS}
EVAL_SEED_OFFSET = 10_000
LEARN_TIMEOUT_S = 6 * 3600
#: the peer's program: a fresh interpreter calling bench.gym_peers.main with the arguments after ``-c``
PEER_MAIN = "import sys; from bench.gym_peers import main; sys.exit(main(sys.argv[1:]))"
ORIGIN = {"fast_sac": "ours", "fast_sac_crossq": "ours", "fast_sac_bf16": "ours", "fast_sac_fp32": "ours",
          "taac": "ours", "muzero_repr": "ours",
          "sac": "builtin", "sb3_sac": "sb3", "sb3_crossq": "sb3"}
#: published evaluation returns (v4 tasks, 10 seeds): dojeon-ai/SimbaV2 results/baseline/*.csv; the MR.Q column
#: equals facebookresearch/MRQ results/gym_results.txt.  (mean, std) or mean only.
ANCHORS: Dict[Tuple[str, int], Dict[str, Any]] = {
    ("HalfCheetah", 100_000): {"SAC": (6156, 700), "CrossQ": (8112, 896), "MR.Q": 7872, "SimbaV2": 7328},
    ("HalfCheetah", 300_000): {"SAC": (8593, 964), "CrossQ": (10012, 1112), "MR.Q": 10835, "SimbaV2": 9892},
    ("Hopper", 100_000): {"SAC": (1103, 368), "CrossQ": (2764, 781), "MR.Q": 2249, "SimbaV2": 2821},
    ("Hopper", 300_000): {"SAC": (2160, 981), "CrossQ": (2644, 886), "MR.Q": 2469, "SimbaV2": 3502},
    ("Walker2d", 100_000): {"SAC": (690, 241), "CrossQ": (3914, 1641), "MR.Q": 3127, "SimbaV2": 3023},
    ("Walker2d", 300_000): {"SAC": (2470, 1571), "CrossQ": (5941, 483), "MR.Q": 4509, "SimbaV2": 5499},
    ("Ant", 100_000): {"SAC": (747, 501), "CrossQ": (2299, 1278), "MR.Q": 2801, "SimbaV2": 3881},
    ("Ant", 300_000): {"SAC": (3532, 1561), "CrossQ": (5712, 722), "MR.Q": 4674, "SimbaV2": 6200},
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


# ------------------------------------------------------------------------------------------------ CPU by process
#: the processes of a run's tree, as ``cpu_by_process`` names them: the root process (``mlagents-learn``, the trainer;
#: an SB3 peer's whole run), ML-Agents' environment worker (a child of the trainer running the trainer's own program:
#: multiprocessing forks it), the stand-in build (``mlagents_plugins.envs.standin``, the worker's child), Inductor's
#: compile workers and library-load probes (``python -c ... cdll.LoadLibrary(".../torchinductor_...")``), anything else; ``unseen`` is the tree's CPU (``os.wait4``) less the CPU last seen of all of them:
#: what processes used between the last poll and their exit, and processes that lived shorter than one poll (the C++
#: compiler Inductor runs).
PROCESS_ROLES = ("trainer", "env_worker", "build", "compile", "other", "unseen")
PROCESS_POLL_S = 0.5


def proc_own_cpu(pid: int) -> Optional[Tuple[int, float]]:
    """(parent pid, user + system CPU seconds of the process itself, not its children) from /proc/<pid>/stat."""
    from mlagents_plugins.util.process_lifetime import proc_stat_fields

    fields = proc_stat_fields(pid)
    if fields is None:
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_role(pid: int, root: int, parent: int, cmdline: str, root_cmdline: str) -> str:
    """The ``PROCESS_ROLES`` entry of a process of the tree rooted at ``root``."""
    if pid == root:
        return "trainer"
    if "mlagents_plugins.envs.standin" in cmdline:
        return "build"
    if "torch._inductor" in cmdline or "compile_worker" in cmdline or "torchinductor" in cmdline:
        return "compile"  # Inductor's compile workers and its probe that loads a compiled library in a child
    if parent == root and (cmdline == root_cmdline or "multiprocessing" in cmdline):
        return "env_worker"
    return "other"


class ProcessCpuWatch:
    """Polls /proc every ``interval_s`` for the process tree under ``root`` (the root included) and keeps each
    process's role and the CPU last seen; ``split(tree_cpu_s)`` gives CPU seconds per ``PROCESS_ROLES`` entry, adding
    up to ``tree_cpu_s``.  Runs in a thread of the bench process, so its cost is not in the tree's CPU."""

    def __init__(self, root: int, interval_s: float = PROCESS_POLL_S):
        self.root, self.interval_s = root, interval_s
        self.seen: Dict[int, Tuple[str, float]] = {}
        self._cmdlines: Dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gym-process-cpu", daemon=True)

    def _cmdline(self, pid: int) -> str:
        if pid not in self._cmdlines:
            from bench.profiling.phases import _cmdline

            self._cmdlines[pid] = _cmdline(pid)
        return self._cmdlines[pid]

    def poll(self) -> None:
        stats = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                got = proc_own_cpu(int(name))
                if got is not None:
                    stats[int(name)] = got
        children: Dict[int, List[int]] = {}
        for pid, (ppid, _) in stats.items():
            children.setdefault(ppid, []).append(pid)
        if self.root not in stats:
            return
        root_cmdline = self._cmdline(self.root)
        todo = [self.root]
        while todo:
            pid = todo.pop()
            parent, cpu = stats[pid]
            role = self.seen.get(pid, (None,))[0] or process_role(pid, self.root, parent, self._cmdline(pid),
                                                                  root_cmdline)
            self.seen[pid] = (role, max(cpu, self.seen.get(pid, (role, 0.0))[1]))
            todo += children.get(pid, [])

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.poll()
            except Exception:  # noqa: BLE001 - a process vanishing mid-read; the next poll sees the rest
                pass

    def start(self) -> "ProcessCpuWatch":
        self.poll()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def split(self, tree_cpu_s: float) -> Dict[str, float]:
        out = {role: 0.0 for role in PROCESS_ROLES}
        for role, cpu in self.seen.values():
            out[role] += cpu
        out["unseen"] = tree_cpu_s - sum(out.values())
        out["processes"] = len(self.seen)
        return out


# ------------------------------------------------------------------------------------------------ one run
def run_child(cmd: List[str], log_path: str, env: Dict[str, str], cwd: str, timeout: float,
              by_process: Optional[Dict[str, float]] = None) -> Tuple[int, float, float]:
    """Run ``cmd`` with stdout+stderr to ``log_path``; (exit code, wall s, CPU s of its process tree).  A
    ``by_process`` dict is filled with the tree's CPU per ``PROCESS_ROLES`` entry (``ProcessCpuWatch``)."""
    with open(log_path, "w") as log:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd)
        watch = ProcessCpuWatch(proc.pid).start() if by_process is not None else None
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
            if watch is not None:
                watch.stop()
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
    cpu = usage.ru_utime + usage.ru_stime
    if watch is not None:
        by_process.update(watch.split(cpu))
    return proc.returncode, wall, cpu


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


#: fast_sac's log lines on its update's products (``update_precision``; common/bf16_matmul.py, fast_sac/trainer.py):
#: ``auto``'s probe ("... (0.69x, 1 thread(s)): the update multiplies bf16 ...") and the trainer's switch to bf16;
#: and the fp32 matmul kernel its first updates timed (common/fast_kernels.py ``MatmulKernelChooser``).
PRECISION_LINE = re.compile(r"the update multiplies (?P<precision>bf16|fp32)")
PROBE_RATIO = re.compile(r"update_precision auto: .*?\((?P<ratio>[0-9.]+)x, \d+ thread")
MATMUL_KERNEL_LINE = re.compile(r"fast_cpu_matmul: (?P<kernel>oneDNN|default) fp32 matmul kernel chosen")


def parse_update_numerics(text: str) -> Dict[str, Any]:
    """What a run's log says its update computed with, for the records, because fast_sac decides both per process
    by timing, so two runs of one config on one machine can compute differently (and end apart):
    ``update_precision`` "bf16" or "fp32" (None where no line says: other trainers, and fast_sac at an explicit
    fp32, which logs nothing), ``bf16_probe_ratio``, ``auto``'s timed bf16 / fp32 ratio (None without the probe),
    and ``matmul_kernel``, the fp32 matmul kernel the update kept, "oneDNN" or "default" (ATen's), from the start-up
    probe's line where it rejects oneDNN, else from the timed first updates' line or fast_sac's line where its bf16
    hidden layers leave ATen's kernel untimed (None where none logged:
    ``fast_cpu_matmul: false``, MLAGENTS_PLUGINS_NO_ONEDNN_MATMUL=1, a GPU, a run cut off before the choice)."""
    precisions = [m.group("precision") for m in PRECISION_LINE.finditer(text)]
    ratio = PROBE_RATIO.search(text)
    kernels = [m.group("kernel") for m in MATMUL_KERNEL_LINE.finditer(text)]
    return {"update_precision": precisions[-1] if precisions else None,
            "bf16_probe_ratio": float(ratio.group("ratio")) if ratio else None,
            "matmul_kernel": kernels[-1] if kernels else None}


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
        live_run(args, trainer, env_id, seed).watch(log_path)
        by_process: Dict[str, float] = {}
        code, wall, cpu = run_child(cmd, log_path, child_env(), work, LEARN_TIMEOUT_S, by_process)
        with open(log_path, errors="replace") as f:
            text = f.read()
        record.update(wall_s=wall, cpu_s=cpu, cpu_by_process=by_process)
        if code != 0:
            raise RuntimeError(f"mlagents-learn exited with {code}: {text[-2000:]}")
        curve = parse_console(text, behavior)
        record["train_curve"] = curve
        record.update(parse_update_numerics(text))
        record["train_return"] = curve[-1][2] if curve else None
        model_dir = os.path.join(work, "run", behavior)
        checkpoints = checkpoint_onnx(model_dir, behavior)
        record["steps"] = checkpoints[-1][0] if checkpoints else (curve[-1][0] if curve else 0)
        live_run(args, trainer, env_id, seed).phase = f"trained, evaluating {len(checkpoints)} checkpoints"
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
        for path, value in getattr(args, "peer_overrides", None) or []:
            cmd += ["--set", override_text(path, value)]
        log_path = os.path.join(work, "peer.log")
        live_run(args, trainer, env_id, seed).watch(log_path)
        by_process: Dict[str, float] = {}
        code, wall, cpu = run_child(cmd, log_path, child_env(), REPO, LEARN_TIMEOUT_S, by_process)
        if code != 0 or not os.path.isfile(out_json):
            with open(log_path, errors="replace") as f:
                raise RuntimeError(f"{trainer} exited with {code}: {f.read()[-2000:]}")
        with open(out_json) as f:
            got = json.load(f)
        # The peer's in-line evaluation ran inside its process: it is taken out of the run's cost.
        by_process["trainer"] -= got["eval_cpu_s"]
        record.update(wall_s=wall - got["eval_s"], cpu_s=cpu - got["eval_cpu_s"], steps=got["steps"],
                      cpu_by_process=by_process,
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


# ------------------------------------------------------------------------------------------------ progress
#: the step a console summary of mlagents-learn is at (with or without a mean reward)
CONSOLE_STEP = re.compile(r"\. Step: (?P<step>\d+)\. Time Elapsed: ")
#: the peer's line per summary (bench/gym_peers.py ``summary_line``), with an evaluation return at evaluation steps
PEER_LINE = re.compile(r"\bStep: (?P<step>\d+)\.(?: Eval return: (?P<eval>\S+)\.)? Train return: (?P<train>\S+)\.")


def _number(text: str) -> Optional[float]:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


class LiveRun:
    """A run in flight as the console shows it: its number in the order runs started, the log its process writes
    (``watch``: mlagents-learn's console summaries or the peer's lines), what that log said so far (``read``), and
    its phase after training (evaluating the checkpoints)."""

    def __init__(self, number: int, trainer: str, env_id: str, seed: int, max_steps: int):
        self.number, self.trainer, self.env_id, self.seed, self.max_steps = number, trainer, env_id, seed, max_steps
        self.log_path: Optional[str] = None
        self.step, self.train, self.last_eval = 0, None, None  # last_eval: (step, return) or None
        self.phase: Optional[str] = None
        self.shown: Any = None  # the (step, phase) last printed
        self._offset, self._partial = 0, ""

    def watch(self, log_path: str) -> None:
        self.log_path, self._offset, self._partial = log_path, 0, ""

    def read(self) -> None:
        """Take in the whole lines the log gained since the last read."""
        if not self.log_path or not os.path.isfile(self.log_path):
            return
        with open(self.log_path, "rb") as f:
            f.seek(self._offset)
            chunk = f.read()
        self._offset += len(chunk)
        text, _, self._partial = (self._partial + chunk.decode("utf-8", "replace")).rpartition("\n")
        for m in CONSOLE_STEP.finditer(text):
            self.step = max(self.step, int(m.group("step")))
        for m in CONSOLE_LINE.finditer(text):
            self.train = _number(m.group("reward"))
        for m in PEER_LINE.finditer(text):
            self.step, self.train = max(self.step, int(m.group("step"))), _number(m.group("train"))
            if m.group("eval") is not None and _number(m.group("eval")) is not None:
                self.last_eval = (int(m.group("step")), _number(m.group("eval")))

    def describe(self, total: int) -> str:
        text = (f"[bench gym] run {self.number}/{total} {self.trainer} {self.env_id} seed {self.seed}: "
                f"{self.step:,}/{self.max_steps:,} steps")
        if self.train is not None:
            text += f", train return {self.train:.1f}"
        if self.last_eval is not None:
            text += f", last eval {self.last_eval[1]:.1f} at {self.last_eval[0]:,}"
        return text + (f"; {self.phase}" if self.phase else "")


class Progress:
    """An invocation's console progress, as ``python -m bench learn`` shows it and while runs go: a line when a run
    starts, one whenever a run in flight reports a new step or phase (``poll``, called by a ``progress.Ticker``),
    and one when it ends.  ETA from the planned env steps done so far (finished runs count their planned steps)."""

    def __init__(self, runs: int, steps: int, clock: Callable[[], float] = time.perf_counter):
        self.total, self.steps, self.clock = runs, int(steps), clock
        self.start = clock()
        self.started = self.finished = 0
        self.live: Dict[Tuple[str, str, int], LiveRun] = {}
        self.lock = threading.Lock()

    def _timing(self) -> str:
        done = self.finished * self.steps + sum(min(r.step, self.steps) for r in self.live.values())
        return progress.timing(self.clock() - self.start, done, self.total * self.steps)

    def begin(self, trainer: str, env_id: str, seed: int) -> str:
        with self.lock:
            self.started += 1
            self.live[(trainer, env_id, seed)] = LiveRun(self.started, trainer, env_id, seed, self.steps)
            return (f"[bench gym] run {self.started}/{self.total} started: {trainer} {env_id} seed {seed}"
                    + self._timing())

    def poll(self) -> List[str]:
        lines = []
        with self.lock:
            for run in self.live.values():
                run.read()
            for run in self.live.values():
                state = (run.step, run.phase)
                if state == run.shown or state == (0, None):
                    continue
                run.shown = state
                lines.append(run.describe(self.total) + self._timing())
        return lines

    def end(self, record: Dict[str, Any]) -> str:
        with self.lock:
            self.live.pop((record["trainer"], record["scene"], int(record["seed"])), None)
            self.finished += 1
            head = f"[{self.finished}/{self.total}] {record['trainer']} {record['scene']} seed {record['seed']}: "
            if record.get("error"):
                body = f"FAILED {record['error'][:300]}"
            else:
                last = record["eval"][-1] if record.get("eval") else None
                body = (f"{record['steps']} steps, "
                        + (f"eval {last['return_mean']:.1f} at {last['step']}" if last else "no evaluation")
                        + f", {record['wall_s'] or 0:.0f} s wall, {record['cpu_s'] or 0:.0f} s CPU"
                        + (f" ({record['steps_per_cpu_s']:.1f} env steps / CPU s)"
                           if record.get("steps_per_cpu_s") else ""))
            return head + body + self._timing()


def live_run(args: argparse.Namespace, trainer: str, env_id: str, seed: int) -> LiveRun:
    """The run's ``LiveRun`` in the invocation's ``Progress`` (``args.progress``); a detached one for a run made
    without one (nothing reads it)."""
    prog = getattr(args, "progress", None)
    run = prog.live.get((trainer, env_id, seed)) if prog is not None else None
    return run if run is not None else LiveRun(0, trainer, env_id, seed, int(getattr(args, "steps", 0)))


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


NOT_RECORDED = "machine kind not recorded"


def record_kind(record: Dict[str, Any]) -> str:
    """The machine kind a record ran on (``bench.invocation.machine_kind``; records older than the field: a kind
    of their own)."""
    return record.get("machine_kind") or NOT_RECORDED


#: the words a record's ``machine_kind`` carries when its machine was shared and its seconds are not comparable
NOT_COMPARABLE = "not comparable"


def kind_counts(records: Sequence[Dict[str, Any]]) -> Dict[str, int]:
    """Finished records per machine kind, in first-seen order."""
    counts: Dict[str, int] = {}
    for r in records:
        if not r.get("error"):
            counts[record_kind(r)] = counts.get(record_kind(r), 0) + 1
    return counts


def speed_kind(records: Sequence[Dict[str, Any]], wanted: Optional[str] = None) -> Optional[str]:
    """The machine kind whose records give the cost columns (env steps / CPU s, wall s, CPU s): the one named
    ``wanted`` in full, or else the one containing it (case-insensitive); without ``wanted`` the kind of most
    finished records (the first seen among equals), a kind marked ``NOT_COMPARABLE`` (a machine shared with other
    jobs) only when no other kind has records; None without finished records.  Returns are taken from every kind;
    seconds from one, since a CPU second of one kind of machine is not one of another.  ValueError when ``wanted`` matches no kind or several."""
    counts = kind_counts(records)
    if wanted:
        # a kind named in full wins, even where it is also part of another kind's name
        matches = ([k for k in counts if wanted.lower() == k.lower()]
                   or [k for k in counts if wanted.lower() in k.lower()])
        if len(matches) != 1:
            raise ValueError(f"--speed-kind {wanted!r} matches {len(matches)} of the records' machine kinds; "
                             f"allowed: a part of exactly one of {', '.join(repr(k) for k in counts) or 'none'}")
        return matches[0]
    clean = {k: n for k, n in counts.items() if NOT_COMPARABLE not in k} or counts
    return max(clean, key=lambda k: clean[k]) if clean else None


def _runs(n: int) -> str:
    """``1 run``, ``2 runs``."""
    return f"{n} run{'' if n == 1 else 's'}"


def kinds_note(records: Sequence[Dict[str, Any]], kind: Optional[str]) -> str:
    """One sentence: the machine kind the cost columns come from, and the runs of other kinds left out of them."""
    counts = kind_counts(records)
    if len(counts) <= 1:
        return f"Machine kind: {kind or NOT_RECORDED}."
    others = "; ".join(f"{k}: {_runs(n)}" for k, n in counts.items() if k != kind)
    return (f"Records from {len(counts)} machine kinds: returns from all of them; the cost columns (env steps / "
            f"CPU s, wall s, CPU s) only from the {_runs(counts.get(kind, 0))} on {kind} (left out of them: {others}).")


def summary_rows(records: Sequence[Dict[str, Any]], env_id: str, step: int, tolerance: int,
                 kind: Optional[str] = None) -> List[List[str]]:
    """One row per trainer on ``env_id``: finished seeds, evaluation at ``step``, training return (all records), and
    the cost columns from the records of machine ``kind`` only (all records when None)."""
    rows = []
    by_trainer: Dict[str, List[Dict[str, Any]]] = {}
    for r in records:
        if r["scene"] == env_id and not r.get("error"):
            by_trainer.setdefault(r["trainer"], []).append(r)
    for trainer in [t for t in ALL_TRAINERS if t in by_trainer] + sorted(set(by_trainer) - set(ALL_TRAINERS)):
        runs = by_trainer[trainer]
        timed = [r for r in runs if kind is None or record_kind(r) == kind]
        ev = [v for v in (final_eval(r, step, tolerance) for r in runs) if v is not None]
        name = f"**{trainer}**" if ORIGIN.get(trainer) == "ours" else trainer
        rows.append([
            name, str(len(runs)), _fmt(ev), _fmt([r["train_return"] for r in runs if r.get("train_return") is not None]),
            _fmt([r["steps_per_cpu_s"] for r in timed if r.get("steps_per_cpu_s")], 1),
            _fmt([r["wall_s"] for r in timed if r.get("wall_s")]), _fmt([r["cpu_s"] for r in timed if r.get("cpu_s")]),
        ])
    return rows


def process_rows(records: Sequence[Dict[str, Any]]) -> List[str]:
    """The report's CPU-by-process table: per run with a ``cpu_by_process`` record, CPU seconds per 1000 env steps
    of each process role and its share of the run's CPU."""
    rows = []
    for r in records:
        split = r.get("cpu_by_process")
        if r.get("error") or not split or not r.get("steps") or not r.get("cpu_s"):
            continue
        k = 1000.0 / r["steps"]
        cells = [f"{split.get(role, 0.0) * k:.2f} ({100 * split.get(role, 0.0) / r['cpu_s']:.0f}%)"
                 for role in PROCESS_ROLES]
        rows.append(f"| {r['trainer']} | {r['scene']} | {r['seed']} | {r['steps']} | {r['cpu_s'] * k:.2f} | "
                    + " | ".join(cells) + " |")
    if not rows:
        return []
    return ["## CPU by process", "",
            "CPU seconds per 1000 env steps of each process of the run's tree (share of the run's CPU): the trainer "
            "(`mlagents-learn`; an SB3 peer's whole process, its evaluation taken out), ML-Agents' environment "
            "worker, the stand-in build, Inductor's compile workers, other processes; *unseen*: the tree's CPU "
            f"(`os.wait4`) less what /proc showed of them (polled every {PROCESS_POLL_S} s): the last moments before "
            "each exit and processes shorter than a poll (the C++ compiler Inductor runs).", "",
            "| trainer | task | seed | steps | total | " + " | ".join(r.replace("_", " ") for r in PROCESS_ROLES)
            + " |", "|" + " --- |" * (5 + len(PROCESS_ROLES))] + rows + [""]


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


def estimate_rows(records: Sequence[Dict[str, Any]], meta: Dict[str, Any]) -> List[str]:
    """The last invocation's plan estimate beside what each of its runs measured (training + evaluation wall
    minutes), as a table; nothing for a report re-rendered without an invocation (``--report-only``)."""
    if not meta.get("estimate"):
        return []
    measured = {f"{r['trainer']} {r['scene']} seed {r['seed']}": r for r in records
                if r.get("invocation") == meta.get("invocation") and not r.get("error")}
    lines = ["## The last invocation's estimate and its runs", "",
             f"Estimated from earlier records on {meta.get('estimate_kind', '?')} (`--plan`, bench/cost.py); "
             "measured: the run's training and evaluation wall time.", "",
             "| run | estimate (min) | measured (min) | estimated from |", "| --- | --- | --- | --- |"]
    for row in meta["estimate"]:
        r = measured.get(row["run"])
        done = "-" if r is None else f"{((r.get('wall_s') or 0) + (r.get('eval_s') or 0)) / 60:.1f}"
        est = "-" if row["seconds"] is None else f"{row['seconds'] / 60:.1f}"
        lines.append(f"| {row['run']} | {est} | {done} | {row['basis']} |")
    return lines + [""]


def write_report(out: str, meta: Dict[str, Any]) -> str:
    records = latest_records(resume.read_records(out)[0])
    kind = speed_kind(records, meta.get("speed_kind"))
    png = plot_curves(records, os.path.join(out, "curves.png"))
    lines = ["# bench gym: Gymnasium MuJoCo tasks through mlagents-learn, against SB3 and the published anchors", "",
             f"Rendered {utc_now()} from `runs.jsonl` ({len(records)} records).  Last invocation: "
             f"`{meta.get('command', '?')}`; code {meta.get('commit', '?')}; {meta.get('machine', '?')}.", "",
             "Evaluation: every checkpoint (ML-Agents trainers: the exported ONNX, deterministic action, in "
             "onnxruntime) for the episodes stated per record, on a separate copy of the task.  Cost: wall and CPU "
             "seconds of the run's process tree without evaluation; env steps per CPU second = steps / CPU s.  "
             "Cells: mean ± std over seeds; ours in bold.  " + kinds_note(records, kind), ""]
    steps = sorted({int(r["max_steps"]) for r in records})
    for env_id in sorted({r["scene"] for r in records}):
        for step in steps:
            rows = summary_rows([r for r in records if int(r["max_steps"]) == step], env_id, step,
                                tolerance=tolerance(step), kind=kind)
            if not rows:
                continue
            lines += [f"## {env_id}, {step} steps", "",
                      f"| trainer | seeds | eval return at {step} | train return (last summary) | env steps / CPU s "
                      "| wall s | CPU s |", "| --- | --- | --- | --- | --- | --- | --- |"]
            lines += ["| " + " | ".join(row) + " |" for row in rows]
            lines.append("")
    lines += process_rows(records)
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
        where = f" on {record_kind(r)}" if len(kind_counts(records)) > 1 else ""
        lines.append(f"- {r['trainer']} {r['scene']} seed {r['seed']} ({r['steps']} steps, {r['wall_s']:.0f} s wall, "
                     f"{r['cpu_s']:.0f} s CPU{where}): {curve}")
    run_minutes = sum((r.get("wall_s") or 0) + (r.get("eval_s") or 0) for r in records) / 60
    lines += ["", f"Measured run-minutes (training + evaluation, all records): {run_minutes:.1f}."]
    if meta.get("plan") is not None:
        lines.append(f"Last invocation's plan: {len(meta['plan'])} runs ({meta.get('skipped', 0)} already recorded): "
                     + ", ".join(meta["plan"]) + ".")
    lines.append("")
    lines += estimate_rows(records, meta)
    if png:
        lines += [f"![evaluation curves]({os.path.basename(png)})", ""]
    path = os.path.join(out, "REPORT.md")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path


# ------------------------------------------------------------------------------------------------ README table
README = os.path.join(REPO, "README.md")
GYM_BEGIN = "<!-- gym:begin -->"
GYM_END = "<!-- gym:end -->"
#: the published columns of README's table (keys of ANCHORS), in order
PUBLISHED = ("SAC", "CrossQ", "MR.Q")
ANCHOR_CITATION = ("v4 tasks, 10 seeds, mean ± std ([SimbaV2](https://github.com/dojeon-ai/SimbaV2) "
                   "`results/baseline/*.csv`; MR.Q as in [MRQ](https://github.com/facebookresearch/MRQ) "
                   "`results/gym_results.txt`)")


def tolerance(step: int) -> int:
    """How many env steps a run's last checkpoint may fall short of ``step`` and still count as at ``step``."""
    return max(256, step // 50)


def median_range(values: Sequence[float]) -> str:
    """``median (min – max)``, rounded to whole returns; one value alone; a dash for none."""
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.0f}"
    return f"{float(np.median(values)):.0f} ({min(values):.0f} – {max(values):.0f})"


def _anchor_cell(value: Any) -> str:
    if value is None:
        return "—"
    return f"{value[0]} ± {value[1]}" if isinstance(value, tuple) else str(value)


def _task_order(env_id: str) -> Tuple[int, str]:
    return (TASKS.index(env_id) if env_id in TASKS else len(TASKS), env_id)


def _trainer_order(trainer: str) -> Tuple[int, str]:
    return (ALL_TRAINERS.index(trainer) if trainer in ALL_TRAINERS else len(ALL_TRAINERS), trainer)


def readme_block(records: Sequence[Dict[str, Any]], step: int, report_link: Optional[str] = None,
                 wanted_kind: Optional[str] = None) -> str:
    """README's table "On the field's benchmark", markers included: per task and trainer, the evaluation return at
    ``step`` over seeds (median, min – max), env steps per CPU second (median over seeds, from one machine kind:
    ``speed_kind``) and the published columns (``ANCHORS`` at ``step``); a trainer that ran the task only at other
    step counts (e.g. a short CrossQ run for its cost) gets a row with its speed alone.  The runs behind it are
    counted by invocation and code commit (the commands are in the report).  ValueError when no record finished at ``step``."""
    records = latest_records(records)
    at = [r for r in records if int(r["max_steps"]) == step]
    if not any(not r.get("error") for r in at):
        found = sorted({int(r["max_steps"]) for r in records})
        raise ValueError(f"no finished run at {step} env steps in the records (they hold {found or 'none'}); give "
                         "--steps of the runs the table is for")
    rows: List[Tuple[str, str, List[Dict[str, Any]], bool]] = []  # (task, trainer, records, at step)
    for env_id in sorted({r["scene"] for r in records}, key=_task_order):
        mine = [r for r in records if r["scene"] == env_id]
        trainers_at = {r["trainer"] for r in mine if int(r["max_steps"]) == step}
        for trainer in sorted({r["trainer"] for r in mine}, key=_trainer_order):
            if trainer in trainers_at:
                rows.append((env_id, trainer, [r for r in mine if r["trainer"] == trainer
                                               and int(r["max_steps"]) == step], True))
            elif any(not r.get("error") for r in mine if r["trainer"] == trainer):
                rows.append((env_id, trainer, [r for r in mine if r["trainer"] == trainer and not r.get("error")],
                             False))
    shown = [r for _, _, runs, _ in rows for r in runs]
    kind = speed_kind(shown, wanted_kind)
    others = sum(n for k, n in kind_counts(shown).items() if k != kind)
    lines = [GYM_BEGIN]
    invocations = {str(r.get("invocation")) for r in shown}
    by_commit: Dict[str, int] = {}
    for r in shown:
        commit = str(r.get("commit") or "not recorded")[:7]
        by_commit[commit] = by_commit.get(commit, 0) + 1
    source = f"[report]({report_link})" if report_link else "the report"
    episodes = sorted({int(r["eval_episodes"]) for r in shown if r.get("eval_episodes")})
    lines += [
        f"From `python -m bench gym`: {_runs(len(shown))} in {len(invocations)} "
        f"invocation{'s' if len(invocations) > 1 else ''} continued into one records folder, code "
        + ", ".join(f"`{c}` ({_runs(n)})" for c, n in by_commit.items())
        + f"; each run's command in {source}.",
        "",
        f"Return: the deterministic policy's at {step / 1000:g}k env steps ({'/'.join(map(str, episodes)) or '?'} "
        "episodes), median (min – max) over seeds. Env steps per CPU second: the run's process tree (stand-in, "
        f"compilation, updates; not evaluation), median over seeds, on {kind}"
        + (f" ({_runs(others)} on other machine kinds count in the returns only)" if others else "")
        + f". Ours in bold. Published: {ANCHOR_CITATION}.",
        "",
        f"| task | trainer | seeds | return at {step / 1000:g}k | env steps / CPU s | "
        + " | ".join(f"{name} (published)" for name in PUBLISHED) + " |",
        "|---|---|---|---|---|" + "---|" * len(PUBLISHED),
    ]
    first_of_task = set()
    for env_id, trainer, runs, at_step in rows:
        finished = [r for r in runs if not r.get("error")]
        timed = [r["steps_per_cpu_s"] for r in finished if record_kind(r) == kind and r.get("steps_per_cpu_s")]
        speed = "—" if not timed else f"{float(np.median(timed)):.1f}"
        if at_step:
            finals = [v for v in (final_eval(r, step, tolerance(step)) for r in finished) if v is not None]
            seeds = str(len(finals)) if len(finals) == len(runs) else f"{len(finals)} of {len(runs)}"
            value = median_range(finals)
        else:
            lengths = sorted({int(r["max_steps"]) for r in finished})
            seeds = str(len(finished))
            value = "— (ran " + ", ".join(f"{n / 1000:g}k" for n in lengths) + " steps: speed only)"
        anchors = ANCHORS.get((re.sub(r"-v\d+$", "", env_id.rsplit("/", 1)[-1]), step), {})
        published = ["" for _ in PUBLISHED]
        if env_id not in first_of_task:
            first_of_task.add(env_id)
            published = [_anchor_cell(anchors.get(name)) for name in PUBLISHED]
        name = f"**{trainer}**" if ORIGIN.get(trainer) == "ours" else trainer
        lines.append(f"| {env_id} | {name} | {seeds} | {value} | {speed} | " + " | ".join(published) + " |")
    lines.append(GYM_END)
    return "\n".join(lines)


def update_readme(out: str, readme: str, step: int, wanted_kind: Optional[str] = None) -> None:
    """Replace ``readme``'s block between ``GYM_BEGIN`` and ``GYM_END`` with ``readme_block`` of ``out``'s records
    (its REPORT.md linked relative to the README).  ValueError (the file left as it was) when the README lacks
    exactly one pair of markers or no record finished at ``step``."""
    from bench.report import replace_results_block

    records = resume.read_records(out)[0]
    link = os.path.relpath(os.path.join(out, "REPORT.md"), os.path.dirname(os.path.abspath(readme)))
    with open(readme) as f:
        text = f.read()
    new = replace_results_block(text, readme_block(records, step, link, wanted_kind), readme, GYM_BEGIN, GYM_END)
    tmp = readme + ".tmp"
    with open(tmp, "w") as f:
        f.write(new)
    os.replace(tmp, readme)


def _update_readme(args: argparse.Namespace) -> int:
    try:
        update_readme(os.path.abspath(args.out), args.update_readme, args.steps, args.speed_kind)
    except (OSError, ValueError) as err:
        print(f"python -m bench gym --update-readme: {err}", file=sys.stderr)
        return 2
    print(f"[bench gym] table 'On the field's benchmark' written to {args.update_readme}")
    return 0


# ------------------------------------------------------------------------------------------------ CLI
def _csv(kind: str, allowed: Optional[Sequence[str]] = None):
    def parse(text: str) -> List[str]:
        items = [t.strip() for t in text.replace(" ", ",").split(",") if t.strip()]
        bad = [t for t in items if allowed is not None and t not in allowed]
        if not items or bad:
            raise argparse.ArgumentTypeError(f"{kind} {bad or text!r} unknown; allowed: {', '.join(allowed or [])}")
        return items
    return parse


def _tasks(text: str) -> List[str]:
    """``--tasks``: Gymnasium ids and the set names of ``TASK_SETS`` (expanded in place), comma-separated."""
    items = [t.strip() for t in text.replace(" ", ",").split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError(f"--tasks {text!r}: one or more Gymnasium ids, or {' / '.join(TASK_SETS)}")
    tasks: List[str] = []
    for item in items:
        for task in TASK_SETS.get(item, (item,)):
            if task not in tasks:
                tasks.append(task)
    return tasks


def _seeds(text: str) -> List[int]:
    try:
        seeds = [int(t) for t in text.replace(" ", ",").split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seeds {text!r}: comma-separated integers, e.g. 0,1,2")
    if not seeds or any(s < 0 for s in seeds):
        raise argparse.ArgumentTypeError(f"--seeds {text!r}: one or more integers >= 0")
    return seeds


def _plan_key(trainer: str, env_id: str, args: argparse.Namespace, command: str) -> Tuple[str, str, str, int]:
    """(mode, trainer, task, steps) of a planned run, as ``cost.load_gym_history`` keys earlier records."""
    mode = cost.gym_variant({"trainer": trainer, "command": command, "buffer_init_steps": args.buffer_init_steps},
                            PEERS)
    return mode, trainer, env_id, args.steps


def plan_estimate(plan: Sequence[Tuple[str, str, int]], args: argparse.Namespace, command: str) -> "cost.PlanCost":
    """The planned runs' estimated seconds from earlier ``bench gym`` records of this machine kind, in the
    repository's results folders and ``--out`` (bench/cost.py: the same trainer, task, steps and overrides; else
    scaled from other steps)."""
    folders = cost.gym_history_folders(REPO)
    if os.path.isfile(os.path.join(args.out, "runs.jsonl")) and os.path.abspath(args.out) not in map(os.path.abspath,
                                                                                                       folders):
        folders.append(args.out)  # the invocation's own earlier records (a continuation), wherever --out is
    history = cost.load_gym_history(folders, PEERS)
    keys = [_plan_key(t, e, args, command) for t, e, _ in plan]
    return cost.plan_cost(keys, args.jobs, history, machine_kind())


def plan_groups(plan: Sequence[Tuple[str, str, int]], estimate: "cost.PlanCost"):
    """``cost.plan_lines``'s groups: each estimated key (mode, trainer, task, steps) with its seeds, in plan order."""
    groups: Dict[Tuple[str, str, str, int], List[int]] = {}
    for (_, _, seed), run in zip(plan, estimate.per_run):
        groups.setdefault(run.key, []).append(seed)
    return list(groups.items())


def build_parser() -> argparse.ArgumentParser:
    from mlagents_plugins.util.cli_args import number

    p = argparse.ArgumentParser(prog="python -m bench gym", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=number("--steps", int, low=1), default=100_000, help="env steps per run")
    p.add_argument("--seeds", type=_seeds, default=[0, 1, 2], help="comma-separated seeds (default 0,1,2)")
    p.add_argument("--trainers", type=_csv("trainer", ALL_TRAINERS), default=list(ALL_TRAINERS),
                   help=f"comma-separated, from {', '.join(ALL_TRAINERS)} (default all)")
    p.add_argument("--tasks", type=_tasks, default=list(TASKS),
                   help="comma-separated Gymnasium ids with configs/gym/<trainer>_<task>.yaml, or a set: 'tuning' ("
                        + ",".join(TASKS) + ", the default), 'validation' (" + ",".join(VALIDATION_TASKS) + ")")
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
    p.add_argument("--plan", action="store_true",
                   help="only print the runs this invocation would make and their estimated run- and wall-minutes "
                        "(from earlier bench gym records of this machine kind; bench/cost.py), then exit")
    p.add_argument("--work-dir", default=None, help="where runs write their results while they go (default: tmp)")
    p.add_argument("--progress-every", type=number("--progress-every", float, low=0), default=30.0,
                   help="seconds between looks at the runs in flight; a line whenever one reports a new step "
                        "(default 30; 0: only a line per run started and ended)")
    p.add_argument("--update-readme", nargs="?", const=README, default=None, metavar="README",
                   help="also write README's table 'On the field's benchmark' (between "
                        f"{GYM_BEGIN} and {GYM_END}) from OUT's records at --steps (default README.md of this "
                        "checkout)")
    p.add_argument("--speed-kind", default=None, metavar="TEXT",
                   help="records of several machine kinds: the speed columns from the kind containing TEXT (e.g. "
                        "EPYC; default: the kind with the most records)")
    p.add_argument("--set", dest="overrides", type=parse_override, action="append", default=[], metavar="KEY=VALUE",
                   help="override a setting of the ML-Agents trainers' configs (repeatable), a dotted path into the "
                        "behavior's settings and a YAML value: --set hyperparameters.adam_beta1=0.5")
    p.add_argument("--peer-set", dest="peer_overrides", type=parse_override, action="append", default=[],
                   metavar="KEY=VALUE",
                   help="override a keyword of the SB3 peers' constructors (repeatable; a YAML value, a dotted path "
                        "into a dict keyword): --peer-set learning_rate=0.001, a peer at a tuned trainer's rate")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    if args.report_only and not os.path.isfile(os.path.join(args.out, "runs.jsonl")):
        print(f"python -m bench gym --report-only: no records at {os.path.join(args.out, 'runs.jsonl')}; --out names "
              "the folder of an invocation's runs.jsonl (e.g. bench/results/<study>)", file=sys.stderr)
        return 2
    if args.plan and args.report_only:
        print("python -m bench gym: --plan prints what an invocation would run; --report-only runs nothing",
              file=sys.stderr)
        return 2
    if not args.plan:
        os.makedirs(args.out, exist_ok=True)
    meta = {"command": "python -m bench gym " + " ".join(argv if argv is not None else sys.argv[1:]),
            "commit": code_commit(), "machine": machine()}
    if args.speed_kind and not args.report_only:
        print("python -m bench gym: --speed-kind chooses among recorded machine kinds; it goes with --report-only",
              file=sys.stderr)
        return 2
    if args.report_only:
        meta["speed_kind"] = args.speed_kind
        try:
            print(write_report(args.out, meta))
        except ValueError as err:
            print(f"python -m bench gym: {err}", file=sys.stderr)
            return 2
        return _update_readme(args) if args.update_readme else 0
    missing = [config_path(t, e) for t in args.trainers if t in ML_TRAINERS for e in args.tasks
               if not os.path.isfile(config_path(t, e))]
    if missing:
        print(f"python -m bench gym: no config for {', '.join(missing)}", file=sys.stderr)
        return 2
    skip = done_keys(resume.read_records(args.out)[0]) if args.resume else set()
    plan = [(t, e, s) for e in args.tasks for t in args.trainers for s in args.seeds if (t, e, s) not in skip]
    estimate = plan_estimate(plan, args, meta["command"])
    lines = cost.plan_lines(estimate, plan_groups(plan, estimate), done=len(skip))
    if args.plan:
        print("\n".join(f"[bench gym] {line}" for line in lines))
        return 0
    from mlagents_plugins.envs.standin import write_gym_build

    # Absolute: each mlagents-learn child runs in its own work folder, where a relative --out would not resolve.
    args.builds = os.path.abspath(os.path.join(args.out, "builds"))
    for env_id in args.tasks:
        write_gym_build(args.builds, env_id)
    invocation = new_id()
    meta.update(plan=[f"{t} {e} seed {s}" for t, e, s in plan], skipped=len(skip), invocation=invocation,
                estimate=[{"run": f"{t} {e} seed {s}", "seconds": est.seconds, "basis": est.basis}
                          for (t, e, s), est in zip(plan, estimate.per_run)],
                estimate_kind=estimate.machine_kind)
    print(f"bench gym {invocation}: {len(plan)} runs ({len(skip)} already recorded), {args.jobs} at a time -> "
          f"{args.out}", flush=True)
    print("\n".join(f"[bench gym] {line}" for line in lines), flush=True)
    lock = threading.Lock()
    # what every record of this invocation says about where it ran: a continuation on another machine kind keeps
    # its returns in the tables, its seconds apart (speed_kind)
    stamp = {"commit": meta["commit"], "machine_kind": machine_kind(), "command": meta["command"]}
    args.progress = Progress(len(plan), args.steps)

    def one(job):
        trainer, env_id, seed = job
        print(args.progress.begin(trainer, env_id, seed), flush=True)
        record = run_one(trainer, env_id, seed, args, invocation)
        record.update(stamp)
        append_record(args.out, record, lock)
        with lock:
            write_report(args.out, meta)
        print(args.progress.end(record), flush=True)
        return record

    with progress.Ticker(args.progress.poll, args.progress_every), ThreadPoolExecutor(max_workers=args.jobs) as pool:
        records = list(pool.map(one, plan))
    print(write_report(args.out, meta))
    if args.update_readme:
        code = _update_readme(args)
        if code:
            return code
    return 1 if any(r["error"] for r in records) else 0
