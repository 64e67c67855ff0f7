"""bench.metrics on hand-made curves: first threshold crossing, spread over seeds, same-invocation ratios."""
import math

import pytest

from bench_fixtures import rec  # noqa: F401  (also puts the repo root on sys.path)
from bench.metrics import ratios, same_invocation, steps_to_threshold, summarize

CURVE = [[100, 1.0, 0.2], [200, 2.5, 0.9], [300, 4.0, 1.5], [400, 5.0, 0.7], [500, 6.0, 2.0]]


def test_steps_to_threshold_is_first_crossing_not_best_point():
    assert steps_to_threshold(CURVE, 0.8) == (200, 2.5)
    assert steps_to_threshold(CURVE, 1.5) == (300, 4.0)  # equal counts as reached
    assert steps_to_threshold(CURVE, 1.6) == (500, 6.0)  # the dip at 400 is skipped, later rise counts
    assert steps_to_threshold(CURVE, 2.1) is None
    assert steps_to_threshold([[100, 1.0, math.nan], [200, 2.0, 3.0]], 1.0) == (200, 2.0)
    assert steps_to_threshold([], 0.0) is None


def test_summary_spread_and_rates_match_hand_calculation():
    runs = [
        rec("fast_sac", 0, [[100, 1.0, 0.0], [200, 3.0, 1.2]], steps=1000, wall=10.0, final=1.0, update=2.0,
            save=0.5, load=0.1, replay=2_000_000),
        rec("fast_sac", 1, [[100, 2.0, 0.5], [200, 5.0, 0.8], [400, 9.0, 1.1]], steps=1000, wall=20.0, final=2.0,
            update=5.0, save=1.5, load=0.3, replay=4_000_000),
        rec("fast_sac", 2, [], error="RuntimeError: boom"),
    ]
    (s,) = summarize(runs)
    assert (s.seeds, s.finished, s.reached) == (3, 2, 2)
    assert s.median_steps_to_threshold == 300.0  # median of 200 and 400
    assert s.median_seconds_to_threshold == 6.0  # median of 3.0 and 9.0
    assert s.final_mean == pytest.approx(1.5)
    assert s.final_std == pytest.approx(math.sqrt(0.5))  # sample std of [1, 2]
    assert s.steps_per_second == pytest.approx((100.0 + 50.0) / 2)
    assert s.update_seconds_per_1k_steps == pytest.approx((2.0 + 5.0) / 2)
    assert (s.save_seconds, s.load_seconds, s.replay_mb) == (pytest.approx(1.0), pytest.approx(0.2), pytest.approx(3.0))
    assert s.errors == ["seed 2: RuntimeError: boom"]


def test_summaries_order_ours_first_and_keep_modes_and_scenes_apart():
    runs = [rec("sac", 0, CURVE), rec("fast_sac", 0, CURVE, scene="branches"), rec("fast_sac", 0, CURVE),
            rec("ppo", 0, CURVE, mode="mlagents-learn")]
    keys = [(s.mode, s.scene, s.trainer) for s in summarize(runs)]
    assert keys == [("in_process", "balance", "fast_sac"), ("in_process", "balance", "sac"),
                    ("in_process", "branches", "fast_sac"), ("mlagents-learn", "balance", "ppo")]


def test_ratios_direction_and_values():
    runs = [
        rec("fast_sac", 0, [[200, 1.0, 1.0]], steps=2000, wall=10.0, final=3.0),  # 200 steps/s
        rec("sac", 0, [[400, 2.0, 0.5], [800, 8.0, 1.0]], steps=1000, wall=20.0, final=1.0),  # 50 steps/s
        rec("ppo", 0, [[100, 1.0, 0.2]], steps=4000, wall=10.0, final=4.5),  # 400 steps/s, never reaches
    ]
    by_base = {r.baseline: r for r in ratios(runs)}
    vs_sac, vs_ppo = by_base["sac"], by_base["ppo"]
    assert vs_sac.speed == pytest.approx(4.0)  # ours / baseline, > 1 = ours faster
    assert vs_sac.sample_efficiency == pytest.approx(4.0)  # 800 / 200, > 1 = ours needs fewer steps
    assert vs_sac.time_to_threshold == pytest.approx(8.0)  # 8 s / 1 s
    assert vs_sac.final_difference == pytest.approx(2.0)
    assert vs_ppo.speed == pytest.approx(0.5)
    assert vs_ppo.sample_efficiency is None and vs_ppo.time_to_threshold is None  # ppo never reached
    assert vs_ppo.final_difference == pytest.approx(-1.5)


