"""Every setting muzero_repr inherits from the SAC head (fast_sac's settings) and the off-policy base has an effect or is refused.

Effects are checked by running the same update twice from the same seeds, with one field changed: the
parameters, temperatures, target critics or replay priorities afterwards must differ.  A field that was
accepted and ignored (as ``actor_min_q`` and ``fast_cpu_matmul`` were) fails here.
"""
import attr
import cattr
import numpy as np
import pytest
import torch
from mlagents.trainers.exception import TrainerConfigError

from mlagents_plugins.common.fast_kernels import onednn_fp32_matmul_available
from mlagents_plugins.muzero_repr.settings import MuZeroReprSettings
from mlagents_plugins.offpolicy.settings import OffPolicyBaseSettings
from mlagents_plugins.sac.settings import SACHeadSettings
from tests.builders import behavior_spec

from .muzero_helpers import fill, make_trainer

# Fields whose effect lies in the off-policy base (intake, cadence, replay persistence), shared by every
# trainer built on it and tested there (tests/offpolicy, tests/replay).
BASE_FIELDS = {"batch_size", "buffer_size", "buffer_init_steps", "steps_per_update", "save_replay_buffer",
               "init_replay_from", "replay_storage"}
# (field, value A, value B, spec kwargs, extra settings both runs use)
EFFECTS = [
    ("learning_rate", 3e-4, 3e-3, dict(cont=2), {}),
    ("learning_rate_schedule", "constant", "linear", dict(cont=2), {}),
    ("tau", 0.005, 0.5, dict(cont=2), {}),
    ("init_entcoef", 1.0, 0.1, dict(cont=2), {}),
    ("continuous_target_entropy_scale", 1.0, -3.0, dict(cont=2), {}),
    ("discrete_target_entropy_scale", 0.2, 0.9, dict(cont=0, branches=(3, 2)), {}),
    ("actor_min_q", False, True, dict(cont=2), {}),
    ("actor_min_q", None, False, dict(cont=0, branches=(3,)), {}),
    ("n_step", 1, 3, dict(cont=2), {}),
    ("entropy_reward", True, False, dict(cont=2), {}),
    ("entropy_reward", None, True, dict(cont=0, branches=(3,)), {}),
    ("critic_layer_norm", True, False, dict(cont=2), {}),
    ("critic_layer_norm", None, True, dict(cont=0, branches=(3,)), {}),
    ("critic_small_init", False, True, dict(cont=2), {}),
    ("critic_small_init", None, False, dict(cont=2, branches=(3,)), {}),  # null: on with hybrid actions
    ("prioritized_replay", False, True, dict(cont=2), {}),
    ("per_alpha", 0.6, 0.2, dict(cont=2), {"prioritized_replay": True}),
    ("per_beta", 0.4, 0.9, dict(cont=2), {"prioritized_replay": True}),
    ("per_epsilon", 1e-6, 0.5, dict(cont=2), {"prioritized_replay": True}),
]
# Checked by their own tests below.
SEPARATE = {"fast_cpu_matmul", "compile_update", "reward_signal_steps_per_update"}


def _inherited_fields():
    ours = {f.name for f in attr.fields(MuZeroReprSettings)} - {f.name for f in attr.fields(SACHeadSettings)}
    compat = {f.name for f in attr.fields(OffPolicyBaseSettings) if f.metadata}  # built-in ppo names, refused
    return {f.name for f in attr.fields(MuZeroReprSettings)} - ours - compat


def test_every_inherited_field_is_covered_here():
    covered = BASE_FIELDS | SEPARATE | {e[0] for e in EFFECTS}
    assert _inherited_fields() == covered


def _run(tmp_path, field, value, spec_kw, extra, seed=0):
    spec = behavior_spec(((4,),), **spec_kw)
    hyper = dict(extra)
    hyper[field] = cattr.structure(value, attr.fields_dict(MuZeroReprSettings)[field].type) \
        if field == "learning_rate_schedule" else value
    torch.manual_seed(seed)
    trainer = make_trainer(spec, tmp_path, seed=seed, **hyper)
    fill(trainer, spec, np.random.default_rng(seed))
    if trainer.replay.prioritized:  # distinct priorities, so the sampling and the weights depend on them
        trainer.replay.update_priorities(np.arange(trainer.replay.size), np.linspace(0.1, 2.0, trainer.replay.size))
    trainer._step = trainer.trainer_settings.max_steps // 2
    trainer.policy.set_step(trainer._step)
    torch.manual_seed(seed + 1)
    trainer.update_once()
    opt = trainer.optimizer
    state = [p.detach().clone() for p in opt.actor.parameters()]
    for module in (opt.head.q_net, opt.head.q_target, opt.head.temperatures, opt.model):
        state += [p.detach().clone() for p in module.parameters()]
    if trainer.replay.prioritized:
        state.append(torch.as_tensor(trainer.replay.priorities.priorities(np.arange(trainer.replay.size))))
    return state


