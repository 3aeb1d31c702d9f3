"""Training and evaluating TinyVLM: an alignment stage, then multiple-choice tuning.

1. Alignment (as a VLM's projector pre-training): single training frames, images of their
   states drawn by the option renderer, and the states' sentences are pulled together by a
   symmetric InfoNCE loss (frame↔sentence and rendered↔sentence), so the frame encoder, the
   option-image encoder and the sentence encoder share one space before any question is seen.
2. Tuning: batches of training items with cross-entropy over the four options. Each batch is
   in one mode; the share of visual batches is `visual_share` (0.5 for the balanced model,
   0.1 for the text-heavy probe), drawn per step from the job's seed. With `freeze_encoders`
   the three encoders and the word embeddings keep their aligned weights (as a VLM keeps its
   vision tower frozen) and only the video-question transformer and its heads learn; the
   frame vectors of every clip are then computed once. A prototype that tuned everything end
   to end fell back to chance within 200 steps (the question loss undid the alignment);
   frozen, it learned two of the three families within the same budget.

Both stages use AdamW, with the learning rate of TinyVLM's tuning record, and the same budget
for every variant. The alignment batches (`align_batches`) depend on the seed and the data
only, so a tuning job draws them once per tuning seed for every grid point (`views.Renders`).
Training item options are rendered with the training seed's renders; test options with the
evaluation renders. A `Batch` stacks items in one mode as tensors (options drawn by `views`):
frames past an item's visible count are zeroed and masked out.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from reprolab.core.determinism import derive_seed
from reprolab.core.progress import progress
from reprolab.preprocess.video.synth import render_state, state_at
from reprolab.studies.visual_queries.dataset import Corpus
from reprolab.studies.visual_queries.items import Item
from reprolab.studies.visual_queries.models import TinyVLM
from reprolab.studies.visual_queries.text import encode, state_to_text
from reprolab.studies.visual_queries.views import (
    Renders,
    cached_option_images,
    option_texts,
    question_text,
)


@dataclass(frozen=True)
class Batch:
    """A stack of items as tensors: video [B,T,H,W,3], mask [B,T], question ids, options."""

    video: torch.Tensor
    mask: torch.Tensor
    question: torch.Tensor
    options: torch.Tensor
    answer: torch.Tensor
    visual: bool


def make_batch(
    items: Sequence[Item],
    corpus: Corpus,
    visual: bool,
    vocabulary: dict[str, int],
    lengths: dict[str, int],
    seed: int,
    render: dict[str, Any],
    image_cache: dict[str, np.ndarray] | None = None,
) -> Batch:
    """Tensors for `items` in one mode; `lengths` gives the question and option token lengths.

    An item's option images depend only on (seed, item, render), so a caller that batches the
    same items again can pass `image_cache` (item id → images) to draw them once."""
    videos, masks, questions, options = [], [], [], []
    for item in items:
        clip = corpus.clip(item.video).copy()
        mask = np.arange(len(clip)) < item.n_frames
        clip[~mask] = 0
        videos.append(clip)
        masks.append(mask)
        questions.append(encode(question_text(item), vocabulary, lengths["question"]))
        if visual:
            options.append(cached_option_images(item, seed, corpus.spec, render, image_cache))
        else:
            options.append([encode(t, vocabulary, lengths["option"]) for t in option_texts(item)])
    return Batch(
        video=torch.from_numpy(np.stack(videos)),
        mask=torch.from_numpy(np.stack(masks)),
        question=torch.tensor(questions),
        options=torch.from_numpy(np.asarray(np.stack(options))),
        answer=torch.tensor([item.answer_idx for item in items]),
        visual=visual,
    )


def _info_nce(a: torch.Tensor, b: torch.Tensor, temperature: float) -> torch.Tensor:
    """Symmetric InfoNCE between two aligned batches of vectors."""
    a, b = F.normalize(a, dim=-1), F.normalize(b, dim=-1)
    logits = a @ b.T / temperature
    labels = torch.arange(len(a))
    return F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels)


AlignBatch = tuple[torch.Tensor, torch.Tensor, torch.Tensor]
"""One alignment step's frames [B,H,W,3], images of their states [B,H,W,3] and sentence ids."""