def test_ratios_need_half_the_seeds_to_reach_and_same_scene_and_mode():
    runs = [
        rec("fast_sac", 0, [[200, 1.0, 1.0]]),
        rec("sac", 0, [[400, 2.0, 1.0]]),
        rec("sac", 1, [[400, 2.0, 0.0]]),
        rec("sac", 2, [[400, 2.0, 0.0]]),  # 1 of 3 reached: no steps-to-threshold ratio
        rec("ppo", 0, CURVE, scene="branches"),  # other scene: no ratio against ppo on balance
        rec("fast_sac", 0, CURVE, mode="mlagents-learn"),  # no built-in in that mode
    ]
    out = ratios(runs)
    assert [(r.mode, r.scene, r.trainer, r.baseline) for r in out] == [("in_process", "balance", "fast_sac", "sac")]
    assert out[0].sample_efficiency is None and out[0].speed == pytest.approx(1.0)


def test_ratios_refuse_results_of_different_invocations():
    runs = [rec("fast_sac", 0, CURVE, invocation="today"), rec("sac", 0, CURVE, invocation="last-week")]
    with pytest.raises(ValueError, match="one bench invocation"):
        ratios(runs)
    assert same_invocation(runs[:1]) == "today"


def test_collapse_compares_the_final_return_with_the_best_rolling_mean_of_three_summaries():
    from bench.metrics import best_rolling_mean, collapsed

    curve = [[i * 100, float(i), r] for i, r in enumerate([0.5, 1.0, 1.5, 1.2, 0.2])]
    assert best_rolling_mean(curve) == pytest.approx((1.0 + 1.5 + 1.2) / 3)  # not the single peak 1.5
    assert collapsed(curve, final=0.9)  # 0.9 < 0.8 x 1.2333
    assert not collapsed(curve, final=1.0)  # 1.0 >= 0.9867
    rising = [[i * 100, float(i), r] for i, r in enumerate([0.1, 0.4, 0.8, 1.1])]
    assert not collapsed(rising, final=1.0)
    never_learned = [[i * 100, float(i), r] for i, r in enumerate([-1.0, -0.8, -0.9, -2.0])]
    assert not collapsed(never_learned, final=-2.0)  # nothing learned, nothing to lose
    assert not collapsed(curve[:2], final=0.0)  # too short for a rolling mean


def test_machine_kind_names_the_widest_vector_tier():
    # One model name ("AMD EPYC") covers Zen 3 (AVX2) and Zen 4 (AVX-512 BF16) machines whose CPU seconds differ
    # about 2.5x: the kind must tell them apart, and name the widest tier whatever order the flags come in.
    from bench.invocation import machine_kind, vector_isa

    zen3 = frozenset("fpu sse4_2 avx fma avx2 bmi2".split())
    zen4 = zen3 | {"avx512f", "avx512bw", "avx512_bf16", "avx512vl"}
    sapphire = zen4 | {"amx_bf16", "amx_tile", "amx_int8"}
    skylake = zen3 | {"avx512f", "avx512bw"}
    assert vector_isa(zen3) == "AVX2"
    assert vector_isa(zen4) == "AVX-512 BF16"
    assert vector_isa(sapphire) == "AMX"
    assert vector_isa(skylake) == "AVX-512"
    assert vector_isa(frozenset("fpu sse4_2 avx".split())) == "no AVX2"
    assert vector_isa(frozenset()) == "unknown ISA"
    kind = machine_kind()
    assert kind.rsplit(", ", 1)[1] in {
        "AMX", "AVX-512 BF16", "AVX-512", "AVX2", "no AVX2", "unknown ISA"}
