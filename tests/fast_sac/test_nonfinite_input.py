"""NaN or inf from the environment (observations or rewards) never reaches the replay buffer or the normalizer:
the chunk is dropped with a warning naming what was non-finite; finite chunks are stored as before."""
import numpy as np
import pytest
from helpers import make_trainer
from tests.builders import NONFINITE_PLACES, behavior_spec, make_nonfinite, trajectory


@pytest.mark.parametrize("where", NONFINITE_PLACES)
def test_nonfinite_chunk_is_dropped_with_a_warning(tmp_path, caplog, where):
    spec = behavior_spec()
    trainer = make_trainer(spec, tmp_path, buffer_init_steps=10 ** 6, normalize=True)
    rng = np.random.default_rng(0)
    trainer._process_trajectory(trajectory(spec, 9, rng))
    size = trainer.replay.size
    mean_before = trainer.policy.actor.network_body.observation_encoder.processors[0].normalizer.running_mean.clone()
    bad = trajectory(spec, 9, rng)
    expected = make_nonfinite(bad, where)
    with caplog.at_level("WARNING"):
        trainer._process_trajectory(bad)
    assert trainer.replay.size == size and trainer.nonfinite.dropped == 1
    assert expected in caplog.text and "NaN or infinite" in caplog.text
    normalizer = trainer.policy.actor.network_body.observation_encoder.processors[0].normalizer
    assert np.isfinite(normalizer.running_mean.numpy()).all()
    assert (normalizer.running_mean == mean_before).all()
    trainer._process_trajectory(trajectory(spec, 9, rng))
    assert trainer.replay.size > size
