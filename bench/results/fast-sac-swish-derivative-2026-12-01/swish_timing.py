"""issue 55: fast_sac's compiled whole step with Swish keeping its derivative (kernel switch swish_derivative) against
F.silu's backward (MLAGENTS_PLUGINS_NO_SWISH_DERIVATIVE=1 while the trainer is built), at 2x256, batch 256, one
thread, fp32 and bf16 updates; one process, the variants timed interleaved on the thread's CPU clock
(bench.speed.common.time_interleaved, median of the blocks).  Each variant built twice: the spread between the two
trainers of one variant is the noise of memory placement.  Prints one JSON line.

    python bench/results/fast-sac-swish-derivative-2026-12-01/swish_timing.py [--updates 600 --blocks 12]
"""
import argparse, json, logging, os, sys, tempfile, time, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..")))
import numpy as np
from bench.speed import common


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--updates", type=int, default=600)
    p.add_argument("--blocks", type=int, default=12)
    p.add_argument("--precisions", nargs="+", default=["fp32", "bf16"])
    args = p.parse_args()
    import torch
    from mlagents_envs.logging_util import set_log_level
    set_log_level(logging.WARNING)
    torch.set_num_threads(1)
    sizes = {"hidden_units": 256, "num_layers": 2, "batch_size": 256}
    steps, warm = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for prec in args.precisions:
            for copy in (1, 2):
                for variant in ("silu", "derivative"):
                    label = f"{prec} {variant} {copy}"
                    if variant == "silu":
                        os.environ["MLAGENTS_PLUGINS_NO_SWISH_DERIVATIVE"] = "1"
                    torch.manual_seed(0)
                    try:
                        trainer, spec = common.make_trainer("fast_sac", os.path.join(tmp, label.replace(" ", "_")),
                                                            overrides={"update_precision": prec}, sizes=sizes)
                    finally:
                        os.environ.pop("MLAGENTS_PLUGINS_NO_SWISH_DERIVATIVE", None)
                    common.fill(trainer, spec, 5000, np.random.default_rng(0))
                    t0 = time.thread_time()
                    for _ in range(40):  # the matmul kernel chooser's trials first, then the compile
                        trainer.update_once()
                        if trainer.optimizer.head.loss_step.whole_mode == "on":
                            break
                    warm[label] = round(time.thread_time() - t0, 1)
                    step = trainer.optimizer.head.loss_step
                    if step.whole_mode != "on":
                        raise RuntimeError(f"{label}: whole step {step.whole_mode}")
                    batch = trainer.sample_batch()
                    steps[label] = (lambda tr, b: (lambda: tr.optimizer.update(b)))(trainer, batch)
        ms = common.time_interleaved(steps, args.updates, warmup=5, blocks=args.blocks, clock=time.thread_time)
    out = {"step_ms": {k: round(v, 3) for k, v in ms.items()}, "warmup_cpu_s": warm,
           "torch": torch.__version__, "threads": 1, "sizes": sizes}
    for prec in args.precisions:
        silu = [ms[f"{prec} silu {c}"] for c in (1, 2)]
        der = [ms[f"{prec} derivative {c}"] for c in (1, 2)]
        out[f"{prec} derivative/silu"] = round(float(np.mean(der) / np.mean(silu)), 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
