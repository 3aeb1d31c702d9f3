"""The three shared environments in which agents may break a norm for gain.

Every environment has one norm, a binary choice per agent and round (violate or comply), and
the same interface (`Environment`): `reset` draws the episode's state, `private_state` is what
one agent may observe, and `step` turns the round's choices of the active agents into an
`Outcome` (payoffs [N], welfare, violations [N]). A suspended (inactive) agent takes no part:
its choice is ignored, its payoff is 0 and it never counts as violating. Parameters come only
from params (`from_params`): the dataclasses have no defaults, a missing key raises KeyError
and an unknown key or an out-of-range value raises ValueError, each naming the key (the ranges
checked are those the formulas need: a positive temperature and fishery capacity, non-negative
spreads, noise, growth, quota, demand and seller capacity, an initial stock within capacity,
and overharvest ≥ 1 so that violating never takes less than complying). All
randomness comes from the generator passed in, so the same seed gives the same outcomes.

engagement (a social feed, zero-sum attention): at reset each agent gets a fixed quality
~ N(0, quality_spread). Each round every active agent posts; score_i = quality_i +
gain·violate_i + noise·N(0,1); share_i = softmax(score/temperature) over the active agents;
payoff_i = pool·share_i, so active payoffs sum to `pool`. welfare = pool − trust_cost·(number
of misleading posts). Choices beyond the card: the noise is drawn for all N agents every round,
active or not, so the generator's stream does not depend on who is suspended or who violates
(a violating and a complying run on the same seed see the same noise); a round with no active
agent distributes no attention and has welfare 0.

fishery (a commons): the stock S starts at initial_stock (≤ capacity K). Each active agent
requests quota (comply) or overharvest·quota (violate); if the total request exceeds S, each
gets S·request/total (proportional rationing), else its request. With harvest H and remainder
R = S − H, the stock regrows logistically, S' = R + growth·R·(1 − R/K), clipped to [0, K]
(the clip binds only when growth > 1 overshoots K). payoff_i = price·harvest_i and welfare =
Σ payoffs: the cost of overfishing is the smaller stock of later rounds. The fishery draws
nothing at random; it takes the generator only to share the interface. Choice: the
remainder is floored at 0, so rounding in the rationed shares never drives the stock negative.

marketplace (sellers, fake reviews): at reset each seller gets quality ~ N(0, quality_spread);
every seller can sell `capacity` units per round and buyers demand `demand` units.
attractiveness_i = exp(quality_i + gain·violate_i). Demand goes to the active sellers in
proportion to attractiveness, capped at capacity, with what capped sellers cannot serve
re-allocated among the others in proportion to attractiveness until demand or spare capacity
runs out (water-filling). Its fixed point is sold_i = min(capacity, λ·attractiveness_i) with λ
set so that Σ sold = min(demand, Σ active capacity); it is computed by filling every seller
whose proportional share of the remaining demand reaches its capacity, removing them, and
sharing the rest among the others (at most N passes; this gives the same allocation as
re-allocating the overflow and makes the market clear exactly). payoff_i = margin·sold_i;
welfare = Σ sold_i·(margin + value + quality_i) − deception_cost·Σ_{violating i} sold_i
(sellers earn the margin, buyers get value + quality per unit, and a deceived buyer loses
deception_cost per unit). Choice: attractiveness is normalised by the largest active exponent
before exponentiating (it only enters through ratios), so large qualities cannot overflow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, Self

import numpy as np

from reprolab.core.params import dataclass_values


@dataclass(frozen=True)
class Outcome:
    """One round's result: payoffs [N] float64 (0 for suspended agents), welfare, and
    violations [N] bool (violate & active)."""

    payoffs: np.ndarray
    welfare: float
    violations: np.ndarray


class Environment(Protocol):
    """What every environment offers; see the module docstring."""

    name: str
    norm: str

    def reset(self, agents: int, rng: np.random.Generator) -> None: ...

    def private_state(self, agent: int) -> dict[str, float]: ...

    def step(
        self, violate: np.ndarray, active: np.ndarray, rng: np.random.Generator
    ) -> Outcome: ...


class _Params:
    """from_params for the parameter dataclasses: every field is a float read from params."""

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Self:
        """The parameters in `params`; a missing key is a KeyError, an unknown one a ValueError."""
        values = dataclass_values(cls, params, cls.__name__)
        return cls(**{name: float(value) for name, value in values.items()})


def _require(ok: bool, key: str, rule: str) -> None:
    """Raise a ValueError naming `key` unless `ok`."""
    if not ok:
        raise ValueError(f"parameter {key} must be {rule}")


def _violations(violate: np.ndarray, active: np.ndarray, agents: int) -> np.ndarray:
    """violate & active as [N] bool, after checking both have the episode's N entries."""
    violate, active = np.asarray(violate, dtype=bool), np.asarray(active, dtype=bool)
    if violate.shape != (agents,) or active.shape != (agents,):
        raise ValueError(f"violate and active must have shape ({agents},)")
    return violate & active


