"""The rows of trpr's table that route: how each one mixes its experts in training and at
inference.

* `ncm`: no adapters; nearest class mean on the frozen backbone's features (SimpleCIL).
* `adapter_ft`: one adapter per adapted block (expert 0 of each, weight 1: no routing),
  fine-tuned on every task in turn (Adapter-SeqFT).
* `moe`: MoE adapters with the router's own distribution p, in training and at inference.
* `trpr_inference` (what the design card's prototype found to work): plain routing in
  training; each class's anchor is its mean routing at the end of its task; at inference p is
  projected onto the KL ball around the image's soft anchor.
* `trpr_card` (the card as written): in training each image's routing is projected onto the
  ball around its label's anchor (the moving average of the class's routing while it trains)
  and fused with p by the learned gate; at inference the same with the soft anchor.
* `frozen_router`: plain MoE whose routers train on the first task only (the routing cannot
  drift; nor can it learn to route later tasks).
* `router_kl`, `lwf`, `ewc`: plain MoE with a penalty from the second task on
  (studies.trpr.penalties): the increment regulariser TRPR replaces (the routers' change),
  feature distillation, or elastic weight consolidation of the adapters.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Method:
    """What a row trains and how it routes (module docstring)."""

    adapters: bool = True
    single_expert: bool = False
    anchor: str | None = None
    train_projection: bool = False
    infer_projection: bool = False
    gate: bool = False
    router_first_task_only: bool = False
    penalty: str | None = None

    @property
    def routes(self) -> bool:
        """Whether the row mixes experts by a router (what the drift measures are about)."""
        return self.adapters and not self.single_expert

    @property
    def knob(self) -> str | None:
        """The setting the row's tuning job chooses: the trust region's radius δ of a projecting
        row, the weight of a penalised one, the learning rate of any other trained row (None for
        a row that trains nothing). A row whose knob is not the learning rate trains at plain
        MoE's tuned rate: it is plain MoE with one thing added, and one knob per row keeps
        every grid one-dimensional, so a grid of four points has no corner to win on."""
        if not self.adapters:
            return None
        if self.train_projection or self.infer_projection:
            return "delta"
        return "penalty_weight" if self.penalty else "lr"

    def __post_init__(self) -> None:
        if self.anchor not in (None, "mean", "ema"):
            raise ValueError(f"anchor {self.anchor!r}: expected None, 'mean' or 'ema'")
        projects = self.train_projection or self.infer_projection
        if projects and self.anchor is None:
            raise ValueError("a projecting method needs an anchor")
        if self.gate and not projects:
            raise ValueError("the gate fuses the projected path: a gated method must project")
        if self.single_expert and (projects or self.router_first_task_only):
            raise ValueError("a single-expert method has no routing to project or freeze")
        if self.penalty not in (None, "router_kl", "lwf", "ewc"):
            raise ValueError(f"penalty {self.penalty!r}: expected None, router_kl, lwf or ewc")


METHODS: dict[str, Method] = {
    "ncm": Method(adapters=False),
    "adapter_ft": Method(single_expert=True),
    "moe": Method(),
    "trpr_inference": Method(anchor="mean", infer_projection=True),
    "trpr_card": Method(anchor="ema", train_projection=True, infer_projection=True, gate=True),
    "frozen_router": Method(router_first_task_only=True),
    "router_kl": Method(penalty="router_kl"),
    "lwf": Method(penalty="lwf"),
    "ewc": Method(penalty="ewc"),
}
"""The routing rows, in table order."""
