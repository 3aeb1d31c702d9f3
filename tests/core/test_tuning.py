import math

import matplotlib
import pytest

from reprolab.core.io import write_json
from reprolab.core.tuning import (
    check_equal_grids,
    grid_points,
    on_edge,
    outcome_line,
    plot_tuning,
    read_tuning,
    selected,
    tune,
    tuning_summary,
    write_tuning,
)

matplotlib.use("Agg")
SEEDS = [1000, 1001]


def peaked(best_lr: float):
    """A score that peaks at `best_lr` and does not depend on the other axes."""
    return lambda values, seed: -abs(math.log10(values["lr"] / best_lr)) + 0.001 * (seed - 1000)


def test_grid_points_cover_the_product_with_the_first_key_slowest():
    points = grid_points({"lr": [0.1, 1.0], "act": ["tanh", "relu"]})
    assert points == [
        {"lr": 0.1, "act": "tanh"},
        {"lr": 0.1, "act": "relu"},
        {"lr": 1.0, "act": "tanh"},
        {"lr": 1.0, "act": "relu"},
    ]
    assert grid_points({}) == [{}]


@pytest.mark.parametrize("values", [[], "abc", 3])
def test_an_axis_must_be_a_non_empty_list(values):
    with pytest.raises(ValueError, match="tuning grid 'lr'"):
        grid_points({"lr": values})


def test_tune_selects_the_best_mean_and_keeps_every_trial():
    record = tune("m", {"lr": [0.01, 0.1, 1.0]}, peaked(0.1), SEEDS, "score", "max")
    assert record["selected"] == {"lr": 0.1}
    assert record["on_edge"] == []
    assert [t["values"]["lr"] for t in record["trials"]] == [0.01, 0.1, 1.0]
    assert all(len(t["per_seed"]) == 2 for t in record["trials"])
    assert record["score"] == pytest.approx(0.0005)
    assert record["tuning_seeds"] == SEEDS


def test_a_winner_on_a_numeric_edge_is_flagged_not_a_categorical_one():
    record = tune("m", {"lr": [0.01, 0.1], "act": ["a", "b"]}, peaked(1.0), SEEDS, "acc", "max")
    assert record["selected"]["lr"] == 0.1
    assert record["on_edge"] == ["lr"]
    assert on_edge({"flag": [True, False]}, {"flag": True}) == []


def test_the_log_line_says_what_won_and_warns_on_an_edge():
    inside = tune("m", {"lr": [0.01, 0.1, 1.0]}, peaked(0.1), SEEDS, "score", "max")
    line = outcome_line(inside, 2.0)
    assert line == (
        f"m: 3 grid points x 2 seeds in 2.0 s; selected {{'lr': 0.1}} (score {inside['score']:.4f})"
    )
    edge = tune("m", {"lr": [0.01, 0.1]}, peaked(1.0), SEEDS, "score", "max")
    assert outcome_line(edge, 1.0).endswith("; ON THE GRID'S EDGE: ['lr']")


def test_a_curve_within_the_seeds_noise_is_flat_and_a_peaked_one_is_not():
    def noisy(values: dict, seed: int) -> float:
        return 0.5 + (0.01 if seed == SEEDS[0] else -0.01) + 0.001 * values["lr"]

    assert tune("m", {"lr": [0.01, 0.1, 1.0]}, noisy, SEEDS, "acc", "max")["flat"] is True
    assert tune("m", {"lr": [0.01, 0.1, 1.0]}, peaked(0.1), SEEDS, "acc", "max")["flat"] is False
    assert tune("m", {"lr": [0.01, 0.1]}, noisy, [1000], "acc", "max")["flat"] is False


def test_zero_is_a_bound_of_the_domain_not_an_edge():
    grid = {"weight": [0.0, 0.01, 0.1]}
    assert on_edge(grid, {"weight": 0.0}) == []
    assert on_edge(grid, {"weight": 0.1}) == ["weight"]


