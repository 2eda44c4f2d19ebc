"""What a captured kernel trace moves and computes over all its programs (test helper)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from accelsim.engine.programs import program_templates, program_vars, repeats


def totals(trace) -> tuple[Counter, Counter]:
    """(flops per (unit, useful), bytes per (tensor, direction)) over every program."""
    variables, template_of = program_vars(trace), program_templates(trace)
    flops, moved = Counter(), Counter()
    for index, template in enumerate(trace.templates):
        members = np.nonzero(template_of == index)[0]
        for step in template.steps:
            count = float(repeats(step, variables, members).sum())
            for c in step.compute:
                flops[(c.unit, c.useful)] += count * c.flops
            for t in step.transfers:
                moved[(t.tensor, t.direction)] += count * t.bytes
    return flops, moved


def per_program(trace, tensor: str, direction: str) -> list[int]:
    """Bytes of ``tensor`` each program moves in ``direction``, in launch order."""
    template_of = program_templates(trace)
    by_template = [sum(t.bytes for step in template.steps for t in step.transfers
                       if t.tensor == tensor and t.direction == direction) for template in trace.templates]
    return [by_template[t] for t in template_of]
