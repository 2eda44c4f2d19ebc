"""The power cap's step search from the DVFS rule's guess (``accelsim.engine.energy``): where the
steps' power falls with the clock it returns the step the plain binary search returns, from any
guess, and from a right guess it replays two steps."""

from __future__ import annotations

from accelsim.engine.energy import first_fitting, first_fitting_near


def _probed(answer: int):
    seen: list[int] = []

    def fits(index: int) -> bool:
        seen.append(index)
        return index >= answer
    return fits, seen


def test_it_finds_the_binary_searchs_step_from_any_guess():
    for count in range(1, 40):
        for answer in range(count + 1):  # answer == count: no step fits
            expected = first_fitting(count, _probed(answer)[0])
            for guess in range(-2, count + 2):
                assert first_fitting_near(count, _probed(answer)[0], guess) == expected, (count, answer, guess)


def test_a_right_guess_costs_two_replays():
    fits, seen = _probed(37)
    assert first_fitting_near(80, fits, 37) == 37
    assert sorted(set(seen)) == [36, 37]
    binary, seen_binary = _probed(37)
    first_fitting(80, binary)
    assert len(set(seen_binary)) > 2
