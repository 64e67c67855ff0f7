"""Stop ``mlagents-learn``'s main process from spinning while it waits for environment steps.

ML-Agents 1.1.0's ``SubprocessEnvManager._step`` waits for the next environment step by calling
``step_queue.get_nowait()`` in a tight loop.  On a 2-core machine that loop takes a whole core away from the
environment worker and the Unity (or stand-in) process it waits for: profiling ``mlagents-learn`` with
``fast_sac`` on the Balance stand-in showed 1.1 million ``get_nowait`` calls and 23 of 83 seconds spent
polling.  The replacement below does exactly the same bookkeeping but blocks on the queue (with a short
timeout, so nothing can hang) for the first response and then drains what else is ready without waiting.

It is installed by our ``mlagents.stats_writer`` entry point, i.e. for every ``mlagents-learn`` run where this
package is installed - built-in trainers included, so benchmark comparisons stay like for like.  It only
patches the ML-Agents version whose ``_step`` it mirrors; any other version is left alone.  Setting the
environment variable ``MLAGENTS_PLUGINS_SPIN_WAIT=1`` keeps ML-Agents' original loop (``patches`` lists it).
"""
import logging
import sys
from queue import Empty
from typing import List, Set

from mlagents_plugins.host import patches

#: seconds one blocking ``get`` waits before the loop re-checks (the original loop never sleeps at all)
WAIT_TIMEOUT_S = 0.05
#: ML-Agents' own ``_step`` once replaced (kept so a test can check the guards from the unpatched state)
ORIGINAL = None

logger = logging.getLogger(__name__)


def blocking_step(self) -> List:
    """``SubprocessEnvManager._step`` of ML-Agents 1.1.0, waiting on the queue instead of spinning."""
    from mlagents.trainers.subprocess_env_manager import EnvironmentCommand

    self._queue_steps()
    worker_steps: List = []
    step_workers: Set[int] = set()
    while len(worker_steps) < 1:
        block = True  # wait for the first response; then take whatever else is already there
        try:
            while True:
                step = self.step_queue.get(block=block, timeout=WAIT_TIMEOUT_S if block else None)
                block = False
                if step.cmd == EnvironmentCommand.ENV_EXITED:
                    # As upstream: restart the failed workers and start collecting again.
                    self._restart_failed_workers(step)
                    worker_steps.clear()
                    step_workers.clear()
                    self._queue_steps()
                elif step.worker_id not in step_workers:
                    self.env_workers[step.worker_id].waiting = False
                    worker_steps.append(step)
                    step_workers.add(step.worker_id)
        except Empty:
            pass
    return self._postprocess_steps(worker_steps)


def install_env_wait() -> bool:
    """Patch ``SubprocessEnvManager._step`` (once); returns whether the patch is active."""
    try:
        from mlagents.trainers.subprocess_env_manager import SubprocessEnvManager
    except ImportError:
        return False
    return patches.replace_attribute("env_wait", SubprocessEnvManager, "_step", blocking_step, sys.modules[__name__])
