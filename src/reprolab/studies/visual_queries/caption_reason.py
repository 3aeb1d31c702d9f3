"""Caption-then-reason: a learned captioner turns images into symbolic states, rules answer.

The captioner (`models.Captioner`) is trained on single video frames of the training videos
against their annotated states: per shape whether it is present, its colour and its cell
(sprites hidden by the occluder still count as present, as in the annotation). The reasoner
then works on captions only:

- the collision frame is the first visible frame whose captioned colour of some shape
  differs from frame 0's (frame 1 if none does);
- `tfr` predicts the caption one frame after it, `cmd` the caption one frame before it;
- `vfp` moves each captioned sprite from its cell in the last visible frame by its cell
  displacement per frame (last frame minus first, over the frames between), rounded, for
  `vfp_horizon` frames, clamped to the grid (no bounces or collisions: a rule-level physics).

Options are read the same way as frames: text options parsed, image options captioned
(visual mode, so the captioner's errors on re-rendered states count against it). The
option with the fewest (shape, colour, cell) mismatches against the prediction wins
(ties → lowest slot).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from reprolab.core.progress import progress
from reprolab.preprocess.video.synth import GRID, SHAPES, State, cell_of
from reprolab.studies.visual_queries.dataset import Corpus
from reprolab.studies.visual_queries.items import Item, mismatches
from reprolab.studies.visual_queries.models import Captioner
from reprolab.studies.visual_queries.text import text_to_state
from reprolab.studies.visual_queries.views import cached_option_images, option_texts

ABSENT = -1


def frame_targets(corpus: Corpus, videos: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Training images [M,H,W,3] and targets [M, shapes, 3] (present, colour, cell)."""
    images, targets = [], []
    for name in videos:
        scene = corpus.scenes[name]
        clip = corpus.clip(name)
        for t in range(len(clip)):
            target = np.full((len(SHAPES), 3), ABSENT, dtype=np.int64)
            target[:, 0] = 0
            for k, shape in enumerate(scene.shapes):
                cell = cell_of(scene.positions[t, k], corpus.spec.size)
                target[shape] = (1, scene.colours[t, k], cell)
            images.append(clip[t])
            targets.append(target)
    return np.stack(images), np.stack(targets)


def train_captioner(
    corpus: Corpus,
    videos: Sequence[str],
    seed: int,
    cfg: dict[str, Any],
    show_progress: bool = False,
) -> Captioner:
    """Fit the captioner on the frames of `videos`."""
    images, targets = frame_targets(corpus, videos)
    images_t, targets_t = torch.from_numpy(images), torch.from_numpy(targets)
    rng = np.random.default_rng(seed)
    model = Captioner(corpus.spec.size)
    optimizer = torch.optim.AdamW(model.parameters(), lr=float(cfg["lr"]))
    ce = torch.nn.functional.cross_entropy
    for _ in progress(range(int(cfg["steps"])), "captioner", enabled=show_progress):
        pick = torch.from_numpy(rng.integers(len(images), size=int(cfg["batch_size"])))
        present, colour, cell = model(images_t[pick])
        target = targets_t[pick]
        here = target[..., 0] == 1
        loss = torch.nn.functional.binary_cross_entropy_with_logits(present, target[..., 0].float())
        if here.any():
            loss = (
                loss + ce(colour[here], target[..., 1][here]) + ce(cell[here], target[..., 2][here])
            )
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


def caption(model: Captioner, images: np.ndarray) -> list[State]:
    """Symbolic states read off images [N,H,W,3]."""
    with torch.inference_mode():
        present, colour, cell = model(torch.from_numpy(images))
    states = []
    for p, c, g in zip(
        present.numpy(), colour.argmax(-1).numpy(), cell.argmax(-1).numpy(), strict=True
    ):
        states.append(tuple((s, int(c[s]), int(g[s])) for s in range(len(SHAPES)) if p[s] > 0))
    return states


def _collision_frame(captions: list[State]) -> int:
    """First frame whose colour of some shape differs from frame 0's (1 if none)."""
    first = {shape: colour for shape, colour, _ in captions[0]}
    for t, state in enumerate(captions[1:], start=1):
        if any(first.get(shape, colour) != colour for shape, colour, _ in state):
            return t
    return 1


def _extrapolate(captions: list[State], horizon: int) -> State:
    """Each sprite's cell moved on by its mean cell displacement per frame (see docstring)."""
    first = {shape: cell for shape, _, cell in captions[0]}
    steps = max(len(captions) - 1, 1)
    moved = []
    for shape, colour, cell in captions[-1]:
        row, col = divmod(cell, GRID)
        row0, col0 = divmod(first.get(shape, cell), GRID)
        row_new = int(np.clip(round(row + (row - row0) / steps * horizon), 0, GRID - 1))
        col_new = int(np.clip(round(col + (col - col0) / steps * horizon), 0, GRID - 1))
        moved.append((shape, colour, row_new * GRID + col_new))
    return tuple(sorted(moved))


def predict_state(captions: list[State], family: str, horizon: int) -> State:
    """The reasoner's predicted answer state from the captions of the visible frames."""
    if family == "vfp":
        return _extrapolate(captions, horizon)
    t = _collision_frame(captions)
    return captions[min(t + 1, len(captions) - 1)] if family == "tfr" else captions[t - 1]


def caption_reason(
    model: Captioner,
    items: Sequence[Item],
    corpus: Corpus,
    mode: str,
    seed: int,
    params: dict[str, Any],
    image_cache: dict[str, np.ndarray] | None = None,
) -> np.ndarray:
    """Answers of caption-then-reason on `items` in `mode` (option images taken from
    `image_cache` where drawn before, `views.cached_option_images`)."""
    horizon = int(params["items"]["vfp_horizon"])
    answers, clip_captions = [], {}
    for item in items:
        seen = (item.video, item.n_frames)  # TFR and CMD items of a video see the same frames
        if seen not in clip_captions:
            clip_captions[seen] = caption(model, corpus.clip(item.video)[: item.n_frames])
        captions = clip_captions[seen]
        predicted = predict_state(captions, item.family, horizon)
        if mode == "text":
            options = [text_to_state(t) for t in option_texts(item)]
        else:
            images = cached_option_images(item, seed, corpus.spec, params["render"], image_cache)
            options = caption(model, images)
        answers.append(int(np.argmin([mismatches(predicted, o) for o in options])))
    return np.asarray(answers)


def caption_accuracy(model: Captioner, corpus: Corpus, videos: Sequence[str]) -> dict[str, float]:
    """Per-attribute accuracy (%) of the captioner on the frames of `videos`."""
    images, targets = frame_targets(corpus, videos)
    with torch.inference_mode():
        present, colour, cell = model(torch.from_numpy(images))
    here = targets[..., 0] == 1
    return {
        "present": 100.0 * float(((present.numpy() > 0) == here).mean()),
        "colour": 100.0 * float((colour.argmax(-1).numpy()[here] == targets[..., 1][here]).mean()),
        "cell": 100.0 * float((cell.argmax(-1).numpy()[here] == targets[..., 2][here]).mean()),
    }