def align_batches(
    corpus: Corpus,
    videos: Sequence[str],
    vocabulary: dict[str, int],
    seed: int,
    params: dict[str, Any],
) -> Iterator[AlignBatch]:
    """Stage 1's batches, step by step: random frames of `videos`, their states drawn by the
    option renderer and the states' sentences, all from derive_seed(seed, "align"). They do
    not depend on the model or its learning rate."""
    cfg, render = params["tinyvlm"]["align"], params["render"]
    rng = np.random.default_rng(derive_seed(seed, "align"))
    length = int(params["lengths"]["option"])
    for _ in range(int(cfg["steps"])):
        picks = [
            (videos[int(v)], int(t))
            for v, t in zip(
                rng.integers(len(videos), size=int(cfg["batch_size"])),
                rng.integers(corpus.spec.frames, size=int(cfg["batch_size"])),
                strict=True,
            )
        ]
        states = [state_at(corpus.scenes[v], t, corpus.spec.size) for v, t in picks]
        frames = torch.from_numpy(np.stack([corpus.clip(v)[t] for v, t in picks]))
        drawn = np.stack(
            [
                render_state(
                    s,
                    int(rng.integers(2**31)),
                    corpus.spec,
                    jitter=float(render["jitter"]),
                    scale_jitter=float(render["scale_jitter"]),
                )
                for s in states
            ]
        )
        sentences = torch.tensor([encode(state_to_text(s), vocabulary, length) for s in states])
        yield frames, torch.from_numpy(drawn), sentences


def align(
    model: TinyVLM,
    optimizer: torch.optim.Optimizer,
    batches: Iterable[AlignBatch],
    params: dict[str, Any],
    show_progress: bool,
) -> list[float]:
    """Stage 1 (see the module docstring) on `batches` (`align_batches`); the loss per step."""
    cfg = params["tinyvlm"]["align"]
    temperature, losses = float(cfg["temperature"]), []
    steps = progress(batches, "tinyvlm align", total=int(cfg["steps"]), enabled=show_progress)
    for frames, drawn, sentences in steps:
        text = model.embed_sentences(sentences)
        loss = _info_nce(model.frames(frames), text, temperature) + _info_nce(
            model.option_images(drawn), text, temperature
        )
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


ENCODERS = ("frames", "option_images", "words", "option_text")


def frame_cache(model: TinyVLM, corpus: Corpus) -> dict[str, torch.Tensor]:
    """Frame vectors [T, dim] of every clip, for a model whose frame encoder is frozen."""
    with torch.no_grad():
        return {name: model.frames(torch.from_numpy(corpus.clip(name))) for name in corpus.names}


def scores(
    model: TinyVLM, batch: Batch, items: Sequence[Item], cache: dict[str, torch.Tensor] | None
) -> torch.Tensor:
    """Option scores [B, 4] of a batch; frame and option vectors come from the frozen
    encoders (without gradients) when a cache is given, else through the encoders."""
    if cache is None:
        return model(
            model.frames(batch.video),
            batch.mask,
            batch.question,
            model.encode_options(batch.options, batch.visual),
        )
    frames = torch.stack([cache[item.video] for item in items])
    with torch.no_grad():
        options = model.encode_options(batch.options, batch.visual)
    return model(frames, batch.mask, batch.question, options)


