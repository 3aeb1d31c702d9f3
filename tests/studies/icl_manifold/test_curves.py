"""curves.csv of icl_manifold: MSE against the context length n, one series per setting/method."""

import numpy as np

from reprolab.studies.icl_manifold.results import curve_rows


def test_rows_are_mse_means_over_prompts_and_seeds_sorted_by_series_then_n():
    params = {"sizes": [16, 32]}
    # errors (seeds, sizes, prompts)
    runs = {
        "mixture": {
            "oracle_lp": np.array([[[1.0, 3.0], [0.5, 0.5]], [[2.0, 2.0], [0.25, 0.75]]]),
            "knn": np.array([[[4.0, 4.0], [2.0, 2.0]], [[4.0, 4.0], [1.0, 1.0]]]),
        },
        "circles": {"oracle_lp": np.full((2, 2, 2), 0.125)},
    }
    assert curve_rows(params, {"errors": runs}, [0, 1]).values.tolist() == [
        [16, "circles/oracle_lp", "0.125000"],
        [32, "circles/oracle_lp", "0.125000"],
        [16, "mixture/knn", "4.000000"],
        [32, "mixture/knn", "1.500000"],
        [16, "mixture/oracle_lp", "2.000000"],
        [32, "mixture/oracle_lp", "0.500000"],
    ]
