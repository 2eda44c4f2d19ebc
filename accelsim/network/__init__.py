"""Interconnects and collectives: link graphs from system configs, collective
algorithms as plans of transfers, and their simulation on shared links."""

from accelsim.network.simulate import CollectiveResult, links_of, plan_for, play_plan, run_plans, simulate_collective
from accelsim.network.topology import Topology, build_topology

__all__ = ["CollectiveResult", "Topology", "build_topology", "links_of", "plan_for", "play_plan", "run_plans", "simulate_collective"]
