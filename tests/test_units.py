import pytest

from accelsim.units import UnitError, format_quantity, parse_quantity, ps_to_seconds, seconds_to_ps


@pytest.mark.parametrize(
    "text, dimension, expected",
    [
        ("3.35 TB/s", "bytes_per_s", 3.35e12),
        ("400 Gb/s", "bytes_per_s", 50e9),
        ("400 Gbps", "bytes_per_s", 50e9),
        ("50 MiB", "bytes", 50 * 2**20),
        ("80 GB", "bytes", 80e9),
        ("1.98 GHz", "hz", 1.98e9),
        ("600 ns", "seconds", 600e-9),
        ("3 us", "seconds", 3e-6),
        ("989.4 TFLOP/s", "flops_per_s", 989.4e12),
        ("1e3 B", "bytes", 1000.0),
    ],
)
def test_parses_units(text, dimension, expected):
    assert parse_quantity(text, dimension) == pytest.approx(expected)


def test_bare_number_is_refused_with_example():
    with pytest.raises(UnitError, match=r"no unit.*|.*'3.35 TB/s'"):
        parse_quantity(4.8, "bytes_per_s")


def test_unit_of_another_dimension_is_named():
    with pytest.raises(UnitError, match="frequency"):
        parse_quantity("3 GHz", "bytes_per_s")


def test_unknown_unit():
    with pytest.raises(UnitError, match="unknown unit 'furlongs'"):
        parse_quantity("3 furlongs", "bytes")


def test_bits_and_bytes_are_not_confused():
    assert parse_quantity("8 Gb/s", "bytes_per_s") == parse_quantity("1 GB/s", "bytes_per_s")


@pytest.mark.parametrize(
    "value, dimension, text",
    [(3.35e12, "bytes_per_s", "3.35 TB/s"), (80e9, "bytes", "80 GB"), (228 * 1024, "bytes", "228 KiB"), (3e-6, "seconds", "3 us")],
)
def test_format_round_trips(value, dimension, text):
    assert format_quantity(value, dimension) == text
    assert parse_quantity(text, dimension) == pytest.approx(value)


def test_picoseconds_are_integers():
    assert seconds_to_ps(1.5e-9) == 1500
    assert ps_to_seconds(seconds_to_ps(2.25e-6)) == pytest.approx(2.25e-6)
