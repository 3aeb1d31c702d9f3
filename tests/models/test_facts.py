"""The fact world: one world per spec, facts and templates as the format says, a file that
reads back the same, and bad specs or files refused by name."""

from __future__ import annotations

import json

import numpy as np
import pytest

from reprolab.models.facts import (
    END,
    FILLERS,
    PARAPHRASE,
    WorldSpec,
    arithmetic,
    make_world,
    prefix,
    query,
    read_world,
    statement,
    trained_templates,
    write_world,
)

SPEC = WorldSpec(subjects=40, relations=3, objects=6, prefix_max=3, paraphrase_subjects=0.5, seed=7)


def test_a_spec_gives_one_world_of_distinct_subjects_and_disjoint_objects():
    world = make_world(SPEC)
    again = make_world(SPEC)
    assert world.subjects == again.subjects and np.array_equal(world.facts, again.facts)
    assert len(set(world.subjects)) == 40 and world.facts.shape == (40, 3)
    objects = [o for r in world.relations for o in r.objects]
    assert len(objects) == len(set(objects)) == 18
    assert make_world(WorldSpec(**{**SPEC.__dict__, "seed": 8})).subjects != world.subjects


def test_sentences_put_the_object_after_the_template_and_openings_first():
    world = make_world(SPEC)
    subject = world.subjects[0]
    text = statement(world, 0, 1, 0, ["well"])
    template = " ".join(world.relations[1].templates[0])
    assert text == f"well {' '.join(subject)} {template} {world.object_of(0, 1)} {END}"
    assert text.startswith(query(world, 0, 1, 0, ["well"]))
    assert statement(world, 0, 1, 0, target="zzz").endswith(" zzz .")


def test_the_paraphrase_is_trained_for_some_subjects_only():
    world = make_world(SPEC)
    assert len(world.paraphrase_trained) == 20
    for subject in range(40):
        assert (PARAPHRASE in trained_templates(world, subject)) == (
            subject in world.paraphrase_trained
        )


def test_openings_and_arithmetic_keep_to_their_forms():
    rng = np.random.default_rng(0)
    openings = [prefix(rng, 3) for _ in range(200)]
    assert {len(o) for o in openings} == {0, 1, 2, 3} and all(
        w in FILLERS for o in openings for w in o
    )
    a, plus, b, equals, c, end = arithmetic(rng).split()
    assert (plus, equals, end) == ("+", "=", END) and (int(a) + int(b)) % 10 == int(c)


def test_every_sentence_word_is_in_the_vocabulary():
    world = make_world(SPEC)
    vocabulary = set(world.vocabulary())
    rng = np.random.default_rng(1)
    for subject in range(40):
        for relation in range(3):
            for template in range(4):
                words = statement(world, subject, relation, template, prefix(rng, 3)).split()
                assert set(words) <= vocabulary


def test_a_world_file_reads_back_and_a_foreign_file_is_named(tmp_path):
    world = make_world(SPEC)
    path = tmp_path / "world.json"
    write_world(path, world)
    back = read_world(path)
    assert back.subjects == world.subjects and back.relations == world.relations
    assert (
        np.array_equal(back.facts, world.facts)
        and back.paraphrase_trained == world.paraphrase_trained
    )
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"format": "something"}))
    with pytest.raises(ValueError, match="other.json: not a fact world"):
        read_world(other)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("subjects", 0),
        ("relations", 7),
        ("objects", 1),
        ("prefix_max", 11),
        ("paraphrase_subjects", 1.0),
    ],
)
def test_a_spec_that_cannot_make_a_world_is_refused_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        make_world(WorldSpec(**{**SPEC.__dict__, field: value}))
