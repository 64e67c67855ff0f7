"""Settings validation: bad values name the field, the value and what is allowed."""
import attr
import cattr
import pytest
import torch
from mlagents.trainers.exception import TrainerConfigError

from mlagents_plugins.fast_sac.settings import FastSACSettings
from mlagents_plugins.muzero_repr.settings import MuZeroReprSettings


def test_defaults_and_structure_from_yaml_dict():
    s = cattr.structure({"num_unroll_steps": 3, "td_steps": 4, "actions_after_end": "random"}, MuZeroReprSettings)
    assert (s.num_unroll_steps, s.td_steps, s.actions_after_end) == (3, 4, "random")
    assert s.recurrent_gradient_scaling_factor == 0.5
    assert s.rl_gradient_to_repr is None and s.random_shift_pad is None  # automatic
    assert s.model_update_interval is None  # automatic


@pytest.mark.parametrize("interval, visual, expected", [(None, False, 6), (None, True, 1), (1, False, 1), (3, True, 3)])
def test_automatic_model_update_interval_follows_the_observations(tmp_path, interval, visual, expected):
    """null: a model update every sixth SAC update with vector observations only, every update with images; a set
    value wins.  Checked where it acts: model updates made over twelve counted updates."""
    from tests.builders import behavior_spec
    from tests.muzero_repr.muzero_helpers import fill, make_trainer
    import numpy as np

    shapes = ((3, 20, 20), (2,)) if visual else ((5,),)
    spec = behavior_spec(shapes, cont=2, branches=())
    trainer = make_trainer(spec, tmp_path, model_update_interval=interval, batch_size=8)
    fill(trainer, spec, np.random.default_rng(0), n_traj=4)
    assert trainer.hyperparameters.model_interval(spec.observation_specs) == expected
    for _ in range(12):  # as the base counts them (update_once reads the count)
        trainer.update_once()
        trainer.num_updates += 1
    assert trainer.optimizer.num_model_updates == -(-12 // expected)


@pytest.mark.parametrize("rl_grad, pad, visual, actions, expected", [
    (None, None, True, "continuous", (True, 2)), (None, None, False, "continuous", (True, 0)),
    (None, None, False, "discrete", (True, 0)), (None, None, False, "hybrid", (True, 0)),
    (None, None, True, "discrete", (True, 2)),
    (False, 0, True, "continuous", (False, 0)), (False, None, False, "discrete", (False, 0)),
    (True, 3, False, "continuous", (True, 3)),
])
def test_automatic_defaults_follow_the_observations_and_actions(tmp_path, rl_grad, pad, visual, actions, expected):
    """null: the critic's gradient in h whatever the observations and actions (the head reads h), DrQ shifts of 2
    pixels with images only; set values win.  Checked where they act: the actor's latent, the RL
    optimizer's groups and the replay batches' shift."""
    from tests.builders import behavior_spec
    from tests.muzero_repr.muzero_helpers import make_trainer

    shapes = ((3, 20, 20), (2,)) if visual else ((5,),)
    cont, branches = {"continuous": (2, ()), "discrete": (0, (3, 2)), "hybrid": (2, (3,))}[actions]
    trainer = make_trainer(behavior_spec(shapes, cont=cont, branches=branches), tmp_path, rl_gradient_to_repr=rl_grad,
                           random_shift_pad=pad)
    specs = trainer.policy.behavior_spec.observation_specs
    hp = trainer.hyperparameters
    assert (hp.repr_gets_rl_gradient(specs, trainer.policy.behavior_spec.action_spec), hp.shift_pad(specs)) == expected
    assert trainer.shift_pad == expected[1]  # what every replay batch is shifted by
    assert trainer.policy.actor.network_body.rl_gradient_to_repr is expected[0]
    h_params = {id(p) for p in trainer.policy.actor.representation.parameters()}
    rl_params = {id(p) for g in trainer.optimizer.head.adam.param_groups for p in g["params"]}
    assert bool(h_params & rl_params) is expected[0]


@pytest.mark.parametrize("units, layers, expected", [(None, None, (24, 3)), (40, None, (40, 3)), (None, 1, (24, 1)),
                                                     (40, 2, (40, 2))])
def test_head_size_follows_network_settings_unless_set(tmp_path, units, layers, expected):
    """null: the SAC head's actor and critics take network_settings' hidden_units / num_layers (24 x 3 here, not the
    latent's or the model's sizes); a set value wins.  Checked where it acts: the Linear layers of the actor's head
    and of both critics (the critic's first layer also reads the latent and the actions)."""
    from tests.builders import behavior_spec
    from tests.muzero_repr.muzero_helpers import make_trainer

    spec = behavior_spec(((5,),), cont=2, branches=())
    trainer = make_trainer(spec, tmp_path, head_hidden_units=units, head_num_layers=layers, latent_size=6,
                           network_hidden_units=24, network_num_layers=3)
    assert trainer.hyperparameters.head_size(trainer.trainer_settings.network_settings) == expected
    head = [m for m in trainer.policy.actor.network_body.head.modules() if isinstance(m, torch.nn.Linear)]
    assert [m.out_features for m in head] == [expected[0]] * expected[1]
    assert head[0].in_features == 6  # the latent
    for q in (trainer.optimizer.critic.q1, trainer.optimizer.critic.q2):
        hidden = [m.out_features for m in q.modules() if isinstance(m, torch.nn.Linear)][:-1]
        assert hidden == [expected[0]] * expected[1]
    rep = [m.out_features for m in trainer.policy.actor.representation.body.modules() if isinstance(m, torch.nn.Linear)]
    assert rep == [24] * 3  # h's body keeps network_settings' size whatever the head's


@pytest.mark.parametrize(
    "field,value,allowed",
    [
        ("actions_after_end", "zeros", "one of"),
        ("td_steps", 0, "an integer >= 1"),
        ("recurrent_gradient_scaling_factor", 1.5, "in \\[0, 1\\]"),
        ("support_size", -1, "an integer >= 0"),
        ("support_size", 5000, "\\[0, 1000\\]"),
        ("rl_gradient_to_repr", "yes", "true, false or null"),
        ("random_shift_pad", -1, "an integer >= 0 or null"),
        ("model_update_interval", 0, "an integer >= 1 or null"),
        ("value_loss_weight", -0.1, ">= 0"),
        ("head_hidden_units", 0, "an integer >= 1 or null"),
        ("head_num_layers", -2, "an integer >= 1 or null"),
        ("latent_scaling", "layer_norm", "'min_max' or 'tanh'"),
    ],
)
def test_bad_values_raise_trainer_config_error(field, value, allowed):
    with pytest.raises(TrainerConfigError, match=f"hyperparameters.{field} = .*{allowed}"):
        MuZeroReprSettings(**{field: value})


@pytest.mark.parametrize("signals", [["extrinsic", "curiosity"], ["rnd"], ["extrinsic", "gail"]])
def test_other_reward_signals_are_rejected_at_startup(tmp_path, signals):
    from mlagents.trainers.settings import TrainerSettings

    from mlagents_plugins.muzero_repr.trainer import MuZeroReprTrainer

    raw = {"extrinsic": {}, "curiosity": {}, "rnd": {}, "gail": {"demo_path": "x.demo"}}
    settings = TrainerSettings.structure(
        {"trainer_type": "muzero_repr", "reward_signals": {name: raw[name] for name in signals}}, TrainerSettings
    )
    with pytest.raises(TrainerConfigError, match=r"reward_signals = \[.*'%s'.*allowed is exactly one 'extrinsic'"
                       % sorted(signals)[0]):
        MuZeroReprTrainer("B", 10, settings, True, False, 0, str(tmp_path / "B"))


def test_extrinsic_only_is_accepted(tmp_path):
    from mlagents.trainers.settings import TrainerSettings

    from mlagents_plugins.muzero_repr.trainer import MuZeroReprTrainer

    settings = TrainerSettings.structure({"trainer_type": "muzero_repr"}, TrainerSettings)
    trainer = MuZeroReprTrainer("B", 10, settings, True, False, 0, str(tmp_path / "B"))
    assert trainer.get_trainer_name() == "muzero_repr"


def test_sac_head_defaults_are_fast_sacs():
    """Every field muzero_repr inherits from fast_sac (the SAC head and the off-policy base) defaults to fast_sac's
    value, so a config that leaves them unset trains the same SAC head in both trainers (init_entcoef included)."""
    ours, theirs = MuZeroReprSettings(), FastSACSettings()
    # fast_sac's own settings, not the shared SAC head's: muzero_repr's critics read the latent (the warm-up, the
    # neutral initialization, CrossQ's critic options, the network's activation and initialization); the small
    # output initialization is the head's, shared.
    fast_sac_only = {"critic_warmup_updates", "critic_neutral_init", "critic_batch_renorm",
                     "batch_renorm_momentum", "batch_renorm_warmup", "critic_hidden_units", "adam_beta1",
                     "actor_update_every", "burn_in", "network_activation", "network_init",
                     "update_precision", "critic_value_bins", "critic_weight_norm"}
    # n_step is the head's, but fast_sac's null follows critic_batch_renorm (1 with CrossQ's critics, 2 without):
    # muzero_repr's critics are SAC's, and its 2 is what fast_sac resolves to with them
    assert ours.n_step == theirs.resolved_n_step() == 2 and theirs.n_step is None
    fields = [f.name for f in attr.fields(FastSACSettings) if f.name not in fast_sac_only | {"n_step"}]
    assert "init_entcoef" in fields and "actor_min_q" in fields and "critic_small_init" in fields
    assert not hasattr(ours, "critic_warmup_updates")
    differing = {n: (getattr(ours, n), getattr(theirs, n)) for n in fields if getattr(ours, n) != getattr(theirs, n)}
    assert differing == {}


@pytest.mark.parametrize("scaling", ["min_max", "tanh"])
def test_latent_scaling_reaches_the_exported_h_the_model_and_its_target(tmp_path, scaling):
    """The setting is the policy's h (what the ONNX file runs), the learned model's dynamics and the target model's."""
    from tests.builders import behavior_spec
    from tests.muzero_repr.muzero_helpers import make_trainer

    trainer = make_trainer(behavior_spec(((5,),), cont=2, branches=()), tmp_path, latent_scaling=scaling)
    opt = trainer.optimizer
    assert trainer.policy.actor.representation.scaling == scaling
    assert opt.model.representation is trainer.policy.actor.representation
    assert opt.model.scaling == opt.target_model.scaling == opt.target_model.representation.scaling == scaling
