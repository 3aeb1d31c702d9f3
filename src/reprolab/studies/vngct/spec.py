"""What the study is, without torch: its name and its methods.

Each method is a `Method`: the switches by which it differs in the shared continual loop
(`continual.run_stream`, which documents them). The jobs run `METHODS[name]`; the summary
(`results`, which must not load torch) reads the same table for the routing rate of the
methods that no gate routes.
"""

from __future__ import annotations

from dataclasses import dataclass

STUDY = "vngct"
GATES = ("all", "necessity", "random")


@dataclass(frozen=True)
class Method:
    """What one method changes in the shared loop (see `continual`'s docstring)."""

    gate: str = "all"
    calibration: bool = False
    freeze_visual: bool = False
    ewc: bool = False

    def __post_init__(self) -> None:
        if self.gate not in GATES:
            raise ValueError(f"gate {self.gate!r} is not one of {GATES}")
        if self.freeze_visual and self.gate != "all":
            raise ValueError("a frozen visual path has nothing to gate")

    @property
    def fixed_routing_rate(self) -> float | None:
        """Share of samples that update the projector when no gate decides: 0 with the visual
        path frozen, 1 without a gate; None when a gate routes."""
        if self.freeze_visual:
            return 0.0
        return 1.0 if self.gate == "all" else None


METHODS = {
    "seqft": Method(),
    "freeze_visual": Method(freeze_visual=True),
    "random_gate": Method(gate="random", calibration=True),
    "ewc": Method(ewc=True),
    "vngct_nocal": Method(gate="necessity"),
    "vngct": Method(gate="necessity", calibration=True),
}
MATCHED = {"random_gate": "vngct"}
"""Methods whose routing rates come from another method's run of the same seed."""
