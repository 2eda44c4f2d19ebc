"""What every fuzz test of an input kind shares: mutations of a valid document (a value
replaced by an awkward one, a key removed, a number scaled far out of range) and the
property each run must have: refused with exactly one line of at most 300 characters and
exit status 2, or a success the test then checks against physical bounds.

Each fuzz test lives beside the tests of the package that reads its input, runs the CLI
in-process (``cli`` fixture), and bounds its examples so that all of them together add
well under a minute to the suite. The suite's hypothesis profile is derandomized: the
same examples run every time (tests/conftest.py)."""

from __future__ import annotations

import copy
import json
import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

MAX_ERROR_LINE = 300


CAMPAIGN_EXAMPLES = "ACCELSIM_FUZZ_EXAMPLES"
"""Set it (``ACCELSIM_FUZZ_EXAMPLES=500 python -m pytest tests -k fuzz``) for a campaign:
that many examples per test, drawn afresh each run instead of the suite's fixed few."""


def fuzz_settings(examples: int):
    """Few examples, no deadline (a shared 2-core machine), and the function-scoped
    ``cli`` / ``tmp_path`` fixtures reused across examples (each example writes its own file)."""
    campaign = int(os.environ.get(CAMPAIGN_EXAMPLES, "0"))
    return settings(max_examples=campaign or examples, deadline=None, derandomize=not campaign,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large])


AWKWARD_NUMBERS = st.sampled_from([
    0, -1, 1, 3, 2**31, 2**53 + 1, 2**64, 10**30, 10**400, -(2**63), 5e-324, 1e-300, 1e-9, 0.5, -0.0,
    1.5, 1e300, 1.7976931348623157e308,
])
AWKWARD_TEXT = st.sampled_from([
    "", " ", "a\x00b", "x" * 100_000, "1e12", "-1", "0-7", "1 TB/s", "8 GHz", "3 us", "\u202e", "\ud7ff", "auto",
    "../../etc/passwd", "$m", "{", "[1,", "*a", "NaN",
])
AWKWARD = st.one_of(
    AWKWARD_NUMBERS, AWKWARD_TEXT, st.none(), st.booleans(),
    st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12), st.lists(st.integers(-3, 300), max_size=4),
    st.dictionaries(st.text(max_size=4), st.integers(-3, 3), max_size=2),
    st.lists(st.lists(st.integers(0, 3), max_size=3), max_size=3),
)
"""Values a fuzzer tries where a field was: edges of every range, texts that are paths,
quantities and YAML or JSON syntax, and containers where scalars belong."""


def _places(doc: Any, path: tuple = ()) -> list[tuple]:
    """Every path to a value inside ``doc`` (mapping keys and list indices)."""
    out = []
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        out.append((*path, key))
        out.extend(_places(value, (*path, key)))
    return out


def _parent(doc: Any, path: tuple) -> Any:
    for key in path[:-1]:
        doc = doc[key]
    return doc


