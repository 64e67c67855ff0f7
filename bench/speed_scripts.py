"""The speed section: run the speed scripts as subprocesses and keep their output.

``bench/update_speed.py`` (every trainer's full update vs a minimal PyTorch loop and the built-in
counterpart; torch threads 1 and 2 inside one process) runs once at the configs' sizes and once at issue #3's
(2x256 units, batch 256), and gives the report's "Speed" tables; ``bench/learn_speed.py`` (env steps/s of sac
vs fast_sac through real mlagents-learn, issue #3's 8-agent setup) runs once (``OMP_NUM_THREADS``, plus ``--threads N`` when the script's ``--help``
offers it; ``--json`` likewise); ``bench/replay_io.py`` runs once.  JSON output is parsed; anything else
is kept as text.  A script that does not exist yet is reported as missing, never replaced.
"""
import json
import os
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH_DIR)
UPDATE_SPEED = "update_speed.py"
#: issue #3's sizes, the second update_speed run
ISSUE3_SIZES = ["--hidden-units", "256", "--num-layers", "2", "--batch-size", "256"]
#: smaller workloads for --quick, passed only when the script's --help offers the option
QUICK_ARGS = {UPDATE_SPEED: ["--updates", "40", "--rows", "5000", "--budget-s", "15", "--warmup", "5"],
              "replay_io.py": ["--repeats", "1"], "learn_speed.py": ["--pairs", "1", "--steps", "4000"]}
LEARN_SPEED = "learn_speed.py"


def parse_output(text: str) -> Optional[Any]:
    """The JSON a script printed: the whole output, else its last line that is a JSON object/list."""
    stripped = text.strip()
    if not stripped:
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        pass
    for line in reversed(stripped.splitlines()):
        line = line.strip()
        if line[:1] in "{[":
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


def _help(path: str) -> str:
    try:
        proc = subprocess.run([sys.executable, path, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=120, cwd=REPO)
        return proc.stdout
    except (subprocess.SubprocessError, OSError):
        return ""


def run_script(name: str, args: Sequence[str], threads: Optional[int], timeout_s: int) -> Dict[str, Any]:
    """Run ``bench/<name>`` with ``args`` as (option, value) pairs, left out where its ``--help`` does not offer
    them."""
    path = os.path.join(BENCH_DIR, name)
    entry: Dict[str, Any] = {"name": name, "threads": threads, "command": f"python bench/{name}", "rc": None}
    if not os.path.isfile(path):
        entry["missing"] = f"bench/{name} does not exist yet (written by another engineer); nothing measured."
        return entry
    offered = _help(path)
    cmd = [sys.executable, path]
    for i in range(0, len(args), 2):  # (option, value) pairs the script does not offer are left out
        if args[i] in offered:
            cmd += list(args[i:i + 2])
    if threads is not None and "--threads" in offered:
        cmd += ["--threads", str(threads)]
    if "--json" in offered:
        cmd.append("--json")
    env = dict(os.environ)
    if threads is not None:
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    entry["command"] = " ".join(["python", f"bench/{name}"] + cmd[2:])
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                              timeout=timeout_s, cwd=REPO)
        entry["rc"] = proc.returncode
        out = proc.stdout if proc.returncode == 0 else proc.stdout + "\n" + proc.stderr[-2000:]
    except subprocess.TimeoutExpired as err:
        entry["rc"] = "timeout"
        out = f"stopped after {timeout_s} s\n" + (err.stdout or b"").decode(errors="replace")[-2000:]
    entry["seconds"] = time.perf_counter() - start
    parsed = parse_output(out) if entry["rc"] == 0 else None
    if parsed is not None:
        entry["json"] = parsed
    else:
        entry["text"] = out
    return entry


def run_speed(replay_rows: int, timeout_s: int, quick: bool = False, log=print) -> List[Dict[str, Any]]:
    """Every speed script's entries, in a fixed order."""
    log(f"[speed] {UPDATE_SPEED} (threads 1 and 2 in one process) ...")
    entries = [run_script(UPDATE_SPEED, QUICK_ARGS[UPDATE_SPEED] if quick else [], None, timeout_s)]
    if not quick:
        log(f"[speed] {UPDATE_SPEED} at issue #3's sizes (2x256, batch 256), fast_sac and sac ...")
        entries.append(run_script(UPDATE_SPEED, ["--trainers", "fast_sac"] + ISSUE3_SIZES, None, timeout_s))
    log(f"[speed] {LEARN_SPEED} (mlagents-learn, sac vs fast_sac, issue #3's 8-agent setup) ...")
    entries.append(run_script(LEARN_SPEED, QUICK_ARGS[LEARN_SPEED] if quick else [], None, timeout_s))
    log("[speed] replay_io.py ...")
    replay_args = ["--rows", str(replay_rows)] + (QUICK_ARGS["replay_io.py"] if quick else ["--repeats", "3"])
    entries.append(run_script("replay_io.py", replay_args, None, timeout_s))
    return entries
