"""attrs validators for every trainer's settings, with one message format (README, "Bad input"):

    hyperparameters.tau = 1.5 is invalid: it must be a number in [0, 1].

Each names the field, the value given and what is allowed, as a ``TrainerConfigError`` so ``mlagents-learn``
stops at start-up with that line rather than a traceback.
"""
import math
from typing import Any, Callable

import attr
from mlagents.trainers.exception import TrainerConfigError

Validator = Callable[[Any, "attr.Attribute", Any], None]


def fail(field: str, value: Any, allowed: str) -> None:
    """Raise the one error format; ``allowed`` completes "it must be ...", e.g. "an integer >= 1"."""
    raise TrainerConfigError(f"hyperparameters.{field} = {value!r} is invalid: it must be {allowed}.")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def strict_bool(inst: Any, attribute: "attr.Attribute", value: Any) -> None:
    """Validator of a true/false setting.  Such fields are annotated ``Any``: cattrs, with which ML-Agents structures
    settings, turned a ``bool`` field's YAML value through ``bool(...)``, so that ``"false"``, ``"no"`` or ``1``
    silently became ``True`` and ``null`` became ``False``.  (In a class declared with
    ``settings_conversion.typed_fields`` a ``bool`` annotation is as strict: it takes only true and false.)"""
    if not isinstance(value, bool):
        fail(attribute.name, value, "true or false")


def positive_int(inst: Any, attribute: "attr.Attribute", value: Any) -> None:
    if not (isinstance(value, int) and not isinstance(value, bool)) or value < 1:
        fail(attribute.name, value, "an integer >= 1")


def non_negative_int(inst: Any, attribute: "attr.Attribute", value: Any) -> None:
    if not (isinstance(value, int) and not isinstance(value, bool)) or value < 0:
        fail(attribute.name, value, "an integer >= 0")


def positive_float(inst: Any, attribute: "attr.Attribute", value: Any) -> None:
    if not _is_number(value) or not 0 < value < math.inf:
        fail(attribute.name, value, "a finite number > 0")


def non_negative_float(inst: Any, attribute: "attr.Attribute", value: Any) -> None:
    if not _is_number(value) or not 0 <= value < math.inf:
        fail(attribute.name, value, "a finite number >= 0")


def unit_interval(inst: Any, attribute: "attr.Attribute", value: Any) -> None:
    """Closed interval [0, 1]."""
    if not _is_number(value) or not 0.0 <= value <= 1.0:
        fail(attribute.name, value, "a number in [0, 1]")


def entropy_scale(inst: Any, attribute: "attr.Attribute", value: Any) -> None:
    """A target-entropy scale: a number in [-10, 10]."""
    if not _is_number(value) or not -10.0 <= value <= 10.0:
        fail(attribute.name, value, "a number in [-10, 10]")


def optional_non_negative_int(inst: Any, attribute: "attr.Attribute", value: Any) -> None:
    """``null`` (the trainer decides) or an integer >= 0."""
    if value is not None and (not (isinstance(value, int) and not isinstance(value, bool)) or value < 0):
        fail(attribute.name, value, "an integer >= 0 or null (automatic)")


def optional_positive_int(inst: Any, attribute: "attr.Attribute", value: Any) -> None:
    """``null`` (the trainer decides) or an integer >= 1."""
    if value is not None and (not (isinstance(value, int) and not isinstance(value, bool)) or value < 1):
        fail(attribute.name, value, "an integer >= 1 or null (automatic)")


def optional_bool(inst: Any, attribute: "attr.Attribute", value: Any) -> None:
    """``null`` (the trainer decides) or true/false; annotate ``Any``, as for ``strict_bool``."""
    if value is not None and not isinstance(value, bool):
        fail(attribute.name, value, "true, false or null (automatic)")


def optional_open_unit_interval(inst: Any, attribute: "attr.Attribute", value: Any) -> None:
    """``null`` (the feature off) or a number strictly between 0 and 1."""
    if value is not None and (not _is_number(value) or not 0.0 < value < 1.0):
        fail(attribute.name, value, "null (off) or a number in (0, 1), e.g. 0.2")


def optional_positive_float(inst: Any, attribute: "attr.Attribute", value: Any) -> None:
    """``null`` (the feature off) or a finite number > 0."""
    if value is not None and (not _is_number(value) or not 0 < value < math.inf):
        fail(attribute.name, value, "null (off) or a finite number > 0")


def one_of(*choices: str) -> Validator:
    """A string setting with a fixed set of values (kept a string so a typo gets this error, not cattrs')."""

    def check(inst: Any, attribute: "attr.Attribute", value: Any) -> None:
        if value not in choices:
            fail(attribute.name, value, " or ".join(repr(c) for c in choices))

    return check


def optional_one_of(*choices: str) -> Validator:
    """``null`` (the trainer decides) or one of a fixed set of strings."""

    def check(inst: Any, attribute: "attr.Attribute", value: Any) -> None:
        if value is not None and value not in choices:
            fail(attribute.name, value, " or ".join(repr(c) for c in choices) + " or null (automatic)")

    return check
