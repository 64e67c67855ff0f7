"""The tiny-budgets study's runs (issue 53): the budgets at which built-in sac passes its own hybrid-2c2d and entity
cases, and our trainers on those budgets.  Each run's record (``python -m mlagents_plugins.envs.tiny``'s, plus
``group`` and ``max_steps``) is appended to OUT as it finishes; runs already in OUT are not made again.  Run from the
repository root: ``python bench/results/tiny-budgets-2026-11-29/grid.py OUT JOBS GROUP...``.

Groups:
- ``sac-ent``: built-in sac on ``sac-entities-continuous`` at 2000 and 3000 steps, seeds 0-2 (it fails seed 0 at the
  case's 1000);
- ``sac-hyb-repro``: built-in sac on ``sac-hybrid-2c2d`` at 2500 steps, seed 0, to check that today's code repeats
  the 10000-step finals measured at e703364 (tiny-regressions-2026-11-27; 0.708 at 2500 there);
- ``fast-hyb``: fast_sac on ``sac-hybrid-2c2d`` at the case's budget, seeds 0-2, today's code;
- ``ours-ent``: fast_sac and taac on ``sac-entities-continuous`` at the budget ``ENT_STEPS``, seeds 0-2;
- ``taac-cand``: taac's camera and entity cases with ``TAAC_CANDIDATE`` set, seeds 0-2.
"""
import json
import multiprocessing
import os
import sys

from mlagents_plugins.envs import tiny

SEEDS = (0, 1, 2)
ENT_STEPS = int(os.environ.get("ENT_STEPS", "2000"))
TAAC_CANDIDATE = json.loads(os.environ.get("TAAC_CANDIDATE", "{}"))


def jobs(groups):
    out = []
    if "sac-ent" in groups:
        for steps in (2000, 3000):
            out += [("sac-ent", ("sac-entities-continuous", "sac", s, {}, steps)) for s in SEEDS]
    if "sac-hyb-repro" in groups:
        out.append(("sac-hyb-repro", ("sac-hybrid-2c2d", "sac", 0, {}, 2500)))
    if "fast-hyb" in groups:
        out += [("fast-hyb", ("sac-hybrid-2c2d", "fast_sac", s, {}, None)) for s in SEEDS]
    if "ours-ent" in groups:
        # seed 0 first (the default test run's seed), taac first (its default-run case)
        out += [("ours-ent", ("sac-entities-continuous", trainer, s, {}, ENT_STEPS))
                for s in SEEDS for trainer in ("taac", "fast_sac")]
    if "taac-cand" in groups:
        name = "taac-cand:" + json.dumps(TAAC_CANDIDATE, sort_keys=True)
        for s in SEEDS:
            out += [(name, (c, "taac", s, dict(TAAC_CANDIDATE), None))
                    for c in ("sac-camera-continuous", "sac-entities-continuous")]
    return out


def _code():
    import subprocess

    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "mlagents_plugins"],
                           capture_output=True, text=True).stdout.strip()
    return head + (" + uncommitted mlagents_plugins changes" if dirty else "")


def run(job):
    group, args = job
    record = tiny._run_job(args)
    record.update(group=group, code=_code(), machine="this 2-core Intel Xeon, one core (heavy --cores 1)")
    return record


def _key(group, args):
    return group, args[1], args[0], args[2], args[4]


def main():
    out, n_jobs, groups = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    done = set()
    if os.path.isfile(out):
        for line in open(out):
            r = json.loads(line)
            done.add((r.get("group"), r["trainer"], r["case"], r["seed"], r.get("max_steps")))
    todo = [j for j in jobs(groups) if _key(*j) not in done]
    print(f"tiny budgets: {len(todo)} runs, {n_jobs} at a time -> {out}", flush=True)
    if n_jobs == 1:
        results = map(run, todo)
    else:
        results = multiprocessing.get_context("spawn").Pool(n_jobs).imap_unordered(run, todo)
    for record in results:
        line = json.dumps(record)
        print(line[:300], flush=True)
        with open(out, "a") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main()
