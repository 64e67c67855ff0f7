"""Synthetic run records for the bench tests (no training), and the repo root on sys.path for ``bench``."""
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO not in sys.path:
    sys.path.insert(0, REPO)


def rec(trainer, seed, curve, *, scene="balance", mode="in_process", invocation="inv-A", steps=1000,
        wall=10.0, final=None, update=None, save=None, load=None, replay=None, threshold=1.0, error=None):
    """A run record as bench.runner writes it; ``curve`` is [[step, seconds, reward], ...]."""
    return {
        "invocation": invocation,
        "trainer": trainer,
        "origin": "builtin" if trainer in ("sac", "ppo") else "ours",
        "scene": scene,
        "seed": seed,
        "mode": mode,
        "threshold": threshold,
        "max_steps": steps,
        "steps": steps,
        "wall_seconds": wall,
        "curve": curve,
        "final_mean_reward": final,
        "success_rate": None,
        "update_seconds": update,
        "save_seconds": save,
        "load_seconds": load,
        "replay_bytes": replay,
        "config": {"trainer_type": trainer},
        "config_source": "test",
        "error": error,
    }
