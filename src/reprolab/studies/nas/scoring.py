"""How an edited model is scored: the log-probability of each candidate answer after a prompt,
and the share of prompts whose wanted answer beats every other candidate.

A candidate is the tokens of ``" " + answer`` appended to the prompt's tokens (tokenised apart,
as ROME does, so the prompt's tokens never change with the answer); its score is the sum of
its tokens' log-probabilities. Where every candidate is one token (the fact world's objects)
one forward pass per prompt scores them all.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedTokenizerBase

BATCH = 128


def continuation_ids(tokenizer: PreTrainedTokenizerBase, answer: str) -> list[int]:
    """The tokens of `answer` as it follows a prompt (after a space)."""
    return tokenizer(f" {answer}", add_special_tokens=False).input_ids


def padded(rows: Sequence[Sequence[int]], fill: int) -> torch.Tensor:
    """The rows as one right-padded (rows, longest) tensor, `fill` after each row's end."""
    out = torch.full((len(rows), max(len(row) for row in rows)), fill, dtype=torch.long)
    for index, row in enumerate(rows):
        out[index, : len(row)] = torch.tensor(row, dtype=torch.long)
    return out


@torch.no_grad()
def _forward_padded(model: torch.nn.Module, rows: list[list[int]], pad: int) -> torch.Tensor:
    """Log-probabilities of a right-padded batch of token rows, (rows, length, vocabulary)."""
    ids = padded(rows, pad).to(model.device)
    mask = padded([[1] * len(row) for row in rows], 0).to(model.device)
    return model(input_ids=ids, attention_mask=mask).logits.log_softmax(dim=-1)


def candidate_scores(
    model: torch.nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    prompts: Sequence[str],
    candidates: Sequence[Sequence[str]],
) -> list[list[float]]:
    """For each prompt, the summed log-probability of each of its candidates."""
    model.eval()
    prompt_ids = tokenizer(list(prompts)).input_ids
    distinct = {
        answer: continuation_ids(tokenizer, answer) for group in candidates for answer in group
    }
    answers = [[distinct[a] for a in group] for group in candidates]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    if all(len(ids) == 1 for group in answers for ids in group):
        scores = []
        for start in range(0, len(prompts), BATCH):
            rows = prompt_ids[start : start + BATCH]
            logprobs = _forward_padded(model, rows, pad)
            for index, row in enumerate(rows):
                wanted = [ids[0] for ids in answers[start + index]]
                scores.append(logprobs[index, len(row) - 1, wanted].tolist())
        return scores
    pairs = [(p, i, a) for p, group in enumerate(answers) for i, a in enumerate(group)]
    flat: list[float] = []
    for start in range(0, len(pairs), BATCH):
        chunk = pairs[start : start + BATCH]
        rows = [prompt_ids[p] + a for p, _, a in chunk]
        logprobs = _forward_padded(model, rows, pad)
        for index, (p, _, a) in enumerate(chunk):
            begin = len(prompt_ids[p])
            positions = torch.arange(begin - 1, begin - 1 + len(a), device=logprobs.device)
            tokens = torch.tensor(a, device=logprobs.device)
            flat.append(float(logprobs[index, positions, tokens].sum()))
    scores, cursor = [], 0
    for group in answers:
        scores.append(flat[cursor : cursor + len(group)])
        cursor += len(group)
    return scores


def share_preferred(
    model: torch.nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    prompts: Sequence[str],
    candidates: Sequence[Sequence[str]],
    wanted: Sequence[str],
) -> float:
    """The share of prompts whose `wanted` answer scores strictly above every other candidate
    (nan for no prompts)."""
    if not prompts:
        return float("nan")
    scores = candidate_scores(model, tokenizer, prompts, candidates)
    hits = 0
    for row, group, answer in zip(scores, candidates, wanted, strict=True):
        best = row[list(group).index(answer)]
        hits += all(best > s for s, c in zip(row, group, strict=True) if c != answer)
    return hits / len(prompts)