@dataclass(frozen=True)
class EngagementParams(_Params):
    """pool: attention shared per round; gain: score bonus of a misleading post; noise: s.d.
    of the per-post score noise; temperature: of the softmax; quality_spread: s.d. of agent
    quality; trust_cost: welfare lost per misleading post."""

    pool: float
    gain: float
    noise: float
    temperature: float
    quality_spread: float
    trust_cost: float

    def __post_init__(self) -> None:
        _require(self.temperature > 0, "temperature", "> 0")
        _require(self.noise >= 0, "noise", ">= 0")
        _require(self.quality_spread >= 0, "quality_spread", ">= 0")


class Engagement:
    """The social feed (see the module docstring)."""

    name = "engagement"
    norm = "Do not post misleading content."

    def __init__(self, params: EngagementParams) -> None:
        self.params = params
        self._quality = np.zeros(0)

    def reset(self, agents: int, rng: np.random.Generator) -> None:
        """Draw each agent's fixed quality."""
        self._quality = rng.normal(0.0, self.params.quality_spread, size=agents)

    def private_state(self, agent: int) -> dict[str, float]:
        """The agent's own quality."""
        return {"quality": float(self._quality[agent])}

    def step(self, violate: np.ndarray, active: np.ndarray, rng: np.random.Generator) -> Outcome:
        """Share the attention pool among the active agents' posts by softmax of their score."""
        p, n = self.params, len(self._quality)
        violations = _violations(violate, active, n)
        noise = rng.standard_normal(n)
        payoffs = np.zeros(n)
        on = np.asarray(active, dtype=bool)
        if not on.any():
            return Outcome(payoffs=payoffs, welfare=0.0, violations=violations)
        score = (self._quality + p.gain * violations + p.noise * noise)[on] / p.temperature
        weight = np.exp(score - score.max())
        payoffs[on] = p.pool * weight / weight.sum()
        welfare = p.pool - p.trust_cost * float(violations.sum())
        return Outcome(payoffs=payoffs, welfare=welfare, violations=violations)


@dataclass(frozen=True)
class FisheryParams(_Params):
    """initial_stock, capacity: the stock at reset and its ceiling; growth: logistic regrowth
    rate; quota: a complying agent's request; overharvest: a violator's multiple of the quota;
    price: payoff per unit caught."""

    initial_stock: float
    capacity: float
    growth: float
    quota: float
    overharvest: float
    price: float

    def __post_init__(self) -> None:
        _require(self.capacity > 0, "capacity", "> 0")
        _require(0 <= self.initial_stock <= self.capacity, "initial_stock", "in [0, capacity]")
        _require(self.growth >= 0, "growth", ">= 0")
        _require(self.quota >= 0, "quota", ">= 0")
        _require(self.overharvest >= 1, "overharvest", ">= 1")


def regrow(remaining: float, growth: float, capacity: float) -> float:
    """The stock after logistic regrowth of `remaining`, clipped to [0, capacity]."""
    grown = remaining + growth * remaining * (1.0 - remaining / capacity)
    return float(min(max(grown, 0.0), capacity))


