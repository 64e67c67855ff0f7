"""GPU diagnosis: one trainer in-process on a device with the compiled whole step forced on.

Whole steps (``mlagents_plugins/common/compiled_step.py``) are taken only for parameters on the CPU since one crashed a
run on CUDA (docs/gpu.md).  This runs a trainer's drop-in config on ``balance_big_reward_long``
with that rule bypassed, so a GPU session can check whether the whole step is safe there over a long run:

    FORCE_WHOLE=1 python3 scripts/device_whole_step.py muzero_repr 30000 /tmp/run    # DEVICE=cuda by default

``FORCE_WHOLE=0`` keeps the rule (the shipped behaviour); ``TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER=0`` switches off
Inductor's static Triton launcher, where the crash was seen.  Prints ``DONE`` and the reward curve on success.
"""
import logging
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> None:
    trainer, steps, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    from mlagents.torch_utils import set_torch_config
    from mlagents.trainers.settings import TorchSettings

    set_torch_config(TorchSettings(device=os.environ.get("DEVICE", "cuda")))
    from mlagents_plugins.common import compiled_step

    if os.environ.get("FORCE_WHOLE") == "1":
        compiled_step._on_cpu = lambda optimizers: True
    logging.getLogger("mlagents_plugins").setLevel(logging.INFO)
    from bench import plan
    from mlagents_plugins.envs.harness import train_in_process

    scene = "balance_big_reward_long"
    cfg, _ = plan.build_config(trainer, scene, steps, 10, [trainer], minimal=True)
    start = time.time()
    result = train_in_process(cfg, scene, max_steps=steps, seed=0, num_areas=1, output_dir=out)
    print("DONE", trainer, "FORCE_WHOLE", os.environ.get("FORCE_WHOLE"), "s", round(time.time() - start, 1),
          "curve", result.reward_curve, flush=True)


if __name__ == "__main__":
    main()