def tune(
    model: TinyVLM,
    corpus: Corpus,
    train: Sequence[Item],
    vocabulary: dict[str, int],
    seed: int,
    visual_share: float,
    params: dict[str, Any],
    show_progress: bool,
    image_cache: dict[str, np.ndarray] | None = None,
) -> tuple[list[float], dict[str, torch.Tensor] | None]:
    """Stage 2 (see the module docstring); the loss per step and the frame cache (if frozen).
    Option images are drawn once per item, into `image_cache` when one is given."""
    cfg = params["tinyvlm"]["tune"]
    cache = None
    if cfg["freeze_encoders"]:
        for name in ENCODERS:
            getattr(model, name).requires_grad_(False)
        cache = frame_cache(model, corpus)
    optimizer = _optimizer(model, params)
    rng = np.random.default_rng(derive_seed(seed, "tune"))
    losses, images = [], {} if image_cache is None else image_cache
    for _ in progress(range(int(cfg["steps"])), "tinyvlm tune", enabled=show_progress):
        visual = bool(rng.random() < visual_share)
        picks = [train[int(k)] for k in rng.integers(len(train), size=int(cfg["batch_size"]))]
        batch = make_batch(
            picks, corpus, visual, vocabulary, params["lengths"], seed, params["render"], images
        )
        loss = F.cross_entropy(scores(model, batch, picks, cache), batch.answer)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, cache


def _optimizer(model: TinyVLM, params: dict[str, Any]) -> torch.optim.Optimizer:
    """AdamW over the parameters that learn."""
    cfg = params["tinyvlm"]
    return torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad],
        lr=float(cfg["lr"]),
        weight_decay=float(cfg["weight_decay"]),
    )


def train_tinyvlm(
    corpus: Corpus,
    train: Sequence[Item],
    train_videos: Sequence[str],
    vocabulary: dict[str, int],
    seed: int,
    visual_share: float,
    params: dict[str, Any],
    show_progress: bool = False,
    renders: Renders | None = None,
) -> tuple[TinyVLM, dict[str, list[float]], dict[str, torch.Tensor] | None]:
    """Both stages; returns the model (eval mode), its loss curves and the frame cache. With
    `renders` the alignment batches and option images drawn by an earlier call of the same
    seed are reused, and those drawn now are kept there."""
    cfg = params["tinyvlm"]
    model = TinyVLM(
        len(vocabulary),
        corpus.spec.frames,
        corpus.spec.size,
        dim=int(cfg["dim"]),
        layers=int(cfg["layers"]),
        heads=int(cfg["heads"]),
        temperature=float(cfg["temperature"]),
    )
    batches: Iterable[AlignBatch] = align_batches(
        corpus, list(train_videos), vocabulary, seed, params
    )
    if renders is not None:
        renders.align = renders.align or list(batches)
        batches = renders.align
    curves = {"align": align(model, _optimizer(model, params), batches, params, show_progress)}
    curves["tune"], cache = tune(
        model,
        corpus,
        train,
        vocabulary,
        seed,
        visual_share,
        params,
        show_progress,
        None if renders is None else renders.option_images,
    )
    return model.eval(), curves, cache


def answer(
    model: TinyVLM,
    items: Sequence[Item],
    corpus: Corpus,
    visual: bool,
    vocabulary: dict[str, int],
    seed: int,
    params: dict[str, Any],
    cache: dict[str, torch.Tensor] | None = None,
    image_cache: dict[str, np.ndarray] | None = None,
) -> np.ndarray:
    """TinyVLM's answers on `items` in one mode, in batches of the tuning batch size (option
    images taken from `image_cache` where drawn before)."""
    size = int(params["tinyvlm"]["tune"]["batch_size"])
    answers = []
    with torch.inference_mode():
        for start in range(0, len(items), size):
            chunk = items[start : start + size]
            batch = make_batch(
                chunk,
                corpus,
                visual,
                vocabulary,
                params["lengths"],
                seed,
                params["render"],
                image_cache,
            )
            answers.append(scores(model, batch, chunk, cache).argmax(-1).numpy())
    return np.concatenate(answers) if answers else np.zeros(0, dtype=int)
