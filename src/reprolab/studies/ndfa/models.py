"""Main networks as a chain of blocks, so feedback can be injected at every block output.

A network is ``blocks`` (each maps h_{l-1} to h_l; h_0 is the input) followed by ``head`` (the
output layer, which always gets its true local gradient). For the MLP a block is Linear + the
activation, so injecting δ_{h_l} at the block output and backpropagating inside the block gives
DFA's δ_{a_l} = δ_{h_l} ⊙ σ'(a_l). For the ResNet a block is one residual block (the stem is folded
into the first block), so feedback arrives at each residual block's output and backpropagation
stays inside the block.
"""

from __future__ import annotations

import torch
from torch import nn

ACTIVATIONS: dict[str, type[nn.Module]] = {"tanh": nn.Tanh, "relu": nn.ReLU}


class BlockNet(nn.Module):
    """A chain of blocks and an output head; exposes the per-block outputs the methods need."""

    def __init__(self, blocks: list[nn.Module], head: nn.Module) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.head = head

    def hidden(self, x: torch.Tensor, detach_inputs: bool) -> list[torch.Tensor]:
        """Return every block output h_1..h_L.

        With ``detach_inputs`` each block sees a detached copy of its input, so a backward call
        from h_l reaches only block l's parameters (the layer-local update of DFA-like methods).
        """
        outputs = []
        h = x
        for block in self.blocks:
            h = block(h.detach() if detach_inputs else h)
            outputs.append(h)
        return outputs

    def downstream(self, layer: int, h: torch.Tensor) -> torch.Tensor:
        """Map block output h_layer (0-based) to logits through the rest of the network."""
        for block in self.blocks[layer + 1 :]:
            h = block(h)
        return self.head(h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Ordinary forward pass to logits."""
        return self.head(self.hidden(x, detach_inputs=False)[-1])


def _mlp(task: dict, input_shape: tuple[int, ...], n_classes: int) -> BlockNet:
    """Fully connected net: Flatten → [Linear → activation] per hidden width → Linear head."""
    act = ACTIVATIONS[task["activation"]]
    widths = [int(torch.tensor(input_shape).prod()), *task["hidden"]]
    blocks: list[nn.Module] = []
    for i, (n_in, n_out) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
        layers: list[nn.Module] = [nn.Flatten()] if i == 0 else []
        blocks.append(nn.Sequential(*layers, nn.Linear(n_in, n_out), act()))
    return BlockNet(blocks, nn.Linear(widths[-1], n_classes))


class BasicBlock(nn.Module):
    """ResNet basic block: two 3x3 conv-BN layers, identity or 1x1 projection shortcut, ReLU."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False),
            nn.BatchNorm2d(c_out),
            nn.ReLU(),
            nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False),
            nn.BatchNorm2d(c_out),
        )
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out)
            )
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Residual sum followed by ReLU (the block output h_l that receives feedback)."""
        return self.act(self.body(x) + self.shortcut(x))


def _resnet(task: dict, input_shape: tuple[int, ...], n_classes: int) -> BlockNet:
    """CIFAR-style ResNet: 3x3 stem, stages of basic blocks (stride 2 between stages), GAP head.

    ``widths`` [64, 128, 256, 512] with ``blocks_per_stage`` [2, 2, 2, 2] is ResNet-18. The stem
    (conv-BN-ReLU) is folded into the first residual block, so every feedback target is a
    residual block output.
    """
    widths, depths = task["widths"], task["blocks_per_stage"]
    stem = nn.Sequential(
        nn.Conv2d(input_shape[0], widths[0], 3, 1, 1, bias=False),
        nn.BatchNorm2d(widths[0]),
        nn.ReLU(),
    )
    blocks: list[nn.Module] = []
    c_in = widths[0]
    for stage, (width, depth) in enumerate(zip(widths, depths, strict=True)):
        for i in range(depth):
            stride = 2 if stage > 0 and i == 0 else 1
            blocks.append(BasicBlock(c_in, width, stride))
            c_in = width
    blocks[0] = nn.Sequential(stem, blocks[0])
    head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c_in, n_classes))
    return BlockNet(blocks, head)


def build_network(task: dict, input_shape: tuple[int, ...], n_classes: int) -> BlockNet:
    """Build the main network named by ``task["arch"]`` (``"mlp"`` or ``"resnet"``)."""
    builders = {"mlp": _mlp, "resnet": _resnet}
    return builders[task["arch"]](task, input_shape, n_classes)
