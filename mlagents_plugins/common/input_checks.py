"""Trajectory chunks with NaN or inf from the environment, found and reported the same way by every trainer.

A NaN in an observation or a reward reaches the normalizer, every later update and every checkpoint; the trainers
drop such a chunk whole (the off-policy base before the replay buffer, impala before its pieces), warn at the
first and every 100th, and report the count as a stat.
"""
import logging
from typing import List, Optional

import numpy as np
from mlagents.trainers.trajectory import Trajectory


def stacked_observations(trajectory: Trajectory) -> List[np.ndarray]:
    """Observation ``i`` of every step of a chunk as one float32 ``[n, *shape]`` array."""
    steps = trajectory.steps
    return [np.asarray([s.obs[i] for s in steps], dtype=np.float32) for i in range(len(steps[0].obs))]


def nonfinite_input(trajectory: Trajectory, obs: Optional[List[np.ndarray]] = None) -> Optional[str]:
    """What in ``trajectory`` (observations, next observations, rewards) holds NaN or inf, or None; ``obs`` is
    its stacked observations when the caller has them (``stacked_observations``)."""
    if not np.isfinite(np.asarray([s.reward for s in trajectory.steps], dtype=np.float64)).all():
        return "reward"
    for k, stacked in enumerate(stacked_observations(trajectory) if obs is None else obs):
        if not np.isfinite(stacked).all():
            return f"observation {k}"
    for k, o in enumerate(trajectory.next_obs):
        if not np.isfinite(o).all():
            return f"observation {k} (after the last step)"
    return None


def should_warn(count: int) -> bool:
    """Warn at the first dropped chunk and at every 100th."""
    return count == 1 or count % 100 == 0


def dropped_chunk_message(brain_name: str, trajectory: Trajectory, bad: str, count: int, kept_out_of: str) -> str:
    """The warning for a dropped chunk: what was non-finite, what it is kept out of, the count so far."""
    return (
        f"{brain_name}: dropped a trajectory chunk of {len(trajectory.steps)} steps (agent {trajectory.agent_id}): "
        f"its {bad} holds NaN or infinite values sent by the environment. It is kept out of {kept_out_of}, so the "
        f"model and its checkpoints stay finite ({count} chunk(s) dropped so far); check the build's observations "
        "and rewards."
    )


class NonfiniteGate:
    """One trainer's refusal of non-finite chunks: the count, the warning (first and every 100th) and the stat.

    ``stat`` is the stat's name in the trainer's summaries; ``kept_out_of`` names what the chunk is kept out of in
    the warning ("the replay buffer and the normalizer")."""

    def __init__(self, brain_name: str, stat: str, kept_out_of: str, logger: logging.Logger):
        self.brain_name = brain_name
        self.stat = stat
        self.kept_out_of = kept_out_of
        self.logger = logger
        self.dropped = 0  # chunks refused so far

    def refuses(self, trajectory: Trajectory, stats_reporter, obs: Optional[List[np.ndarray]] = None) -> bool:
        """True (and counted, warned, reported) when ``trajectory`` holds NaN or inf and must be dropped whole."""
        bad = nonfinite_input(trajectory, obs)
        if bad is None:
            return False
        self.dropped += 1
        if should_warn(self.dropped):
            self.logger.warning(dropped_chunk_message(self.brain_name, trajectory, bad, self.dropped,
                                                      self.kept_out_of))
        stats_reporter.set_stat(self.stat, float(self.dropped))
        return True
