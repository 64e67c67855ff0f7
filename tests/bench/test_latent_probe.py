"""bench probe's pieces that need no training: the ridge R^2 against a direct least-squares computation, and the
probe states against the scene's own observation."""
import numpy as np

from bench.latent_probe import probe_states, ridge_r2


def test_ridge_r2_matches_least_squares_on_held_out_rows():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 5)) * [1.0, 3.0, 0.5, 2.0, 1.0] + [0.0, 1.0, -2.0, 0.0, 4.0]
    w = np.array([[1.0, -2.0], [0.5, 0.0], [0.0, 3.0], [-1.0, 1.0], [2.0, 0.5]])
    y = x @ w + 0.3 * rng.normal(size=(400, 2))
    a = np.concatenate([x[:200], np.ones((200, 1))], 1)
    coef, *_ = np.linalg.lstsq(a, y[:200], rcond=None)
    pred = np.concatenate([x[200:], np.ones((200, 1))], 1) @ coef
    expected = 1 - ((pred - y[200:]) ** 2).sum() / ((y[200:] - y[200:].mean(0)) ** 2).sum()
    # l2 = 1e-9: standardised ridge converges to least squares, up to float64 rounding of the solves
    assert abs(ridge_r2(x[:200], y[:200], x[200:], y[200:], l2=1e-9) - expected) < 1e-6
    noise = rng.normal(size=(400, 1))
    assert ridge_r2(x[:200], noise[:200], x[200:], noise[200:]) < 0.05  # nothing to find: about 0 or below


def test_probe_states_are_the_scene_state_behind_each_observation():
    obs, truth = probe_states("reach_continuous", 20, seed=3)
    assert obs[0].shape == (20 * 32, 8) and all(v.shape == (640, 2) for v in truth.values())
    np.testing.assert_allclose(obs[0][:, 0:2], truth["position"], atol=1e-6)
    np.testing.assert_allclose(obs[0][:, 4:6], truth["target"], atol=1e-6)
    np.testing.assert_allclose(truth["target - position"], truth["target"] - truth["position"], atol=1e-12)
