"""In-process split of one muzero_repr update against fast_sac's, CPU (thread) time, one process (issue #52 cost).

Both trainers are built from the profile's config (``bench.profiling.profile_config``: the defaults benchmark's
minimal config, 2x128, batch 128) on the Balance spec, their buffers filled with the same number of random
rows, every update compiled as in a run (``compile_update`` automatic), then timed interleaved
(``bench.speed.common.time_interleaved``, thread CPU clock):

* ``fast_sac update_once``: sampling + the SAC update;
* ``muzero sample_model_batch`` / ``update_model`` (on one pre-sampled batch) / ``sample_rl_batch`` /
  ``update_rl`` (on one pre-sampled batch) / ``update_once`` (everything, fresh batches).

``--compare`` adds, in the same process: ``muzero (per-step unroll)``, a second muzero_repr whose model loss unrolls
as before this study (f and the reward head called once per unroll step, ``MuZeroModel.unroll``; the bootstrap rows
by the loop over ``td_steps``, ``old_bootstrap_rows``), and two trainers with the learning-changing cuts
(``model_update_interval: 2``; ``num_unroll_steps: 3``), each timed by ``update_once``.

Usage: ``PYTHONPATH=. python bench/results/muzero-cost-2026-11-29/update_split.py [--rows 6000] [--updates 200]
[--set KEY=VALUE ...] [--compare]`` (muzero_repr hyperparameters, YAML values).  Prints one JSON line.
"""
import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np
import yaml


def build(trainer: str, tmp: str, overrides):
    from mlagents import plugins as mla_plugins
    from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
    from mlagents.trainers.settings import TrainerSettings

    from bench.profiling import profile_config
    from bench.speed import common

    common.register_plugins()
    cfg = profile_config(trainer, 10 ** 7, 128, 128, 10 ** 9)
    cfg["hyperparameters"].update(overrides)
    cfg.update(checkpoint_interval=10 ** 9)
    settings = TrainerSettings.structure(cfg, TrainerSettings)
    spec = common.balance_spec()
    t = mla_plugins.all_trainer_types[trainer]("B", 10, settings, True, False, 0, os.path.join(tmp, trainer))
    bid = BehaviorIdentifiers.from_name_behavior_id("B?team=0")
    t.add_policy(bid, t.create_policy(bid, spec))
    return t, spec


def old_bootstrap_rows(terminal_t, episode_end_t, valid_t, num_unroll_steps, td_steps):
    """``targets.bootstrap_rows`` as it was before this study (a loop over ``td_steps`` with gathers)."""
    import torch

    K, n = num_unroll_steps, td_steps
    episode_end = episode_end_t.bool()
    cont = torch.zeros_like(valid_t, dtype=torch.bool)
    cont[:, :-1] = ~episode_end[:, :-1] & valid_t.bool()[:, 1:]
    steps = torch.arange(K + 1, device=valid_t.device)
    last = steps.expand(valid_t.shape[0], K + 1).clone()
    running = torch.ones_like(last, dtype=torch.bool)
    for i in range(n - 1):
        running = running & cont[:, steps + i]
        last = last + running.long()
    return last


