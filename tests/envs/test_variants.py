"""Scene variants: specs match what they observe, thresholds sit between the expert and random play, changes
are the declared ones, and every scene is in exactly one of the tuning / validation sets."""
import numpy as np
import pytest

from mlagents_envs.base_env import ActionTuple

from mlagents_plugins.envs.inprocess import SceneEnv
from mlagents_plugins.envs.scenes import ALL_SCENES, SCENES, SPLIT, scene_class, scenes_in
from mlagents_plugins.envs.scenes.variants import VARIANT_SPECS
from tests.envs.test_scenes import rollout

VARIANTS = [v.name for v in VARIANT_SPECS]


def test_split_partitions_every_scene_and_base_scenes_are_tuning():
    tuning, validation = scenes_in("tuning"), scenes_in("validation")
    assert set(tuning) | set(validation) == set(ALL_SCENES) and not set(tuning) & set(validation)
    assert set(SCENES) <= set(tuning) and len(validation) >= 5
    assert len({cls.behavior_name for cls in ALL_SCENES.values()}) == len(ALL_SCENES)  # one build each
    with pytest.raises(ValueError, match="allowed: tuning, validation"):
        scenes_in("test")
    assert set(SPLIT) == set(ALL_SCENES)


@pytest.mark.parametrize("name", VARIANTS)
def test_variant_threshold_between_expert_and_random(name):
    cls = scene_class(name)
    decisions = 900 if cls.default_max_episode_steps > 100 else 400
    expert, _, _ = rollout(cls(num_areas=2, seed=0), "heuristic", decisions)
    random, _, _ = rollout(cls(num_areas=2, seed=0), "random", decisions)
    assert len(expert) >= 8 and len(random) >= 8
    assert expert.mean() >= 1.2 * cls.success_threshold > random.mean(), (expert.mean(), random.mean())


@pytest.mark.parametrize("name", VARIANTS)
def test_observations_and_actions_match_the_declared_specs(name):
    scene = scene_class(name)(num_areas=1, seed=3)
    obs = scene.observe()
    assert [o.shape[1:] for o in obs] == [tuple(s.shape) for s in scene.observation_specs]
    assert all(o.dtype == np.float32 and np.isfinite(o).all() for o in obs)
    act = scene.heuristic()
    assert act.continuous.shape[1] == scene.action_spec.continuous_size
    assert act.discrete.shape[1] == scene.action_spec.discrete_size
    env = SceneEnv(name, seed=3)
    env.reset()
    assert list(env.behavior_specs) == [f"{scene.behavior_name}?team=0"]


def _returns(name, seed, decisions=200):
    return rollout(scene_class(name)(num_areas=1, seed=seed), "heuristic", decisions)


def test_reward_scale_and_success_only_reward_change_only_the_reward():
    base_r, base_s, _ = rollout(SCENES["balance"](num_areas=2, seed=4), "heuristic", 300)
    small_r, small_s, _ = rollout(scene_class("balance_small_reward")(num_areas=2, seed=4), "heuristic", 300)
    np.testing.assert_allclose(small_r, 0.1 * base_r, rtol=1e-5, atol=1e-5)
    assert (small_s == base_s).all()
    base_r, base_s, _ = rollout(SCENES["hybrid"](num_areas=2, seed=4), "heuristic", 300)
    sparse_r, sparse_s, _ = rollout(scene_class("hybrid_sparse")(num_areas=2, seed=4), "heuristic", 300)
    assert (sparse_s == base_s).all() and (sparse_r == sparse_s.astype(float)).all()
    assert not np.allclose(base_r, sparse_r)


def test_ignored_actions_do_nothing_and_distractors_do_not_change_the_task():
    a = scene_class("balance_distractors")(num_areas=1, seed=2)
    b = scene_class("balance_distractors")(num_areas=1, seed=2)
    rng = np.random.default_rng(0)
    for _ in range(30):
        used = rng.uniform(-1, 1, (4, 2)).astype(np.float32)
        ra = a.step(ActionTuple(continuous=np.concatenate([used, rng.uniform(-1, 1, (4, 2)).astype(np.float32)], 1)))
        rb = b.step(ActionTuple(continuous=np.concatenate([used, np.zeros((4, 2), np.float32)], 1)))
        np.testing.assert_array_equal(ra.reward, rb.reward)
        np.testing.assert_array_equal(a.observe()[0][:, :8], b.observe()[0][:, :8])
    base = SCENES["balance"](num_areas=1, seed=2)
    np.testing.assert_array_equal(base.observe()[0], scene_class("balance_distractors")(num_areas=1, seed=2).observe()[0][:, :8])


