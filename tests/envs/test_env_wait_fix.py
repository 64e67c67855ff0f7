"""The environment-wait fix: same results as ML-Agents' ``SubprocessEnvManager._step``, without spinning."""
import multiprocessing
import threading
import time
from types import SimpleNamespace

import pytest
from mlagents.trainers.subprocess_env_manager import (
    EnvironmentCommand,
    EnvironmentResponse,
    SubprocessEnvManager,
)

from mlagents_plugins.host import env_wait

# The upstream method, whatever is installed on the class when this module is imported (tests may run after
# the plugin hook patched it: then fall back to the function object saved before patching, if any).
UPSTREAM_STEP = SubprocessEnvManager.__dict__["_step"]
if UPSTREAM_STEP is env_wait.blocking_step:  # pragma: no cover - depends on test order
    UPSTREAM_STEP = None


class CountingQueue:
    """A multiprocessing queue that counts how often it is asked for an item."""

    def __init__(self):
        self.queue = multiprocessing.Queue()
        self.gets = 0

    def put(self, item):
        self.queue.put(item)

    def get(self, block=True, timeout=None):
        self.gets += 1
        return self.queue.get(block, timeout)

    def get_nowait(self):
        self.gets += 1
        return self.queue.get_nowait()


class FakeManager:
    """The parts of SubprocessEnvManager that ``_step`` touches, recording what it calls."""

    def __init__(self, num_workers: int):
        self.step_queue = CountingQueue()
        self.env_workers = [SimpleNamespace(waiting=True) for _ in range(num_workers)]
        self.queued = 0
        self.restarted = []

    def _queue_steps(self):
        self.queued += 1

    def _restart_failed_workers(self, step):
        self.restarted.append(step.worker_id)

    def _postprocess_steps(self, worker_steps):
        return [(s.worker_id, s.payload) for s in worker_steps]


def _put_later(queue, items, delay):
    def run():
        time.sleep(delay)
        for item in items:
            queue.put(item)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _step(cmd, worker, payload=None):
    return EnvironmentResponse(cmd, worker, payload)


def test_waits_without_spinning_and_returns_the_response():
    mgr = FakeManager(1)
    thread = _put_later(mgr.step_queue, [_step(EnvironmentCommand.STEP, 0, "obs")], delay=0.4)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    out = env_wait.blocking_step(mgr)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    thread.join()
    assert out == [(0, "obs")]
    assert wall >= 0.35
    # One blocking get per WAIT_TIMEOUT_S (plus the drain), not a poll loop; CPU stays a fraction of the wait.
    assert mgr.step_queue.gets <= wall / env_wait.WAIT_TIMEOUT_S + 3, mgr.step_queue.gets
    assert cpu < 0.5 * wall, (cpu, wall)
    assert mgr.env_workers[0].waiting is False
    assert mgr.queued == 1


def _same_as_upstream(make_items, num_workers):
    results = []
    for fn in (env_wait.blocking_step, UPSTREAM_STEP):
        if fn is None:
            continue
        mgr = FakeManager(num_workers)
        for item in make_items():
            mgr.step_queue.put(item)
        time.sleep(0.2)  # let the queue's feeder thread deliver everything first
        results.append((fn(mgr), mgr.queued, mgr.restarted, [w.waiting for w in mgr.env_workers]))
    return results


def test_drains_every_ready_worker_and_drops_a_second_response_of_the_same_worker_like_upstream():
    items = lambda: [  # noqa: E731
        _step(EnvironmentCommand.STEP, 1, "b"),
        _step(EnvironmentCommand.STEP, 0, "a"),
        _step(EnvironmentCommand.STEP, 1, "b-again"),
    ]
    results = _same_as_upstream(items, num_workers=3)
    ours = results[0]
    assert ours[0] == [(1, "b"), (0, "a")]
    assert ours[3] == [False, False, True]
    for other in results[1:]:
        assert other == ours


def test_env_exited_restarts_workers_and_keeps_waiting_like_upstream():
    items = lambda: [  # noqa: E731
        _step(EnvironmentCommand.STEP, 0, "stale"),
        _step(EnvironmentCommand.ENV_EXITED, 1, RuntimeError("crash")),
        _step(EnvironmentCommand.STEP, 0, "fresh"),
    ]
    results = _same_as_upstream(items, num_workers=2)
    ours = results[0]
    assert ours[0] == [(0, "fresh")]  # steps collected before the exit are discarded
    assert ours[1] == 2  # queued once at the start and once after the restart
    assert ours[2] == [1]
    for other in results[1:]:
        assert other == ours


def test_env_exited_then_later_step_is_awaited():
    mgr = FakeManager(1)
    mgr.step_queue.put(_step(EnvironmentCommand.ENV_EXITED, 0, None))
    thread = _put_later(mgr.step_queue, [_step(EnvironmentCommand.STEP, 0, "after-restart")], delay=0.3)
    out = env_wait.blocking_step(mgr)
    thread.join()
    assert out == [(0, "after-restart")]
    assert mgr.restarted == [0]


@pytest.mark.skipif(UPSTREAM_STEP is None, reason="upstream _step already replaced in this process")
def test_upstream_loop_really_spins():
    """The reason for the fix: ML-Agents' own loop polls the queue without pause while it waits (thousands of
    calls in 0.4 s even when a loaded machine gives it a fraction of a core; the fix makes about ten)."""
    mgr = FakeManager(1)
    thread = _put_later(mgr.step_queue, [_step(EnvironmentCommand.STEP, 0, "obs")], delay=0.4)
    UPSTREAM_STEP(mgr)
    thread.join()
    assert mgr.step_queue.gets > 500, mgr.step_queue.gets
