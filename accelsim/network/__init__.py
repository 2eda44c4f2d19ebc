"""Interconnects and collectives: link graphs from system configs, collective
algorithms as plans of transfers, and their simulation on shared links."""

from accelsim.network.collectives import Phase, Plan, Request, Transfer, link_loads
from accelsim.network.simulate import (
    CollectiveResult, Planner, links_of, make_request, plan_for, play_plan, run_plans, simulate_collective,
)
from accelsim.network.topology import Topology, build_topology

__all__ = [
    "CollectiveResult", "Phase", "Plan", "Planner", "Request", "Topology", "Transfer", "build_topology", "link_loads",
    "links_of", "make_request", "plan_for", "play_plan", "run_plans", "simulate_collective",
]
