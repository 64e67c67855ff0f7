"""training_status.json with numpy scalars in it (what numpy 2 gives mlagents) is written, with the same JSON."""
import json

import numpy as np
import pytest
from mlagents.trainers.training_status import GlobalTrainingStatus

from mlagents_plugins.host import status_json


@pytest.fixture
def saved_state(monkeypatch):
    state = {"Balance": {"checkpoints": [{"steps": np.int64(2000), "reward": np.float32(6.125), "file_path": "a.onnx"}],
                         "final_checkpoint": {"reward": 1.5}}}
    monkeypatch.setattr(GlobalTrainingStatus, "saved_state", state)
    return state


def test_numpy_scalars_are_written_as_numbers(tmp_path, saved_state):
    path = tmp_path / "training_status.json"
    status_json.save_state(str(path))
    written = json.loads(path.read_text())
    assert written["Balance"]["checkpoints"] == [{"steps": 2000, "reward": 6.125, "file_path": "a.onnx"}]
    assert written["Balance"]["final_checkpoint"] == {"reward": 1.5}
    assert "metadata" in written  # mlagents' StatusMetaData, as the original writes it
    with pytest.raises(TypeError, match="not JSON serializable"):  # what mlagents' own save_state does with the same state
        status_json.ORIGINAL.__func__(str(tmp_path / "original.json"))


def test_other_objects_are_still_refused(tmp_path, saved_state):
    saved_state["x"] = object()
    with pytest.raises(TypeError, match="object"):
        status_json.save_state(str(tmp_path / "s.json"))
