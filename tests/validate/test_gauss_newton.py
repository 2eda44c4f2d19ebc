"""The calibration's default minimiser (damped Gauss-Newton on the robust loss, then a
narrow line search per parameter) finds what the whole-range coordinate descent finds,
in a fraction of the evaluations, and stays inside each parameter's bounds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from accelsim.validate import calibrate
from accelsim.validate.calibrate import gauss_newton, loss


@dataclass(frozen=True)
class P:
    path: str
    low: float
    high: float


PARAMS = [P("a", 0.0, 10.0), P("b", 0.1, 5.0)]
X = np.linspace(0.0, 1.0, 40)


def residuals_for(true_a: float, true_b: float, outliers: int = 0):
    """Log-error-like residuals of a nonlinear model with two parameters (and a few wild
    records the robust loss must not follow)."""
    target = np.log(true_a + 1 + true_b * np.exp(X))
    target[:outliers] += 1.5

    def residuals(values: dict[str, float]) -> np.ndarray:
        return np.log(values["a"] + 1 + values["b"] * np.exp(X)) - target
    return residuals


def grid_minimum(residuals) -> tuple[float, float]:
    grid = [(a, b) for a in np.linspace(0, 10, 201) for b in np.linspace(0.1, 5, 197)]
    return min(grid, key=lambda ab: loss(residuals({"a": ab[0], "b": ab[1]})))


@pytest.mark.parametrize("outliers", [0, 3])
def test_it_finds_the_robust_loss_minimum(outliers):
    residuals = residuals_for(3.0, 1.5, outliers)
    values = gauss_newton(residuals, PARAMS, {"a": 8.0, "b": 0.3})
    a, b = grid_minimum(residuals)
    assert values["a"] == pytest.approx(a, abs=0.1) and values["b"] == pytest.approx(b, abs=0.05)
    assert loss(residuals(values)) <= loss(residuals({"a": a, "b": b})) * 1.001
    if not outliers:
        assert values["a"] == pytest.approx(3.0, abs=0.05) and values["b"] == pytest.approx(1.5, abs=0.02)


def test_it_stays_inside_the_bounds():
    # the best fit wants a below its lower bound: it stops at the bound
    values = gauss_newton(residuals_for(-0.5, 1.0), PARAMS, {"a": 5.0, "b": 1.0})
    assert values["a"] == pytest.approx(0.0, abs=1e-9) and 0.1 <= values["b"] <= 5.0


def test_it_matches_coordinate_descent_with_far_fewer_evaluations():
    residuals = residuals_for(2.0, 0.7, outliers=2)
    counts = {"gn": 0, "cd": 0}

    def counted(kind):
        def f(values):
            counts[kind] += 1
            return residuals(values)
        return f

    start = {"a": 9.0, "b": 4.0}
    gn = gauss_newton(counted("gn"), PARAMS, start)
    cd = calibrate.coordinate_descent(lambda v: loss(counted("cd")(v)), PARAMS, start, 10)
    assert loss(residuals(gn)) <= loss(residuals(cd)) * 1.01
    assert counts["gn"] * 3 < counts["cd"]


def test_it_is_deterministic():
    residuals = residuals_for(4.0, 2.0, outliers=1)
    assert gauss_newton(residuals, PARAMS, {"a": 1.0, "b": 1.0}) == gauss_newton(residuals, PARAMS, {"a": 1.0, "b": 1.0})


def test_descent_stays_available_and_a_bad_method_is_refused():
    assert calibrate.METHODS == ("gauss-newton", "descent")
    with pytest.raises(ValueError, match="unknown method"):
        calibrate.fit([], "h100-sxm", method="newton")


def test_a_parameter_held_at_its_bound_lets_the_others_move():
    """Two correlated parameters, the best fit past one's bound: the step is solved with it
    held there (a clipped unbounded step stalled at four times the loss)."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(30, 2))
    a[:, 1] = a[:, 0] * 1.1 + 0.1 * rng.normal(size=30)
    target = a @ np.array([1.3, 0.7])
    params = [P("x", 0.0, 1.0), P("y", 0.0, 1.0)]

    def residuals(values):
        return (a @ np.array([values["x"], values["y"]]) - target) * 0.05

    found = gauss_newton(residuals, params, {"x": 0.3, "y": 0.2})
    grid = np.linspace(0, 1, 201)
    best = min(loss(residuals({"x": x, "y": y})) for x in grid for y in grid)
    assert found["x"] == pytest.approx(1.0)
    assert loss(residuals(found)) <= best * 1.01


def test_the_polish_takes_a_start_outside_the_bounds():
    """A --set start below a parameter's range: the narrow search is centred inside it."""
    values = calibrate.coordinate_descent(lambda v: (v["a"] - 2.0) ** 2, [P("a", 1.0, 10.0)], {"a": 0.5}, 1,
                                          bracket=calibrate.POLISH_BRACKET)
    assert 1.0 <= values["a"] <= 1.5