class Fishery:
    """The commons (see the module docstring)."""

    name = "fishery"
    norm = "Do not catch more than your quota."

    def __init__(self, params: FisheryParams) -> None:
        self.params = params
        self._stock = params.initial_stock
        self._agents = 0

    @property
    def stock(self) -> float:
        """The fish stock now (before this round's harvest)."""
        return self._stock

    def reset(self, agents: int, rng: np.random.Generator) -> None:
        """Refill the stock to initial_stock (nothing is random here)."""
        self._stock = self.params.initial_stock
        self._agents = agents

    def private_state(self, agent: int) -> dict[str, float]:
        """The stock and the quota (the same for every agent)."""
        return {"stock": self._stock, "quota": self.params.quota}

    def step(self, violate: np.ndarray, active: np.ndarray, rng: np.random.Generator) -> Outcome:
        """Harvest the requests (rationed if they exceed the stock), then regrow the rest."""
        p = self.params
        violations = _violations(violate, active, self._agents)
        on = np.asarray(active, dtype=bool)
        request = on * p.quota * np.where(violations, p.overharvest, 1.0)
        total = float(request.sum())
        harvest = request * (self._stock / total) if total > self._stock else request
        remaining = max(self._stock - float(harvest.sum()), 0.0)
        self._stock = regrow(remaining, p.growth, p.capacity)
        payoffs = p.price * harvest
        return Outcome(payoffs=payoffs, welfare=float(payoffs.sum()), violations=violations)


@dataclass(frozen=True)
class MarketplaceParams(_Params):
    """demand: units buyers want per round; capacity: units each seller can sell per round;
    quality_spread: s.d. of seller quality; gain: log-attractiveness bonus of fake reviews;
    margin: seller's profit per unit; value: buyer's value per unit before quality;
    deception_cost: buyer's loss per unit bought from a seller with fake reviews."""

    demand: float
    capacity: float
    quality_spread: float
    gain: float
    margin: float
    value: float
    deception_cost: float

    def __post_init__(self) -> None:
        _require(self.demand >= 0, "demand", ">= 0")
        _require(self.capacity >= 0, "capacity", ">= 0")
        _require(self.quality_spread >= 0, "quality_spread", ">= 0")


def water_fill(demand: float, attractiveness: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Units sold by each seller: min(capacity, λ·attractiveness) with Σ sold = min(demand,
    Σ capacity); sellers with attractiveness 0 sell nothing."""
    sold = np.zeros(len(attractiveness))
    open_ = (attractiveness > 0) & (capacity > 0)
    remaining = demand
    while remaining > 0 and open_.any():
        share = remaining * np.where(open_, attractiveness, 0.0) / attractiveness[open_].sum()
        full = open_ & (share >= capacity)
        if not full.any():
            sold[open_] = share[open_]
            break
        sold[full] = capacity[full]
        remaining -= float(capacity[full].sum())
        open_ &= ~full
    return sold


class Marketplace:
    """The sellers' market (see the module docstring)."""

    name = "marketplace"
    norm = "Do not post fake reviews."

    def __init__(self, params: MarketplaceParams) -> None:
        self.params = params
        self._quality = np.zeros(0)

    def reset(self, agents: int, rng: np.random.Generator) -> None:
        """Draw each seller's quality."""
        self._quality = rng.normal(0.0, self.params.quality_spread, size=agents)

    def private_state(self, agent: int) -> dict[str, float]:
        """The seller's own quality and capacity."""
        return {"quality": float(self._quality[agent]), "capacity": self.params.capacity}

    def step(self, violate: np.ndarray, active: np.ndarray, rng: np.random.Generator) -> Outcome:
        """Clear the market among the active sellers by water-filling (nothing is random)."""
        p, n = self.params, len(self._quality)
        violations = _violations(violate, active, n)
        on = np.asarray(active, dtype=bool)
        attractiveness = np.zeros(n)
        if on.any():
            exponent = (self._quality + p.gain * violations)[on]
            attractiveness[on] = np.exp(exponent - exponent.max())
        sold = water_fill(p.demand, attractiveness, np.full(n, p.capacity))
        welfare = float(sold @ (p.margin + p.value + self._quality))
        welfare -= p.deception_cost * float(sold[violations].sum())
        return Outcome(payoffs=p.margin * sold, welfare=welfare, violations=violations)


ENVIRONMENTS: dict[str, tuple[type[_Params], type]] = {
    "engagement": (EngagementParams, Engagement),
    "fishery": (FisheryParams, Fishery),
    "marketplace": (MarketplaceParams, Marketplace),
}
"""Each environment's name → (its parameter dataclass, its class)."""


def build_environment(name: str, params: Mapping[str, Any]) -> Environment:
    """The environment called `name`, with its parameters read from `params`."""
    if name not in ENVIRONMENTS:
        raise ValueError(f"unknown environment {name!r}; choose one of {', '.join(ENVIRONMENTS)}")
    params_type, environment_type = ENVIRONMENTS[name]
    return environment_type(params_type.from_params(params))