def per_step_model_loss(opt):
    """``MuZeroReprOptimizer.model_loss`` as it was before this study (defaults only: no policy, game-over or
    consistency loss): f and the reward head once per unroll step (``MuZeroModel.unroll``)."""
    import torch

    from mlagents_plugins.muzero_repr import losses as muzero_losses
    from mlagents_plugins.muzero_repr.optimizer import ModelForward
    from mlagents_plugins.muzero_repr.targets import compute_unroll_targets

    hp = opt.hyperparameters
    assert not hp.train_repr_prediction and not hp.train_game_over and hp.policy_loss_weight == 0

    def model_loss(batch):
        K, n = hp.num_unroll_steps, hp.td_steps
        B = batch.r_t.shape[0]
        with torch.no_grad():
            v_boot = muzero_losses.prediction_to_scalar(
                opt.target_model.initial_inference(batch.boot_obs).value, hp.support_size, opt.transform_eps
            ).reshape(B, K + 1)
            v_t = torch.zeros_like(batch.r_t).scatter(1, batch.boot_rows_k, v_boot)
            tg = compute_unroll_targets(batch.r_t, batch.terminal_t, batch.terminal_t, batch.valid_t,
                                        v_t, opt.gamma, K, n)
        outs = opt.model.unroll(batch.obs_0, batch.actions_enc_k, hp.recurrent_gradient_scaling_factor)
        reward_pred = torch.stack([o.reward for o in outs[1:]], dim=1) if K > 0 else None
        losses = muzero_losses.model_losses(
            torch.stack([o.value for o in outs], dim=1), reward_pred, None, None, None, None, tg,
            batch.is_weights, batch.cont_action_k, batch.disc_action_k, opt.branches,
            support_size=hp.support_size, transform_eps=opt.transform_eps, loss_weights=opt.loss_weights,
            consistency_loss=hp.repr_prediction_loss,
        )
        with torch.no_grad():
            latent_norm = torch.stack([o.latent.norm(dim=-1).mean() for o in outs])
            latent_std = outs[0].latent.std(dim=0, unbiased=False).mean()
        return ModelForward(losses, tg, latent_norm, latent_std)

    return model_loss


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=6000)
    p.add_argument("--updates", type=int, default=200)
    p.add_argument("--warmup", type=int, default=60)
    p.add_argument("--set", nargs="*", default=[])
    p.add_argument("--compare", action="store_true")
    args = p.parse_args(argv)
    overrides = {kv.split("=", 1)[0]: yaml.safe_load(kv.split("=", 1)[1]) for kv in args.set}
    import torch

    from bench.speed import common

    torch.set_num_threads(1)
    tmp = tempfile.mkdtemp()
    fs, spec = build("fast_sac", tmp, {})
    mz, _ = build("muzero_repr", tmp, overrides)
    others = {}
    if args.compare:
        from mlagents_plugins.muzero_repr import batch as muzero_batch

        old, _ = build("muzero_repr", os.path.join(tmp, "old"), overrides)
        old.optimizer.model_loss = per_step_model_loss(old.optimizer)  # read by the compiled step when traced
        new_rows = muzero_batch.bootstrap_rows

        def old_update_once():
            muzero_batch.bootstrap_rows = old_bootstrap_rows
            try:
                old.update_once()
            finally:
                muzero_batch.bootstrap_rows = new_rows

        others["muzero (per-step unroll) update_once"] = (old, old_update_once)
        for name, extra in (("model_update_interval 2", {"model_update_interval": 2}),
                            ("num_unroll_steps 3", {"num_unroll_steps": 3})):
            t, _ = build("muzero_repr", os.path.join(tmp, name.replace(" ", "_")), dict(overrides, **extra))

            def counted(t=t):  # the base counts updates around update_once (the interval reads the count)
                t.update_once()
                t.num_updates += 1

            others[f"muzero ({name}) update_once"] = (t, counted)
    for t in [fs, mz] + [t for t, _ in others.values()]:
        common.fill(t, spec, args.rows, np.random.default_rng(0))
    t0 = time.thread_time()
    for _ in range(args.warmup):  # compiles every update (the first calls) and chooses the matmul kernels
        fs.update_once()
        mz.update_once()
        for _, step in others.values():
            step()
    warm_s = time.thread_time() - t0
    opt = mz.optimizer
    mb = mz.sample_model_batch()
    rb = mz.sample_rl_batch()
    steps = {
        "fast_sac update_once": fs.update_once,
        "muzero update_once": mz.update_once,
        "muzero sample_model_batch": mz.sample_model_batch,
        "muzero update_model": lambda: opt.update_model(mb),
        "muzero sample_rl_batch": mz.sample_rl_batch,
        "muzero update_rl": lambda: opt.update_rl(rb),
    }
    steps.update({name: step for name, (_, step) in others.items()})
    ms = common.time_interleaved(steps, args.updates, warmup=5, clock=time.thread_time)
    out = {"rows": args.rows, "set": overrides, "warmup_cpu_s": round(warm_s, 1),
           "model_mode": opt.model_step.whole_mode, "head_mode": opt.head.loss_step.whole_mode,
           "ms": {k: round(v, 3) for k, v in ms.items()},
           "ratio to fast_sac": {k: round(v / ms["fast_sac update_once"], 2) for k, v in ms.items()
                                 if k.endswith("update_once")}}
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
