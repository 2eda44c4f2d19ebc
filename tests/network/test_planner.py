"""A ``Planner`` owns the plans it makes: a request planned again is looked up; the
topology keeps no plans (its routes only)."""

from __future__ import annotations

import dataclasses

from accelsim.network import Planner, make_request, plan_for


def test_a_request_planned_again_is_looked_up(ideal_cluster):
    topo = ideal_cluster()
    planner = Planner(topo)
    request = make_request(topo, "all-reduce", 2**20)
    first = planner.plan(request, "ring")
    assert planner.plan(request, "ring") is first
    assert planner.plan(dataclasses.replace(request), "ring") is first  # an equal request, not the same object
    assert planner.plan(request, "tree") is not first


def test_another_planner_plans_anew_and_alike(ideal_cluster):
    topo = ideal_cluster()
    request = make_request(topo, "all-reduce", 2**20)
    mine = Planner(topo).plan(request)
    theirs = plan_for(topo, request)
    assert theirs == mine and theirs is not mine


def test_the_topology_keeps_no_plans(ideal_cluster):
    topo = ideal_cluster()
    Planner(topo).plan(make_request(topo, "all-reduce", 2**20))
    assert not any("plan" in name for name in vars(topo))
