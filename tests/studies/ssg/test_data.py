"""SynthMIL and EndoSeq generators: shapes, labels, regimes and determinism."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.ssg.data import Bags, make_dataset, pad
from tests.studies.ssg.specs import SYNTHMIL

SYNTH = {
    **SYNTHMIL,
    "n_train": 40,
    "n_test": 21,
    "bag_size": [32, 64],
    "witness_rate": 0.03,
    "noise": 0.1,
}
ENDO = {
    "generator": "endo",
    "n_train": 30,
    "n_test": 10,
    "dim": 8,
    "length": [32, 48],
    "n_prototypes": 2,
    "n_artefacts": 3,
    "centre_scale": 1.0,
    "noise": 0.3,
    "smooth": 0.8,
    "drift": 0.05,
    "artefact_rate": 0.15,
    "artefact_run": [2, 6],
    "evidence_runs": [1, 2],
    "evidence_run": [2, 5],
    "evidence_mix": 1.0,
}


def test_synthmil_labels_sizes_and_witness_counts():
    train, test = make_dataset(SYNTH, 0)
    assert len(train) == 40 and len(test) == 21 and train.dim == 8
    assert train.y.sum() == 20 and test.y.sum() == 10  # balanced, one more negative if odd
    for x, y, inst in zip(train.X, train.y, train.instance_labels, strict=True):
        assert 32 <= len(x) <= 64 and x.dtype == np.float32
        assert inst.sum() == (max(1, round(0.03 * len(x))) if y else 0)


def test_synthmil_is_deterministic_and_seed_dependent():
    a, _ = make_dataset(SYNTH, 3)
    b, _ = make_dataset(SYNTH, 3)
    c, _ = make_dataset(SYNTH, 4)
    assert all(np.array_equal(u, v) for u, v in zip(a.X, b.X, strict=True))
    assert not np.array_equal(a.X[0][:5], c.X[0][:5])


def _nuisance_spread(spec: dict) -> float:
    """Mean distance between nuisance instances of different bags (low when centres are shared)."""
    train, _ = make_dataset(spec, 0)
    neg = [x for x, y in zip(train.X, train.y, strict=True) if y == 0][:6]
    nearest = []
    for i, x in enumerate(neg):
        others = np.concatenate([o for j, o in enumerate(neg) if j != i])
        d = np.linalg.norm(x[:, None] - others[None], axis=-1).min(1)
        nearest.append(d.mean())
    return float(np.mean(nearest))


def test_shared_nuisance_recurs_across_bags_hetero_does_not():
    shared = _nuisance_spread({**SYNTH, "heterogeneity": 0.0})
    hetero = _nuisance_spread({**SYNTH, "heterogeneity": 1.0})
    assert shared < 0.6 * hetero


def test_mimic_instances_lie_near_the_evidence():
    spec = {**SYNTH, "mimic_rate": 0.5, "mimic_distance": 0.5, "heterogeneity": 1.0}
    train, _ = make_dataset(spec, 1)
    x = np.concatenate(train.X)
    inst = np.concatenate(train.instance_labels)
    evidence = x[inst == 1]
    d = np.linalg.norm(x[inst == 0][:, None] - evidence[None], axis=-1).min(1)
    assert np.mean(d < 1.2) > 0.25  # about half the nuisance sits next to a prototype


def test_endo_runs_are_contiguous_and_frames_correlated():
    train, test = make_dataset(ENDO, 0)
    assert len(train) == 30 and len(test) == 10
    for x, y, inst in zip(train.X, train.y, train.instance_labels, strict=True):
        assert 32 <= len(x) <= 48
        if y == 0:
            assert inst.sum() == 0
        else:
            assert inst.sum() >= 2
            starts = np.sum(np.diff(np.concatenate([[0], inst])) == 1)
            assert 1 <= starts <= 2  # one or two contiguous runs
    x = train.X[0]
    step = np.linalg.norm(np.diff(x, axis=0), axis=1).mean()
    far = np.linalg.norm(x[:-10] - x[10:], axis=1).mean()
    assert step < far  # temporal correlation plus drift


def test_bad_specs_and_bags_are_rejected():
    with pytest.raises(ValueError, match="unknown generator"):
        make_dataset({"generator": "nope"}, 0)
    with pytest.raises(ValueError, match="missing keys"):
        make_dataset({"generator": "synthmil"}, 0)
    with pytest.raises(ValueError, match="heterogeneity"):
        make_dataset({**SYNTH, "heterogeneity": 2.0}, 0)
    with pytest.raises(ValueError, match="bag 0"):
        Bags([np.zeros((3, 2), np.float32)], np.array([1]), [np.zeros(2, np.int64)])


def test_pad_masks_and_keeps_instances():
    train, _ = make_dataset(SYNTH, 0)
    padded = pad(train)
    n = [len(x) for x in train.X]
    assert padded.x.shape == (40, max(n), 8)
    assert padded.mask.sum(1).tolist() == n
    assert np.array_equal(padded.x[1, : n[1]].numpy(), train.X[1])
    assert float(padded.x[padded.mask.logical_not()].abs().sum()) == 0.0
