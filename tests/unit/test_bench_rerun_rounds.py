"""bench_rerun's rounds: each round's ratio pairs that round's server CPU with that round's forward pass, measured
in the same condition as the reruns (after a pause like theirs, or back to back)."""

from __future__ import annotations

import argparse

from bench.bench_rerun import Costs, Forward, ratio, round_summary, section


def costs(label: str, miss_ms: list[float], hit_ms: list[float], busy_ms: tuple[float, float] | None = None) -> Costs:
    c = Costs(label)
    c.cpu.update({"miss": [m / 1000 for m in miss_ms], "hit": [h / 1000 for h in hit_ms]})
    c.wall.update({"miss": [m / 1000 for m in miss_ms], "hit": [h / 1000 for h in hit_ms]})
    if busy_ms is not None:  # back to back: one value per case, a rerun's share of the case's CPU
        for case, value in zip(("miss, back to back", "hit, back to back"), busy_ms):
            c.cpu[case], c.wall[case] = [value / 1000], [value / 1000] * 4  # 4 reruns, one CPU value
    return c


def forward(paused_ms: float, in_a_row_ms: float, busy_ms: float = 15.0) -> Forward:
    return Forward(paused=[paused_ms / 1000], in_a_row=[in_a_row_ms / 1000], busy=[busy_ms / 1000])


def test_ratio_is_the_mean_cpu_over_the_median_forward_pass():
    assert abs(ratio(costs("a", [40.0, 44.0], [10.0]), "miss", [0.020, 0.021, 0.019]) - 0.042 / 0.020) < 1e-12
    assert ratio(costs("a", [], [10.0]), "miss", [0.02]) is None


def test_a_case_is_compared_with_the_pass_measured_in_its_own_condition():
    f = Forward(paused=[0.02], in_a_row=[0.016], busy=[0.015])
    assert f.of("miss") == f.of("hit") == [0.02]  # one at a time: after a pause, as the server's reruns
    assert f.in_row_of("miss") == [0.016]  # the comparison made before: back to back
    assert f.of("miss, back to back") == f.in_row_of("hit, back to back") == [0.015]


def test_each_round_pairs_its_own_forward_pass_and_the_median_is_reported():
    rounds = [
        ([costs("this revision", [40.0], [10.0], (30.0, 9.0)), costs("baseline x", [80.0], [60.0])], forward(20, 16)),
        ([costs("this revision", [44.0], [12.0], (33.0, 9.0)), costs("baseline x", [90.0], [60.0])], forward(22, 20)),
        ([costs("this revision", [63.0], [15.0], (36.0, 9.0)), costs("baseline x", [75.0], [45.0])], forward(30, 21)),
    ]
    lines = round_summary(rounds)
    assert (
        "- this revision, miss (one at a time): 2.00×, 2.00×, 2.10×; median **2.00×** "
        "(against the pass back to back: 2.50×, 2.20×, 3.00×; median **2.50×**)"
    ) in lines
    assert "- this revision, miss, back to back: 2.00×, 2.20×, 2.40×; median **2.20×**" in lines
    assert any(
        line.startswith("- baseline x, hit (one at a time): 3.00×, 2.73×, 1.50×; median **2.73×**") for line in lines
    )
    assert not any(line.startswith("- baseline x, miss, back to back") for line in lines)  # not measured: no line
    assert round_summary(rounds[:1]) == []  # one round: the table says it all
    args = argparse.Namespace(repeats=3, sentences=1)
    context = {"date": "d", "machine": "m", "command": "c", "load_before": "l", "load_after": "l"}
    text = section(rounds, args, context)
    assert "| this revision, round 3 | miss | 1 | 63.0 | 30.0 | 2.10× | 21.0 | 3.00× | 63.0 |" in text
    assert "| this revision, round 3 | hit, back to back | 4 | 9.0 | 15.0 | 0.60× | 15.0 | 0.60× | 9.0 |" in text
    assert "| baseline x, round 1 | miss, back to back |" not in text
