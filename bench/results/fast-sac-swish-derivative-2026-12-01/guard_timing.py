"""issue 55: fast_sac's compiled whole step with Dynamo's guard evaluation skipped (torch.compiler.set_stance(
skip_guard_eval_unsafe=True) around the update) against as today, one trainer per precision, the two ways alternating
on the same trainer (bench.speed.common.time_interleaved, thread CPU clock); 2x256, batch 256, one thread.  Also
checks that an update under the stance gives the same parameters, bit for bit, as one without from the same state."""
import copy, json, logging, os, sys, tempfile, time, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, os.getcwd())
import numpy as np
from bench.speed import common


def main():
    import torch
    from mlagents_envs.logging_util import set_log_level
    set_log_level(logging.WARNING)
    torch.set_num_threads(1)
    sizes = {"hidden_units": 256, "num_layers": 2, "batch_size": 256}
    steps, same = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for prec in ("fp32", "bf16"):
            torch.manual_seed(0)
            trainer, spec = common.make_trainer("fast_sac", os.path.join(tmp, prec), overrides={"update_precision": prec}, sizes=sizes)
            common.fill(trainer, spec, 5000, np.random.default_rng(0))
            for _ in range(40):
                trainer.update_once()
                if trainer.optimizer.head.loss_step.whole_mode == "on":
                    break
            assert trainer.optimizer.head.loss_step.whole_mode == "on"
            batch = trainer.sample_batch()
            # same result check: parameters after one update from the same state, with and without the stance
            sd = {k: copy.deepcopy(v.state_dict()) for k, v in trainer.optimizer.get_modules().items()}
            trainer.optimizer.update(batch)
            mods = {k: v for k, v in trainer.optimizer.get_modules().items() if isinstance(v, torch.nn.Module)}
            assert mods
            a = {k: {n: t.clone() for n, t in v.state_dict().items()} for k, v in mods.items()}
            for k, v in trainer.optimizer.get_modules().items():
                v.load_state_dict(sd[k])
            with torch.compiler.set_stance("default", skip_guard_eval_unsafe=True):
                trainer.optimizer.update(batch)
            b = {k: {n: t.clone() for n, t in v.state_dict().items()} for k, v in mods.items()}
            same[prec] = all(torch.equal(a[k][n], b[k][n]) for k in a for n in a[k] if torch.is_tensor(a[k][n]))
            def plain(tr=trainer, b=batch):
                tr.optimizer.update(b)
            def skip(tr=trainer, b=batch):
                with torch.compiler.set_stance("default", skip_guard_eval_unsafe=True):
                    tr.optimizer.update(b)
            steps[f"{prec} guards"] = plain
            steps[f"{prec} skip"] = skip
        ms = common.time_interleaved(steps, 600, warmup=5, blocks=12, clock=time.thread_time)
    out = {"step_ms": {k: round(v, 3) for k, v in ms.items()}, "same_parameters": same}
    for prec in ("fp32", "bf16"):
        out[f"{prec} skip/guards"] = round(ms[f"{prec} skip"] / ms[f"{prec} guards"], 3)
    print(json.dumps(out))


main()
