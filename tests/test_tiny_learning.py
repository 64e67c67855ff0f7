"""Every trainer on the tiny tasks (mlagents_plugins/envs/tiny.py), with the built-in trainer's config for the
case and ``trainer_type`` changed, nothing else - what a user switching trainers does (sac's config for fast_sac,
taac and muzero_repr; ppo's for impala).

A case passes when the final return (mean of the last two of ten summaries) reaches the case's threshold (0.9 of
the best return 1.0; 0.6 on ``sac-hybrid-2c2d``, where built-in sac reaches 0.9 on 2 of 3 seeds only, and 2000 steps
on ``sac-entities-continuous``, which it failed at 1000 on seed 0: ``tiny.SAC_HYBRID_2C2D_THRESHOLD``,
``tiny.SAC_ENTITY_STEPS``, bench/results/tiny-budgets-2026-11-29; built-in ppo's hybrid cases at the budgets and
threshold it reaches on 3 of 3 seeds: ``tiny.PPO_HYBRID_CAMERA_STEPS``, ``tiny.PPO_HYBRID_2C2D_STEPS``,
``tiny.PPO_HYBRID_2C2D_THRESHOLD``, bench/results/tiny-issue53-2026-11-30).  A trainer that does not take a case's actions
stops at start-up with its clear refusal, and that refusal is the expected result (not a skip).  The default run holds ``DEFAULT_RUN`` at seed 0: one
discrete, one camera-continuous and (impala) one hybrid case per trainer that fits in minutes; every other (trainer,
case, seed) and the built-in trainers (which show each threshold is reachable in its budget) are ``slow``.  bench/results/tiny-2026-11-27/ has the measured finals; the ``slow`` cases that
still fail for fast_sac and taac (README's limits) are measured in bench/results/tiny-defaults-2026-11-28/ and
bench/results/tiny-grid-2026-11-28/.
"""
import pytest
from mlagents.trainers.exception import TrainerConfigError

from mlagents_plugins.envs import tiny

OURS = ("fast_sac", "taac", "impala", "muzero_repr")
SEEDS = (0, 1, 2)

#: trainers that refuse network_settings.memory at start-up (the memory cases)
RECURRENT_REFUSED = ("taac", "muzero_repr")
#: (trainer, case) in the default test run, at seed 0
DEFAULT_RUN = {
    "fast_sac": ("sac-line-discrete", "sac-camera-continuous", "sac-memory-discrete"),
    # taac's camera case (about 40 s; 5 of 10 seeds before the automatic mini_batch_length, 8 of 10 after,
    # bench/results/tiny-candidates-2026-11-29; 19 of 20 with the actor on the first critic, seeds 0-2 among them,
    # bench/results/tiny-issue53-2026-11-30); its entity case (about 2 minutes) passes 3 of 3, slow
    "taac": ("sac-camera-continuous",),
    "impala": ("ppo-line-discrete", "ppo-hybrid-1c1d", "ppo-camera-continuous", "ppo-memory-continuous"),
    # muzero_repr's discrete line (about 15 s warm, against 30-50 s for the discrete square; both were near 0 with
    # the fixed 2x128 head, and seed 0 passes with the head sized by network_settings,
    # bench/results/muzero-tiny-2026-11-29); its other cases are slow
    "muzero_repr": ("sac-line-discrete",),
}


#: (trainer, case, seed) where a built-in trainer fails its own case at any budget measured, kept as a strict xfail
#: (an XPASS fails the run, so the entry goes when the built-in starts passing): built-in ppo's resnet case on seed 2
#: reaches 0.3-0.7 in its first summaries, collapses to about 0 and stays there at 3000, 6000 and 9000 steps (final
#: 0.078, 0.034, -0.019), where impala passes it on 3 of 3 seeds at each (bench/results/tiny-issue53-2026-11-30).
BUILTIN_FAILS = {("ppo", "ppo-resnet", 2): "built-in ppo collapses on this seed at every budget measured"}


def _refusal(trainer: str, case: tiny.TinyCase):
    """The message pattern of the start-up refusal ``trainer`` gives ``case``, or None when it trains it."""
    if trainer in RECURRENT_REFUSED and dict(case.network_settings).get("memory"):  # refused at construction
        return f"trainer_type '{trainer}' does not support recurrent policies"
    if trainer == "taac" and case.task.branches:
        return "trainer_type 'taac' supports continuous actions only"
    return None


def _params():
    for trainer in OURS + ("sac", "ppo"):
        for case in tiny.cases_for(trainer):
            if _refusal(trainer, case):  # refused at start-up, in no time: one seed, in the default run
                yield pytest.param(trainer, case.name, 0, id=f"{trainer}-{case.name}-refused")
                continue
            for seed in SEEDS:
                fast = seed == 0 and case.name in DEFAULT_RUN.get(trainer, ())
                marks = () if fast else (pytest.mark.slow,)
                if (trainer, case.name, seed) in BUILTIN_FAILS:
                    marks += (pytest.mark.xfail(reason=BUILTIN_FAILS[trainer, case.name, seed], strict=True),)
                yield pytest.param(trainer, case.name, seed, marks=marks, id=f"{trainer}-{case.name}-{seed}")


@pytest.mark.parametrize("trainer,case_name,seed", list(_params()))
def test_learns_tiny_task_with_the_built_in_config(trainer, case_name, seed, tmp_path, one_thread):
    case = tiny.CASES[case_name]
    refusal = _refusal(trainer, case)
    if refusal:
        with pytest.raises(TrainerConfigError, match=refusal):
            tiny.train_case(case, trainer, seed, str(tmp_path))
        return
    result = tiny.train_case(case, trainer, seed, str(tmp_path))
    assert result.steps >= case.max_steps
    assert result.final_mean_reward >= case.threshold, (trainer, case_name, seed, result.reward_curve)


def test_default_run_names_existing_cases_of_each_trainers_config():
    for trainer, names in DEFAULT_RUN.items():
        assert set(names) <= {case.name for case in tiny.cases_for(trainer)}, trainer


@pytest.mark.slow
@pytest.mark.parametrize("case_name", ["sac-memory-continuous", "sac-memory-discrete"])
@pytest.mark.parametrize("seed", SEEDS)
def test_memory_cases_are_not_solved_without_memory(case_name, seed, tmp_path, one_thread):
    """The memory cases need the memory: fast_sac with ``memory: null`` (and the same budget) stays below the
    threshold, since after the cue the best it can do is one fixed direction (right half of the time)."""
    import dataclasses

    case = tiny.CASES[case_name]
    case = dataclasses.replace(case, network_settings=case.network_settings + (("memory", None),),
                               hyperparameters=case.hyperparameters + (("compile_update", False),))
    result = tiny.train_case(case, "fast_sac", seed, str(tmp_path))
    assert result.final_mean_reward < 0.5 * case.threshold, (case_name, seed, result.reward_curve)


def test_builtin_failures_name_existing_built_in_cases_and_seeds():
    for (trainer, name, seed) in BUILTIN_FAILS:
        assert trainer in ("sac", "ppo") and seed in SEEDS, (trainer, name, seed)
        assert name in {case.name for case in tiny.cases_for(trainer)}, name
