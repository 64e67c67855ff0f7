"""Reward curves per scene: one PNG with reward against environment steps and against wall-clock seconds.

Every trainer of a scene goes on the same axes: the line is the mean over seeds at each summary step
(seconds: the mean time at which the seeds reached that step), the band spans the seeds' min..max, and
the dashed line is the scene's success threshold.
"""
import os
from typing import Dict, List, Sequence, Tuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def mean_curve(curves: Sequence[Sequence[Sequence[float]]]) -> List[Tuple[int, float, float, float, float]]:
    """Merge seeds' ``[step, seconds, reward]`` curves -> (step, mean seconds, mean, min, max reward) per step.

    A step appears when at least one seed reported it; the statistics use the seeds that did.
    """
    by_step: Dict[int, List[Tuple[float, float]]] = {}
    for curve in curves:
        for step, seconds, reward in curve:
            by_step.setdefault(int(step), []).append((float(seconds), float(reward)))
    out = []
    for step in sorted(by_step):
        pts = by_step[step]
        rewards = [r for _, r in pts]
        out.append((step, sum(s for s, _ in pts) / len(pts), sum(rewards) / len(rewards), min(rewards), max(rewards)))
    return out


def plot_scene(scene: str, runs: Sequence[dict], path: str) -> str:
    """Write the PNG for ``scene`` from its finished runs (one mode) and return ``path``."""
    by_trainer: Dict[str, List[dict]] = {}
    for r in runs:
        if r["scene"] == scene and not r.get("error") and r["curve"]:
            by_trainer.setdefault(r["trainer"], []).append(r)
    fig, (ax_steps, ax_time) = plt.subplots(1, 2, figsize=(12, 4.5))
    for trainer in sorted(by_trainer, key=lambda t: (by_trainer[t][0]["origin"] != "ours", t)):
        rs = by_trainer[trainer]
        merged = mean_curve([r["curve"] for r in rs])
        steps = [m[0] for m in merged]
        secs = [m[1] for m in merged]
        mean = [m[2] for m in merged]
        lo = [m[3] for m in merged]
        hi = [m[4] for m in merged]
        style = "-" if rs[0]["origin"] == "ours" else "--"
        label = f"{trainer} ({len(rs)} seed{'s' if len(rs) > 1 else ''})"
        for ax, x in ((ax_steps, steps), (ax_time, secs)):
            (line,) = ax.plot(x, mean, style, marker="o", markersize=3, label=label)
            ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.15)
    threshold = next((r["threshold"] for r in runs if r["scene"] == scene), None)
    for ax, xlabel in ((ax_steps, "environment steps"), (ax_time, "wall-clock seconds")):
        if threshold is not None:
            ax.axhline(threshold, color="gray", linestyle=":", linewidth=1, label="success threshold")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("mean episode reward")
        ax.grid(True, alpha=0.3)
    ax_steps.set_title(f"{scene}: reward vs steps")
    ax_time.set_title(f"{scene}: reward vs wall-clock")
    if by_trainer:
        ax_steps.legend(fontsize=8, loc="best")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
