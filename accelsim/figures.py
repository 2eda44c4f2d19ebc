"""Figures that regenerate byte for byte: every plot accelsim writes is drawn in
matplotlib's own default style, whatever the user's ``matplotlibrc`` or
``plt.style.use`` set (a larger font or another colour cycle changed every committed
PNG), with the Agg backend and matplotlib's bundled DejaVu fonts (``font.family``'s
default, so no system font is looked up). Agg's PNGs hold no time stamp, only the
``Software`` tag naming matplotlib's version, which the test extra pins with the
committed figures (``pyproject.toml``); ``SOURCE_DATE_EPOCH``, which matplotlib reads
for PDF, PS and SVG dates, plays no part in PNGs."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

F = TypeVar("F", bound=Callable)


def in_default_style(draw: F) -> F:
    """``draw`` (a function that makes and saves figures) run in matplotlib's default style."""

    @functools.wraps(draw)
    def drawn(*args, **kwargs):
        with plt.style.context("default"):
            return draw(*args, **kwargs)

    return drawn  # type: ignore[return-value]
