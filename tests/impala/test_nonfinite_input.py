"""impala's intake drops a trajectory chunk with NaN or inf from the environment (observations, next observations
or rewards) with a warning naming what was non-finite and a count, as the off-policy trainers do: nothing of it
reaches the normalizers or the learner's pieces; finite chunks are taken as before."""
import numpy as np
import pytest
from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers

from mlagents_plugins.impala.trainer import STAT_DROPPED_NONFINITE, ImpalaTrainer
from tests.builders import NONFINITE_PLACES, make_nonfinite
from tests.impala.helpers import impala_spec, make_trajectory, trainer_settings


@pytest.mark.parametrize("where", NONFINITE_PLACES)
def test_nonfinite_chunk_is_dropped_with_a_warning_and_a_count(tmp_path, caplog, where):
    spec = impala_spec(2)
    settings = trainer_settings(batch_size=64, buffer_size=1024)
    settings.network_settings.normalize = True
    trainer = ImpalaTrainer("B", 10, settings, True, False, 0, str(tmp_path))
    behavior_id = BehaviorIdentifiers.from_name_behavior_id("B?team=0")
    trainer.add_policy(behavior_id, trainer.create_policy(behavior_id, spec))
    rng = np.random.default_rng(0)
    trainer._process_trajectory(make_trajectory(9, spec, False, False, rng))
    steps = trainer.piece_queue.steps
    normalizer = trainer.policy.actor.network_body.observation_encoder.processors[0].normalizer
    mean_before = normalizer.running_mean.clone()
    bad = make_trajectory(9, spec, False, False, rng)
    expected = make_nonfinite(bad, where)
    with caplog.at_level("WARNING"):
        trainer._process_trajectory(bad)
    assert trainer.piece_queue.steps == steps and trainer.nonfinite.dropped == 1
    assert expected in caplog.text and "NaN or infinite" in caplog.text and "1 chunk(s) dropped" in caplog.text
    assert (normalizer.running_mean == mean_before).all()
    assert trainer._stats_reporter.get_stats_summaries(STAT_DROPPED_NONFINITE).full_dist == [1.0]
    trainer._process_trajectory(make_trajectory(9, spec, False, False, rng))
    assert trainer.piece_queue.steps == steps + 9
