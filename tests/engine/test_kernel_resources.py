"""Kernels of one trace with resources of their own (``kernel.kernel_resources``): each
kernel's programs share an SM as its own resources allow, so a later kernel runs as it
would alone; a kernel that does not fit is named; the fast-forward of identical waves
stops at a kernel's start."""

from __future__ import annotations

import pytest

from accelsim.arch.model import load_arch
from accelsim.engine.chip import Shortcuts, latency_lower_bound_s, simulate_kernel
from accelsim.errors import InputError
from accelsim.trace.kernel import KernelTrace

BIG = {"warps": 8, "local_memory_bytes": 200 * 1024}  # one program per H100 SM
SMALL = {"warps": 4}  # sixteen per SM (warps)
STEP_BYTES = 1024  # a program waits on its loads' latency, one after another


def trace(first: int, second: int, resources=BIG, later=None, tensors=("A", "B"), reps=4) -> KernelTrace:
    """``first`` programs of a first kernel, then ``second`` of a second; each program
    reads ``reps`` blocks of its kernel's own tensor (latency-bound at one per SM)."""
    n = first + second
    kernel = {"name": "k", "grid": [n], "resources": resources}
    if second and first:
        kernel["kernel_starts"] = [first]
        if later is not None:
            kernel["kernel_resources"] = [later]
    templates = [{"name": name, "steps": [{"repeat": reps, "loop_var": "j", "transfers": [
        {"tensor": name, "block": ["row", "j"], "bytes": STEP_BYTES}]}]} for name in tensors]
    return KernelTrace.model_validate({
        "schema_version": 1, "kernel": kernel,
        "tensors": {name: {"shape": [n, reps * STEP_BYTES // 2], "dtype": "bf16"} for name in tensors},
        "templates": templates,
        "program_template": [0] * first + [len(tensors) - 1] * second,
        "program_vars": {"row": list(range(n))},
    })


def _body(sim) -> float:
    return sim.latency_s - sim.launch_overhead_s


def test_a_later_kernel_runs_as_it_would_alone():
    chip = load_arch("h100-sxm")
    both = simulate_kernel(trace(132, 4224, later=SMALL), chip)
    first = simulate_kernel(trace(132, 0, tensors=("A",)), chip)
    second = simulate_kernel(trace(4224, 0, resources=SMALL, tensors=("B",)), chip)
    assert both.per_kernel_s == pytest.approx([_body(first), _body(second)], rel=1e-9)


def test_a_later_kernel_with_more_residents_is_faster_than_under_the_first_ones_resources():
    chip = load_arch("h100-sxm")
    shared = simulate_kernel(trace(132, 4224), chip)
    own = simulate_kernel(trace(132, 4224, later=SMALL), chip)
    assert own.per_kernel_s[0] == pytest.approx(shared.per_kernel_s[0], rel=1e-9)
    assert own.per_kernel_s[1] < 0.5 * shared.per_kernel_s[1]  # 32 waves of one program per SM -> 2 of sixteen
    assert own.programs_per_core == 16 and own.occupancy_limit == "warps"  # the longest kernel's
    assert own.local_memory_bytes == 0
    assert shared.programs_per_core == 1 and shared.local_memory_bytes == BIG["local_memory_bytes"]


def test_resources_equal_to_the_first_kernels_change_nothing():
    chip = load_arch("h100-sxm")
    same, shared = simulate_kernel(trace(132, 4224, later=BIG), chip), simulate_kernel(trace(132, 4224), chip)
    assert (same.latency_s, same.per_kernel_s, same.events) == (shared.latency_s, shared.per_kernel_s, shared.events)


def test_the_lower_bound_holds():
    chip = load_arch("h100-sxm")
    t = trace(132, 4224, later=SMALL)
    assert latency_lower_bound_s(t, chip) <= simulate_kernel(t, chip).latency_s


def test_identical_waves_are_not_fast_forwarded_across_a_kernel_start():
    """Two kernels of identical programs: the second's first wave waits its startup, so
    adding its waves at the first kernel's period (as an earlier version did) was wrong."""
    chip = load_arch("h100-sxm")
    t = trace(132 * 4, 132 * 4, tensors=("A",))
    fast = simulate_kernel(t, chip)
    slow = simulate_kernel(t, chip, shortcuts=Shortcuts(fast_forward_waves=False))
    assert fast.per_kernel_s == slow.per_kernel_s and fast.latency_s == slow.latency_s


def test_kernel_resources_need_one_entry_per_later_kernel():
    with pytest.raises(ValueError, match="kernel.kernel_resources: expected one entry per entry"):
        KernelTrace.model_validate({**trace(4, 4).model_dump(), "kernel": {
            **trace(4, 4).kernel.model_dump(), "kernel_resources": [SMALL, SMALL]}})
    with pytest.raises(ValueError, match="kernel.kernel_resources"):
        KernelTrace.model_validate({**trace(8, 0).model_dump(), "kernel": {
            **trace(8, 0).kernel.model_dump(), "kernel_resources": [SMALL]}})


@pytest.mark.parametrize("arch, later, field", [
    ("h100-sxm", {"warps": 128}, "kernel.kernel_resources[0].warps"),
    ("h100-sxm", {"local_memory_bytes": 10**7}, "kernel.kernel_resources[0].local_memory_bytes"),
    ("tpu-v5e", {"local_memory_bytes": 10**9}, "kernel.kernel_resources[0].local_memory_bytes"),
])
def test_a_later_kernel_that_does_not_fit_is_named(arch, later, field):
    resources = {"local_memory_bytes": 1024} if arch.startswith("tpu") else BIG
    with pytest.raises(InputError) as info:
        simulate_kernel(trace(8, 8, resources=resources, later=later), load_arch(arch))
    assert info.value.field == field


def test_a_backward_pass_reports_its_main_kernels_occupancy():
    """The backward's elementwise kernels come first and last; what a whole backward reports
    (programs per SM, their limit, shared memory) is its main kernel's."""
    from accelsim.families import get_family
    from accelsim.families.base import parse_values

    chip = load_arch("h100-sxm")
    family = get_family("attention")
    values = {"batch": "4", "heads": "16", "seq_q": "2048", "head_dim": "128", "pass": "bwd"}
    whole = parse_values(family.params, values, "test")
    alone = parse_values(family.params, {**values, "pass": "bwd-kernel"}, "test")
    config = family.resolve_config(whole, {}, chip)
    sim = simulate_kernel(family.build(whole, config, chip), chip)
    main = simulate_kernel(family.build(alone, config, chip), chip)
    assert (sim.programs_per_core, sim.occupancy_limit, sim.local_memory_bytes) == (
        main.programs_per_core, main.occupancy_limit, main.local_memory_bytes)
    assert sim.local_memory_bytes > 0
