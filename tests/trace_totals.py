"""Totals of a kernel trace, summed over its programs: what tests compare with hand counts."""

from __future__ import annotations

import numpy as np

from accelsim.engine.programs import program_templates, program_vars, repeats


def tensor_bytes(trace) -> dict[tuple[str, str], int]:
    """Bytes moved per (tensor, direction) over all programs."""
    variables, template_of, out = program_vars(trace), program_templates(trace), {}
    for index, template in enumerate(trace.templates):
        members = np.nonzero(template_of == index)[0]
        for step in template.steps:
            count = int(repeats(step, variables, members).sum())
            for x in step.transfers:
                out[x.tensor, x.direction] = out.get((x.tensor, x.direction), 0) + count * x.bytes
    return out
