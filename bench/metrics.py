"""Pure summaries of benchmark run records: steps to threshold, spread over seeds, same-run ratios.

A *run record* is the JSON dict that ``bench.runner`` writes per (trainer, scene, seed, mode):

``invocation`` (id of the ``python -m bench learn`` / ``defaults`` call that made it), ``trainer``, ``origin`` ("ours" | "builtin"),
``scene``, ``seed``, ``mode`` ("in_process" | "mlagents-learn"), ``threshold`` (the scene's success
threshold), ``max_steps``, ``steps`` and ``wall_seconds`` (whole run), ``curve`` ([step, seconds since start,
mean episode reward] per summary), ``final_mean_reward``, ``success_rate``, ``update_seconds`` (time inside
the trainers' ``_update_policy``), ``save_seconds`` (final checkpoint incl. replay buffer), ``load_seconds``
(loading that checkpoint back), ``replay_bytes``, ``config``, ``config_source`` and ``error`` (None when the
run finished).  Missing measurements are None.  Nothing here trains or reads files.
"""
import math
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

BUILTIN_TRAINERS = ("sac", "ppo")


def steps_to_threshold(curve: Sequence[Sequence[float]], threshold: float) -> Optional[Tuple[int, float]]:
    """(step, seconds) of the first summary whose mean episode reward is >= ``threshold``; None if none is.

    Summaries are ML-Agents' ``summary_freq`` means, so the answer is quantised to the summary period.
    """
    for step, seconds, reward in curve:
        if reward is not None and not math.isnan(reward) and reward >= threshold:
            return int(step), float(seconds)
    return None


#: a run "collapsed" when its final return is below this fraction of its best rolling mean (issue #12's criterion)
COLLAPSE_FRACTION = 0.8
#: summaries in the rolling mean that collapse compares against
ROLLING_WINDOW = 3


def best_rolling_mean(curve: Sequence[Sequence[float]], window: int = ROLLING_WINDOW) -> Optional[float]:
    """Highest mean of ``window`` consecutive summaries' rewards (fewer at the start are not counted)."""
    rewards = [r for _, _, r in curve if r is not None and not math.isnan(r)]
    if len(rewards) < window:
        return None
    return max(sum(rewards[i - window:i]) / window for i in range(window, len(rewards) + 1))


def collapsed(curve: Sequence[Sequence[float]], final: Optional[float]) -> bool:
    """Whether a run that learned something (best rolling mean > 0) ended below ``COLLAPSE_FRACTION`` of it."""
    best = best_rolling_mean(curve)
    if best is None or final is None or math.isnan(final) or best <= 0.0:
        return False
    return final < COLLAPSE_FRACTION * best


def _mean(xs: Sequence[float]) -> Optional[float]:
    return sum(xs) / len(xs) if xs else None


def _std(xs: Sequence[float]) -> Optional[float]:
    """Sample standard deviation (n - 1); 0.0 for a single value, None for none."""
    if not xs:
        return None
    if len(xs) == 1:
        return 0.0
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def _median(xs: Sequence[float]) -> Optional[float]:
    if not xs:
        return None
    s = sorted(xs)
    mid = len(s) // 2
    return float(s[mid]) if len(s) % 2 else (s[mid - 1] + s[mid]) / 2.0


def _values(runs: Iterable[dict], key: str) -> List[float]:
    return [float(r[key]) for r in runs if r.get(key) is not None and not math.isnan(float(r[key]))]


@dataclass
class Summary:
    """One (mode, scene, trainer) cell over its seeds; None where no seed measured it."""

    mode: str
    scene: str
    trainer: str
    origin: str
    threshold: float
    seeds: int  # runs attempted
    finished: int  # runs without error
    reached: int  # finished runs whose curve reached the threshold
    median_steps_to_threshold: Optional[float]  # over the seeds that reached it
    median_seconds_to_threshold: Optional[float]
    final_mean: Optional[float]  # mean over seeds of final_mean_reward
    final_std: Optional[float]  # sample std over seeds
    steps_per_second: Optional[float]  # mean over seeds of steps / wall_seconds
    update_seconds_per_1k_steps: Optional[float]  # mean over seeds of 1000 * update_seconds / steps
    save_seconds: Optional[float]
    load_seconds: Optional[float]
    replay_mb: Optional[float]  # mean replay_bytes / 1e6
    collapsed: int  # finished runs whose final return fell below COLLAPSE_FRACTION x their best rolling mean
    errors: List[str]


