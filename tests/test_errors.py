"""``located_at_option``: where the CLI turns a lower layer's field into the option that gave it."""

from __future__ import annotations

from accelsim.errors import InputError, located_at_option

OPTIONS = {"algorithm": "--algorithm"}


def test_a_field_an_option_gave_becomes_the_option():
    exc = located_at_option(InputError("no such algorithm", field="algorithm"), OPTIONS)
    assert exc.one_line() == "--algorithm: no such algorithm"


def test_an_error_located_in_a_file_keeps_its_file_and_field():
    exc = located_at_option(InputError("no such algorithm", source="step.json", field="algorithm"), OPTIONS)
    assert exc.one_line() == "step.json: algorithm: no such algorithm"


def test_a_field_no_option_gave_stays_a_field():
    exc = located_at_option(InputError("must be positive", field="size_bytes"), OPTIONS)
    assert exc.one_line() == "size_bytes: must be positive"


def test_a_field_below_an_option_is_named_under_the_option():
    exc = located_at_option(InputError("expected a power of two", field="params.block_m"), {"params": "--param"})
    assert exc.one_line() == "--param: block_m: expected a power of two"


def test_a_field_that_only_starts_like_an_option_stays_a_field():
    exc = located_at_option(InputError("bad", field="params_file.x"), {"params": "--param"})
    assert exc.one_line() == "params_file.x: bad"
