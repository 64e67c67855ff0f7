"""Every bad value named (issue #49): a value of the wrong kind for any hyperparameter of ours stops the load with a
``TrainerConfigError`` in the one message format, never a bare ``ValueError``/``TypeError``/``OverflowError`` from
cattrs; values of the right kind load as the field's type (``mlagents_plugins/common/settings_conversion.py``)."""
import enum
import math
import re
import typing
from typing import Any, List, Optional

import attr
import cattr
import pytest
import yaml
from mlagents.plugins.trainer_type import register_trainer_plugins
from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.settings import RunOptions, ScheduleType, TrainerSettings

from mlagents_plugins.common import config_compat, settings_conversion
from mlagents_plugins.fast_sac.settings import FastSACSettings
from mlagents_plugins.impala.settings import ImpalaSettings
from mlagents_plugins.muzero_repr.settings import MuZeroReprSettings
from mlagents_plugins.taac.settings import TaacSettings
from tests.test_dropin_configs import PPO_EXAMPLE, SAC_EXAMPLE

CLASSES = {"fast_sac": FastSACSettings, "taac": TaacSettings, "impala": ImpalaSettings, "muzero_repr": MuZeroReprSettings}
DROP_IN = {"fast_sac": SAC_EXAMPLE, "taac": SAC_EXAMPLE, "muzero_repr": SAC_EXAMPLE, "impala": PPO_EXAMPLE}

# Values of every kind a YAML file can hold, most of them wrong for most fields: strings (numbers spelled as strings,
# which YAML 1.1 makes of 1e3 and 3e-4, among them), lists, maps, null, NaN, infinities, booleans, huge and negative
# numbers, and a few plain ones.
VALUES = [
    "abc", "", "1e3", "3e-4", "linear", "nan", [], [1, 2], [0.5, "x"], {}, {"a": 1}, None,
    math.nan, math.inf, -math.inf, True, False, 10**400, -(10**400), 2**63, 1e300, -1, -2.5, 0, 0.5, 1, 3,
]
# The message formats of ours: validators.fail, config_compat's refusal and its conflict of two names.
FORMAT = re.compile(r"^hyperparameters\.\w+ = .*( is invalid: it must be .+\.| has no equivalent in \w+\. .+| are both set: .+)",
                    re.DOTALL)


def _load(trainer: str, base: dict, field: str, value: Any) -> Any:
    behavior = {k: v for k, v in base.items()}
    behavior["trainer_type"] = trainer
    behavior["hyperparameters"] = dict(base.get("hyperparameters", {}), **{field: value})
    try:
        return RunOptions.from_dict({"behaviors": {"B": behavior}}).behaviors["B"].hyperparameters
    finally:
        TrainerSettings.default_override = None


def _of_type(value: Any, annotation: Any) -> bool:
    """Whether ``value`` is of the annotated type, written here apart from the code under test."""
    if annotation is Any:
        return True
    if typing.get_origin(annotation) is typing.Union:
        return value is None or any(_of_type(value, a) for a in typing.get_args(annotation) if a is not type(None))
    if typing.get_origin(annotation) is list:
        (item,) = typing.get_args(annotation)
        return isinstance(value, list) and all(_of_type(v, item) for v in value)
    if annotation in (int, float):
        return type(value) is annotation and (annotation is int or math.isfinite(value))
    return isinstance(value, annotation)


def _spellings(value: Any, field: "attr.Attribute") -> List[str]:
    out = [repr(value)]
    if isinstance(field.type, settings_conversion.Declared):
        try:
            out.append(repr(settings_conversion.convert(value, field.type.annotation)))
        except settings_conversion.Unconvertible:
            pass
    return out


