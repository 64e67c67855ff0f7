"""fast_sac's compiled whole step under sets of Inductor options, in one process, timed interleaved (issue #55).

One fast_sac per option set (``configs/fast_sac_balance.yaml`` at ``--hidden-units`` x 2 layers, ``--batch-size``;
8 vector observations, 2 actions; one torch thread; the same seed, so the same weights), each built with the whole
step at Inductor's defaults (``MLAGENTS_PLUGINS_PY_WRAPPER=1`` while it is built) and compiled inside
``torch._inductor.config.patch(<the set>)`` by its first ``--warmup`` updates; then the optimizer's step on one
fixed batch per trainer, ``bench.speed.common.time_interleaved`` on the thread's CPU clock (median of ``--blocks``
interleaved blocks).  ``default`` is the set ``CompiledStep`` uses (``compiled_step.WHOLE_STEP_OPTIONS``);
``inductor`` (Inductor's defaults) is the reference of the ratios.  A set named twice (``inductor inductor``) gets
a second trainer: the spread between the two is the noise of the machine and of the trainers' memory.
``--one-trainer``: one trainer, each set's whole step compiled over its tensors and the sets alternating on them,
which takes the trainers' memory placement out of the comparison.

    python -m bench speed compile-options --sets inductor default cpp_wrapper fallback_random inductor [--json]
"""
import argparse
import json
import logging
import os
import tempfile
import time
import warnings
from typing import Any, Dict, List, Optional

import numpy as np

from bench.speed import common

warnings.filterwarnings("ignore", message="pkg_resources is deprecated")

#: option sets by name (``default``: ``compiled_step.WHOLE_STEP_OPTIONS``, filled in ``main``)
SETS: Dict[str, Dict[str, Any]] = {
    "inductor": {},
    "cpp_wrapper": {"cpp_wrapper": True},
    "fallback_random": {"fallback_random": True},
    "no_asserts": {"size_asserts": False, "alignment_asserts": False, "scalar_asserts": False},
    "simd256": {"cpp.simdlen": 256},
    "default+simd256": {"cpp_wrapper": True, "fallback_random": True, "cpp.simdlen": 256},
}


def _step(trainer: Any, batch: Any, whole: Any) -> None:
    """One optimizer step of ``trainer`` on ``batch`` through the compiled whole step ``whole``."""
    trainer.optimizer.head.loss_step._whole = whole
    trainer.optimizer.update(batch)


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    from mlagents_plugins.common import compiled_step

    sets = dict(SETS, default=dict(compiled_step.WHOLE_STEP_OPTIONS))
    p = argparse.ArgumentParser(prog="python -m bench speed compile-options", description=__doc__.split("\n\n")[0])
    p.add_argument("--sets", nargs="+", default=["inductor", "default", "inductor", "default"], choices=sorted(sets))
    p.add_argument("--hidden-units", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--rows", type=int, default=5000)
    p.add_argument("--warmup", type=int, default=8, help="updates per trainer first (the compile)")
    p.add_argument("--updates", type=int, default=400, help="timed steps per set (in --blocks blocks)")
    p.add_argument("--blocks", type=int, default=10)
    p.add_argument("--one-trainer", action="store_true",
                   help="one trainer for all sets: each set's whole step compiled over its tensors, the sets "
                        "alternating on them (no difference of memory placement between trainers)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    import torch
    from mlagents_envs.logging_util import set_log_level

    set_log_level(logging.WARNING)
    torch.set_num_threads(1)
    sizes = {"hidden_units": args.hidden_units, "num_layers": 2, "batch_size": args.batch_size}
    steps, compile_s, labels = {}, {}, []
    with tempfile.TemporaryDirectory() as tmp:
        shared = None  # --one-trainer: (trainer, batch)
        for i, name in enumerate(args.sets):
            label = name if name not in args.sets[:i] else f"{name} ({args.sets[:i].count(name) + 1})"
            labels.append(label)
            if shared is None:
                torch.manual_seed(0)
                # the whole step at Inductor's defaults, patched below
                trainer, spec = common.make_trainer_py_wrapper("fast_sac", os.path.join(tmp, str(i)), sizes=sizes)
                common.fill(trainer, spec, args.rows, np.random.default_rng(0))
                batch = None
            step = trainer.optimizer.head.loss_step
            t0 = time.thread_time()
            if args.one_trainer and shared is not None:
                # This set's own compiled whole step over the same trainer's tensors (its own code object).
                step._whole = step._compile_whole()
            with torch._inductor.config.patch(sets[name]):
                for _ in range(args.warmup):
                    trainer.update_once()
            if step.whole_mode != "on":
                raise RuntimeError(f"{label}: whole step {step.whole_mode} ({step.whole_error})")
            compile_s[label] = round(time.thread_time() - t0, 1)
            if batch is None:
                batch = trainer.sample_batch()
            if args.one_trainer:
                shared = (trainer, batch)
            steps[label] = (lambda tr, b, whole: (lambda: _step(tr, b, whole)))(trainer, batch, step._whole)
        ms = common.time_interleaved(steps, args.updates, warmup=5, blocks=args.blocks, clock=time.thread_time)
    reference = ms.get("inductor", next(iter(ms.values())))
    out = {"sizes": sizes, "threads": 1, "sets": {k: sets[k.split(" (")[0]] for k in ms},
           "step_ms": {k: round(v, 3) for k, v in ms.items()},
           "over_inductor": {k: round(v / reference, 3) for k, v in ms.items()},
           "warmup_cpu_s": compile_s}
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in ms.items():
            print(f"{k:24s} {v:8.3f} ms  {v / reference:6.3f}  (warm-up {compile_s[k]} CPU s)")
    return out
