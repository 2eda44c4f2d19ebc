"""Collectives XLA's TPU compiler offloads to the SparseCores (libtpu 0.0.52 with
``--xla_tpu_enable_sparse_core_collective_offload_all_gather=true``, which MaxText 0.2.5's
``configs/tpu/v5p/32b.sh`` sets).

Such a collective is not printed as ``all-gather-start`` / ``all-gather-done``. It is an
async custom call on the ``sparsecore`` execution thread, in three instructions:

* ``custom-call-start()``, with no operands, ``async_execution_thread="sparsecore"`` and
  ``called_computations={C}``: C (``execution_thread="sparsecore"``) holds the collective,
  its parameters are the collective's inputs. It loads the SparseCore's program;
* ``custom-call-update(start, inputs...)``: the inputs reach the collective here, so its
  data moves from here on;
* ``custom-call-done(update)``: the collective's result.

:func:`offloaded_collective` says whether a ``custom-call-start`` is one; the importer
issues C's collective at the update, asynchronously, and ends it at the done.
"""

from __future__ import annotations

from accelsim.importers.hlo_text import Computation, Instruction, Module, split_top, strip_braces

SPARSECORE_THREAD = '"sparsecore"'


def offloaded_collective(module: Module, inst: Instruction, collective_opcodes: set[str] | dict) -> Computation | None:
    """The computation a SparseCore ``custom-call-start`` runs when it holds one of
    ``collective_opcodes``, else None."""
    if inst.opcode != "custom-call-start" or inst.attrs.get("async_execution_thread") != SPARSECORE_THREAD:
        return None
    names = [n.lstrip("%") for n in split_top(strip_braces(inst.attrs.get("called_computations", ""))) if n]
    called = module.computations.get(names[0]) if len(names) == 1 else None
    if called is None or not any(i.opcode in collective_opcodes for i in called.instructions):
        return None
    return called
