"""One training run: a method, a task, a seed → metrics and per-epoch curves.

All methods share, for a given seed, the same initial network, the same fixed matrices B_l and
the same minibatch order (paired design); only the rule that produces the hidden-layer signal
differs. BP backpropagates through the whole network. The other methods compute the output
error e = ∂L/∂ŷ, update the head with its true local gradient, and inject their feedback at each
block output with a block-local backward call (each block's input is detached).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from reprolab.core.determinism import derive_seed, resolve_device, seed_everything
from reprolab.studies.ndfa.data import Split
from reprolab.studies.ndfa.feedback import METHODS, DirectFeedback, alignment, build_feedback
from reprolab.studies.ndfa.models import BlockNet, build_network

__all__ = ["METHODS", "RunResult", "train_run"]


@dataclass
class RunResult:
    """Scalar metrics of the finished run and its per-epoch curves."""

    metrics: dict[str, float]
    curves: dict[str, np.ndarray]


def output_error(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """e = ∂L/∂ŷ for the batch-mean cross-entropy: (softmax(ŷ) − onehot(y)) / batch size."""
    onehot = F.one_hot(y, logits.shape[1]).to(logits.dtype)
    return (torch.softmax(logits.detach(), 1) - onehot) / logits.shape[0]


def true_hidden_grads(
    net: BlockNet, x: torch.Tensor, y: torch.Tensor
) -> tuple[list[torch.Tensor], torch.Tensor]:
    """BP's ∂L/∂h_l for every block output and the logits (diagnostic; touches no .grad)."""
    hs = net.hidden(x, detach_inputs=False)
    logits = net.head(hs[-1])
    grads = torch.autograd.grad(F.cross_entropy(logits, y), hs)
    return list(grads), logits


def step(net: BlockNet, feedback: DirectFeedback | None, x: torch.Tensor, y: torch.Tensor) -> float:
    """Accumulate this batch's parameter gradients for the method; return the batch loss."""
    if feedback is None:
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        return float(loss.detach())
    hs = net.hidden(x, detach_inputs=True)
    logits = net.head(hs[-1].detach())
    loss = F.cross_entropy(logits, y)
    loss.backward()
    e = output_error(logits, y)
    deltas = feedback.learn_and_feedback(hs, logits, e, net)
    torch.autograd.backward(hs, deltas)
    return float(loss.detach())


def method_alignment(
    net: BlockNet, feedback: DirectFeedback | None, x: torch.Tensor, y: torch.Tensor
) -> list[float]:
    """Per-layer cosine between the method's feedback and the true gradient on a fixed batch."""
    grads, logits = true_hidden_grads(net, x, y)
    if feedback is None:
        return alignment(grads, grads)
    hs = net.hidden(x, detach_inputs=True)
    return alignment(feedback.feedback(hs, output_error(logits, y)), grads)


@torch.no_grad()
def accuracy(net: BlockNet, x: torch.Tensor, y: torch.Tensor, batch_size: int) -> float:
    """Classification accuracy in eval mode, computed in chunks of `batch_size`."""
    correct = 0
    for i in range(0, len(x), batch_size):
        correct += int((net(x[i : i + batch_size]).argmax(1) == y[i : i + batch_size]).sum())
    return correct / len(x)


def augment(x: torch.Tensor, kind: str, generator: torch.Generator) -> torch.Tensor:
    """Per-image augmentation named by the task: ``none``, ``crop`` or ``crop_flip``.

    ``crop`` is the standard random crop of the 4-pixel zero-padded image; ``crop_flip`` adds a
    random horizontal flip (CIFAR). SVHN uses ``crop`` only, since flipped digits change meaning.
    """
    if kind == "none":
        return x
    n, _, hgt, wid = x.shape
    padded = F.pad(x, (4, 4, 4, 4))
    dy = torch.randint(0, 9, (n, 1, 1), generator=generator, device=x.device)
    dx = torch.randint(0, 9, (n, 1, 1), generator=generator, device=x.device)
    rows = (torch.arange(hgt, device=x.device).view(1, hgt, 1) + dy).expand(n, hgt, wid)
    cols = (torch.arange(wid, device=x.device).view(1, 1, wid) + dx).expand(n, hgt, wid)
    idx = torch.arange(n, device=x.device).view(n, 1, 1).expand(n, hgt, wid)
    out = padded.permute(0, 2, 3, 1)[idx, rows, cols].permute(0, 3, 1, 2)
    if kind == "crop":
        return out
    flip = torch.rand(n, generator=generator, device=x.device) < 0.5
    return torch.where(flip.view(n, 1, 1, 1), out.flip(3), out)


def make_optimizer(params, train: dict) -> torch.optim.Optimizer:
    """The main network's optimiser, identical for every method (``adam`` or ``sgd``)."""
    if train["optimizer"] == "adam":
        return torch.optim.Adam(
            params, lr=train["lr"], weight_decay=train["weight_decay"], foreach=True
        )
    return torch.optim.SGD(
        params, lr=train["lr"], momentum=train["momentum"], weight_decay=train["weight_decay"]
    )