def test_a_limit_of_the_axis_domain_is_no_edge_and_is_recorded():
    grid = {"lam": [0.0, 0.5, 1.0], "lr": [0.1, 1.0]}
    assert on_edge(grid, {"lam": 1.0, "lr": 0.1}) == ["lam", "lr"]
    assert on_edge(grid, {"lam": 1.0, "lr": 0.1}, {"lam": (0.0, 1.0)}) == ["lr"]
    record = tune(
        "m",
        {"lam": [0.0, 0.5, 1.0]},
        lambda v, s: v["lam"],
        SEEDS,
        "acc",
        "max",
        limits={"lam": (0.0, 1.0)},
    )
    assert record["selected"] == {"lam": 1.0} and record["on_edge"] == []
    assert record["limits"] == {"lam": [0.0, 1.0]}
    assert "limits" not in tune("m", {"lam": [0.0, 1.0]}, lambda v, s: 0.0, SEEDS, "acc", "max")


def test_minimising_and_ties_go_to_the_first_point():
    record = tune("m", {"lr": [0.01, 0.1, 1.0]}, lambda v, s: 1.0, SEEDS, "loss", "min")
    assert record["selected"] == {"lr": 0.01}


def test_a_point_that_fails_on_any_seed_never_wins():
    def diverges_at_large_steps(values, seed):
        return math.nan if values["lr"] == 1.0 and seed == 1001 else values["lr"]

    record = tune("m", {"lr": [0.01, 0.1, 1.0]}, diverges_at_large_steps, SEEDS, "f", "max")
    assert record["selected"] == {"lr": 0.1}
    assert math.isnan(record["trials"][2]["score"])


def test_every_point_failing_is_an_error():
    with pytest.raises(RuntimeError, match="every grid point failed"):
        tune("m", {"lr": [0.1]}, lambda v, s: math.inf, SEEDS, "f", "max")


def test_bad_goal_or_no_seeds_is_rejected():
    with pytest.raises(ValueError, match="goal"):
        tune("m", {"lr": [0.1]}, peaked(0.1), SEEDS, "f", "best")
    with pytest.raises(ValueError, match="no tuning seeds"):
        tune("m", {"lr": [0.1]}, peaked(0.1), [], "f", "max")


def test_records_round_trip_and_summarize(tmp_path):
    paths = []
    for method, best in (("a", 0.1), ("b", 1.0)):
        paths.append(tmp_path / f"{method}.json")
        write_tuning(
            paths[-1], tune(method, {"lr": [0.01, 0.1, 1.0]}, peaked(best), SEEDS, "f", "max")
        )
    assert selected(paths) == {"a": {"lr": 0.1}, "b": {"lr": 1.0}}
    summary = tuning_summary(paths)
    assert summary["b"]["on_edge"] == ["lr"] and summary["a"]["grid_points"] == 3
    assert [t["values"] for t in summary["a"]["trials"]] == [{"lr": 0.01}, {"lr": 0.1}, {"lr": 1.0}]
    figure = plot_tuning(summary)
    assert len([ax for ax in figure.axes if ax.get_visible()]) == 2
    assert "on edge: lr" in figure.axes[1].get_title()


def test_a_file_of_another_format_is_named(tmp_path):
    write_json(tmp_path / "x.json", {"sizes": [1, 2]})
    with pytest.raises(ValueError, match=r"x\.json: not a tuning record"):
        read_tuning(tmp_path / "x.json")


def test_two_records_of_one_method_are_an_error(tmp_path):
    record = tune("a", {"lr": [0.1]}, peaked(0.1), SEEDS, "f", "max")
    for name in ("one", "two"):
        write_tuning(tmp_path / f"{name}.json", record)
    with pytest.raises(ValueError, match="a second tuning record of method 'a'"):
        selected([tmp_path / "one.json", tmp_path / "two.json"])


def test_grids_must_exist_and_have_one_size():
    grids = {"a": {"lr": [0.1, 1.0]}, "b": {"lr": [0.1, 1.0], "act": ["tanh"]}}
    check_equal_grids(grids, ["a", "b"], "s.tune.grid")
    with pytest.raises(ValueError, match=r"s.tune.grid: no grid for method\(s\) \['c'\]"):
        check_equal_grids(grids, ["a", "c"], "s.tune.grid")
    grids["b"]["act"] = ["tanh", "relu"]
    with pytest.raises(ValueError, match=r"s.tune.grid: every method .* \{'a': 2, 'b': 4\}"):
        check_equal_grids(grids, ["a", "b"], "s.tune.grid")