def _check_one(trainer: str, base: dict, field: "attr.Attribute", value: Any) -> Optional[str]:
    """None when ``value`` loads as the field's type or is refused in the one format naming the field and the value;
    else what went wrong."""
    shown = repr(value)[:40]
    try:
        hp = _load(trainer, base, field.name, value)
    except TrainerConfigError as err:
        message = str(err)
        if not FORMAT.match(message):
            return f"{field.name}: {shown}: not the one format: {message[:300]}"
        if field.name not in message:
            return f"{field.name}: {shown}: the message does not name the field: {message[:300]}"
        # the value as written or as converted ('1e3' -> 1000.0), also where another field's rule refuses it (impala:
        # buffer_size >= batch_size names the value it compares with)
        if not any(text in message for text in _spellings(value, field)):
            return f"{field.name}: {shown}: the message does not show the value: {message[:300]}"
        return None
    except Exception as err:  # noqa: BLE001 - anything else is the failure this test is about
        return f"{field.name}: {shown}: {type(err).__name__}: {str(err)[:200]}"
    annotation = field.type.annotation if isinstance(field.type, settings_conversion.Declared) else field.type
    target = config_compat.aliases(type(hp)).get(field.name, field.name)
    loaded = getattr(hp, target)
    if field.name != target and getattr(hp, field.name) is not None:
        return f"{field.name}: {shown}: the built-in name was not moved onto {target}"
    if not _of_type(loaded, annotation):
        return f"{field.name}: {shown}: loaded as {loaded!r}, not {annotation}"
    for other in attr.fields(type(hp)):  # no NaN or infinity gets into any number of the settings
        number = getattr(hp, other.name)
        if isinstance(number, float) and not math.isfinite(number):
            return f"{field.name}: {shown}: loaded with {other.name} = {number!r}"
    return None


@pytest.mark.parametrize("base", ["empty", "drop-in"])
@pytest.mark.parametrize("trainer", sorted(CLASSES))
def test_every_value_of_every_field_loads_or_is_refused_by_name(trainer, base):
    config = {} if base == "empty" else DROP_IN[trainer]
    fields = attr.fields(CLASSES[trainer])
    problems = [p for field in fields for value in VALUES if (p := _check_one(trainer, config, field, value))]
    assert not problems, f"{len(problems)} of {len(fields) * len(VALUES)}:\n" + "\n".join(problems[:40])


def test_the_walk_sees_both_outcomes():
    """The walk above is not vacuous: every typed field refuses some of the values, and every number field of ours
    also loads some (3, 0.5, '3e-4', ...)."""
    for trainer, cls in CLASSES.items():
        for field in attr.fields(cls):
            if not isinstance(field.type, settings_conversion.Declared):
                continue
            outcomes = set()
            for value in VALUES:
                try:
                    _load(trainer, {}, field.name, value)
                    outcomes.add("loaded")
                except TrainerConfigError:
                    outcomes.add("refused")
            number = typing.get_args(field.type.annotation)[:1] or (field.type.annotation,)
            want = {"loaded", "refused"} if number[0] in (int, float) else {"refused"}
            assert want <= outcomes, (trainer, field.name, outcomes)


@pytest.mark.parametrize("trainer", sorted(CLASSES))
def test_every_field_is_converted_or_left_to_a_validator(trainer):
    """Each field of ours is typed (converted by settings_conversion) or annotated Any with a validator or as a
    built-in name; a settings class declared without the field transformer would fail here."""
    for field in attr.fields(CLASSES[trainer]):
        if isinstance(field.type, settings_conversion.Declared):
            continue
        assert field.type is Any, (trainer, field.name, field.type)
        assert field.validator is not None or field.metadata, (trainer, field.name)