def train_run(
    task: dict,
    method: str,
    train: dict,
    surrogate: dict,
    split: Split,
    seed: int,
    threads: int,
    progress: bool = True,
) -> RunResult:
    """Train one network with `method` on `split` and return metrics and curves.

    Seeds are derived from `seed` alone (not the method), so every method starts from the same
    weights, B matrices and batch order. Metrics: final test/train accuracy, last-epoch mean
    training loss, final per-layer alignment and its mean over layers.

    oneDNN is switched off: with torch 2.13 its CPU convolution backward at the pinned AVX2 level
    (`ONEDNN_MAX_CPU_ISA=AVX2`) corrupts the heap on AMD EPYC processors ("corrupted size vs.
    prev_size" in the tiny-ResNet test; at the processor's native AVX-512 level it does not), so
    convolutions run on ATen's own kernels. The MLPs of the smoke tasks do not use oneDNN (their
    runs are bit-identical either way); on a GPU it is not used at all. Only the switch itself
    is set: `torch.backends.mkldnn.flags()` would also reset oneDNN's TF32 and precision switches.
    """
    previous = torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = False
    try:
        return _train_run(task, method, train, surrogate, split, seed, threads, progress)
    finally:
        torch.backends.mkldnn.enabled = previous


def _train_run(
    task: dict,
    method: str,
    train: dict,
    surrogate: dict,
    split: Split,
    seed: int,
    threads: int,
    progress: bool,
) -> RunResult:
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
    seed_everything(derive_seed(seed, "ndfa", "init"), threads)
    device = resolve_device(train["device"])
    net = build_network(task, split.input_shape, split.n_classes).to(device)
    x_tr = torch.from_numpy(split.X_train).to(device)
    y_tr = torch.from_numpy(split.y_train).to(device)
    x_te = torch.from_numpy(split.X_test).to(device)
    y_te = torch.from_numpy(split.y_test).to(device)
    net.eval()  # shape probe must not touch BatchNorm running statistics
    with torch.no_grad():
        shapes = [tuple(h.shape[1:]) for h in net.hidden(x_tr[:2], detach_inputs=False)]
    generator = torch.Generator(device=device).manual_seed(derive_seed(seed, "ndfa", "feedback"))
    feedback = build_feedback(method, shapes, split.n_classes, surrogate, generator)
    optimizers = [make_optimizer(net.parameters(), train)]
    if feedback is not None and any(True for _ in feedback.parameters()):
        feedback.to(device)
        optimizers.append(torch.optim.Adam(feedback.parameters(), lr=surrogate["lr"], foreach=True))
    epochs = train["epochs"]
    schedule = None
    if train["schedule"] == "cosine":
        schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizers[0], T_max=epochs)
    order = np.random.default_rng(derive_seed(seed, "ndfa", "batches"))
    x_al, y_al = x_tr[: train["align_batch"]], y_tr[: train["align_batch"]]
    batch = train["batch_size"]
    curves: dict[str, list] = {"test_accuracy": [], "train_loss": [], "alignment": []}
    for _ in tqdm(range(epochs), desc=f"ndfa {method}", disable=not progress, file=sys.stderr):
        net.train()
        perm = torch.from_numpy(order.permutation(len(x_tr))).to(device)
        losses = []
        for i in range(0, len(perm) - batch + 1, batch):
            idx = perm[i : i + batch]
            xb = augment(x_tr[idx], task["augment"], generator)
            for opt in optimizers:
                opt.zero_grad(set_to_none=True)
            losses.append(step(net, feedback, xb, y_tr[idx]))
            for opt in optimizers:
                opt.step()
        if schedule is not None:
            schedule.step()
        net.eval()
        curves["train_loss"].append(float(np.mean(losses)))
        curves["test_accuracy"].append(accuracy(net, x_te, y_te, train["eval_batch_size"]))
        curves["alignment"].append(method_alignment(net, feedback, x_al, y_al))
    final_align = curves["alignment"][-1]
    metrics = {
        "test_accuracy": curves["test_accuracy"][-1],
        "train_accuracy": accuracy(net, x_tr, y_tr, train["eval_batch_size"]),
        "final_loss": curves["train_loss"][-1],
        "mean_alignment": float(np.mean(final_align)),
        **{f"alignment_layer{i}": a for i, a in enumerate(final_align, start=1)},
    }
    return RunResult(
        metrics=metrics,
        curves={
            "epoch": np.arange(1, epochs + 1, dtype=np.int64),
            "test_accuracy": np.asarray(curves["test_accuracy"], dtype=np.float64),
            "train_loss": np.asarray(curves["train_loss"], dtype=np.float64),
            "alignment": np.asarray(curves["alignment"], dtype=np.float64),
        },
    )
