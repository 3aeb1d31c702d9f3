"""The batch an editor reads (studies/nas/prompts.py `edit_batch`) for fact-world requests
(world_stream.world_request) under several openings: each row is the request's prompt after one
opening, tokenised as on its own; the subject position is the subject's last token under every
opening; the labels hold the new answer exactly at the prompt's last position (and, for a
two-token answer, its second token one further, where the row holds its first) and IGNORE
(-100) everywhere else; owners map rows to requests; padding is masked out."""

from __future__ import annotations

import torch

from reprolab.models.fact_lm import fact_tokenizer
from reprolab.studies.nas.prompts import edit_batch
from reprolab.studies.nas.requests import EditRequest
from reprolab.studies.nas.scoring import continuation_ids
from reprolab.studies.nas.world_stream import world_request
from tests.studies.nas.conftest import WORLD

TOKENIZER = fact_tokenizer(WORLD)
OPENINGS = ["", "well", "so now"]


def requests() -> list[EditRequest]:
    """Three requests of different prompt lengths (templates of 2, 4 and 2 words)."""
    chosen = [(0, 0, 0), (1, 1, 1), (2, 0, 2)]
    out = []
    for index, (subject, relation, template) in enumerate(chosen):
        current = int(WORLD.facts[subject, relation])
        out.append(
            world_request(
                WORLD, f"t-{index}", subject, relation, template, (current + 1) % 4, current, []
            )
        )
    return out


def single(word: str) -> int:
    """The one token of `word` after a space."""
    ids = continuation_ids(TOKENIZER, word)
    assert len(ids) == 1
    return ids[0]


def test_rows_are_the_prompts_after_each_opening_with_owners():
    wanted = requests()
    batch = edit_batch(TOKENIZER, wanted, OPENINGS)
    ids, mask = batch.inputs["input_ids"], batch.inputs["attention_mask"]
    rows = len(wanted) * len(OPENINGS)
    assert ids.shape == mask.shape == batch.labels.shape
    assert ids.shape[0] == batch.positions.shape[0] == batch.owners.shape[0] == rows
    assert batch.owners.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    lengths = []
    for row in range(rows):
        request, opening = wanted[row // len(OPENINGS)], OPENINGS[row % len(OPENINGS)]
        prompt = TOKENIZER(request.rewrite(opening)).input_ids
        # BOS, the opening's words, the subject's two, the template's
        assert len(prompt) == 1 + len(opening.split()) + 2 + len(request.prompt.split()) - 1
        assert ids[row, : len(prompt)].tolist() == prompt
        lengths.append(len(prompt))
    assert mask.sum(dim=1).tolist() == lengths


def test_the_subject_position_is_the_subjects_last_token_under_every_opening():
    wanted = requests()
    batch = edit_batch(TOKENIZER, wanted, OPENINGS)
    ids = batch.inputs["input_ids"]
    for row in range(ids.shape[0]):
        request, opening = wanted[row // len(OPENINGS)], OPENINGS[row % len(OPENINGS)]
        position = int(batch.positions[row])
        assert position == len(opening.split()) + 2  # after BOS, the opening, two subject words
        assert int(ids[row, position]) == single(request.subject.split()[-1])
        assert int(ids[row, position + 1]) == single(request.prompt.split()[1])
        assert int(batch.inputs["attention_mask"][row, position]) == 1


def test_labels_hold_the_new_answer_at_the_prompts_last_position_only():
    wanted = requests()
    batch = edit_batch(TOKENIZER, wanted, OPENINGS)
    for row in range(batch.labels.shape[0]):
        request = wanted[row // len(OPENINGS)]
        end = int(batch.inputs["attention_mask"][row].sum()) - 1
        labels = batch.labels[row].tolist()
        assert labels[end] == single(request.target_new)
        assert labels[end] != single(request.target_true)
        assert all(label == -100 for index, label in enumerate(labels) if index != end)


def test_padding_is_masked_and_labelled_ignore():
    batch = edit_batch(TOKENIZER, requests(), OPENINGS)
    ids, mask = batch.inputs["input_ids"], batch.inputs["attention_mask"]
    lengths = mask.sum(dim=1)
    assert int(lengths.min()) < ids.shape[1] == int(lengths.max())
    for row, length in enumerate(lengths.tolist()):
        assert mask[row, :length].eq(1).all() and mask[row, length:].eq(0).all()
        assert ids[row, length:].eq(TOKENIZER.pad_token_id).all()
        assert batch.labels[row, length:].eq(-100).all()


def test_a_two_token_answer_is_fed_but_its_last_token_and_labelled_shifted():
    first, second, third = WORLD.relations[0].objects[:3]
    request = EditRequest(
        case="pair",
        subject=" ".join(WORLD.subjects[3]),
        prompt="{} " + " ".join(WORLD.relations[0].templates[0]),
        target_new=f"{first} {second}",
        target_true=third,
        paraphrases=(),
        neighbours=(),
        candidates=(f"{first} {second}", third),
    )
    batch = edit_batch(TOKENIZER, [request], ["", "well"])
    for row, opening in enumerate(["", "well"]):
        prompt = TOKENIZER(request.rewrite(opening)).input_ids
        answer = [single(first), single(second)]
        assert int(batch.inputs["attention_mask"][row].sum()) == len(prompt) + 1
        assert batch.inputs["input_ids"][row, : len(prompt) + 1].tolist() == prompt + answer[:1]
        full = prompt + answer
        labels = batch.labels[row].tolist()
        for index, label in enumerate(labels):
            if len(prompt) - 1 <= index < len(full) - 1:
                assert label == full[index + 1]  # the token that follows position `index`
            else:
                assert label == -100
    torch.testing.assert_close(batch.owners, torch.tensor([0, 0]))