@st.composite
def mutated(draw, doc: Any, max_edits: int = 3) -> Any:
    """``doc`` (JSON-like) with one to ``max_edits`` edits: a value replaced by an
    :data:`AWKWARD` one, a number scaled by 1e-30 to 1e30 or negated, a key or item
    removed, or a mapping given an unknown key."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, max_edits))):
        places = _places(doc)
        if not places:
            break
        path = draw(st.sampled_from(places))
        parent, key = _parent(doc, path), path[-1]
        action = draw(st.sampled_from(["replace", "replace", "scale", "remove", "add"]))
        if action == "scale" and isinstance(parent[key], (int, float)) and not isinstance(parent[key], bool):
            parent[key] = parent[key] * draw(st.sampled_from([-1, 0, 1e-30, 1e-6, 1e6, 1e30]))
        elif action == "remove":
            del parent[key]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "x" * 300, "", "0"]))] = draw(AWKWARD)
        else:
            parent[key] = draw(AWKWARD)
    return doc


def leaf_paths(doc: dict, prefix: tuple = ()):
    """Every settable field of a config document, dotted (``hbm.bandwidth``): a mapping
    with a ``value`` (a cited quantity) is one field."""
    for key, value in doc.items():
        if isinstance(value, dict) and "value" not in value:
            yield from leaf_paths(value, (*prefix, key))
        else:
            yield ".".join((*prefix, key))


def refused_or_ok(result) -> bool:
    """True for a success (exit 0: the caller checks its bounds); for a refusal, exit
    status 2 and exactly one line of at most 300 characters, no traceback."""
    if result.code == 0:
        return True
    lines = result.err.splitlines()
    assert result.code == 2, result.err[-2000:]
    assert len(lines) == 1 and lines[0].startswith("accelsim: error: "), result.err[-2000:]
    assert len(lines[0]) <= MAX_ERROR_LINE, lines[0]
    return False


def read_or_refused(tmp_path, data: Any, read):
    """``read(path)`` of ``data`` written to a JSON file, or None where it raised an
    :class:`~accelsim.errors.InputError` that is the one line of at most 300 characters the
    CLI would print (readers that run in-process, without the CLI's plots)."""
    from accelsim.errors import InputError

    path = tmp_path / "input.json"
    path.write_text(json.dumps(data))
    try:
        return read(path)
    except InputError as exc:
        line = f"accelsim: error: {exc.one_line()}"
        assert "\n" not in line and len(line) <= MAX_ERROR_LINE, line
        return None


AWKWARD_TOKENS = st.sampled_from([
    "0", "-1", "99999999999999999999999", "9" * 5000, "1e-300", "5e-324", "nan", "inf", "", "{", "}", "(", ")",
    "[", "]", ",", "=", "%x", "\x00", "f32[]", "s32[-1]", "{{0,1},{1,2}}", "[2,4]<=[9]", "x" * 400,
])
"""Tokens a text fuzzer puts in place of one: numbers past every range, brackets and
separators of the formats, names, control bytes."""


@st.composite
def mutated_text(draw, text: str, max_edits: int = 3) -> str:
    """``text`` with one to ``max_edits`` edits on its whitespace-separated tokens and
    lines: a token replaced (:data:`AWKWARD_TOKENS`), a number scaled by digits added or
    taken, a line removed or repeated, the text cut short."""
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, max_edits))):
        k = draw(st.integers(0, len(lines) - 1))
        tokens = lines[k].split(" ")
        action = draw(st.sampled_from(["token", "token", "digits", "drop", "repeat", "cut"]))
        if action in ("token", "digits"):
            i = draw(st.integers(0, len(tokens) - 1))
            digits = any(c.isdigit() for c in tokens[i])
            tokens[i] = tokens[i] + "000000000" if action == "digits" and digits else draw(AWKWARD_TOKENS)
            lines[k] = " ".join(tokens)
        elif action == "drop" and len(lines) > 1:
            del lines[k]
        elif action == "repeat":
            lines.insert(k, lines[k])
        elif action == "cut":
            lines = lines[:k + 1]
            lines[-1] = lines[-1][:draw(st.integers(0, len(lines[-1])))]
    return "\n".join(lines)


def assert_within_peaks(simulated: dict, chip) -> None:
    """A simulated kernel (``simulate --json``) takes at least its flops at the chip's
    fastest unit's peak and its HBM bytes at the HBM's peak (no efficiency applied), and
    reports a finite, positive latency."""
    import math

    latency = simulated["latency_s"]
    assert math.isfinite(latency) and latency > 0
    peak = max([chip.matrix_flops_per_s(d) for d in chip.matrix.flops_per_cycle_per_core]
               + [chip.vector_flops_per_s(d) for d in chip.vector.flops_per_cycle_per_core])
    bound = max(simulated["flops"] / peak, simulated["hbm_bytes"] / chip.hbm.bandwidth_bytes_per_s)
    assert latency >= bound * (1 - 1e-9), (latency, bound)
