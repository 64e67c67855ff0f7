"""``REPORT.md`` from one invocation's run records, its environment description and the speed section.

Pure rendering: every number comes from the records passed in (see ``bench.metrics`` for their fields);
ratios use ``metrics.ratios``, which refuses records from more than one invocation.
"""
import json
import statistics
from typing import Any, Dict, List, Optional, Sequence

from bench.metrics import (Summary, best_rolling_mean, collapsed, machine_kinds, ratios, same_commit, same_invocation,
                           steps_to_threshold, summarize_timed, timing_kind)

DASH = "—"

SUMMARY_HEADER = (
    "| scene | trainer | reached / seeds | steps to threshold (median) | seconds to threshold (median) "
    "| final return (mean ± std) | collapsed | env steps/s | update s / 1k steps | replay MB | save s | load s |"
)
SUMMARY_RULE = "|" + "---|" * 12
RATIO_HEADER = (
    "| scene | trainer | vs | speed (steps/s ratio) | sample efficiency (steps-to-threshold ratio) "
    "| time to threshold ratio | final return difference |"
)
RATIO_RULE = "|" + "---|" * 7
SEED_HEADER = ("| scene | trainer | seed | steps to threshold | seconds to threshold | best rolling mean | final return "
               "| collapsed |")
SEED_RULE = "|" + "---|" * 8
#: where the replay MB column comes from, per mode (the rest of the legend is bench/README.md)
REPLAY_LEGEND = {
    "in_process": "replay MB: the trainer's buffer at the end of the run (ours `ReplayBuffer.nbytes`, preallocated "
                  "at `buffer_size`; sac its `update_buffer`'s arrays + Python objects); — for on-policy trainers.",
    "mlagents-learn": "replay MB: from the replay file the run saved at its end, loaded back (ours `load_replay` "
                      "rebuilds the buffer at its saved capacity: its `nbytes`; sac `last_replay_buffer.hdf5` as an "
                      "`AgentBuffer`: arrays + Python objects, each step now a view of one array, so not identical to the "
                      "in-process figure); — for on-policy trainers.  Not the process's RSS.",
}
MODE_TITLES = {
    "in_process": "In-process runs (`train_in_process`, one `SceneEnv`)",
    "mlagents-learn": "Through real `mlagents-learn --env` (gRPC stand-in build)",
}


def fmt(value: Optional[float], digits: int = 2) -> str:
    """Fixed-point text, or a dash for a missing value."""
    return DASH if value is None else f"{value:.{digits}f}"


def fmt_int(value: Optional[float]) -> str:
    return DASH if value is None else f"{int(round(value)):,}"


def summary_row(s: Summary) -> str:
    final = DASH if s.final_mean is None else f"{s.final_mean:.2f} ± {s.final_std:.2f}"
    reached = f"{s.reached}/{s.seeds}" + ("" if s.finished == s.seeds else f" ({s.seeds - s.finished} failed)")
    cells = [
        s.scene,
        f"**{s.trainer}**" if s.origin == "ours" else s.trainer,
        reached,
        fmt_int(s.median_steps_to_threshold),
        fmt(s.median_seconds_to_threshold, 1),
        final,
        f"{s.collapsed}/{s.finished}",
        fmt(s.steps_per_second, 0),
        fmt(s.update_seconds_per_1k_steps, 2),
        fmt(s.replay_mb, 1),
        fmt(s.save_seconds, 2),
        fmt(s.load_seconds, 2),
    ]
    return "| " + " | ".join(cells) + " |"


def summary_table(summaries: Sequence[Summary]) -> List[str]:
    return [SUMMARY_HEADER, SUMMARY_RULE] + [summary_row(s) for s in summaries]


def ratio_table(runs: Sequence[dict], mode: str, kind: Optional[str] = None) -> List[str]:
    rows = [r for r in ratios(runs, kind=kind) if r.mode == mode]
    if not rows:
        return ["No ratio: no trainer of ours and built-in ran on the same scene in this mode."]
    lines = [RATIO_HEADER, RATIO_RULE]
    for r in rows:
        ratio_cells = [fmt(r.speed), fmt(r.sample_efficiency), fmt(r.time_to_threshold)]
        lines.append(
            f"| {r.scene} | **{r.trainer}** | {r.baseline} | " + " | ".join(ratio_cells)
            + f" | {'+' if (r.final_difference or 0) >= 0 else ''}{fmt(r.final_difference)} |"
        )
    return lines


