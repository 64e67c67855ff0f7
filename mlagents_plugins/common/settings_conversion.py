"""A YAML value to a settings field's declared type, for every settings class of ours (one message format).

ML-Agents structures a trainer's ``hyperparameters:`` block key by key with cattrs (``strict_to_cls``), which calls
the field's type on the YAML value (``int('abc')``, ``ScheduleType(0)``, ``float(10**400)``) before any validator
runs: a value of the wrong kind ended in a bare ``ValueError``, ``TypeError`` or ``OverflowError`` naming neither
the field nor what is allowed (issue #49).  Every settings class of ours is declared

    @attr.s(auto_attribs=True, field_transformer=settings_conversion.typed_fields)

and each field whose annotation is a type (not ``Any``) then has three things:

* cattrs sees it as ``Declared(annotation)`` and hands the value through as written (the hooks at the bottom
  match ``Declared`` only, so ML-Agents' own settings convert as ML-Agents has them);
* an attrs converter turns the value into the annotated type where nothing is lost (``CONVERSIONS`` below: a whole
  number to an integer field, an integer to a float, a number written as a string such as ``3e-4``, which PyYAML
  reads as a string, an enum's name) and otherwise leaves it as written;
* a validator: a value that did not convert is refused with ``validators.fail``'s message, with the wording of the
  field's own validator where it has one (ours check types strictly: ``batch_size: abc`` -> "it must be an integer
  >= 1"), else the type's (``learning_rate_schedule: 0`` -> "it must be 'constant' or 'linear'"); a converted value
  goes on to the field's own validator.

Building settings in Python (tests, benches) goes through the same converter and validator.  Fields annotated
``Any`` (the true/false settings and the built-in names with no equivalent) are left to their validators.
"""
import enum
import math
import types
import typing
from typing import Any, Callable, List, Optional, Tuple

import attr
import cattr
from mlagents.trainers.exception import TrainerConfigError

from mlagents_plugins.common.validators import fail

#: The largest integer setting: what numpy and torch hold (int64); a larger one could only fail later, unnamed.
INT_LIMIT = 2**63 - 1
#: What a field of each annotation takes, in the words of the error message (completes "it must be ...").  An int
#: field takes an integer, a whole float (100000.0) or a string of either ('256', '1e5'), up to INT_LIMIT in size; a
#: float field a number or a string of one ('3e-4'); neither takes true/false.  A bool or str field takes only its
#: type.  An enum field takes a member or its value's name in any case; Optional[X] takes null or what X takes;
#: List[X] a list of them.  The messages name only the kind: a field's own validator states its range.
CONVERSIONS = {
    int: f"an integer between {-INT_LIMIT - 1} and {INT_LIMIT}",
    float: "a number (at most 1.8e308 in size)",
    bool: "true or false",
    str: "a string",
}


class Unconvertible(Exception):
    """The value is not of the declared type and cannot become one without a guess."""


class Declared:
    """The type cattrs sees for a field of our settings: it passes the value on unchanged (structure hook below), and
    the field's attrs converter and validator turn it into ``annotation`` or refuse it by name."""

    def __init__(self, annotation: Any) -> None:
        self.annotation = annotation

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Declared) and other.annotation == self.annotation

    def __hash__(self) -> int:
        return hash((Declared, self.annotation))

    def __repr__(self) -> str:
        return f"Declared({self.annotation!r})"