def test_sparse_reach_with_distractors_keeps_reachs_episodes():
    """reach_sparse_distractors: reach's episodes under the same actions, reward 1 exactly at success, and reach's
    6 observation values followed by 8 noise values."""
    base = SCENES["reach"](num_areas=1, seed=3)
    var = scene_class("reach_sparse_distractors")(num_areas=1, seed=3)
    assert var.observation_specs[0].shape == (14,) and var.action_spec == base.action_spec
    rng = np.random.default_rng(1)
    successes = failures = 0
    noise = []
    for _ in range(300):
        np.testing.assert_array_equal(var.observe()[0][:, :6], base.observe()[0])
        noise.append(var.observe()[0][:, 6:])
        act = ActionTuple(discrete=rng.integers(0, 3, (4, 2)).astype(np.int32))
        rb, rv = base.step(act), var.step(act)
        for field in ("done", "success", "interrupted"):
            np.testing.assert_array_equal(getattr(rv, field), getattr(rb, field))
        np.testing.assert_array_equal(rv.reward, rb.success.astype(np.float32))
        successes += int(rb.success.sum())
        failures += int((rb.done & ~rb.success & ~rb.interrupted).sum())
    assert successes > 0 and failures > 0  # both kinds of episode end were compared
    noise = np.concatenate(noise)
    assert -1.0 <= noise.min() and noise.max() <= 1.0 and 0.5 < noise.std() < 0.65  # uniform in [-1, 1]


def test_images_resampled_and_gray_keeps_the_objects_apart():
    base = SCENES["camera"](num_areas=1, seed=6).observe()[0]
    gray = scene_class("camera_gray18")(num_areas=1, seed=6).observe()[0]
    big = scene_class("camera36")(num_areas=1, seed=6).observe()[0]
    assert gray.shape == (4, 1, 18, 18) and big.shape == (4, 3, 36, 36)
    # nearest neighbour: pixel (i, j) of the 36 image is pixel (i*27//36, j*27//36) of the 27 one
    np.testing.assert_array_equal(big[:, :, 35, 20], base[:, :, 26, 15])
    lum = 0.299 * base[:, 0] + 0.587 * base[:, 1] + 0.114 * base[:, 2]
    np.testing.assert_allclose(gray[:, 0, 17, 4], np.round(255 * lum[:, 25, 6]) / 255, rtol=1e-6)
    # floor, agent, goal, hazard and outside stay five different gray levels
    assert len(np.unique(np.round(gray, 4))) >= 4


def test_noise_is_seeded_and_leaves_the_dynamics_alone():
    r1, _, o1 = rollout(scene_class("switching_noisy")(num_areas=1, seed=9), "heuristic", 120)
    r2, _, o2 = rollout(scene_class("switching_noisy")(num_areas=1, seed=9), "heuristic", 120)
    base_r, _, base_o = rollout(SCENES["switching"](num_areas=1, seed=9), "heuristic", 120)
    np.testing.assert_array_equal(r1, r2)
    np.testing.assert_array_equal(o1[-1][0], o2[-1][0])
    np.testing.assert_array_equal(r1, base_r)  # the expert reads the true state: same episodes
    noise = np.concatenate([a[0] - b[0] for a, b in zip(o1, base_o)])
    assert 0.04 < noise.std() < 0.06


def test_reach_continuous_camera_shows_the_body_and_the_target_where_they_are():
    """The camera variants see the vector scene's state: body in red, target in green, each at its position in the
    image (row 0 = top = largest y), the velocity as the small vector; same dynamics under the same actions."""
    from mlagents_plugins.envs.scenes.reach_continuous import FLOOR, MAX_SPEED, OUTSIDE, VIEW_HALF

    for name, size in (("reach_continuous_camera24", 24), ("reach_continuous_camera32", 32)):
        base = SCENES["reach_continuous"](num_areas=1, seed=4)
        cam = scene_class(name)(num_areas=1, seed=4)
        assert [tuple(s.shape) for s in cam.observation_specs] == [(3, size, size), (2,)]
        rng = np.random.default_rng(2)
        for _ in range(12):
            act = ActionTuple(continuous=rng.uniform(-1, 1, (8, 2)).astype(np.float32))
            rb, rc = base.step(act), cam.step(act)
            np.testing.assert_array_equal(rb.reward, rc.reward)
        image, vector = cam.observe()
        np.testing.assert_allclose(vector, cam.vel / MAX_SPEED, rtol=1e-6)
        assert np.all(np.round(image * 255) == image * 255)  # 8-bit steps, as PNG carries them exactly
        centres = (np.arange(size) + 0.5) / size * 2 * VIEW_HALF - VIEW_HALF
        background = np.where((np.abs(centres)[:, None] <= 1.0) & (np.abs(centres)[None, :] <= 1.0), FLOOR, OUTSIDE)
        for channel, where in ((0, cam.pos), (1, cam.target)):
            weight = np.maximum(image[:, channel] - background, 0.0)  # the disc alone
            x = (weight * centres[None, None, :]).sum((1, 2)) / weight.sum((1, 2))
            y = (weight * centres[::-1][None, :, None]).sum((1, 2)) / weight.sum((1, 2))
            np.testing.assert_allclose(np.stack([x, y], 1), where, atol=0.5 * 2 * VIEW_HALF / size)  # half a pixel


def test_camera_size_needs_a_scene_with_a_camera():
    from mlagents_plugins.envs.scenes.variants import VariantSpec, make_variant

    with pytest.raises(ValueError, match="camera_size=24.*has no camera"):
        make_variant(VariantSpec("x", "X", "balance", "tuning", threshold=1.0, camera_size=24), SCENES["balance"])
