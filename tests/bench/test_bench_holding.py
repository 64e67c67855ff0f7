"""bench.holding's summary on hand-made curves: rolling mean, first threshold crossing, best / final / ratio."""
import math

import pytest

from bench_fixtures import REPO  # noqa: F401  (puts the repo root on sys.path)
from bench.holding import (
    SHARED_WITH_SAC,
    apply_network,
    apply_to_all,
    holding_summary,
    issue_config,
    minimal_holding_config,
    rolling,
    shipped_config,
)


def test_rolling_mean_uses_fewer_points_at_the_start():
    curve = [(1, 3.0), (2, 0.0), (3, 6.0), (4, 9.0)]
    assert rolling(curve, 3) == [(1, 3.0), (2, 1.5), (3, 3.0), (4, 5.0)]
    assert rolling([], 3) == []


def test_holding_summary_of_a_collapse():
    # raw peak 2.0 at step 3; rolling means (window 2): 0, 0.5, 1.5, 1.5, 0.5, -0.5
    curve = [(1, 0.0), (2, 1.0), (3, 2.0), (4, 1.0), (5, 0.0), (6, -1.0)]
    s = holding_summary(curve, threshold=1.0, window=2)
    assert s["steps_to_threshold"] == 2  # first raw summary >= threshold (equal counts)
    assert s["best"] == pytest.approx(1.5)
    assert s["final"] == pytest.approx(-0.5)
    assert s["hold_ratio"] == pytest.approx(-0.5 / 1.5)
    assert s["min_after_threshold"] == pytest.approx(-0.5) and s["dip_ratio"] == pytest.approx(-0.5 / 1.5)


def test_holding_summary_sees_a_fall_the_run_recovers_from():
    # threshold first reached at step 2 (raw 1.0); rolling means (window 2): 0.0, 0.5, 1.5, 1.5, 0.25, 0.0, 1.0, 1.5
    curve = [(1, 0.0), (2, 1.0), (3, 2.0), (4, 1.0), (5, -0.5), (6, 0.5), (7, 1.5), (8, 1.5)]
    s = holding_summary(curve, threshold=1.0, window=2)
    assert s["best"] == pytest.approx(1.5) and s["final"] == pytest.approx(1.5)
    assert s["hold_ratio"] == pytest.approx(1.0)  # final / best misses the fall ...
    assert s["min_after_threshold"] == pytest.approx(0.0)  # ... the lowest rolling mean after the threshold not
    assert s["dip_ratio"] == pytest.approx(0.0)
    # windows that reach back before the threshold do not count (the 0.5 at step 2 is still learning), and
    # a fall before a later, higher best counts
    late_best = [(1, 0.0), (2, 1.0), (3, 1.2), (4, 0.4), (5, 0.4), (6, 1.6), (7, 1.6)]
    r = holding_summary(late_best, threshold=1.0, window=2)
    assert r["steps_to_threshold"] == 2 and r["best"] == pytest.approx(1.6)
    assert r["min_after_threshold"] == pytest.approx(0.4) and r["dip_ratio"] == pytest.approx(0.4 / 1.6)


def test_holding_summary_never_reached_and_non_positive_best():
    s = holding_summary([(1, -2.0), (2, -1.0)], threshold=0.5, window=3)
    assert s["steps_to_threshold"] is None
    assert s["best"] == pytest.approx(-1.5) and s["final"] == pytest.approx(-1.5)
    assert math.isnan(s["hold_ratio"])  # a ratio to a best <= 0 means nothing
    assert math.isnan(s["min_after_threshold"]) and math.isnan(s["dip_ratio"])


def test_builtin_sac_gets_only_the_shared_fields_and_no_overrides():
    fast = issue_config("fast_sac", {"n_step": 3})
    sac = issue_config("sac", {"n_step": 3})
    assert fast["hyperparameters"]["n_step"] == 3
    assert "n_step" not in sac["hyperparameters"]
    assert {k: fast["hyperparameters"][k] for k in sac["hyperparameters"]} == sac["hyperparameters"]
    assert sac["trainer_type"] == "sac" and fast["network_settings"] == sac["network_settings"]


def test_shipped_config_is_the_scene_yaml_without_replay_files():
    from bench.plan import load_config

    ref = load_config("fast_sac", "hybrid")
    fast = shipped_config("fast_sac", "hybrid", {"tau": 0.01})
    sac = shipped_config("sac", "hybrid", {"tau": 0.01})
    expected = {k: v for k, v in ref["hyperparameters"].items() if k != "save_replay_buffer"}
    assert fast["hyperparameters"] == {**expected, "tau": 0.01}
    assert sac["hyperparameters"] == {k: v for k, v in expected.items() if k in SHARED_WITH_SAC}
    assert fast["network_settings"] == ref["network_settings"] == sac["network_settings"]
    assert fast["time_horizon"] == ref["time_horizon"] and fast["reward_signals"] == ref["reward_signals"]


def test_minimal_config_is_the_defaults_benchmark_one_and_set_all_reaches_builtin_sac():
    from bench.plan import MINIMAL_SAC, minimal_config

    fast = minimal_holding_config("fast_sac", {"entropy_reward": False})
    sac = minimal_holding_config("sac", {"entropy_reward": False})
    assert fast["hyperparameters"] == {**MINIMAL_SAC, "entropy_reward": False}
    assert sac["hyperparameters"] == MINIMAL_SAC
    assert sac["network_settings"] == minimal_config("sac")["network_settings"]
    assert sac["summary_freq"] == 1000

    both = {"init_entcoef": 0.5, "entropy_reward": False}
    fast = apply_to_all(fast, "fast_sac", both)
    sac = apply_to_all(sac, "sac", both)
    assert fast["hyperparameters"]["init_entcoef"] == 0.5 and fast["hyperparameters"]["entropy_reward"] is False
    assert sac["hyperparameters"]["init_entcoef"] == 0.5 and "entropy_reward" not in sac["hyperparameters"]


def test_network_reaches_every_trainer_and_keeps_the_other_fields():
    for trainer in ("fast_sac", "sac"):
        before = minimal_holding_config(trainer, {})["network_settings"]
        cfg = apply_network(minimal_holding_config(trainer, {}), {"vis_encode_type": "resnet"})
        assert cfg["network_settings"] == {**before, "vis_encode_type": "resnet"}
        assert before.get("vis_encode_type") != "resnet"
