"""argparse value types for our command lines (the stand-in builds, ``mlagents-plugins-learn``): a number
with bounds, whose error names the option, the value given and what is allowed."""
import argparse
from typing import Callable, Optional, Type, Union

Number = Union[int, float]


def number(name: str, kind: Type = float, low: Optional[Number] = None, high: Optional[Number] = None,
           low_inclusive: bool = True, unit: str = "") -> Callable[[str], Number]:
    """A ``type=`` for ``add_argument``: ``kind(text)`` within ``[low, high]`` (``(low, ...`` when not
    ``low_inclusive``); NaN is refused by every bound."""
    what = {int: "an integer", float: "a number"}[kind] + (f" of {unit}" if unit else "")

    def parse(text: str) -> Number:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be {what}, got {text!r}")
        above_low = low is None or (value >= low if low_inclusive else value > low)  # each bound checked once
        below_high = high is None or value <= high
        if above_low and below_high:
            return value
        if low is not None and high is not None and low_inclusive:
            raise argparse.ArgumentTypeError(f"{name} must be in {low}..{high}, got {value}")
        if not above_low:
            raise argparse.ArgumentTypeError(f"{name} must be {'>=' if low_inclusive else '>'} {low}"
                                             f"{' ' + unit if unit and not low_inclusive else ''}, got {value}")
        raise argparse.ArgumentTypeError(f"{name} must be <= {high}, got {value}")

    return parse
