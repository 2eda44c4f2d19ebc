"""The README's ``accelsim model`` example prints what the README shows (every line but
the abridged ``...``), as tests/test_readme.py keeps the rest of the tour true."""

from __future__ import annotations

import shlex

from tests.test_readme import _assert_in_order, _blocks, _comparable


def _model_examples() -> list[tuple[list[str], list[str]]]:
    examples = []
    for lines in _blocks():
        if lines and lines[0].startswith("$ accelsim model "):
            examples.append((shlex.split(lines[0][2:])[1:], lines[1:]))
    return examples


def test_the_readme_shows_a_model_step():
    assert len(_model_examples()) == 1


def test_the_model_example_prints_what_the_readme_shows(cli):
    ((argv, expected),) = _model_examples()
    result = cli(*argv)
    assert result.code == 0, result.err
    _assert_in_order(_comparable(expected), result.out)
