"""The tiny tasks (mlagents_plugins/envs/tiny.py): the reward and episode rules by hand, every observation kind
carries the goal and only the goal, the expert scores the best return and random play stays under the threshold,
and a task runs through SceneEnv and train_in_process like a named scene."""
import numpy as np
import pytest

from mlagents_envs.base_env import ActionTuple, DimensionProperty, ObservationType

from mlagents_plugins.envs import tiny
from mlagents_plugins.envs.harness import train_in_process
from mlagents_plugins.envs.inprocess import SceneEnv
from mlagents_plugins.envs.scenes import scene_behaviors, scene_class
from mlagents_plugins.envs.tiny import TinyTask, tiny_scene


def _scene(task, areas=1, seed=0):
    return tiny_scene(task)(num_areas=areas, seed=seed)


def _act(scene, continuous=(), discrete=()):
    n = scene.num_agents
    return ActionTuple(continuous=np.tile(np.asarray(continuous, np.float32), (n, 1)).reshape(n, len(continuous)),
                       discrete=np.tile(np.asarray(discrete, np.int32), (n, 1)).reshape(n, len(discrete)))


def test_hybrid_episode_by_hand():
    """Two continuous + two discrete coordinates, step 0.5: a move is the action clipped to the step, the end pays
    end_reward x the mean of coordinate x goal, every other decision costs 0.01, success needs every coordinate at
    the goal's end."""
    task = TinyTask(continuous=2, branches=2, step=0.5)
    assert (task.axes, task.fewest_decisions, task.end_reward, task.time_limit) == (4, 2, 1.01, tiny.TIME_LIMIT)
    scene = _scene(task)
    g = scene.goal[0]
    out = scene.step(_act(scene, [0.9 * g, -0.2 * g], [1, 0]))  # 0.9 clips to 0.5; the branches move +-0.5
    np.testing.assert_allclose(scene.coord[0], [0.5 * g, -0.2 * g, 0.5, -0.5])
    assert not out.done[0] and out.reward[0] == pytest.approx(-0.01)
    out = scene.step(_act(scene, [g, g], [1, 0]))
    np.testing.assert_allclose(scene.coord[0], [g, 0.3 * g, 1.0, -1.0])  # one coordinate is not at an end yet
    assert not out.done[0]
    for _ in range(2):  # 0.3 g -> -0.2 g -> -0.7 g
        assert not scene.step(_act(scene, [g, -g], [1, 0])).done[0]
    out = scene.step(_act(scene, [g, -g], [1, 0]))  # -> -g: every coordinate at an end, two of four wrong
    assert out.done[0] and not out.success[0] and not out.interrupted[0]
    # end reward 1.01 x mean(g g, -g g, 1 g, -1 g) = 0
    assert out.reward[0] == pytest.approx(0.0, abs=1e-6) and out.episode_return[0] == pytest.approx(-0.04)
    g = scene.goal[0]  # the next episode: three coordinates right, the last branch wrong
    right, wrong = int(g > 0), int(g < 0)
    scene.step(_act(scene, [g, g], [right, wrong]))
    out = scene.step(_act(scene, [g, g], [right, wrong]))
    assert out.done[0] and not out.success[0]
    assert out.reward[0] == pytest.approx(1.01 * 0.5) and out.episode_return[0] == pytest.approx(-0.01 + 0.505)


def test_best_and_worst_returns_and_time_out():
    task = TinyTask(continuous=1, branches=1, step=0.5)
    scene = _scene(task, seed=3)
    g = scene.goal[0]
    scene.step(_act(scene, [g], [int(g > 0)]))
    out = scene.step(_act(scene, [g], [int(g > 0)]))
    assert out.done[0] and out.success[0]
    assert out.episode_return[0] == pytest.approx(1.0)  # the best return: -0.01 + 1.01
    g = scene.goal[0]
    scene.step(_act(scene, [-g], [int(g < 0)]))
    out = scene.step(_act(scene, [-g], [int(g < 0)]))
    assert out.done[0] and not out.success[0]
    assert out.episode_return[0] == pytest.approx(-0.01 - 1.01)  # every coordinate at the wrong end
    # the branch reaches its end, the continuous coordinate stays at 0: the episode times out
    for decision in range(1, task.time_limit + 1):
        out = scene.step(_act(scene, [0.0], [1]))
        assert out.done[0] == (decision == task.time_limit)
    assert out.interrupted[0] and not out.success[0]
    assert out.episode_return[0] == pytest.approx(-0.01 * task.time_limit)


