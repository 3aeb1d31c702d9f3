"""Node splits of the bundled datasets: shapes, disjoint rows, label skew, clear errors."""

import numpy as np
import pytest

from reprolab.studies.bilevel_ht.data import load_dataset, node_split

PARAMS = {
    "dataset": "breast_cancer",
    "noise_features": 4,
    "n_train": 10,
    "n_val": 6,
    "skew_alpha": 0.5,
}


def test_split_shapes_labels_and_test_rows_are_the_rest():
    data = node_split(PARAMS, 5, np.random.default_rng(0))
    assert data.a_train.shape == (5, 10, 34) and data.a_val.shape == (5, 6, 34)
    assert data.a_test.shape == (569 - 5 * 16, 34)
    for b in (data.b_train, data.b_val, data.b_test):
        assert set(np.unique(b)) <= {-1.0, 1.0}
    rows = np.vstack([data.a_train.reshape(-1, 34), data.a_val.reshape(-1, 34), data.a_test])
    assert np.unique(rows, axis=0).shape[0] == 569  # every row used exactly once
    shares = [np.mean(np.r_[data.b_train[i], data.b_val[i]] > 0) for i in range(5)]
    assert max(shares) - min(shares) > 0.2  # label skew across nodes


def test_same_seed_same_split_and_digits_loader():
    a = node_split(PARAMS, 5, np.random.default_rng(7))
    b = node_split(PARAMS, 5, np.random.default_rng(7))
    np.testing.assert_array_equal(a.a_train, b.a_train)
    x, y = load_dataset("digits38")
    assert x.shape == (357, 64) and set(np.unique(y)) == {-1.0, 1.0}


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="unknown 'iris'"):
        load_dataset("iris")
    with pytest.raises(ValueError, match="leave no test rows"):
        node_split(PARAMS, 40, np.random.default_rng(0))
