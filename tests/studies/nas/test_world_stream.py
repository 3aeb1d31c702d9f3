"""Edit streams over a fact world (studies/nas/world_stream.py): a seed gives one stream and
other seeds others; edited facts belong to held-out-paraphrase subjects, are asked under a
trained template and measured at the held-out paraphrase; the first pass edits every such fact
once; every request asks for another object than the fact's current one, so a re-targeted fact
starts from the previous request's new object; neighbours are facts of paraphrase-trained
subjects with their true objects; the batches a run slices (`batch_size` requests each) never
hold a subject twice; openings start with the empty one and are fixed by their seed."""

from __future__ import annotations

import pytest

from reprolab.models.facts import FILLERS, PARAPHRASE, query
from reprolab.studies.nas.requests import EditRequest
from reprolab.studies.nas.world_stream import edit_stream, world_openings
from tests.studies.nas.conftest import WORLD

SUBJECTS = {" ".join(words): index for index, words in enumerate(WORLD.subjects)}
EDITABLE = [s for s in range(len(WORLD.subjects)) if s not in WORLD.paraphrase_trained]
PAIRS = len(EDITABLE) * len(WORLD.relations)
LONG = 40
"""Longer than the number of editable (subject, relation) pairs: facts get re-targeted."""


def fact(request: EditRequest) -> tuple[int, int]:
    """The (subject, relation) a request edits (relations have disjoint objects)."""
    objects = request.candidates
    relation = next(r for r, rel in enumerate(WORLD.relations) if rel.objects == objects)
    return SUBJECTS[request.subject], relation


def test_a_seed_gives_one_stream_and_seeds_differ():
    first = edit_stream(WORLD, LONG, 3, 2, seed=0)
    assert len(first) == LONG
    assert edit_stream(WORLD, LONG, 3, 2, seed=0) == first
    assert edit_stream(WORLD, LONG, 3, 2, seed=1) != first
    assert [r.case for r in first] == [f"0-{i}" for i in range(LONG)]


def test_edited_facts_belong_to_held_out_paraphrase_subjects():
    assert 0 < len(EDITABLE) < len(WORLD.subjects)
    for seed in range(3):
        for request in edit_stream(WORLD, LONG, 3, 2, seed):
            subject, relation = fact(request)
            assert subject not in WORLD.paraphrase_trained
            assert request.paraphrases == (query(WORLD, subject, relation, PARAPHRASE),)
            templates = [
                " ".join(("{}", *WORLD.relations[relation].templates[t])) for t in range(3)
            ]
            assert request.prompt in templates  # a trained template, never the paraphrase
            assert request.candidates == WORLD.relations[relation].objects


def test_the_first_pass_edits_every_editable_fact_once():
    for seed in range(3):
        stream = edit_stream(WORLD, LONG, 3, 2, seed)
        first = [fact(r) for r in stream[:PAIRS]]
        assert sorted(first) == sorted(
            (s, r) for s in EDITABLE for r in range(len(WORLD.relations))
        )


def test_requests_start_from_the_current_object_of_their_fact():
    retargeted = 0
    for seed in range(3):
        current = {}
        for request in edit_stream(WORLD, LONG, 3, 2, seed):
            assert request.target_new != request.target_true
            subject, relation = fact(request)
            if (subject, relation) in current:
                retargeted += 1
                assert request.target_true == current[subject, relation]
            else:
                assert request.target_true == WORLD.object_of(subject, relation)
            current[subject, relation] = request.target_new
    assert retargeted == 3 * (LONG - PAIRS)


def test_neighbours_are_paraphrase_trained_facts_with_their_true_objects():
    spared = {
        query(WORLD, s, r, 0): (s, r)
        for s in WORLD.paraphrase_trained
        for r in range(len(WORLD.relations))
    }
    for request in edit_stream(WORLD, LONG, 3, 4, seed=2):
        _, relation = fact(request)
        assert len(request.neighbours) == 4
        assert len({prompt for prompt, _ in request.neighbours}) == 4
        for prompt, answer in request.neighbours:
            assert prompt in spared
            subject, other = spared[prompt]
            assert other == relation
            assert answer == WORLD.object_of(subject, relation)


@pytest.mark.parametrize("edits,batch_size,seed", [(16, 2, 2), (16, 4, 0), (LONG, 3, 2)])
def test_no_subject_twice_in_a_batch_a_run_edits(edits: int, batch_size: int, seed: int):
    stream = edit_stream(WORLD, edits, batch_size, 2, seed)
    for start in range(0, edits, batch_size):
        subjects = [r.subject for r in stream[start : start + batch_size]]
        assert len(set(subjects)) == len(subjects), (start, subjects)


def test_the_first_batch_has_no_subject_twice():
    for seed in range(5):
        for batch_size in (2, 3, 4, 5):
            stream = edit_stream(WORLD, batch_size, batch_size, 2, seed)
            assert len({r.subject for r in stream}) == batch_size


def test_openings_start_empty_and_are_fixed_by_their_seed():
    first = world_openings(WORLD, 6, seed=0)
    assert len(first) == 6 and first[0] == ""
    assert world_openings(WORLD, 6, seed=0) == first
    assert world_openings(WORLD, 6, seed=1) != first
    assert world_openings(WORLD, 1, seed=0) == [""]
    assert len(set(first)) == len(first)
    for opening in first[1:] + world_openings(WORLD, 6, seed=1)[1:]:
        words = opening.split()
        assert len(words) <= WORLD.spec.prefix_max
        assert all(word in FILLERS for word in words)
