"""Edit streams over a fact world (models.facts): the requests a run edits, in order, and the
openings its keys and targets are averaged over.

Choices:

* Edited facts belong to subjects whose paraphrase template was held out of training, so the
  paraphrase measures generalisation. Each request asks for another object of the relation,
  drawn uniformly; its prompt is one of the subject's trained templates, drawn uniformly.
* Order: the (subject, relation) pairs in a random order, filled greedily into batches with no
  subject twice in a batch (a subject's key does not depend on the relation that follows it, so
  two of its facts in one batch would ask one key for two values). When every pair has been
  edited the pairs are drawn again, re-targeting edited facts (the card's long streams).
* Neighbours: `neighbours` facts under the same relation and template 0 of subjects whose
  paraphrase was trained (never edited, so their objects stay what the edit must leave alone).
* A request's true object is the fact's object before it (the world's, or an earlier edit's).
* Everything is drawn from generators of the stream seed, so a seed gives one stream.
"""

from __future__ import annotations

import numpy as np

from reprolab.core.determinism import derive_seed
from reprolab.models.facts import FILLERS, PARAPHRASE, World, query, trained_templates
from reprolab.studies.nas.requests import EditRequest


def world_request(
    world: World,
    case: str,
    subject: int,
    relation: int,
    template: int,
    target: int,
    current: int,
    neighbours: list[int],
) -> EditRequest:
    """The request to make `subject`'s `relation` object number `target` instead of number
    `current`."""
    objects = world.relations[relation].objects
    words = world.relations[relation].templates[template]
    return EditRequest(
        case=case,
        subject=" ".join(world.subjects[subject]),
        prompt="{} " + " ".join(words),
        target_new=objects[target],
        target_true=objects[current],
        paraphrases=(query(world, subject, relation, PARAPHRASE),),
        neighbours=tuple(
            (query(world, other, relation, 0), world.object_of(other, relation))
            for other in neighbours
        ),
        candidates=tuple(objects),
    )


def pair_order(
    world: World, batch_size: int, count: int, rng: np.random.Generator
) -> list[tuple[int, int]]:
    """`count` (subject, relation) pairs of held-out-paraphrase subjects in full batches of
    `batch_size` with no subject twice in a batch (module docstring): a batch the pairs left in
    the current pass cannot fill is filled from the next pass, whose other pairs follow."""
    editable = [s for s in range(len(world.subjects)) if s not in world.paraphrase_trained]
    if batch_size > len(editable):
        raise ValueError(
            f"nas batch size {batch_size}: a batch needs that many distinct subjects, the world "
            f"has {len(editable)} editable ones"
        )
    pairs = [(s, r) for s in editable for r in range(len(world.relations))]
    queue: list[tuple[int, int]] = []
    order: list[tuple[int, int]] = []
    while len(order) < count:
        batch: list[tuple[int, int]] = []
        while len(batch) < batch_size:
            taken = {s for s, _ in batch}
            found = next((p for p in queue if p[0] not in taken), None)
            if found is None:
                queue += [pairs[int(i)] for i in rng.permutation(len(pairs))]
                continue
            batch.append(found)
            queue.remove(found)
        order += batch
    return order[:count]


def edit_stream(
    world: World, edits: int, batch_size: int, neighbours: int, seed: int
) -> list[EditRequest]:
    """The stream of `edits` requests of `seed` (module docstring)."""
    rng = np.random.default_rng(derive_seed(seed, "nas", "stream"))
    current = world.facts.copy()
    spared = sorted(world.paraphrase_trained)
    stream = []
    for index, (subject, relation) in enumerate(pair_order(world, batch_size, edits, rng)):
        templates = [t for t in trained_templates(world, subject) if t != PARAPHRASE]
        template = templates[int(rng.integers(len(templates)))]
        target = int(rng.integers(world.spec.objects - 1))
        target += target >= current[subject, relation]
        chosen = rng.choice(len(spared), size=neighbours, replace=False)
        stream.append(
            world_request(
                world,
                f"{seed}-{index}",
                subject,
                relation,
                template,
                target,
                int(current[subject, relation]),
                [spared[int(i)] for i in chosen],
            )
        )
        current[subject, relation] = target
    return stream


def world_openings(world: World, count: int, seed: int) -> list[str]:
    """`count` distinct openings: the empty one, then filler prefixes of 1 to `prefix_max`
    words drawn for `seed`; ValueError where the fillers cannot make that many."""
    if count > 1 and world.spec.prefix_max == 0:
        raise ValueError("nas openings: a world without filler prefixes has only the empty one")
    rng = np.random.default_rng(derive_seed(seed, "nas", "openings"))
    openings = [""]
    for _ in range(100 * count):
        if len(openings) == count:
            return openings
        length = int(rng.integers(1, world.spec.prefix_max + 1))
        words = " ".join(FILLERS[int(i)] for i in rng.integers(0, len(FILLERS), size=length))
        if words not in openings:
            openings.append(words)
    raise ValueError(f"nas openings: could not draw {count} distinct openings")
