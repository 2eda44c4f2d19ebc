"""The collective algorithms, one module per family; importing this registers them all
in :data:`accelsim.network.collectives.ALGORITHMS`."""

from accelsim.network.algorithms import direct, hierarchical, nvls, ring, torus, tree

__all__ = ["direct", "hierarchical", "nvls", "ring", "torus", "tree"]
