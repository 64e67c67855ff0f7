"""The profiled ``mlagents-learn`` process: ML-Agents' own ``learn.main()`` with the phase sampler and three hooks.

``python -m bench profile`` starts ``python -c "from bench.profiling.child import main; ..." <mlagents-learn
arguments>`` (the same interpreter, the same plugins and patches as the ``mlagents-learn`` script, which is
``mlagents.trainers.learn:main``) with ``BENCH_PROFILE_JSON`` naming the result file.  Here:

* ``PhaseSampler`` starts before ML-Agents is imported (``bench.profiling.phases``);
* the ``floor`` trainer type is registered for this process only (``bench.profiling.floor``);
* ``TrainerController.advance``: its first call marks the training loop's start (``LoopState.LOOP``) and records
  the CPU the environment processes used to start (``children_at_loop_start``);
* ``TrainerController.start_learning``: when it returns, the loop is over (``LoopState.AFTER``) and the trainers'
  step counts are recorded;
* ``SubprocessEnvManager.close`` (and ``InProcessEnvManager.close`` at one copy): before the workers are told to close, the CPU of every descendant process
  (environment workers, the build, Inductor compile workers) is read from /proc (``children_at_close``).

Both child records also hold ``reaped``: the CPU of the children this process started and waited for so far
(``getrusage(RUSAGE_CHILDREN)``), i.e. short-lived programs such as the C++ compiler Inductor runs.

The result file holds the trainer process's CPU by phase, the sample counts, the children's CPU by role at both
moments, this process's ``getrusage`` and the profiler's own cost (signal handler, /proc reads).
"""
import json
import os
import resource
import sys
import time
from typing import Any, Dict, List, Optional

from bench.profiling.phases import LoopState, PhaseSampler, cpu_by_role, descendants

OUT_ENV = "BENCH_PROFILE_JSON"
INTERVAL_ENV = "BENCH_PROFILE_INTERVAL_S"
STACKS_ENV = "BENCH_PROFILE_STACKS"


def _children(env_manager, record: Dict[str, Any], key: str) -> None:
    t0 = time.process_time()
    workers = [w.process.pid for w in getattr(env_manager, "env_workers", [])]
    snapshot = descendants(os.getpid())
    record[key] = cpu_by_role(snapshot, workers)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    record[key]["reaped"] = reaped.ru_utime + reaped.ru_stime  # children that ended and were waited for
    record[key + "_processes"] = len(snapshot)
    record["snapshot_cpu_s"] = record.get("snapshot_cpu_s", 0.0) + time.process_time() - t0


def install_hooks(sampler: PhaseSampler, record: Dict[str, Any]) -> None:
    from mlagents.trainers.subprocess_env_manager import SubprocessEnvManager
    from mlagents.trainers.trainer_controller import TrainerController

    advance, start_learning, close = (TrainerController.advance, TrainerController.start_learning,
                                      SubprocessEnvManager.close)

    def profiled_advance(self, env_manager):
        if sampler.state == LoopState.BEFORE:
            _children(env_manager, record, "children_at_loop_start")
            sampler.state = LoopState.LOOP
        return advance(self, env_manager)

    def profiled_start_learning(self, env_manager):
        try:
            return start_learning(self, env_manager)
        finally:
            sampler.state = LoopState.AFTER
            record["steps"] = {name: int(t.get_step) for name, t in self.trainers.items()}

    def profiled_close(self):
        _children(self, record, "children_at_close")
        return close(self)

    from mlagents_plugins.host.inprocess_env import InProcessEnvManager

    inprocess_close = InProcessEnvManager.close

    def profiled_inprocess_close(self):
        _children(self, record, "children_at_close")
        return inprocess_close(self)

    TrainerController.advance = profiled_advance
    TrainerController.start_learning = profiled_start_learning
    SubprocessEnvManager.close = profiled_close
    InProcessEnvManager.close = profiled_inprocess_close


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    out_path = os.environ[OUT_ENV]
    sampler = PhaseSampler(float(os.environ.get(INTERVAL_ENV, "0.005")), int(os.environ.get(STACKS_ENV, "0")))
    sampler.start()
    record: Dict[str, Any] = {"exit_code": None, "error": None}
    try:
        from mlagents.trainers import learn  # registers the trainer plugins on import
        import torch

        from bench.profiling import floor

        sampler.hide_from_compiler(torch.compiler.disable)

        floor.register()
        install_hooks(sampler, record)
        sys.argv = ["mlagents-learn"] + argv
        learn.main()
        record["exit_code"] = 0
    except SystemExit as stop:
        record["exit_code"] = stop.code if isinstance(stop.code, int) else 1
        record["error"] = None if stop.code in (0, None) else f"SystemExit: {stop.code}"
    except BaseException as err:  # noqa: BLE001 - recorded, then raised again
        record["exit_code"] = 1
        record["error"] = f"{type(err).__name__}: {err}"[:2000]
        raise
    finally:
        sampler.stop()
        import torch

        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        record.update(
            trainer_cpu=sampler.accounts.cpu,
            samples=sampler.accounts.samples,
            interval_s=sampler.interval_s,
            handler_cpu_s=sampler.handler_cpu_s,
            process_cpu_s=time.process_time(),
            rusage_self_s=own.ru_utime + own.ru_stime,
            rusage_children_s=kids.ru_utime + kids.ru_stime,
            torch_threads=torch.get_num_threads(),
            top_stacks=sampler.top_stacks(),
        )
        with open(out_path, "w") as f:
            json.dump(record, f)
    return int(record["exit_code"] or 0)
