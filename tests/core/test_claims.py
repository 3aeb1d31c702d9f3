import pytest

from reprolab.core.claims import paired_check


def check(a, b, **kw):
    return paired_check("m beats b", "acc", "m", "b", a, b, list(range(len(a))), **kw)


def test_clear_win_holds():
    result = check([0.90, 0.91, 0.92, 0.93, 0.94], [0.80, 0.82, 0.81, 0.80, 0.83])
    assert result["holds"] and result["p_value"] < 0.01 and result["wins"] == "5/5"
    assert result["per_seed"]["m"][0] == 0.90


def test_noise_fails():
    result = check([0.90, 0.80, 0.91, 0.79, 0.85], [0.85, 0.85, 0.85, 0.85, 0.85])
    assert not result["holds"]


def test_wrong_direction_fails_even_if_significant():
    result = check([0.1, 0.2, 0.1, 0.3], [0.5, 0.6, 0.5, 0.6])
    assert not result["holds"]
    assert check([0.1, 0.2, 0.1, 0.3], [0.5, 0.6, 0.5, 0.6], direction="less")["holds"]


def test_constant_difference_is_handled():
    assert check([1.0, 2.0, 3.0], [0.5, 1.5, 2.5])["holds"]
    assert not check([1.0, 2.0], [1.0, 2.0])["holds"]


def test_sign_test():
    result = check([2, 2, 2, 2, 2, 2], [1, 1, 1, 1, 1, 1], test="sign")
    assert result["p_value"] == pytest.approx(1 / 64) and result["holds"]


def test_mismatched_lengths_are_rejected():
    with pytest.raises(ValueError, match="one value per seed"):
        paired_check("s", "acc", "m", "b", [1, 2], [1], [0, 1])
