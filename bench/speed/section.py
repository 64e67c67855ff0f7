"""The speed section (``python -m bench speed``, and the end of ``python -m bench learn``): every speed
measurement as a subprocess of its own, output kept for the report.

``python -m bench speed update`` (every trainer's full update vs a minimal PyTorch loop and the built-in
counterpart; torch threads 1 and 2 inside one process) runs once at the configs' sizes and once at issue #3's
(2x256 units, batch 256), and gives the report's "Speed" tables; ``python -m bench speed learn`` (env steps/s of
sac vs fast_sac through real mlagents-learn, issue #3's 8-agent setup) runs once; ``python -m bench replay``
(replay memory, sampling, save/load) runs once.  Each runs with ``--json``; its JSON is parsed, anything else
(a failure's output) is kept as text.  A fresh process per measurement: no measurement inherits another's
torch threads, compiled graphs or allocator state.
"""
import json
import os
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UPDATE = "speed update"
LEARN = "speed learn"
REPLAY = "replay"
#: issue #3's sizes, the second update measurement
ISSUE3_SIZES = ["--hidden-units", "256", "--num-layers", "2", "--batch-size", "256"]
#: smaller workloads for --quick
QUICK_ARGS = {UPDATE: ["--updates", "40", "--rows", "5000", "--budget-s", "15", "--warmup", "5"],
              REPLAY: ["--repeats", "1"], LEARN: ["--pairs", "1", "--steps", "4000"]}


def parse_output(text: str) -> Optional[Any]:
    """The JSON a command printed: the whole output, else its last line that is a JSON object/list."""
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


def run_measurement(name: str, args: Sequence[str], timeout_s: int) -> Dict[str, Any]:
    """Run ``python -m bench <name> <args> --json`` in the checkout; the report entry of its result."""
    cmd = [sys.executable, "-m", "bench", *name.split(), *args, "--json"]
    entry: Dict[str, Any] = {"name": name, "command": " ".join(["python"] + cmd[1:]), "rc": None}
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout_s,
                              cwd=REPO)
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
    """Every speed measurement's entry, in a fixed order."""
    log(f"[speed] {UPDATE} (threads 1 and 2 in one process) ...")
    entries = [run_measurement(UPDATE, QUICK_ARGS[UPDATE] if quick else [], timeout_s)]
    if not quick:
        log(f"[speed] {UPDATE} at issue #3's sizes (2x256, batch 256), fast_sac and sac ...")
        entries.append(run_measurement(UPDATE, ["--trainers", "fast_sac"] + ISSUE3_SIZES, timeout_s))
    log(f"[speed] {LEARN} (mlagents-learn, sac vs fast_sac, issue #3's 8-agent setup) ...")
    entries.append(run_measurement(LEARN, QUICK_ARGS[LEARN] if quick else [], timeout_s))
    log(f"[speed] {REPLAY} ...")
    replay_args = ["--rows", str(replay_rows)] + (QUICK_ARGS[REPLAY] if quick else ["--repeats", "3"])
    entries.append(run_measurement(REPLAY, replay_args, timeout_s))
    return entries