@pytest.mark.parametrize("task", [
    TinyTask(), TinyTask(continuous=0, branches=1), TinyTask(continuous=2, branches=2, step=0.5),
    TinyTask(vector=False, cameras=2), TinyTask(vector=False, entities=2), TinyTask(goal_signal=True, entities=1),
])
def test_expert_scores_one_and_random_play_stays_under_the_threshold(task):
    for policy in ("expert", "random"):
        scene = _scene(task, areas=16, seed=1)
        rng = np.random.default_rng(0)
        returns = []
        for _ in range(1000):  # random play needs many decisions per episode (a random walk to the ends)
            if policy == "expert":
                action = scene.heuristic()
            else:
                action = ActionTuple(
                    continuous=rng.uniform(-1, 1, (scene.num_agents, task.continuous)).astype(np.float32),
                    discrete=rng.integers(0, 2, (scene.num_agents, task.branches)).astype(np.int32))
            out = scene.step(action)
            returns += list(out.episode_return[out.done])
        assert len(returns) > 100
        if policy == "expert":
            np.testing.assert_allclose(returns, 1.0, atol=1e-5)
        else:
            assert np.mean(returns) < 0.3 < min(case.threshold for case in tiny.CASES.values())


def test_every_observation_shows_the_goal_and_only_the_goal():
    task = TinyTask(vector=True, goal_signal=True, cameras=2, image=(1, 9, 12), entities=2)
    scene = _scene(task, areas=64, seed=5)
    specs = scene.observation_specs
    assert [s.shape for s in specs] == [(1,), (1, 9, 12), (1, 9, 12), (4, 4), (4, 4)]
    assert specs[0].observation_type == ObservationType.GOAL_SIGNAL
    assert specs[3].dimension_property == (DimensionProperty.VARIABLE_SIZE, DimensionProperty.NONE)
    vector, cam0, cam1, ent0, ent1 = scene.observe()
    g = scene.goal
    assert set(np.unique(g)) == {-1.0, 1.0}
    np.testing.assert_array_equal(vector[:, 0], g)
    lit = np.float32(tiny.LIT)
    for i in range(scene.num_agents):
        right, bottom = (slice(8, 12), slice(6, 9)) if g[i] > 0 else (slice(0, 4), slice(0, 3))
        assert (cam0[i][:, :, right] == lit).all() and (cam0[i] == lit).sum() == 9 * 4
        assert (cam1[i][:, bottom, :] == lit).all() and (cam1[i] == lit).sum() == 3 * 12
        for ent in (ent0[i], ent1[i]):
            present = ent[:, 3] == 1.0
            assert 1 <= present.sum() <= tiny.MAX_ENTITIES and (ent[present, 0] == g[i]).all()
            assert (ent[~present] == 0.0).all()  # padding rows, masked out by ML-Agents' attention
    # a camera image has the same brightness for both goals: only where the light is tells them apart
    brightness = cam0.reshape(scene.num_agents, -1).sum(axis=1, dtype=np.float64)
    np.testing.assert_allclose(brightness, brightness[0], rtol=1e-12)
    # the coordinates are not observed: moving changes nothing the agent sees (the entity noise aside)
    before = scene.observe()
    scene.step(_act(scene, [0.1], []))
    after = scene.observe()
    for b, a in zip(before[:3], after[:3]):
        np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("given,field", [
    (dict(continuous=0, branches=0), "continuous \\+ branches"),
    (dict(step=0.0), "step"),
    (dict(cameras=3), "cameras"),
    (dict(vector=False), "observations"),
    (dict(vector=False, goal_signal=True, cameras=1), "goal_signal"),
    (dict(image=(3, 2, 20), cameras=1), "image"),
])
def test_bad_tasks_are_refused_naming_the_field(given, field):
    with pytest.raises(ValueError, match=f"TinyTask: {field}="):
        TinyTask(**given)


def test_a_task_is_a_scene_for_scene_env_and_the_harness(tmp_path):
    cls = tiny_scene(TinyTask(continuous=0, branches=1), threshold=0.8, name="TinyLine")
    assert scene_behaviors(cls) == (cls,) and scene_class(cls) is cls and cls.success_threshold == 0.8
    env = SceneEnv(cls, num_areas=3, seed=2)
    env.reset()
    decision, _ = env.get_steps("TinyLine?team=0")
    assert len(decision) == 3 and decision.obs[0].shape == (3, 1)
    result = train_in_process({"trainer_type": "ppo", "summary_freq": 100,
                               "hyperparameters": {"batch_size": 16, "buffer_size": 64}},
                              cls, max_steps=200, seed=0, output_dir=str(tmp_path))
    assert result.behavior_name == "TinyLine" and result.steps >= 200 and result.reward_curve


