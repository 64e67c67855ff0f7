"""bench.plan: shared hyperparameters between our trainer and the built-ins, pairing by action kind."""
import pytest
import yaml

from bench_fixtures import REPO  # noqa: F401  (puts the repo root on sys.path)
from bench import plan

FAST_SAC_BALANCE = {
    "behaviors": {
        "Balance": {
            "trainer_type": "fast_sac",
            "hyperparameters": {"batch_size": 77, "buffer_size": 1234, "buffer_init_steps": 321,
                                "steps_per_update": 3.0, "tau": 0.02, "n_step": 3},
            "network_settings": {"normalize": True, "hidden_units": 32, "num_layers": 3},
            "reward_signals": {"extrinsic": {"gamma": 0.95, "strength": 1.0}},
            "time_horizon": 17,
            "max_steps": 99,
            "summary_freq": 5,
        }
    }
}


@pytest.fixture
def config_dir(tmp_path):
    (tmp_path / "fast_sac_balance.yaml").write_text(yaml.safe_dump(FAST_SAC_BALANCE))
    return str(tmp_path)


def test_sac_takes_the_overlapping_settings_of_fast_sacs_config(config_dir):
    ours, ours_src = plan.build_config("fast_sac", "balance", 3000, 6, ["fast_sac"], config_dir)
    sac, sac_src = plan.build_config("sac", "balance", 3000, 6, ["fast_sac"], config_dir)
    assert ours_src == "configs/fast_sac_balance.yaml" and "fast_sac_balance.yaml" in sac_src
    for key in ("batch_size", "buffer_size", "buffer_init_steps", "steps_per_update", "tau"):
        assert sac["hyperparameters"][key] == ours["hyperparameters"][key] == FAST_SAC_BALANCE["behaviors"]["Balance"]["hyperparameters"][key]
    assert "n_step" not in sac["hyperparameters"] and ours["hyperparameters"]["n_step"] == 3
    assert sac["network_settings"] == {"normalize": True, "hidden_units": 32, "num_layers": 3}
    assert sac["reward_signals"]["extrinsic"]["gamma"] == 0.95 and sac["time_horizon"] == 17
    for cfg in (ours, sac):  # the bench owns budget and summaries, the same for both
        assert (cfg["max_steps"], cfg["summary_freq"]) == (3000, 500)
        assert cfg["hyperparameters"]["save_replay_buffer"] is True


def test_ppo_keeps_on_policy_buffer_and_shares_network(config_dir):
    ppo, _ = plan.build_config("ppo", "balance", 2000, 10, ["fast_sac"], config_dir)
    assert ppo["hyperparameters"]["buffer_size"] == plan.PPO_TEMPLATE["buffer_size"]
    assert "save_replay_buffer" not in ppo["hyperparameters"]
    assert ppo["summary_freq"] == 200


def test_template_keeps_only_fields_the_trainer_accepts(tmp_path):
    from mlagents.trainers.settings import strict_to_cls

    from mlagents_plugins.taac.settings import TaacSettings

    taac, src = plan.build_config("taac", "switching", 1000, 5, ["taac"], str(tmp_path))
    assert src.startswith("bench template")
    assert taac["hyperparameters"]["batch_size"] == plan.OFFPOLICY_TEMPLATE["batch_size"]
    # taac takes sac's names (drop-in configs) and reads them as its own fields
    hp = strict_to_cls(taac["hyperparameters"], TaacSettings)
    assert hp.target_update_tau == plan.OFFPOLICY_TEMPLATE["tau"]
    assert hp.init_action_temperature == plan.OFFPOLICY_TEMPLATE["init_entcoef"]
    impala, _ = plan.build_config("impala", "switching", 1000, 5, ["impala"], str(tmp_path))
    assert set(impala["hyperparameters"]) <= plan.settings_fields("impala")


def test_pairing_by_action_kind_and_learn_runs(tmp_path):
    assert plan.action_kind("balance") == "continuous" and plan.action_kind("branches") == "discrete"
    assert plan.action_kind("hybrid") == "hybrid"
    budget = plan.Budget("t", ("balance", "branches"), {"balance": 500, "branches": 400}, (0, 1), "balance", (0,),
                         learn_trainers=("sac",))
    jobs, skipped = plan.plan_jobs(budget, ["taac"], config_dir=str(tmp_path))
    got = sorted((j.mode, j.scene, j.trainer, j.seed, j.max_steps) for j in jobs)
    assert ("in_process", "branches", "taac", 0, 400) not in got
    assert ("in_process", "balance", "taac", 1, 500) in got
    assert [(j.mode, j.trainer) for j in jobs if j.mode == "mlagents-learn"] == [("mlagents-learn", "sac")]
    assert skipped == ["taac on branches: discrete actions are not supported by taac"]
    assert [j.index for j in jobs] == list(range(1, len(jobs) + 1)) and all(j.total == len(jobs) for j in jobs)


