"""curves.csv of pem: online PEM's SINR against training samples seen, one series per condition."""

from reprolab.studies.pem.results import curve_rows


def seed_run(sinr: dict[str, list[float]]) -> dict:
    return {
        "sources": {
            source: {"pem": {"sinr": values[-1], "curves": {"sinr": values}}, "nsm": {"sinr": 1.0}}
            for source, values in sinr.items()
        }
    }


def test_rows_are_seed_means_against_samples_seen():
    params = {"data": {"n_samples": 400}, "sources": {"box_r07": {}, "simplex": {}}}
    runs = {
        30.0: [
            seed_run({"box_r07": [2.0, 4.0], "simplex": [10.0, 12.0]}),
            seed_run({"box_r07": [3.0, 5.0], "simplex": [11.0, 13.0]}),
        ],
        7.5: [seed_run({"box_r07": [1.0, 1.5], "simplex": [0.5, 0.25]})],
    }
    rows = curve_rows(params, runs, [0, 1]).values.tolist()
    assert rows == [
        [400, "box_r07/snr30/pem", "2.500000"],
        [800, "box_r07/snr30/pem", "4.500000"],
        [400, "box_r07/snr7.5/pem", "1.000000"],
        [800, "box_r07/snr7.5/pem", "1.500000"],
        [400, "simplex/snr30/pem", "10.500000"],
        [800, "simplex/snr30/pem", "12.500000"],
        [400, "simplex/snr7.5/pem", "0.500000"],
        [800, "simplex/snr7.5/pem", "0.250000"],
    ]
