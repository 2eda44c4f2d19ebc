"""GPU occupancy: how many programs of each kernel of a trace an SM holds at once, and
which resource limits it."""

from __future__ import annotations

from accelsim.arch.model import GpuChip
from accelsim.errors import InputError
from accelsim.trace.kernel import KernelTrace, Resources


def gpu_occupancy(trace: KernelTrace, chip: GpuChip) -> tuple[int, str]:
    """Resident programs per SM of the trace's first kernel and the limit that sets it."""
    return gpu_occupancies(trace, chip)[0]


def gpu_occupancies(trace: KernelTrace, chip: GpuChip) -> list[tuple[int, str]]:
    """Per kernel of the trace (``kernel.kernel_resources``), in launch order: resident
    programs per SM and the limit that sets it."""
    return [_occupancy(res, chip, resources_field(i)) for i, res in enumerate(trace.resources_by_kernel)]


def programs_per_core(resources: Resources, chip: GpuChip) -> int:
    """Resident programs per SM of a kernel whose programs hold ``resources``: what
    ``cudaOccupancyMaxActiveBlocksPerMultiprocessor`` answers a library sizing its launch."""
    return _occupancy(resources, chip, "kernel.resources")[0]


def resources_field(kernel: int) -> str:
    """Where a trace gives the resources of its ``kernel``-th kernel (0: the first)."""
    return "kernel.resources" if kernel == 0 else f"kernel.kernel_resources[{kernel - 1}]"


def _occupancy(res: Resources, chip: GpuChip, field: str) -> tuple[int, str]:
    occ, lm = chip.occupancy, chip.local
    if res.local_memory_bytes > lm.max_per_program_bytes:
        raise InputError(
            f"a program needs {res.local_memory_bytes} bytes of {chip.name} local memory; "
            f"at most {int(lm.max_per_program_bytes)} per program",
            field=f"{field}.local_memory_bytes",
        )
    if res.warps > occ.max_warps_per_core:
        raise InputError(
            f"{res.warps} warps per program; {chip.name} allows {occ.max_warps_per_core} per core",
            field=f"{field}.warps",
        )
    limits = {"programs": occ.max_programs_per_core, "warps": occ.max_warps_per_core // res.warps}
    if res.local_memory_bytes:
        limits["local_memory"] = int(lm.capacity_bytes // res.local_memory_bytes)
    if res.tensor_memory_bytes:
        if not lm.tensor_memory_bytes:
            raise InputError(f"a program accumulates in {res.tensor_memory_bytes} bytes of tensor memory; "
                             f"{chip.name} has none (local_memory.tensor_memory)",
                             field=f"{field}.tensor_memory_bytes")
        limits["tensor_memory"] = int(lm.tensor_memory_bytes // res.tensor_memory_bytes)
    if res.registers_per_thread:
        if res.registers_per_thread > occ.max_registers_per_thread:
            raise InputError(
                f"{res.registers_per_thread} registers per thread; {chip.name} allows {occ.max_registers_per_thread}",
                field=f"{field}.registers_per_thread",
            )
        unit = occ.register_allocation_unit
        per_warp = -(-res.registers_per_thread * occ.warp_size // unit) * unit
        limits["registers"] = occ.registers_per_core // (per_warp * res.warps)
    limit = min(limits, key=lambda k: (limits[k], k))
    if limits[limit] < 1:
        raise InputError(f"a program does not fit on one {chip.name} core ({limit})", field=field)
    return limits[limit], limit


# ---------------------------------------------------------------- shared parts
