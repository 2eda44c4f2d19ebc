"""Flops of an HLO ``convolution``: multiply-adds only where the window meets the input.

``2 x batch x output features x kernel input features x`` (per spatial dimension) the
number of (output position, window position) pairs whose input position lies inside the
input, not in its padding or between the holes of an lhs dilation. Without padding or
dilation that is ``2 x output elements x kernel spatial size x kernel input features``;
with them it is what runs. XLA:TPU writes some matmuls as convolutions that are mostly
padding: a window of 16 over an input of length 1 padded 15 on each side is one real
product per output position, not 16 (MaxText's attention projections in the backward
pass, compiled with collective matmuls, are such convolutions: counting the whole window
made them 2-16x their work).
"""

from __future__ import annotations

import math
import re

import numpy as np

from accelsim.importers.hlo_text import Shape

_WINDOW_FIELD = re.compile(r"(size|stride|pad|lhs_dilate|rhs_dilate)=([-\d_x]+)")


def conv_flops(lhs: Shape, kernel: Shape, out: Shape, attrs: dict[str, str]) -> float:
    """The convolution's matrix flops (module docstring); without dimension labels we can
    read, ``2 x output elements x kernel elements / its last dimension`` (no padding
    known)."""
    parts = re.split(r"_|->", attrs.get("dim_labels", ""))
    if len(parts) != 3 or [len(p) for p in parts] != [len(lhs.dims), len(kernel.dims), len(out.dims)]:
        per_output = kernel.num_elements / max(1, kernel.dims[-1] if kernel.dims else 1)
        return 2.0 * out.num_elements * per_output
    lhs_labels, kernel_labels, out_labels = parts
    in_features = math.prod(size for label, size in zip(kernel_labels, kernel.dims) if label == "i")
    spatial = [label for label in out_labels if label.isdigit()]
    window = _window(attrs.get("window", ""), len(spatial))
    per_position = out.num_elements
    pairs = 1
    for d, label in enumerate(sorted(spatial, key=int)):
        out_size = out.dims[out_labels.index(label)]
        in_size = lhs.dims[lhs_labels.index(label)] if label in lhs_labels else 1
        per_position //= max(1, out_size)
        pairs *= _valid_pairs(in_size, out_size, **{k: v[d] for k, v in window.items()})
    return 2.0 * per_position * pairs * in_features


def _window(text: str, dims: int) -> dict[str, list]:
    """Per spatial dimension: size, stride, (low, high) padding and dilations (XLA's
    defaults where the window does not say)."""
    fields = {"size": [1] * dims, "stride": [1] * dims, "pad": [(0, 0)] * dims, "lhs_dilate": [1] * dims,
              "rhs_dilate": [1] * dims}
    for key, value in _WINDOW_FIELD.findall(text):
        items = value.split("x")
        if len(items) != dims:
            continue
        if key == "pad":
            fields[key] = [_pad_pair(item) for item in items]
        else:
            fields[key] = [int(item) for item in items]
    return fields


def _pad_pair(item: str) -> tuple[int, int]:
    low, _, high = item.partition("_")
    return int(low), int(high or 0)


def _valid_pairs(in_size: int, out_size: int, *, size: int, stride: int, pad: tuple[int, int], lhs_dilate: int,
                 rhs_dilate: int) -> int:
    """Pairs (output position o, window position w) whose input position
    ``o x stride + w x rhs_dilate - pad_low`` is a real input element: within the
    lhs-dilated input and on one of its points."""
    stride, lhs_dilate = max(1, stride), max(1, lhs_dilate)
    last = (in_size - 1) * lhs_dilate
    total = 0
    for w in range(max(0, size)):
        offset = w * rhs_dilate - pad[0]
        if lhs_dilate == 1:
            first_o = max(0, math.ceil(-offset / stride))
            last_o = min(out_size - 1, math.floor((last - offset) / stride))
            total += max(0, last_o - first_o + 1)
        else:
            positions = np.arange(out_size, dtype=np.int64) * stride + offset
            total += int(np.count_nonzero((positions >= 0) & (positions <= last) & (positions % lhs_dilate == 0)))
    return total