def _same(a, b):
    return len(a) == len(b) and all(x.shape == y.shape and torch.equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("field,a,b,spec_kw,extra", EFFECTS, ids=[f"{e[0]}={e[2]}" for e in EFFECTS])
def test_inherited_field_changes_the_update(tmp_path, field, a, b, spec_kw, extra):
    first = _run(tmp_path / "a1", field, a, spec_kw, extra)
    assert _same(first, _run(tmp_path / "a2", field, a, spec_kw, extra)), "the comparison itself is not repeatable"
    assert not _same(first, _run(tmp_path / "b", field, b, spec_kw, extra)), f"{field} had no effect"


def test_actor_min_q_selects_the_actors_critic_objective(tmp_path, monkeypatch):
    """Continuous actions: null and false evaluate Q1 alone at the actor's action, true both critics."""
    spec = behavior_spec(((4,),), 2, ())
    for value, want_first_only in ((None, True), (False, True), (True, False)):
        trainer = make_trainer(spec, tmp_path / str(value), actor_min_q=value)
        fill(trainer, spec, np.random.default_rng(0))
        opt = trainer.optimizer
        calls = []
        real = opt.head.q_net.frozen
        monkeypatch.setattr(opt.head.q_net, "frozen",
                            lambda s, a, first_only: calls.append(first_only) or real(s, a, first_only))
        opt.update_rl(trainer.sample_rl_batch())
        assert calls == [want_first_only], value


def test_fast_cpu_matmul_chooses_the_kernel_of_both_updates(tmp_path):
    spec = behavior_spec(((4,),), 2, ())
    off = make_trainer(spec, tmp_path / "off", fast_cpu_matmul=False)
    assert not off.optimizer.head.matmul_kernels.active and not off.optimizer.model_matmul.active
    assert off.optimizer.head.matmul_kernels.use_onednn is False and off.optimizer.model_matmul.use_onednn is False
    on = make_trainer(spec, tmp_path / "on", fast_cpu_matmul=True)
    available = onednn_fp32_matmul_available() and on.optimizer.device.type == "cpu"
    assert on.optimizer.head.matmul_kernels.active == available and on.optimizer.model_matmul.active == available
    fill(on, spec, np.random.default_rng(0))
    on.update_once()
    if available:  # each update ran inside its chooser's scope (being timed against the other kernel)
        assert on.optimizer.head.matmul_kernels.calls == 1 and on.optimizer.model_matmul.calls == 1


def test_learning_rate_schedule_anneals_both_learning_rates(tmp_path):
    spec = behavior_spec(((4,),), 2, ())
    trainer = make_trainer(spec, tmp_path, learning_rate=4e-4, model_learning_rate=2e-3,
                           learning_rate_schedule=cattr.structure("linear", attr.fields_dict(MuZeroReprSettings)[
                               "learning_rate_schedule"].type))
    fill(trainer, spec, np.random.default_rng(0))
    trainer.policy.set_step(trainer.trainer_settings.max_steps // 4)
    trainer.update_once()
    opt = trainer.optimizer
    # linear to 1e-10 at max_steps: 3/4 of the way left
    assert all(g["lr"] == pytest.approx(0.75 * 4e-4 + 0.25 * 1e-10, rel=1e-6) for g in opt.head.adam.param_groups)
    assert all(g["lr"] == pytest.approx(0.75 * 2e-3 + 0.25 * 1e-10, rel=1e-6) for g in opt.model_opt.param_groups)


def test_compile_update_chooses_eager_or_compiled_updates(tmp_path, monkeypatch):
    """null (default): both updates compiled for vector observations, eager with a camera; false: eager."""
    from mlagents_plugins.common import compiled_step

    monkeypatch.setenv(compiled_step.ENV_SWITCH, "1")
    vector, camera = behavior_spec(((4,),), 2, ()), behavior_spec(((3, 20, 20), (4,)), 2, ())
    for spec, value, mode in ((vector, None, "compiled"), (camera, None, "eager"), (vector, False, "eager"),
                              (camera, True, "compiled")):
        opt = make_trainer(spec, tmp_path / f"{mode}{value}", compile_update=value).optimizer
        assert (opt.model_step.mode, opt.head.loss_step.mode) == (mode, mode), (spec, value)


def test_reward_signal_steps_per_update_is_refused_unless_it_equals_steps_per_update():
    with pytest.raises(TrainerConfigError, match=r"hyperparameters.reward_signal_steps_per_update = 4.0 is invalid: "
                                                  r"it must be left unset or equal to steps_per_update \(2.0\)"):
        MuZeroReprSettings(steps_per_update=2.0, reward_signal_steps_per_update=4.0)
    # What a built-in sac config writes (both equal), and the default, load.
    assert MuZeroReprSettings(steps_per_update=10.0, reward_signal_steps_per_update=10.0).steps_per_update == 10.0
    s = cattr.structure({"steps_per_update": 3.0}, MuZeroReprSettings)
    assert s.reward_signal_steps_per_update == 3.0
