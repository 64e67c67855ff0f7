import argparse

import pytest

from mlagents_plugins.util.cli_args import number


def test_values_within_bounds_come_back_as_the_kind_asked():
    assert number("--n", int, low=1)("7") == 7 and isinstance(number("--n", int, low=1)("7"), int)
    assert number("--x", low=0)("0") == 0.0
    assert number("--p", int, low=1, high=65535)("65535") == 65535
    assert number("--t", low=0, low_inclusive=False, unit="seconds")("0.25") == 0.25


@pytest.mark.parametrize("parse, text, message", [
    (number("--n", int, low=1), "0", "--n must be >= 1, got 0"),
    (number("--n", int, low=1), "1.5", "--n must be an integer, got '1.5'"),
    (number("--p", int, low=1, high=65535), "65536", "--p must be in 1..65535, got 65536"),
    (number("--p", int, low=1, high=65535), "0", "--p must be in 1..65535, got 0"),
    (number("--t", low=0, low_inclusive=False, unit="seconds"), "0", "--t must be > 0 seconds, got 0.0"),
    (number("--t", low=0, low_inclusive=False, unit="seconds"), "soon", "--t must be a number of seconds, got 'soon'"),
    (number("--x", low=0), "-0.5", "--x must be >= 0, got -0.5"),
    (number("--x", low=0), "nan", "--x must be >= 0, got nan"),
    (number("--y", high=2), "3", "--y must be <= 2, got 3.0"),
])
def test_out_of_bounds_and_unparsable_values_name_option_value_and_bound(parse, text, message):
    with pytest.raises(argparse.ArgumentTypeError) as raised:
        parse(text)
    assert str(raised.value) == message
