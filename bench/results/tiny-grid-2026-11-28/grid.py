"""One pool over several tiny-case screens (issues 53 and 56), in priority order, each run's record appended to
OUT as it finishes (``python -m mlagents_plugins.envs.tiny``'s record, plus ``group``).  Run from the repository
root: ``[GRID_SKIP=case,...] python bench/results/tiny-grid-2026-11-28/grid.py OUT JOBS [GROUP ...]``; runs already
in OUT are not made again.

Groups:
- ``default`` / ``crossq``: fast_sac on every case of the sac config, seeds 0-2, at its defaults and with the CrossQ
  recipe's critic, Adam beta1 and actor delay (issue 56's candidate default; the config's learning rate kept), interleaved so that a cut-off invocation still pairs them;
- ``ent0``, ``ent0-neutral``, ``switch1``: issue 53's candidates on fast_sac's and taac's failing cases (and
  fast_sac's entity case, which passes today, for loss);
- ``shift0``, ``nstep1``, ``ln0``: fast_sac's and taac's deviations from built-in sac switched off one at a time
  (DrQ's random shift, the 2-step return, the critics' layer norm) on the same cases.
"""
import json
import multiprocessing
import os
import sys

from mlagents_plugins.envs import tiny

# the CrossQ recipe's settings that a default would change; learning_rate stays the user's (the config's)
CROSSQ = {"critic_batch_renorm": True, "adam_beta1": 0.5, "actor_update_every": 3}
SEEDS = (0, 1, 2)
FAST_SAC_53 = ("sac-hybrid-2c2d", "sac-camera-continuous", "sac-entities-continuous")
TAAC_53 = ("sac-camera-continuous", "sac-entities-continuous")


def jobs(groups):
    out = []
    if "default" in groups or "crossq" in groups:
        for case in tiny.cases_for("fast_sac"):
            for seed in SEEDS:
                if "default" in groups:
                    out.append(("default", (case.name, "fast_sac", seed, {})))
                if "crossq" in groups:
                    out.append(("crossq", (case.name, "fast_sac", seed, dict(CROSSQ))))
    cands = {
        "ent0": ({"continuous_target_entropy_scale": 0.0}, {"action_target_entropy_scale": 0.0}),
        "ent0-neutral": ({"continuous_target_entropy_scale": 0.0, "critic_neutral_init": True},
                         {"action_target_entropy_scale": 0.0, "critic_neutral_init": True}),
        "switch1": (None, {"init_switch_temperature": 1.0}),
    }
    # fast_sac's and taac's deviations from built-in sac, one at a time (built-in sac passes these cases 3/3)
    cands.update({
        "shift0": ({"random_shift_pad": 0}, None),
        "nstep1": ({"n_step": 1}, None),
        "ln0": ({"critic_layer_norm": False}, {"critic_layer_norm": False}),
    })
    for name, (fast, taac) in cands.items():
        if name not in groups:
            continue
        for seed in SEEDS:
            if fast is not None:  # the random shift acts on cameras only
                cases = ("sac-camera-continuous",) if name == "shift0" else FAST_SAC_53
                out += [(name, (c, "fast_sac", seed, dict(fast))) for c in cases]
            if taac is not None:
                out += [(name, (c, "taac", seed, dict(taac))) for c in TAAC_53]
    return out


def more_jobs(groups):
    """``ln0-more``: the critics' layer norm off on the other continuous cases (loss check); ``ln0-neutral``: taac's
    camera and entity cases with the layer norm off and ``critic_neutral_init``."""
    out = []
    for seed in SEEDS:
        if "ln0-more" in groups:
            out += [("ln0", (c, "fast_sac", seed, {"critic_layer_norm": False}))
                    for c in ("sac-line-continuous", "sac-square-continuous", "sac-memory-continuous")]
            out += [("ln0", (c, "taac", seed, {"critic_layer_norm": False}))
                    for c in ("sac-line-continuous", "sac-square-continuous")]
        if "ln0-neutral" in groups:
            out += [("ln0-neutral", (c, "taac", seed, {"critic_layer_norm": False, "critic_neutral_init": True}))
                    for c in TAAC_53]
    return out


def run(job):
    group, args = job
    record = tiny._run_job(args)
    record["group"] = group
    return record


def main():
    out, n_jobs, groups = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    # an invocation continues: runs already in OUT are not made again; GRID_SKIP names cases left out
    skip = set(filter(None, os.environ.get("GRID_SKIP", "").split(",")))
    done = set()
    if os.path.isfile(out):
        for line in open(out):
            r = json.loads(line)
            done.add((r.get("group"), r["trainer"], r["case"], r["seed"]))
    todo = [j for j in jobs(groups) + more_jobs(groups) if j[1][0] not in skip and (j[0], j[1][1], j[1][0], j[1][2]) not in done]
    print(f"tiny grid: {len(todo)} runs, {n_jobs} at a time -> {out}", flush=True)
    with multiprocessing.get_context("spawn").Pool(n_jobs) as pool:
        for record in pool.imap_unordered(run, todo):
            line = json.dumps(record)
            print(line[:300], flush=True)
            with open(out, "a") as f:
                f.write(line + "\n")


if __name__ == "__main__":
    main()
