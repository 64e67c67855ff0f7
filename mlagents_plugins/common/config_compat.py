"""Drop-in configs: ML-Agents' built-in hyperparameter names, accepted by our trainers (the one mapping).

A user changes ``trainer_type`` in the config they had for built-in ``sac`` (to ``fast_sac``, ``taac`` or
``muzero_repr``) or ``ppo`` (to ``impala``) and changes nothing else.  ML-Agents structures the
``hyperparameters:`` block strictly (an unknown key stops the run with "The option ... is invalid"), so every
built-in name must be a field of our settings class.  Each such field is declared with one of:

* ``alias(ours, builtin)``: the built-in name means the same as our field ``ours``; its value is moved there
  after validation (``apply_aliases``), so the run, its saved configuration and checkpoints only know ours.
  Setting both to different values is an error naming both.
* ``no_equivalent(builtin, instead)``: the built-in setting has no meaning for this trainer; setting it is a
  ``TrainerConfigError`` that says so and what to use instead.

docs/configs.md shows the resulting table; ``ALIASES`` / ``NO_EQUIVALENT`` per settings class are read by it
and by the tests.
"""
from typing import Any, Dict, Optional

import attr
from mlagents.trainers.exception import TrainerConfigError

_ALIAS_OF = "mlagents_plugins.alias_of"
_NO_EQUIVALENT = "mlagents_plugins.no_equivalent"


def alias(ours: str, builtin: str) -> Any:
    """A field carrying the built-in trainer ``builtin``'s name for our field ``ours`` (null: not given)."""
    return attr.ib(default=None, metadata={_ALIAS_OF: (ours, builtin)})


def no_equivalent(builtin: str, instead: str) -> Any:
    """A built-in ``builtin`` setting this trainer cannot honour; ``instead`` tells the user what to use."""
    return attr.ib(default=None, metadata={_NO_EQUIVALENT: (builtin, instead)})


def aliases(cls: type) -> Dict[str, str]:
    """``{built-in name: our field}`` of a settings class."""
    return {f.name: f.metadata[_ALIAS_OF][0] for f in attr.fields(cls) if _ALIAS_OF in f.metadata}


def no_equivalents(cls: type) -> Dict[str, str]:
    """``{built-in name: what to use instead}`` of a settings class."""
    return {f.name: f.metadata[_NO_EQUIVALENT][1] for f in attr.fields(cls) if _NO_EQUIVALENT in f.metadata}


def apply_aliases(settings: Any, trainer_type: str) -> None:
    """Move every given alias onto our field (then re-validate), and refuse settings with no equivalent.

    Call from the settings class's ``__attrs_post_init__``.
    """
    for f in attr.fields(type(settings)):
        value = getattr(settings, f.name)
        if value is None:
            continue
        if _NO_EQUIVALENT in f.metadata:
            builtin, instead = f.metadata[_NO_EQUIVALENT]
            raise TrainerConfigError(
                f"hyperparameters.{f.name} = {value!r}: built-in {builtin}'s setting '{f.name}' has no "
                f"equivalent in {trainer_type}. {instead}"
            )
        if _ALIAS_OF not in f.metadata:
            continue
        ours, builtin = f.metadata[_ALIAS_OF]
        ours_field = attr.fields_dict(type(settings))[ours]
        ours_value = getattr(settings, ours)
        if ours_value != _default_of(ours_field, settings) and ours_value != value:
            raise TrainerConfigError(
                f"hyperparameters.{f.name} = {value!r} and hyperparameters.{ours} = {ours_value!r} are both set: "
                f"in {trainer_type}, '{f.name}' (built-in {builtin}'s name) means '{ours}'; set only one of them."
            )
        setattr(settings, ours, value)
        setattr(settings, f.name, None)
        try:
            if ours_field.validator is not None:
                ours_field.validator(settings, ours_field, value)
        except TrainerConfigError as err:
            raise TrainerConfigError(f"{err} (given as '{f.name}', built-in {builtin}'s name for '{ours}')") from err


def _default_of(field: "attr.Attribute", settings: Any) -> Optional[Any]:
    default = field.default
    if isinstance(default, attr.Factory):  # type: ignore[arg-type]
        return default.factory(settings) if default.takes_self else default.factory()
    return default