def per_seed_table(runs: Sequence[dict], mode: str) -> List[str]:
    """One row per run: when it reached the threshold, its best rolling mean and where it ended (the collapse
    criterion's two numbers), so a median over seeds hides nothing."""
    rows = sorted((r for r in runs if r["mode"] == mode),
                  key=lambda r: (r["scene"], r.get("origin") != "ours", r["trainer"], r["seed"]))
    lines = [SEED_HEADER, SEED_RULE]
    for r in rows:
        if r.get("error"):
            lines.append(f"| {r['scene']} | {r['trainer']} | {r['seed']} | failed: {r['error']} | | | | |")
            continue
        hit = steps_to_threshold(r["curve"], r["threshold"])
        final = r.get("final_mean_reward")
        cells = [r["scene"], f"**{r['trainer']}**" if r.get("origin") == "ours" else r["trainer"], str(r["seed"]),
                 DASH if hit is None else f"{hit[0]:,}", DASH if hit is None else f"{hit[1]:.1f}",
                 fmt(best_rolling_mean(r["curve"])), fmt(final),
                 "yes" if collapsed(r["curve"], final) else "no"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def environment_lines(env: Dict[str, Any]) -> List[str]:
    keys = [
        ("date", "Date (UTC)"),
        ("machine", "Machine"),
        ("commit", "Code commit"),
        ("python", "Python"),
        ("torch", "torch"),
        ("mlagents", "mlagents"),
        ("torch_threads", "torch threads per run"),
        ("jobs", "runs in parallel"),
        ("budget", "budget"),
        ("command", "command"),
        ("elapsed", "bench wall time"),
        ("sessions", "sessions"),
        ("note", "note"),
    ]
    return [f"- **{label}:** {env[k]}" for k, label in keys if env.get(k) not in (None, "")]


def _flat(value: Any) -> bool:
    return isinstance(value, dict) and all(not isinstance(v, (dict, list)) for v in value.values())


def _rows_table(rows: Dict[str, Dict[str, Any]], first: str) -> List[str]:
    cols = list(dict.fromkeys(k for r in rows.values() for k in r))
    out = [f"| {first} | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    return out + [f"| {name} | " + " | ".join(str(r.get(c, DASH)) for c in cols) + " |" for name, r in rows.items()]


def json_lines(value: Any) -> List[str]:
    """Markdown for a script's JSON: scalars as a list, dicts/lists of flat records as tables, else JSON."""
    if not isinstance(value, dict):
        return ["```json", json.dumps(value, indent=1, sort_keys=True), "```"]
    lines = [f"- {k}: {v}" for k, v in value.items() if not isinstance(v, (dict, list))]
    for key, sub in value.items():
        if isinstance(sub, dict) and sub and all(_flat(v) for v in sub.values()):
            lines += ["", f"{key}:", ""] + _rows_table(sub, key)
        elif isinstance(sub, list) and sub and all(_flat(v) for v in sub):
            lines += ["", f"{key}:", ""] + _rows_table({str(i): v for i, v in enumerate(sub)}, "#")
        elif isinstance(sub, (dict, list)):
            lines += ["", f"{key}:", "", "```json", json.dumps(sub, indent=1, sort_keys=True), "```"]
    return lines


SPEED_HEADER = ("| trainer | torch threads | ours ms / update | minimal ms / update | ratio ours / minimal "
                "| built-in | built-in ms / update | ratio ours / built-in | work per update "
                "| backward passes ours / minimal | trained parameters ours / minimal | updates timed |")
SPEED_RULE = "|" + "---|" * 12
SPEED_LEGEND = (
    "One process (`python -m bench speed update`), torch threads 1 then 2.  *ours*: the trainer's real full update "
    "(sample from its buffer + its optimizer's step(s)), built from `configs/<trainer>_balance.yaml`; *minimal*: "
    "a hand-written PyTorch loop of the same algorithm, layers, batch and number of backward passes "
    "(`bench/minimal_*.py`); *built-in*: ML-Agents' counterpart's update (sac for fast_sac, ppo minibatch "
    "for impala) measured in the same run.  ms = median of 5 interleaved blocks (fewer updates when a thread count "
    "is slow, see `--budget-s`); ratio > 1: ours is slower.  On a loaded machine the 2-thread rows mostly measure "
    "contention for the cores.")


def speed_rows_table(rows: Sequence[Dict[str, Any]]) -> List[str]:
    """The report's "Speed" table from ``python -m bench speed update``'s ``speed_rows``."""
    def cell(value: Any, digits: int = 2) -> str:
        if value is None:
            return DASH
        return fmt(value, digits) if isinstance(value, float) else str(value)

    lines = [SPEED_HEADER, SPEED_RULE]
    for r in rows:
        if r.get("error"):
            lines.append(f"| **{r['trainer']}** | {DASH} | FAILED: {r['error']} |" + f" {DASH} |" * 9)
            continue
        lines.append("| " + " | ".join([
            f"**{r['trainer']}**", str(r["threads"]), cell(r.get("ours_ms")), cell(r.get("minimal_ms")),
            cell(r.get("ratio_ours_over_minimal")), cell(r.get("builtin")), cell(r.get("builtin_ms")),
            cell(r.get("ratio_ours_over_builtin")), cell(r.get("work")), cell(r.get("backward_passes")),
            cell(r.get("trained_parameters")), cell(r.get("updates")),
        ]) + " |")
    return lines


def speed_lines(speed: Sequence[Dict[str, Any]]) -> List[str]:
    """The "Speed" table (``python -m bench speed update``), then every other measurement's output."""
    if not speed:
        return ["Not run (`--no-speed`)."]
    lines: List[str] = []
    tables = [e for e in speed if isinstance(e.get("json"), dict) and "speed_rows" in e["json"]]
    for e in tables:
        lines += [f"`{e.get('command', '')}`: exit code {e.get('rc')}, {fmt(e.get('seconds'), 1)} s", "",
                  SPEED_LEGEND, ""] + speed_rows_table(e["json"]["speed_rows"]) + [""]
    others = [e for e in speed if not any(e is x for x in tables)]
    if others:
        lines += ["### Other speed measurements", ""] + script_lines(others)
    return lines


def script_lines(speed: Sequence[Dict[str, Any]]) -> List[str]:
    """Each entry: ``name``, ``threads``, ``command``, ``rc``, ``seconds`` and ``json`` (parsed output),
    ``text`` or ``missing``.  Flat JSON objects of one script become one table, a column per thread count."""
    lines: List[str] = []
    for name in dict.fromkeys(e["name"] for e in speed):
        entries = [e for e in speed if e["name"] == name]
        lines += [f"#### {name}", ""]
        for e in entries:
            threads = "" if e.get("threads") is None else f" (torch threads {e['threads']})"
            lines.append(f"- `{e.get('command', '')}`{threads}: exit code {e.get('rc')}, {fmt(e.get('seconds'), 1)} s")
        lines.append("")
        if all(_flat(e.get("json")) for e in entries):
            keys = list(dict.fromkeys(k for e in entries for k in e["json"]))
            heads = [f"threads {e['threads']}" if e.get("threads") is not None else "value" for e in entries]
            lines += ["| measure | " + " | ".join(heads) + " |", "|---|" + "---|" * len(entries)]
            lines += [f"| {k} | " + " | ".join(str(e["json"].get(k, DASH)) for e in entries) + " |" for k in keys]
            lines.append("")
            continue
        for e in entries:
            if e.get("missing"):
                lines += [e["missing"], ""]
            elif e.get("json") is not None:
                threads = "" if e.get("threads") is None else f"torch threads {e['threads']}: "
                lines += [f"{threads}output of `{e.get('command', '')}`", ""] + json_lines(e["json"]) + [""]
            else:
                lines += ["```", (e.get("text") or "").rstrip()[-4000:], "```", ""]
    return lines


def render_report(
    runs: Sequence[dict],
    env: Dict[str, Any],
    plots: Dict[str, str],
    speed: Sequence[Dict[str, Any]] = (),
    skipped: Sequence[str] = (),
) -> str:
    """The whole REPORT.md.  ``plots`` maps scene -> PNG path relative to the report."""
    invocation = same_invocation(runs) if runs else env.get("invocation", DASH)
    same_commit(runs)
    kind = timing_kind(runs, env.get("machine_kind"))
    lines = ["# Benchmark report: our trainers vs ML-Agents' built-in sac / ppo", ""]
    lines += [f"- **Invocation:** `{invocation}` (every number and ratio below comes from this one run)"]
    lines += environment_lines(env)
    if kind is not None:
        others = "; ".join(f"{k}: {n} runs" for k, n in machine_kinds(runs).items() if k != kind)
        lines += [f"- **Machine kinds:** continued on another kind of machine; steps and returns from every run, "
                  f"seconds, speeds and their ratios only from the {machine_kinds(runs)[kind]} runs on {kind} "
                  f"(left out of them: {others})"]
    lines += ["", "Column meanings and how ratios are computed: [bench/README.md](../README.md).", ""]
    summaries = summarize_timed(runs, kind)
    for mode in sorted({s.mode for s in summaries}, key=lambda m: m != "in_process"):
        lines += [f"## {MODE_TITLES.get(mode, mode)}", ""]
        lines += summary_table([s for s in summaries if s.mode == mode]) + [""]
        if mode in REPLAY_LEGEND:
            lines += [REPLAY_LEGEND[mode], ""]
        lines += ["Ratios against the built-in trainers of this same invocation:", ""]
        lines += ratio_table(runs, mode, kind) + [""]
        lines += ["Per seed (best rolling mean: the highest mean of 3 consecutive summaries):", ""]
        lines += per_seed_table(runs, mode) + [""]
        errors = [f"- {s.trainer} on {s.scene}: {e}" for s in summaries if s.mode == mode for e in s.errors]
        if errors:
            lines += ["Failed runs:", ""] + errors + [""]
    if plots:
        lines += ["## Reward curves (in-process; line = mean over seeds, band = min..max)", ""]
        for scene, path in sorted(plots.items()):
            lines += [f"### {scene}", "", f"![{scene}]({path})", ""]
    lines += ["## Speed: update throughput against a minimal PyTorch loop", ""] + speed_lines(speed) + [""]
    if skipped:
        lines += ["## Not benchmarked", ""] + [f"- {s}" for s in skipped] + [""]
    sources = sorted({(r["trainer"], r["scene"], r.get("config_source", DASH)) for r in runs})
    if sources:
        lines += ["## Configurations", "", "| trainer | scene | hyperparameters from |", "|---|---|---|"]
        lines += [f"| {t} | {s} | {src} |" for t, s, src in sources]
        lines += ["", "The full config of every run is in its record in `runs.jsonl` (one JSON object per line).", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- README table
RESULTS_BEGIN = "<!-- results:begin -->"
RESULTS_END = "<!-- results:end -->"


def _steps_k(steps: float) -> str:
    """Steps in thousands, README-short: 4,500 -> ``4.5k``, 27,500 -> ``27.5k``, 6,000 -> ``6k``, 750 -> ``750``."""
    if steps < 1000:
        return f"{int(round(steps))}"
    return f"{steps / 1000:.1f}".rstrip("0").rstrip(".") + "k"


def _final_short(value: Optional[float]) -> str:
    """A median final return with about four significant digits: 219.8, 5.63, -0.13."""
    if value is None:
        return DASH
    return f"{value:.1f}" if abs(value) >= 100 else f"{value:.2f}"


def results_cell(runs: Sequence[dict]) -> str:
    """``reached/seeds steps; final[; n fell]`` of one trainer on one scene (runs of its seeds), e.g.
    ``3/3 4.5k; 219.8`` or ``1/3 20k; 0.33; 2 fell``.

    The steps are the median steps to the threshold over the seeds that reached it (left out if none did); the final
    is the median over the seeds that finished of each one's final return (mean of its last 3 summaries); "fell":
    finished runs that ended below 0.8 of their best rolling mean (``bench.metrics.collapsed``).  Failed runs count
    as seeds that did not reach it and are named."""
    ok = [r for r in runs if not r.get("error")]
    hits = [h[0] for h in (steps_to_threshold(r["curve"], r["threshold"]) for r in ok) if h is not None]
    finals = [r["final_mean_reward"] for r in ok if r.get("final_mean_reward") is not None]
    fell = sum(1 for r in ok if collapsed(r["curve"], r.get("final_mean_reward")))
    failed = len(runs) - len(ok)
    reached = f"{len(hits)}/{len(runs)}" + (f" ({failed} failed)" if failed else "")
    if hits:
        reached += " " + _steps_k(statistics.median(hits))
    parts = [reached, _final_short(statistics.median(finals) if finals else None)]
    if fell:
        parts.append(f"{fell} fell")
    return "; ".join(parts)


def results_table(runs: Sequence[dict]) -> List[str]:
    """One row per scene (its threshold beside it), one column per trainer (ours first, then the built-ins), cells
    from ``results_cell``; a trainer that did not run on a scene (its action kind is not supported) gets ``n/a``."""
    ours = sorted({r["trainer"] for r in runs if r.get("origin") == "ours"})
    builtins = sorted({r["trainer"] for r in runs if r.get("origin") != "ours"})
    trainers = ours + builtins
    lines = ["| scene (threshold) | " + " | ".join(ours + [f"built-in {t}" for t in builtins]) + " |",
             "| --- |" + " --- |" * len(trainers)]
    for scene in sorted({r["scene"] for r in runs}):
        cells = []
        for t in trainers:
            mine = [r for r in runs if r["scene"] == scene and r["trainer"] == t]
            cells.append(results_cell(mine) if mine else "n/a")
        threshold = next(r["threshold"] for r in runs if r["scene"] == scene)
        lines.append(f"| `{scene}` ({threshold:g}) | " + " | ".join(cells) + " |")
    return lines


def results_block(runs: Sequence[dict], env: Dict[str, Any], report_link: Optional[str] = None) -> str:
    """The README-ready results block of one defaults invocation, markers included."""
    invocation = same_invocation(runs)
    same_commit(runs)  # no seconds in the table: runs of every machine kind count
    seeds = max((len({r["seed"] for r in runs if r["scene"] == s and r["trainer"] == t})
                 for s, t in {(r["scene"], r["trainer"]) for r in runs}), default=0)
    source = f"[report]({report_link})" if report_link else "this report"
    date = str(env.get("date", DASH)).split(" ")[0]
    commit = str(env.get("commit", DASH))[:7]
    lines = [
        RESULTS_BEGIN,
        f"`python -m bench defaults`, invocation `{invocation}` ({date}, code `{commit}`, {seeds} seeds; {source}). "
        "A cell: seeds reaching the threshold / seeds, their median steps to it; median final return; runs that fell "
        "below 0.8 of their best. n/a: actions not supported.",
        "",
    ]
    lines += results_table(runs)
    lines.append(RESULTS_END)
    return "\n".join(lines)


def replace_results_block(text: str, block: str, name: str = "the file", begin: str = RESULTS_BEGIN,
                          end: str = RESULTS_END) -> str:
    """``text`` with its one ``begin``..``end`` block (markers included; by default README's results table, bench
    gym's table has its own) replaced by ``block``; ValueError naming ``name`` when the markers are missing,
    repeated or out of order."""
    begins, ends = text.count(begin), text.count(end)
    if begins != 1 or ends != 1:
        raise ValueError(f"{name} must hold exactly one {begin} and one {end} line (found "
                         f"{begins} and {ends}); add them where the results table goes")
    start, stop = text.index(begin), text.index(end)
    if stop < start:
        raise ValueError(f"{name}: {end} comes before {begin}")
    return text[:start] + block + text[stop + len(end):]