@pytest.mark.parametrize("trainer, field, value, message", [
    ("fast_sac", "batch_size", "abc", "hyperparameters.batch_size = 'abc' is invalid: it must be an integer >= 1."),
    ("taac", "batch_size", [1, 2], "hyperparameters.batch_size = [1, 2] is invalid: it must be an integer >= 1."),
    ("fast_sac", "batch_size", math.nan, "hyperparameters.batch_size = nan is invalid: it must be an integer >= 1."),
    ("muzero_repr", "batch_size", 256.5,
     "hyperparameters.batch_size = 256.5 is invalid: it must be an integer >= 1."),
    ("fast_sac", "buffer_size", 2**63,
     f"hyperparameters.buffer_size = {2**63} is invalid: it must be an integer between -{2**63} and {2**63 - 1}."),
    ("impala", "surrogate_clip_schedule", 0,
     "hyperparameters.surrogate_clip_schedule = 0 is invalid: it must be 'constant' or 'linear'."),
    ("impala", "learning_rate_schedule", None,
     "hyperparameters.learning_rate_schedule = None is invalid: it must be 'constant' or 'linear'."),
    ("impala", "beta_schedule", "abc", "hyperparameters.beta_schedule = 'abc' is invalid: it must be 'constant' or "
     "'linear' or null."),
    ("impala", "grad_clip_norm", "abc",
     "hyperparameters.grad_clip_norm = 'abc' is invalid: it must be null (off) or a finite number > 0."),
    ("impala", "rho_clip", 10**400,
     f"hyperparameters.rho_clip = {10**400} is invalid: it must be a number (at most 1.8e308 in size) or null."),
    ("impala", "lambd", "abc", "hyperparameters.lambd = 'abc' is invalid: it must be a number (at most 1.8e308 in "
     "size) or null."),
    ("taac", "b1_advantage_clipping", [0.5, "x"],
     "hyperparameters.b1_advantage_clipping = [0.5, 'x'] is invalid: it must be null or a pair [min, max] of numbers "
     "with min < max."),
    ("taac", "trajectory", ["linear"],
     "hyperparameters.trajectory = ['linear'] is invalid: it must be one of constant, linear, quadratic."),
    ("fast_sac", "replay_storage", 5, "hyperparameters.replay_storage = 5 is invalid: it must be 'memory' or 'disk'."),
    ("fast_sac", "init_replay_from", 5,
     "hyperparameters.init_replay_from = 5 is invalid: it must be a replay file path or a run id (a non-empty "
     "string), or null."),
])
def test_wrong_kinds_get_the_fields_own_wording_or_the_types(trainer, field, value, message):
    with pytest.raises(TrainerConfigError) as err:
        _load(trainer, {}, field, value)
    assert str(err.value) == message


@pytest.mark.parametrize("annotation, value, expected", [
    (int, 256, 256), (int, "256", 256), (int, " -7 ", -7), (int, 1.0e5, 100000), (int, "1e5", 100000),
    (int, 2**63 - 1, 2**63 - 1), (float, 3, 3.0), (float, "3e-4", 0.0003), (float, " 2.5 ", 2.5),
    (float, 2**70, 1180591620717411303424.0), (float, "nan", math.nan), (bool, False, False), (str, "disk", "disk"),
    (ScheduleType, "linear", ScheduleType.LINEAR), (ScheduleType, " Linear ", ScheduleType.LINEAR),
    (ScheduleType, ScheduleType.CONSTANT, ScheduleType.CONSTANT), (Optional[int], None, None),
    (Optional[float], "0.25", 0.25), (Optional[ScheduleType], "constant", ScheduleType.CONSTANT),
    (List[float], [1, "2.5", -3e-4], [1.0, 2.5, -0.0003]), (Optional[List[float]], (1, 2), [1.0, 2.0]),
    (Any, {"a": [1]}, {"a": [1]}),
])
def test_convert_turns_values_of_the_kind_into_the_type(annotation, value, expected):
    got = settings_conversion.convert(value, annotation)
    if isinstance(expected, float) and math.isnan(expected):
        assert isinstance(got, float) and math.isnan(got)
        return
    assert got == expected and type(got) is type(expected)
    if isinstance(expected, list):
        assert [type(v) for v in got] == [type(v) for v in expected]


@pytest.mark.parametrize("annotation, value", [
    (int, 2.5), (int, True), (int, "2.5"), (int, "abc"), (int, math.inf), (int, math.nan), (int, 2**63),
    (int, -(2**63) - 1), (int, str(2**63)), (int, "9" * 5000), (int, 1e300), (int, None), (int, [1]), (float, True), (float, "abc"), (float, 10**400),
    (float, None), (float, {"a": 1}), (bool, 1), (bool, "true"), (str, 5), (str, None), (ScheduleType, 0),
    (ScheduleType, "sometimes"), (ScheduleType, None), (Optional[int], "x"), (List[float], "1, 2"),
    (List[float], [1, "x"]), (List[float], None),
])
def test_convert_refuses_what_would_need_a_guess(annotation, value):
    with pytest.raises(settings_conversion.Unconvertible):
        settings_conversion.convert(value, annotation)