def summarize(runs: Iterable[dict]) -> List[Summary]:
    """One Summary per (mode, scene, trainer), ordered by mode, scene, then ours before the built-ins."""
    groups: Dict[Tuple[str, str, str], List[dict]] = {}
    for r in runs:
        groups.setdefault((r["mode"], r["scene"], r["trainer"]), []).append(r)
    out = []
    for (mode, scene, trainer), rs in groups.items():
        ok = [r for r in rs if not r.get("error")]
        hits = [h for h in (steps_to_threshold(r["curve"], r["threshold"]) for r in ok) if h is not None]
        rates = [r["steps"] / r["wall_seconds"] for r in ok if r.get("wall_seconds") and r.get("steps")]
        upd = [1000.0 * r["update_seconds"] / r["steps"] for r in ok if r.get("update_seconds") is not None and r.get("steps")]
        finals = _values(ok, "final_mean_reward")
        out.append(
            Summary(
                mode=mode,
                scene=scene,
                trainer=trainer,
                origin=rs[0]["origin"],
                threshold=float(rs[0]["threshold"]),
                seeds=len(rs),
                finished=len(ok),
                reached=len(hits),
                median_steps_to_threshold=_median([h[0] for h in hits]),
                median_seconds_to_threshold=_median([h[1] for h in hits]),
                final_mean=_mean(finals),
                final_std=_std(finals),
                steps_per_second=_mean(rates),
                update_seconds_per_1k_steps=_mean(upd),
                save_seconds=_mean(_values(ok, "save_seconds")),
                load_seconds=_mean(_values(ok, "load_seconds")),
                replay_mb=None if not _values(ok, "replay_bytes") else _mean(_values(ok, "replay_bytes")) / 1e6,
                collapsed=sum(collapsed(r["curve"], r.get("final_mean_reward")) for r in ok),
                errors=[f"seed {r['seed']}: {r['error']}" for r in rs if r.get("error")],
            )
        )
    out.sort(key=lambda s: (s.mode != "in_process", s.mode, s.scene, s.origin != "ours", s.trainer))
    return out


@dataclass
class Ratio:
    """Our trainer against one built-in on the same scene and mode, from the same invocation."""

    mode: str
    scene: str
    trainer: str
    baseline: str
    speed: Optional[float]  # ours env steps/s / baseline env steps/s (> 1: ours runs faster)
    sample_efficiency: Optional[float]  # baseline median steps to threshold / ours (> 1: ours needs fewer steps)
    time_to_threshold: Optional[float]  # baseline median seconds to threshold / ours (> 1: ours gets there sooner)
    final_difference: Optional[float]  # ours final mean return - baseline's


