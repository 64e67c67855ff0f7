"""Intrinsic reward signals (GAIL, curiosity, RND) and behavioral cloning run with fast_sac end to end in-process:
providers are evaluated on sampled minibatches, updated on their own cadence and their stats are reported."""

from mlagents_plugins.envs.demo_writer import record_demo
from mlagents_plugins.envs.harness import train_in_process


def test_gail_curiosity_rnd_and_bc_train_and_report(tmp_path, one_thread):
    demo = str(tmp_path / "balance.demo")
    record_demo("balance", demo, steps=400, seed=1)
    small = {"hidden_units": 16, "num_layers": 1}
    cfg = dict(
        trainer_type="fast_sac",
        hyperparameters=dict(batch_size=32, buffer_size=5000, buffer_init_steps=100, steps_per_update=8.0,
                             reward_signal_steps_per_update=16.0, n_step=2,
                             compile_update=False),  # compiling is tested in test_compiled_update.py
        network_settings=dict(hidden_units=16, num_layers=1),
        reward_signals=dict(
            extrinsic=dict(gamma=0.99, strength=1.0),
            gail=dict(gamma=0.9, strength=0.1, demo_path=demo, network_settings=small),
            curiosity=dict(gamma=0.9, strength=0.05, network_settings=small),
            rnd=dict(gamma=0.9, strength=0.05, network_settings=small),
        ),
        behavioral_cloning=dict(demo_path=demo, strength=0.5, steps=1000, batch_size=32, num_epoch=1),
        time_horizon=32,
        summary_freq=500,
        checkpoint_interval=10 ** 9,
    )
    result = train_in_process(cfg, "balance", max_steps=1500, seed=0, num_areas=1, output_dir=str(tmp_path / "out"))
    keys = set(result.stats)
    for key in ("Losses/GAIL Loss", "Losses/Curiosity Forward Loss", "Losses/RND Loss", "Losses/Pretraining Loss",
                "Policy/Gail Reward", "Policy/Curiosity Reward", "Policy/Rnd Reward", "Losses/Q1 Loss"):
        assert key in keys, (key, [k for k in sorted(keys) if "Reward" in k or "Gail" in k or "GAIL" in k])
    assert result.steps >= 1500
