"""Every kept checkpoint of a ``bench gym --keep-runs`` folder evaluated two ways, as ``bench gym`` evaluates
(10 episodes, the run's evaluation seed): the exported ``deterministic_continuous_actions`` as they are (mlagents
1.1.0 exports the tanh-Gaussian's unsquashed mean there; the task then clips it to [-1, 1]), and squashed by tanh
first (the mean's image under the squashing the policy trains and acts with, as SB3's deterministic action).
Usage: PYTHONPATH=. python bench/results/fast-sac-norm-bins-2026-12-01/eval_modes.py OUT TASK SEED [OUT.json]"""
import json
import os
import sys

import numpy as np

from bench.gym import EVAL_SEED_OFFSET, OnnxActor, checkpoint_onnx, evaluate


class SquashedOnnxActor(OnnxActor):
    """``OnnxActor`` with tanh applied to the exported deterministic action before the task's scaling."""

    def __call__(self, obs: np.ndarray):
        got = self.sess.run(self.outputs, {"obs_0": obs, **self.feed})
        return self.scaler.to_task(np.tanh(got[0]))[0].astype(self.space.dtype)


def main(out: str, task: str, seed: int, json_out: str = "") -> None:
    behavior = task.split("-")[0]
    (run,) = [d for d in os.listdir(os.path.join(out, "runs"))]
    model_dir = os.path.join(out, "runs", run, "run", behavior)
    rows = []
    for step, path in checkpoint_onnx(model_dir, behavior):
        plain = evaluate(OnnxActor(path, task), task, 10, EVAL_SEED_OFFSET + seed)
        squashed = evaluate(SquashedOnnxActor(path, task), task, 10, EVAL_SEED_OFFSET + seed)
        rows.append({"step": step, "as_exported": plain, "tanh": squashed})
        print(f"{step:>7} as exported {plain['return_mean']:8.1f} ({plain['return_std']:6.1f})   "
              f"tanh {squashed['return_mean']:8.1f} ({squashed['return_std']:6.1f})", flush=True)
    if json_out:
        with open(json_out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else "")
