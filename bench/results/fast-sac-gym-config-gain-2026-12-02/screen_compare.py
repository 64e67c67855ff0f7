"""fast_sac's validation screen (3 seeds, `python -m bench defaults --screen --trainers fast_sac --seeds 3`) in four
records: the last full screen of its defaults (fast-sac-network-2026-11-30, c50405b, another AMD EPYC), c50405b again
on this machine (three scenes), e364a2f (with auto's probe drawing from the global generator) and a79e28a (the fix).
Per scene: each seed's final mean reward, their median, and the step each seed first reached the scene's threshold.
    python bench/results/fast-sac-gym-config-gain-2026-12-02/screen_compare.py"""
import json
import pathlib
import statistics

here = pathlib.Path(__file__).parent
COLUMNS = [
    ("c50405b (other EPYC)", here.parent / "fast-sac-network-2026-11-30/screens/screen-before.jsonl"),
    ("c50405b (here)", here / "screen-c50405b/runs.jsonl"),
    ("e364a2f (here)", here / "screen/runs.jsonl"),
    ("a79e28a fix (here)", here / "screen-fixed/runs.jsonl"),
]


def load(path):
    out = {}
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if r.get("error") or r["trainer"] != "fast_sac":
            continue
        reached = next((step for step, _seconds, reward in r["curve"] if reward >= r["threshold"]), None)
        out[(r["scene"], r["seed"])] = (r["final_mean_reward"], reached, r["threshold"])
    return out


columns = [(name, load(path)) for name, path in COLUMNS]
scenes = sorted({scene for _, runs in columns for scene, _ in runs})
print("| scene (threshold) | " + " | ".join(name for name, _ in columns) + " |")
print("| --- |" + " --- |" * len(columns))
for scene in scenes:
    threshold = next(v[2] for _, runs in columns for k, v in runs.items() if k[0] == scene)
    cells = []
    for _, runs in columns:
        seeds = sorted(seed for s, seed in runs if s == scene)
        if not seeds:
            cells.append("-")
            continue
        finals = [runs[(scene, seed)][0] for seed in seeds]
        reached = ["-" if runs[(scene, seed)][1] is None else f"{runs[(scene, seed)][1] / 1000:g}k" for seed in seeds]
        cells.append(f"{' / '.join(f'{f:.2f}' for f in finals)} (**{statistics.median(finals):.2f}**); "
                     f"{' / '.join(reached)}")
    print(f"| {scene} ({threshold:g}) | " + " | ".join(cells) + " |")
