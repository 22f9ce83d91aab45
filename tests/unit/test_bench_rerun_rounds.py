"""bench_rerun's rounds: each round's ratio pairs that round's server CPU with that round's forward pass."""

from __future__ import annotations

import argparse

from bench.bench_rerun import Costs, ratio, round_summary, section


def costs(label: str, miss_ms: list[float], hit_ms: list[float]) -> Costs:
    c = Costs(label)
    c.cpu = {"miss": [m / 1000 for m in miss_ms], "hit": [h / 1000 for h in hit_ms]}
    c.wall = {"miss": [m / 1000 for m in miss_ms], "hit": [h / 1000 for h in hit_ms]}
    return c


def test_ratio_is_the_mean_cpu_over_the_median_forward_pass():
    assert abs(ratio(costs("a", [40.0, 44.0], [10.0]), "miss", [0.020, 0.021, 0.019]) - 0.042 / 0.020) < 1e-12
    assert ratio(costs("a", [], [10.0]), "miss", [0.02]) is None


def test_each_round_pairs_its_own_forward_pass_and_the_median_is_reported():
    rounds = [
        ([costs("this revision", [40.0], [10.0]), costs("baseline x", [80.0], [60.0])], [0.020]),
        ([costs("this revision", [44.0], [12.0]), costs("baseline x", [90.0], [60.0])], [0.022]),
        ([costs("this revision", [63.0], [15.0]), costs("baseline x", [75.0], [45.0])], [0.030]),
    ]
    lines = round_summary(rounds)
    assert "- this revision, miss: 2.00×, 2.00×, 2.10×; median **2.00×**" in lines
    assert "- baseline x, hit: 3.00×, 2.73×, 1.50×; median **2.73×**" in lines
    assert round_summary(rounds[:1]) == []  # one round: the table says it all
    args = argparse.Namespace(repeats=3, sentences=1)
    context = {"date": "d", "machine": "m", "command": "c", "load_before": "l", "load_after": "l"}
    text = section(rounds, args, context)
    assert "| this revision, round 3 | miss | 1 | 63.0 | 30.0 | 2.10× |" in text
