"""The small networks of the study: a frame encoder, TinyVLM, the captioner and the blind CNN.

`FrameEncoder` is a three-layer strided CNN (32 px frame → one vector); every image model of
the study uses it, so their perception has the same capacity. `TinyVLM` (see its docstring)
encodes each option with a one-layer text transformer (text mode) or its own `FrameEncoder`
(visual mode) and compares it with the frames the question points at; the four scores go
through a softmax (cross-entropy on the answer). `Captioner` reads a symbolic state off one
image (per shape: present, colour, cell).
"""

from __future__ import annotations

import torch
from torch import nn

from reprolab.preprocess.video.synth import COLOURS, GRID, SHAPES


class FrameEncoder(nn.Module):
    """uint8-range RGB images [..., H, W, 3] (H = W = image_size, a multiple of 8) → [..., dim]."""

    def __init__(
        self, dim: int, image_size: int, channels: tuple[int, int, int] = (16, 32, 32)
    ) -> None:
        super().__init__()
        c1, c2, c3 = channels
        side = image_size // 8
        self.net = nn.Sequential(
            nn.Conv2d(3, c1, 4, stride=2, padding=1),
            nn.GroupNorm(4, c1),
            nn.ReLU(),
            nn.Conv2d(c1, c2, 3, stride=2, padding=1),
            nn.GroupNorm(4, c2),
            nn.ReLU(),
            nn.Conv2d(c2, c3, 3, stride=2, padding=1),
            nn.GroupNorm(4, c3),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(c3 * side * side, dim),
        )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        lead = images.shape[:-3]
        x = images.reshape(-1, *images.shape[-3:]).permute(0, 3, 1, 2).float() / 255.0
        return self.net(x - 0.5).reshape(*lead, -1)


def _encoder(dim: int, layers: int, heads: int) -> nn.TransformerEncoder:
    layer = nn.TransformerEncoderLayer(
        dim, heads, dim_feedforward=2 * dim, dropout=0.0, batch_first=True, norm_first=True
    )
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


class TinyVLM(nn.Module):
    """Video + question + 4 options (text token ids or images) → 4 scores.

    Frames, option images and option sentences are embedded into one space (the alignment
    stage of `tinyvlm.train_tinyvlm` makes them agree); `forward` takes the encoded frames and
    options, so a caller with frozen encoders can compute them once. A transformer over the
    frame and question tokens decides *where to look*: one weight per frame plus one for a predicted
    future embedding (read from the same tokens). An option's score is the log of the
    weighted sum of exp(similarity / temperature) between the option and those candidates,
    so the model answers "is this option what the question points at in the video?".
    """

    def __init__(
        self,
        vocab_size: int,
        max_frames: int,
        image_size: int,
        dim: int = 64,
        layers: int = 2,
        heads: int = 4,
        temperature: float = 0.1,
    ) -> None:
        super().__init__()
        self.frames = FrameEncoder(dim, image_size)
        self.option_images = FrameEncoder(dim, image_size)
        self.words = nn.Embedding(vocab_size, dim, padding_idx=0)
        self.time = nn.Parameter(torch.zeros(max_frames + 1, dim))
        self.kind = nn.Parameter(torch.zeros(3, dim))  # frame token, question word, future slot
        self.context = _encoder(dim, layers, heads)
        self.option_text = _encoder(dim, 1, heads)
        self.where = nn.Linear(dim, 1)
        self.future = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.temperature = temperature
        nn.init.normal_(self.time, std=0.02)
        nn.init.normal_(self.kind, std=0.02)

    def embed_sentences(self, ids: torch.Tensor) -> torch.Tensor:
        """Sentence vectors [..., dim] from token ids [..., L] (mean over the real tokens)."""
        flat = ids.reshape(-1, ids.shape[-1])
        hidden = self.option_text(self.words(flat), src_key_padding_mask=flat == 0)
        keep = (flat != 0).unsqueeze(-1).float()
        pooled = (hidden * keep).sum(1) / keep.sum(1).clamp(min=1.0)
        return pooled.reshape(*ids.shape[:-1], -1)

    def encode_options(self, options: torch.Tensor, visual: bool) -> torch.Tensor:
        """Option vectors [B, 4, dim] from token ids [B, 4, L] or images [B, 4, H, W, 3]."""
        return self.option_images(options) if visual else self.embed_sentences(options)

    def candidates(
        self, frames: torch.Tensor, frame_mask: torch.Tensor, question: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Candidate embeddings [B, T+1, dim] and their log-weights [B, T+1], from frame
        vectors [B, T, dim] (`self.frames` of the clip), valid where frame_mask."""
        b, t = frames.shape[:2]
        slot = self.kind[2].expand(b, 1, -1)
        tokens = torch.cat(
            [frames + self.time[:t] + self.kind[0], slot + self.time[t], self.words(question)],
            dim=1,
        )
        ones = torch.ones(b, 1, dtype=torch.bool, device=frames.device)
        valid = torch.cat([frame_mask, ones, question != 0], dim=1)
        hidden = self.context(tokens, src_key_padding_mask=~valid)
        where = self.where(hidden[:, : t + 1]).squeeze(-1)
        where = where.masked_fill(~valid[:, : t + 1], float("-inf"))
        predicted = self.future(hidden[:, t])
        return torch.cat([frames, predicted.unsqueeze(1)], dim=1), where.log_softmax(-1)

    def forward(
        self,
        frames: torch.Tensor,
        frame_mask: torch.Tensor,
        question: torch.Tensor,
        options: torch.Tensor,
    ) -> torch.Tensor:
        """Scores [B, 4] from frame vectors [B, T, dim] and option vectors [B, 4, dim]."""
        cands, log_w = self.candidates(frames, frame_mask, question)
        opts = nn.functional.normalize(options, dim=-1)
        sims = opts @ nn.functional.normalize(cands, dim=-1).transpose(1, 2)  # [B, 4, T+1]
        return torch.logsumexp(sims / self.temperature + log_w.unsqueeze(1), dim=-1)


class Captioner(nn.Module):
    """One image → per shape: presence logit, colour logits, cell logits."""

    def __init__(self, image_size: int, dim: int = 64) -> None:
        super().__init__()
        self.encoder = FrameEncoder(dim, image_size)
        n = len(SHAPES)
        self.present = nn.Linear(dim, n)
        self.colour = nn.Linear(dim, n * len(COLOURS))
        self.cell = nn.Linear(dim, n * GRID * GRID)

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        h = torch.relu(self.encoder(images))
        n = len(SHAPES)
        lead = h.shape[:-1]
        return (
            self.present(h),
            self.colour(h).reshape(*lead, n, len(COLOURS)),
            self.cell(h).reshape(*lead, n, GRID * GRID),
        )


class OptionScorer(nn.Module):
    """Blind visual baseline: one option image → a score (never sees video or question)."""

    def __init__(self, image_size: int, dim: int = 64) -> None:
        super().__init__()
        self.encoder = FrameEncoder(dim, image_size)
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(dim, 1))

    def forward(self, options: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(options)).squeeze(-1)
