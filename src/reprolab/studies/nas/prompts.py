"""The batch an editor reads for a group of requests: every request's prompt after every
opening, followed by the new answer's tokens but the last (editing.Batch).

Openings are the contexts a key and a target are averaged over (MEMIT's context templates):
filler words drawn from the fact world's openings at smoke scale, the texts the params list at
paper scale; the empty opening is always one of them.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedTokenizerBase

from reprolab.studies.nas.editing import IGNORE, Batch
from reprolab.studies.nas.requests import EditRequest
from reprolab.studies.nas.scoring import continuation_ids, padded


def edit_batch(
    tokenizer: PreTrainedTokenizerBase,
    requests: Sequence[EditRequest],
    openings: Sequence[str],
) -> Batch:
    """The batch of `requests` under each of `openings` (module docstring)."""
    pairs = [(owner, opening) for owner in range(len(requests)) for opening in openings]
    prompts = tokenizer([requests[owner].rewrite(opening) for owner, opening in pairs]).input_ids
    prefixes = tokenizer(
        [requests[owner].subject_prefix(opening) for owner, opening in pairs]
    ).input_ids
    answers = [continuation_ids(tokenizer, request.target_new) for request in requests]
    rows, positions, owners, label_rows = [], [], [], []
    for (owner, _), prompt, prefix in zip(pairs, prompts, prefixes, strict=True):
        answer = answers[owner]
        rows.append(prompt + answer[:-1])
        label_rows.append([IGNORE] * (len(prompt) - 1) + answer)
        positions.append(len(prefix) - 1)
        owners.append(owner)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    return Batch(
        {"input_ids": padded(rows, pad), "attention_mask": padded([[1] * len(r) for r in rows], 0)},
        torch.tensor(positions),
        torch.tensor(owners),
        padded(label_rows, IGNORE),
    )
