"""The rows of the hiccr study, in a module without torch, so that the summary and the report
(which must not load torch) can name them too.

A row is a base algorithm with a credit rule. `base`: `grpo` normalises each group's rewards by
their std and averages the surrogate over each sequence's tokens (TRL's GRPOTrainer); `drgrpo`
(Dr. GRPO) only centres the rewards and divides each sequence's summed surrogate by the fixed
response length, removing GRPO's length and difficulty biases. `token`: `uniform` (every token
gets its rollout's advantage), `grounded` (HiCCR's token weights from visual grounding scores) or
`random` (the abstract's control: weights of the same spread from noise). `trajectory`: HiCCR's
rollout weights from the rollouts' mean grounding.
"""

from __future__ import annotations

from dataclasses import dataclass

BASES = ("grpo", "drgrpo")
TOKEN_RULES = ("uniform", "grounded", "random")


@dataclass(frozen=True)
class Row:
    """One method of the table: base algorithm, token-level rule, trajectory-level weights."""

    base: str
    token: str
    trajectory: bool

    def __post_init__(self) -> None:
        if self.base not in BASES:
            raise ValueError(f"base {self.base!r}: expected one of {BASES}")
        if self.token not in TOKEN_RULES:
            raise ValueError(f"token rule {self.token!r}: expected one of {TOKEN_RULES}")

    @property
    def needs_grounding(self) -> bool:
        """Whether the training step must compute grounding scores."""
        return self.token == "grounded" or self.trajectory


ROWS = {
    "grpo": Row("grpo", "uniform", False),
    "random": Row("grpo", "random", False),
    "token": Row("grpo", "grounded", False),
    "trajectory": Row("grpo", "uniform", True),
    "hiccr": Row("grpo", "grounded", True),
    "drgrpo": Row("drgrpo", "uniform", False),
    "drgrpo_hiccr": Row("drgrpo", "grounded", True),
}
"""Method id -> row, in table order."""

BASELINE_OF = {"hiccr": "grpo", "drgrpo_hiccr": "drgrpo"}
"""Each HiCCR row and the base algorithm it is compared with."""