def _optional_of(annotation: Any) -> Tuple[bool, Any]:
    """``(True, X)`` for ``Optional[X]`` (``X | None``), else ``(False, annotation)``."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(annotation)) == 2:
            return True, args[0]
    return False, annotation


def _list_item(annotation: Any) -> Optional[Any]:
    if typing.get_origin(annotation) in (list, List):
        (item,) = typing.get_args(annotation) or (Any,)
        return item
    return None


def _is_enum(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, enum.Enum)


def allowed(annotation: Any) -> str:
    """What a field annotated ``annotation`` takes, as "it must be ..." ends."""
    optional, inner = _optional_of(annotation)
    if optional:
        return f"{allowed(inner)} or null"
    if _is_enum(inner):
        return " or ".join(repr(member.value) for member in inner)
    item = _list_item(inner)
    if item is not None:
        return f"a list, each item {allowed(item)}"
    if inner in CONVERSIONS:
        return CONVERSIONS[inner]
    raise TypeError(f"no conversion for settings annotated {annotation!r}; see {__name__}")


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise Unconvertible
    if isinstance(value, int):
        if not -INT_LIMIT - 1 <= value <= INT_LIMIT:
            raise Unconvertible
        return value
    if isinstance(value, str):
        text = value.strip()
        try:
            return _to_int(int(text))
        except ValueError:
            value = _to_float(text)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return _to_int(int(value))
    raise Unconvertible


def _to_float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise Unconvertible
    try:
        return float(value.strip() if isinstance(value, str) else value)
    except (ValueError, OverflowError):  # 'abc'; an integer beyond a float's range
        raise Unconvertible from None


def convert(value: Any, annotation: Any) -> Any:
    """``value`` as the annotated type; ``Unconvertible`` where that would need a guess (see ``CONVERSIONS``)."""
    if annotation is Any:
        return value
    optional, inner = _optional_of(annotation)
    if value is None:
        if optional:
            return None
        raise Unconvertible
    if inner is int:
        return _to_int(value)
    if inner is float:
        return _to_float(value)
    if inner is bool or inner is str:
        if isinstance(value, inner):
            return value
        raise Unconvertible
    if _is_enum(inner):
        if isinstance(value, inner):
            return value
        if isinstance(value, str):
            for member in inner:
                if isinstance(member.value, str) and member.value.lower() == value.strip().lower():
                    return member
        raise Unconvertible
    item = _list_item(inner)
    if item is not None:
        if not isinstance(value, (list, tuple)):
            raise Unconvertible
        return [convert(v, item) for v in value]
    raise TypeError(f"no conversion for settings annotated {annotation!r}; see {__name__}")


def _converter(annotation: Any) -> Callable[[Any], Any]:
    def to_declared(value: Any) -> Any:
        try:
            return convert(value, annotation)
        except Unconvertible:
            return value  # left as written for the validator, which names the field

    return to_declared


def _validator(annotation: Any, own: Optional[Callable[..., Any]]) -> Callable[[Any, "attr.Attribute", Any], None]:
    def check(inst: Any, attribute: "attr.Attribute", value: Any) -> None:
        try:
            convert(value, annotation)
        except Unconvertible:
            if own is not None:
                try:
                    own(inst, attribute, value)  # its wording (the range too) when it refuses the value
                except TrainerConfigError:
                    raise
                except Exception:  # a validator written for values of the type: the message below refuses it
                    pass
            fail(attribute.name, value, allowed(annotation))
        if own is not None:
            own(inst, attribute, value)

    return check


def typed_fields(cls: type, fields: List["attr.Attribute"]) -> List["attr.Attribute"]:
    """attrs ``field_transformer`` of every settings class of ours (module docstring)."""
    out = []
    for field in fields:
        annotation = field.type
        if annotation is Any or isinstance(annotation, Declared):  # Any: the validator's; Declared: inherited, done
            out.append(field)
            continue
        if annotation is None or isinstance(annotation, str):
            raise TypeError(f"{cls.__name__}.{field.name}: settings fields need a type annotation (not a string)")
        allowed(annotation)  # an annotation without a conversion fails here, when the class is defined
        converter = _converter(annotation)
        if field.converter is not None:  # the field's own first (it knows its special inputs), then the type's
            converter = attr.converters.pipe(field.converter, converter)
        out.append(field.evolve(type=Declared(annotation), converter=converter,
                                validator=_validator(annotation, field.validator)))
    return out


def _is_declared(annotation: Any) -> bool:
    return isinstance(annotation, Declared)


# cattrs (ML-Agents' global converter): a Declared field's value passes on as written; unstructuring (the run's saved
# configuration.yaml) goes by the value's own class, as for a plain annotation (an enum becomes its name).
cattr.register_structure_hook_func(_is_declared, lambda value, _declared: value)
cattr.register_unstructure_hook_func(_is_declared, cattr.unstructure)