def _div(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return None if a is None or b is None or b == 0 else a / b


def _reached_enough(s: Summary) -> bool:
    """Medians to threshold are compared only when at least half of the finished seeds reached it."""
    return s.finished > 0 and 2 * s.reached >= s.finished and s.median_steps_to_threshold is not None


def same_invocation(runs: Sequence[dict]) -> str:
    """The single invocation id shared by ``runs``; ValueError if they come from different invocations."""
    ids = sorted({str(r.get("invocation")) for r in runs})
    if len(ids) != 1:
        raise ValueError(
            f"ratios need runs from one bench invocation, got invocations {ids}; "
            "re-run the baselines in the same invocation instead of mixing result files"
        )
    return ids[0]


def same_commit_and_machine(runs: Sequence[dict], fields: Sequence[Tuple[str, str]] = (
        ("commit", "commits"), ("machine_kind", "machine kinds"))) -> None:
    """ValueError when ``runs`` come from more than one value of each of ``fields`` (by default: more than one code
    commit or machine kind; records older than issue 44 carry neither and count as one)."""
    for name, what in fields:
        counts: Dict[str, int] = {}
        for r in runs:
            counts[str(r.get(name))] = counts.get(str(r.get(name)), 0) + 1
        if len(counts) > 1:
            found = ", ".join(f"{value} ({n} runs)" for value, n in sorted(counts.items()))
            raise ValueError(f"one table takes the records of one commit and one machine kind; these runs come from "
                             f"{len(counts)} {what}: {found}")


def same_commit(runs: Sequence[dict]) -> None:
    """ValueError when ``runs`` come from more than one code commit (their machine kinds may differ: a continued
    invocation may resume on another kind of machine; ``timing_kind`` keeps its seconds apart)."""
    same_commit_and_machine(runs, (("commit", "commits"),))


def machine_kinds(runs: Sequence[dict]) -> Dict[str, int]:
    """Runs per machine kind (``str`` of the field: records without it count as ``None``), in first-seen order."""
    counts: Dict[str, int] = {}
    for r in runs:
        counts[str(r.get("machine_kind"))] = counts.get(str(r.get("machine_kind")), 0) + 1
    return counts


def timing_kind(runs: Sequence[dict], preferred: Optional[str] = None) -> Optional[str]:
    """The machine kind whose runs give the seconds of a report whose runs ran on several kinds: ``preferred`` (the
    invocation's starting kind) when runs of it are there, else the kind of most runs; None when all runs share
    one kind (every run's seconds count).  Returns and steps count from every run: a second of one kind of machine
    is not one of another, a step is."""
    counts = machine_kinds(runs)
    if len(counts) <= 1:
        return None
    if preferred is not None and str(preferred) in counts:
        return str(preferred)
    return max(counts, key=lambda k: counts[k])


#: the fields of a Summary measured in seconds (from the runs of one machine kind: ``summarize_timed``)
TIMING_FIELDS = ("median_seconds_to_threshold", "steps_per_second", "update_seconds_per_1k_steps", "save_seconds",
                 "load_seconds")


def summarize_timed(runs: Sequence[dict], kind: Optional[str] = None) -> List[Summary]:
    """``summarize(runs)`` with its seconds (``TIMING_FIELDS``) from the runs of machine ``kind`` only (None: from
    every run); a cell without a run of that kind has no seconds."""
    summaries = summarize(runs)
    if kind is None:
        return summaries
    timed = {(s.mode, s.scene, s.trainer): s for s in summarize([r for r in runs
                                                                  if str(r.get("machine_kind")) == kind])}
    for s in summaries:
        t = timed.get((s.mode, s.scene, s.trainer))
        for name in TIMING_FIELDS:
            setattr(s, name, None if t is None else getattr(t, name))
    return summaries


def ratios(runs: Sequence[dict], baselines: Sequence[str] = BUILTIN_TRAINERS,
           kind: Optional[str] = None) -> List[Ratio]:
    """Ratios of every trainer of ours against each baseline run on the same scene and mode; the speed and time
    ratios from the runs of machine ``kind`` only (``summarize_timed``).

    All ``runs`` must share one invocation id (``same_invocation``), so a ratio never mixes a fresh
    run with a remembered number.
    """
    if not runs:
        return []
    same_invocation(runs)
    cells = {(s.mode, s.scene, s.trainer): s for s in summarize_timed(runs, kind)}
    out = []
    for (mode, scene, trainer), ours in cells.items():
        if ours.origin != "ours":
            continue
        for base_name in baselines:
            base = cells.get((mode, scene, base_name))
            if base is None or base.finished == 0 or ours.finished == 0:
                continue
            both = _reached_enough(ours) and _reached_enough(base)
            out.append(
                Ratio(
                    mode=mode,
                    scene=scene,
                    trainer=trainer,
                    baseline=base_name,
                    speed=_div(ours.steps_per_second, base.steps_per_second),
                    sample_efficiency=_div(base.median_steps_to_threshold, ours.median_steps_to_threshold) if both else None,
                    time_to_threshold=_div(base.median_seconds_to_threshold, ours.median_seconds_to_threshold) if both else None,
                    final_difference=None
                    if ours.final_mean is None or base.final_mean is None
                    else ours.final_mean - base.final_mean,
                )
            )
    return out