def test_cases_give_every_trainer_its_built_in_config_with_only_trainer_type_changed():
    case = tiny.CASES["sac-hybrid-2c2d"]
    ours = case.config("fast_sac")
    builtin = case.config("sac")
    assert ours.pop("trainer_type") == "fast_sac" and builtin.pop("trainer_type") == "sac"
    assert ours == builtin and ours["hyperparameters"]["batch_size"] == 256
    assert {c.builtin for c in tiny.cases_for("impala")} == {"ppo"}
    assert {c.builtin for c in tiny.cases_for("taac")} == {"sac"}
    assert len(tiny.cases_for("fast_sac")) == len(tiny.cases_for("impala")) == len(tiny.CASES) // 2


def test_memory_task_shows_the_cue_at_the_first_decisions_of_every_episode_only():
    """cue_steps=2 (ML-Agents' MemoryEnvironment): the goal at decisions 0 and 1 of an episode, 0 after, again at
    the next episode's start; the rules of the line are unchanged (5 decisions, best return 1.0)."""
    task = TinyTask(continuous=1, branches=0, step=0.2, cue_steps=2)
    scene = _scene(task, seed=2)
    seen = []
    for episode in range(3):
        g = scene.goal[0]
        for k in range(5):
            seen.append(float(scene.observe()[0][0, 0]))
            assert seen[-1] == (g if k < 2 else 0.0), (episode, k)
            out = scene.step(_act(scene, [g]))
        assert out.done[0] and out.success[0] and out.episode_return[0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="cue_steps"):
        TinyTask(cue_steps=2, vector=False, cameras=1)
    with pytest.raises(ValueError, match="cue_steps"):
        TinyTask(cue_steps=-1)


def test_memory_cases_carry_the_memory_a_user_adds():
    for builtin in ("sac", "ppo"):
        for kind in ("continuous", "discrete"):
            case = tiny.CASES[f"{builtin}-memory-{kind}"]
            assert case.task.cue_steps == tiny.MEMORY_CUE_STEPS < case.task.fewest_decisions
            memory = case.config("fast_sac")["network_settings"]["memory"]
            assert memory["memory_size"] % 2 == 0 and memory["sequence_length"] <= \
                case.config("fast_sac")["hyperparameters"]["batch_size"]


def test_cli_max_steps_trains_the_case_at_that_budget_and_records_it(tmp_path, monkeypatch, capsys):
    """``--max-steps`` (measuring a case's budget) changes the budget and the summaries with it, nothing else of the
    case; ``--set`` still reaches the hyperparameters; a budget under one step a summary is refused by name."""
    import json
    from types import SimpleNamespace

    seen = []

    def fake_train(case, trainer, seed, output_dir):
        seen.append((case, trainer, seed))
        return SimpleNamespace(final_mean_reward=0.95, steps=case.max_steps,
                               reward_curve=[(case.max_steps // 2, 0.5), (case.max_steps, 0.95)])

    monkeypatch.setattr(tiny, "train_case", fake_train)
    out = tmp_path / "runs.jsonl"
    tiny.main(["--trainers", "sac", "--cases", "sac-entities-continuous", "--seeds", "2", "--max-steps", "2500",
               "--set", "batch_size=32", "--out", str(out)])
    (case, trainer, seed), = seen
    original = tiny.CASES["sac-entities-continuous"]
    assert (case.max_steps, trainer, seed) == (2500, "sac", 2) and original.max_steps == tiny.SAC_ENTITY_STEPS != 2500
    assert case.config("sac")["summary_freq"] == 250 and case.config("sac")["hyperparameters"]["batch_size"] == 32
    assert (case.task, case.threshold) == (original.task, original.threshold)
    record = json.loads(out.read_text())
    assert (record["max_steps"], record["steps"], record["first_step_at_threshold"]) == (2500, 2500, 2500)
    seen.clear()
    tiny.main(["--trainers", "sac", "--cases", "sac-line-discrete", "--seeds", "0"])
    assert seen[0][0] == tiny.CASES["sac-line-discrete"] and "max_steps" not in json.loads(
        capsys.readouterr().out.strip().splitlines()[-1])
    with pytest.raises(SystemExit):
        tiny.main(["--trainers", "sac", "--max-steps", "5"])
    assert "--max-steps 5 is invalid" in capsys.readouterr().err
