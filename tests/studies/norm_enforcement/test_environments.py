"""The three norm-enforcement environments: conservation, market clearing, attention, suspension."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.norm_enforcement.environments import (
    ENVIRONMENTS,
    Engagement,
    EngagementParams,
    Fishery,
    FisheryParams,
    Marketplace,
    MarketplaceParams,
    build_environment,
)

PARAMS = {
    "engagement": {
        "pool": 10.0,
        "gain": 1.0,
        "noise": 0.5,
        "temperature": 1.0,
        "quality_spread": 1.0,
        "trust_cost": 0.7,
    },
    "fishery": {
        "initial_stock": 100.0,
        "capacity": 120.0,
        "growth": 0.4,
        "quota": 4.0,
        "overharvest": 3.0,
        "price": 2.0,
    },
    "marketplace": {
        "demand": 30.0,
        "capacity": 10.0,
        "quality_spread": 1.0,
        "gain": 1.5,
        "margin": 1.0,
        "value": 2.0,
        "deception_cost": 2.5,
    },
}


def _episode(name: str, seed: int, agents: int = 6, rounds: int = 20) -> list:
    """Outcomes of `rounds` rounds of random choices and suspensions, all drawn from `seed`."""
    rng = np.random.default_rng(seed)
    env = build_environment(name, PARAMS[name])
    env.reset(agents, rng)
    outcomes = []
    for _ in range(rounds):
        violate, active = rng.random(agents) < 0.5, rng.random(agents) < 0.8
        outcomes.append(env.step(violate, active, rng))
    return outcomes


def test_fishery_conserves_fish_and_regrows_logistically():
    for growth in (0.4, 2.8):  # 2.8 overshoots the capacity, so the clip is exercised
        env = Fishery(FisheryParams.from_params({**PARAMS["fishery"], "growth": growth}))
        rng = np.random.default_rng(1)
        env.reset(5, rng)
        K = env.params.capacity
        for _ in range(40):
            stock = env.stock
            out = env.step(rng.random(5) < 0.7, rng.random(5) < 0.9, rng)
            harvest = out.payoffs / env.params.price
            assert np.all(harvest >= 0) and harvest.sum() <= stock * (1 + 1e-12)
            remaining = max(stock - harvest.sum(), 0.0)
            expected = min(max(remaining + growth * remaining * (1 - remaining / K), 0.0), K)
            assert env.stock == expected
            assert 0.0 <= env.stock <= K
            assert out.welfare == pytest.approx(out.payoffs.sum())


def test_fishery_rations_in_proportion_to_requests():
    env = Fishery(FisheryParams.from_params({**PARAMS["fishery"], "initial_stock": 10.0}))
    env.reset(3, np.random.default_rng(0))
    assert env.private_state(1) == {"stock": 10.0, "quota": 4.0}
    out = env.step(np.array([False, True, False]), np.ones(3, bool), np.random.default_rng(0))
    # requests 4, 12, 4 = 20 > 10: each gets half
    assert out.payoffs / env.params.price == pytest.approx([2.0, 6.0, 2.0])
    assert env.stock == 0.0  # nothing left to regrow
    fresh = Fishery(FisheryParams.from_params(PARAMS["fishery"]))
    fresh.reset(3, np.random.default_rng(0))
    out = fresh.step(np.array([False, True, False]), np.ones(3, bool), np.random.default_rng(0))
    assert np.array_equal(out.payoffs / fresh.params.price, [4.0, 12.0, 4.0])  # no rationing


def _market(agents: int, **changes: float) -> Marketplace:
    env = Marketplace(MarketplaceParams.from_params({**PARAMS["marketplace"], **changes}))
    env.reset(agents, np.random.default_rng(3))
    return env


@pytest.mark.parametrize(
    ("demand", "spread", "binding"),
    [(100.0, 2.0, "capacity"), (12.0, 0.3, "demand"), (35.0, 2.0, "mixed")],
)
def test_marketplace_clears(demand, spread, binding):
    env = _market(5, demand=demand, quality_spread=spread)
    violate = np.array([True, False, True, False, False])
    active = np.ones(5, bool)
    out = env.step(violate, active, np.random.default_rng(0))
    sold = out.payoffs / env.params.margin
    cap = env.params.capacity
    assert np.all(sold <= cap + 1e-12) and np.all(sold >= 0)
    assert sold.sum() == pytest.approx(min(demand, 5 * cap), abs=1e-9)
    # water-filling: the unfilled sellers sell in proportion to attractiveness, and no filled
    # seller is less attractive than an unfilled one
    quality = np.array([env.private_state(i)["quality"] for i in range(5)])
    attractiveness = np.exp(quality + env.params.gain * violate)
    full = np.isclose(sold, cap)
    assert {"capacity": full.all(), "demand": not full.any(), "mixed": 0 < full.sum() < 5}[binding]
    if not full.all():
        ratio = sold[~full] / attractiveness[~full]
        assert np.allclose(ratio, ratio[0])
    if 0 < full.sum() < 5:
        assert attractiveness[full].min() >= attractiveness[~full].max()
    quality_term = sold @ (env.params.margin + env.params.value + quality)
    deceived = env.params.deception_cost * sold[violate].sum()
    assert out.welfare == pytest.approx(quality_term - deceived)


def test_fake_reviews_sell_more():
    env = _market(4, demand=12.0, quality_spread=0.5)
    active = np.ones(4, bool)
    honest = env.step(np.zeros(4, bool), active, np.random.default_rng(0)).payoffs
    assert np.all(honest < env.params.capacity)  # demand binds, so the extra sales show
    violate = np.array([False, True, False, False])
    faking = env.step(violate, active, np.random.default_rng(0)).payoffs
    assert faking[1] > honest[1]
    assert np.all(faking[~violate] < honest[~violate])  # the fake reviews take their buyers


def test_engagement_shares_the_pool_and_rewards_misleading_posts():
    env = Engagement(EngagementParams.from_params(PARAMS["engagement"]))
    env.reset(5, np.random.default_rng(2))
    assert set(env.private_state(0)) == {"quality"}
    active = np.array([True, True, False, True, True])
    for seed in range(50):
        comply = env.step(np.zeros(5, bool), active, np.random.default_rng(seed))
        violate = np.array([True, False, False, True, False])
        mislead = env.step(violate, active, np.random.default_rng(seed))
        for out in (comply, mislead):
            assert out.payoffs[active].sum() == pytest.approx(10.0, abs=1e-12)
        assert mislead.payoffs[0] > comply.payoffs[0]  # same noise, so every round
        assert comply.welfare == pytest.approx(10.0)
        assert mislead.welfare == pytest.approx(10.0 - 0.7 * 2)


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_suspended_agents_take_no_part(name):
    env = build_environment(name, PARAMS[name])
    env.reset(4, np.random.default_rng(5))
    active = np.array([True, False, True, False])
    outs = []
    for violate in (np.ones(4, bool), np.array([True, False, True, False])):
        if name == "fishery":
            env.reset(4, np.random.default_rng(5))
        outs.append(env.step(violate, active, np.random.default_rng(6)))
    for out in outs:
        assert np.all(out.payoffs[~active] == 0)
        assert out.violations.tolist() == [True, False, True, False]
        assert out.payoffs.dtype == np.float64 and out.violations.dtype == bool
    # a suspended agent's choice is ignored
    assert np.array_equal(outs[0].payoffs, outs[1].payoffs) and outs[0].welfare == outs[1].welfare


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_same_seed_same_outcomes(name):
    a, b, c = _episode(name, 11), _episode(name, 11), _episode(name, 12)
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x.payoffs, y.payoffs) and x.welfare == y.welfare
        assert np.array_equal(x.violations, y.violations)
    assert any(not np.array_equal(x.payoffs, z.payoffs) for x, z in zip(a, c, strict=True))


def test_bad_name_and_bad_params_are_named():
    with pytest.raises(ValueError, match="'casino'.*engagement, fishery, marketplace"):
        build_environment("casino", {})
    params = {k: v for k, v in PARAMS["fishery"].items() if k != "growth"}
    with pytest.raises(KeyError, match="growth"):
        build_environment("fishery", params)
    with pytest.raises(ValueError, match="tax"):
        build_environment("marketplace", {**PARAMS["marketplace"], "tax": 1.0})
    with pytest.raises(ValueError, match="temperature"):
        build_environment("engagement", {**PARAMS["engagement"], "temperature": 0.0})


def test_norms_and_names():
    for name in ENVIRONMENTS:
        env = build_environment(name, PARAMS[name])
        assert env.name == name and env.norm.startswith("Do not") and env.norm.endswith(".")