def test_unknown_scene_is_a_clear_error(tmp_path):
    budget = plan.Budget("t", ("nowhere",), {"nowhere": 10}, (0,), None, ())
    with pytest.raises(ValueError, match="scene='nowhere' is unknown; allowed: balance"):
        plan.plan_jobs(budget, [], config_dir=str(tmp_path))


def test_config_file_with_two_behaviors_is_rejected(tmp_path):
    doc = {"behaviors": {"A": {"trainer_type": "fast_sac"}, "B": {"trainer_type": "fast_sac"}}}
    (tmp_path / "fast_sac_balance.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(ValueError, match="exactly one behavior"):
        plan.load_config("fast_sac", "balance", str(tmp_path))


def test_defaults_budget_runs_minimal_dropin_configs_on_the_validation_scenes(tmp_path):
    from mlagents.plugins.trainer_type import register_trainer_plugins
    from mlagents.trainers.settings import RunOptions, TrainerSettings

    from mlagents_plugins.envs.scenes import scenes_in

    assert set(plan.DEFAULTS.scenes) == set(scenes_in("validation")) and len(plan.DEFAULTS.seeds) >= 3
    assert set(plan.DEFAULTS.steps) == set(plan.DEFAULTS.scenes)  # every validation scene has its own budget
    jobs, skipped = plan.plan_jobs(plan.DEFAULTS, ["fast_sac", "taac", "impala", "muzero_repr"],
                                   config_dir=str(tmp_path))
    assert {j.mode for j in jobs} == {"in_process"}
    assert any("taac on hybrid_sparse" in s for s in skipped)
    register_trainer_plugins()
    for job in jobs:
        hyper = job.config["hyperparameters"]
        family = plan.MINIMAL_PPO if job.trainer in plan.ON_POLICY else plan.MINIMAL_SAC
        assert {k: hyper[k] for k in family} == family, (job.trainer, hyper)
        assert job.config["network_settings"] == plan.MINIMAL_NETWORK
        assert job.config_source.startswith("minimal drop-in config")
        try:  # every minimal config loads as the user's mlagents-learn would load it
            RunOptions.from_dict({"behaviors": {"B": job.config}})
        finally:
            TrainerSettings.default_override = None
    trainers_per_scene = {(j.scene, j.trainer) for j in jobs}
    assert ("camera36", "ppo") in trainers_per_scene and ("camera36", "impala") in trainers_per_scene


def test_set_reaches_the_trainers_that_have_the_setting_and_names_a_missing_one(tmp_path):
    """``--set``: a hyperparameter lands only in the configs of trainers whose settings have it (fast_sac's
    update_precision, not built-in sac's); network settings in every trainer's; one no planned trainer has is
    refused with its name; the config's source says what was set."""
    from bench.overrides import parse_override

    budget = plan.DEFAULTS
    sets = [parse_override("hyperparameters.update_precision=bf16"), parse_override("network_settings.hidden_units=256"),
            parse_override("hyperparameters.batch_size=256")]
    jobs, _ = plan.plan_jobs(budget, ["fast_sac"], ["sac", "fast_sac"], ["balance_distractors"],
                             config_dir=str(tmp_path), overrides=sets)
    by_trainer = {j.trainer: j for j in jobs}
    fast, sac = by_trainer["fast_sac"].config, by_trainer["sac"].config
    assert fast["hyperparameters"]["update_precision"] == "bf16" and "update_precision" not in sac["hyperparameters"]
    assert fast["network_settings"]["hidden_units"] == sac["network_settings"]["hidden_units"] == 256
    assert fast["hyperparameters"]["batch_size"] == sac["hyperparameters"]["batch_size"] == 256
    assert by_trainer["fast_sac"].config_source.endswith(
        "--set hyperparameters.update_precision=bf16 network_settings.hidden_units=256 hyperparameters.batch_size=256")
    assert "update_precision" not in by_trainer["sac"].config_source
    plain, _ = plan.plan_jobs(budget, ["fast_sac"], ["sac", "fast_sac"], ["balance_distractors"],
                              config_dir=str(tmp_path))
    assert plain[0].config["network_settings"]["hidden_units"] != 256  # overrides do not leak into later plans
    with pytest.raises(ValueError, match="update_precision=bf16: no planned trainer \\(sac\\)"):
        plan.plan_jobs(budget, ["fast_sac"], ["sac"], ["balance_distractors"], config_dir=str(tmp_path),
                       overrides=sets[:1])
