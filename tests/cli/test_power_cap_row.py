"""``accelsim simulate``'s ``power cap`` row says what the cap did to the kernel's clock: lowered it,
left it (not reached), or left it because the kernel ends before the limiter acts (launched from
idle, ``power.dvfs.boost.from_idle``: docs/power.md, "The limiter's delay")."""

GEMM_8K = ("--kernel", "gemm", "--param", "M=8192", "--param", "N=8192", "--param", "K=8192")


def _cap_row(out: str) -> str:
    (row,) = [line for line in out.splitlines() if line.startswith("power cap")]
    return row


def test_a_kernel_over_the_cap_run_back_to_back_is_throttled(cli):
    result = cli("simulate", "--arch", "h100-sxm", *GEMM_8K)
    assert result.code == 0, result.err
    assert "clock lowered to" in _cap_row(result.out)


def test_from_idle_a_kernel_shorter_than_the_delay_keeps_its_clock_and_says_why(cli):
    result = cli("simulate", "--arch", "h100-sxm", *GEMM_8K, "--set", "power.dvfs.boost.from_idle=true")
    assert result.code == 0, result.err
    assert "ends before the power limiter acts" in _cap_row(result.out)


def test_a_kernel_below_the_cap_is_not_reached(cli):
    result = cli("simulate", "--arch", "h100-sxm", "--kernel", "softmax", "--param", "rows=4096",
                 "--param", "cols=4096", "--set", "power.dvfs.boost.from_idle=true")
    assert result.code == 0, result.err
    assert "not reached at full clock" in _cap_row(result.out)


def test_a_kernel_over_the_cap_with_no_lower_clock_step_says_so_not_from_idle(cli):
    """Run back to back on a chip whose lowest clock is its own (``power.dvfs.min_clock``), a kernel
    over the cap keeps its clock for want of a step, not because the limiter acted late."""
    result = cli("simulate", "--arch", "h100-sxm", *GEMM_8K, "--set", "power.dvfs.min_clock=1980 MHz")
    assert result.code == 0, result.err
    row = _cap_row(result.out)
    assert "no lower clock step" in row and "from idle" not in row