def test_allowed_names_the_kind_the_null_and_an_enums_names():
    class Color(enum.Enum):
        RED = "red"
        DARK_BLUE = "dark_blue"

    assert settings_conversion.allowed(Optional[Color]) == "'red' or 'dark_blue' or null"
    assert settings_conversion.allowed(List[float]) == "a list, each item a number (at most 1.8e308 in size)"
    assert settings_conversion.convert("DARK_blue", Color) is Color.DARK_BLUE


def test_settings_built_in_python_convert_and_refuse_the_same_way():
    hp = ImpalaSettings(batch_size="64", learning_rate=1, beta_schedule="linear")
    assert hp.batch_size == 64 and type(hp.learning_rate) is float and hp.entropy_weight_schedule is ScheduleType.LINEAR
    with pytest.raises(TrainerConfigError, match=r"^hyperparameters.max_reuse = 'x' is invalid: it must be an integer"):
        ImpalaSettings(max_reuse="x")


def test_a_field_without_a_conversion_stops_the_class_definition():
    with pytest.raises(TypeError, match="no conversion for settings annotated"):
        @attr.s(auto_attribs=True, field_transformer=settings_conversion.typed_fields)
        class Odd:
            pairs: typing.Dict[str, int] = attr.ib(factory=dict)


def test_the_saved_configuration_keeps_plain_values_and_loads_back():
    """Unstructuring (mlagents-learn's configuration.yaml) goes by the values: an enum becomes its name."""
    behavior = dict(PPO_EXAMPLE, trainer_type="impala")
    options = RunOptions.from_dict({"behaviors": {"B": behavior}})
    saved = yaml.safe_load(yaml.safe_dump(options.as_dict()))
    hp = saved["behaviors"]["B"]["hyperparameters"]
    assert hp["learning_rate_schedule"] == "linear" and hp["surrogate_clip_schedule"] == "linear"
    assert hp["max_reuse"] == 4 and hp["trace_lambda"] == 0.93
    again = RunOptions.from_dict(saved).behaviors["B"].hyperparameters
    assert again == options.behaviors["B"].hyperparameters


def test_builtin_trainers_convert_as_ml_agents_has_them():
    """Our cattrs hooks match our Declared fields only: built-in sac still goes through int(...)."""
    register_trainer_plugins()
    hp = RunOptions.from_dict({"behaviors": {"B": {"trainer_type": "sac", "hyperparameters": {"batch_size": 2.7}}}})
    assert hp.behaviors["B"].hyperparameters.batch_size == 2
    with pytest.raises(ValueError, match="invalid literal for int"):
        RunOptions.from_dict({"behaviors": {"B": {"trainer_type": "sac", "hyperparameters": {"batch_size": "abc"}}}})
    assert cattr.structure("7", int) == 7


def test_default_settings_of_ours_reach_every_behavior_converted():
    """default_settings goes through unstructure and structure again for each behavior (ML-Agents' deep update)."""
    config = {
        "default_settings": {"trainer_type": "fast_sac",
                             "hyperparameters": {"learning_rate_schedule": "Linear", "batch_size": "1e2"}},
        "behaviors": {"B": {"trainer_type": "fast_sac", "hyperparameters": {"tau": "0.01"}}},
    }
    try:
        hp = RunOptions.from_dict(config).behaviors["B"].hyperparameters
    finally:
        TrainerSettings.default_override = None
    assert hp.learning_rate_schedule is ScheduleType.LINEAR and hp.batch_size == 100 and hp.tau == 0.01


def test_the_docs_example_is_the_message_a_run_stops_with():
    import os

    docs = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "configs.md")
    shown = [line for line in open(docs).read().splitlines() if line.startswith("mlagents.trainers.exception.")]
    assert len(shown) == 1
    with pytest.raises(TrainerConfigError) as err:
        _load("fast_sac", {}, "batch_size", "abc")
    assert shown[0] == f"mlagents.trainers.exception.TrainerConfigError: {err.value}"
