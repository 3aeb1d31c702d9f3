"""The shared checks of command arguments and option values."""

from __future__ import annotations

import math

import pytest

from reprolab.core.arguments import (
    ArgumentError,
    bounded_int,
    finite_number,
    input_file,
    input_folder,
    output_folder,
    positive_number,
)


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, "1", None, True])
def test_finite_number_refuses_non_finite_and_non_numbers(value):
    with pytest.raises(ArgumentError, match=r"^--x must be a finite number, got "):
        finite_number("--x", value)


def test_finite_and_positive_numbers():
    assert finite_number("--x", 0, minimum=0) == 0 and finite_number("--x", -2.5) == -2.5
    with pytest.raises(ArgumentError, match=r"^--x must be >= 0, got -5$"):
        finite_number("--x", -5, minimum=0)
    assert positive_number("--x", 1e-9) == 1e-9
    for value in (0, -1.0, math.inf):
        with pytest.raises(ArgumentError, match="^--x must be"):
            positive_number("--x", value)


@pytest.mark.parametrize("value", [2.0, True, 0, 257, "2"])
def test_bounded_int_wants_an_int_in_range(value):
    with pytest.raises(ArgumentError, match=r"^threads must be an integer in \[1, 256\], got "):
        bounded_int("threads", value, 1, 256)


def test_folders_and_files_are_checked_without_creating_anything(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert input_folder("--in", tmp_path) == tmp_path and input_file("F", afile) == afile
    assert output_folder("--out", tmp_path / "new") == tmp_path / "new"
    assert output_folder("--out", tmp_path) == tmp_path
    assert not (tmp_path / "new").exists()
    with pytest.raises(ArgumentError, match=f"^--in {tmp_path}/none: no such folder$"):
        input_folder("--in", tmp_path / "none")
    with pytest.raises(ArgumentError, match=f"^--in {afile}: not a folder$"):
        input_folder("--in", afile)
    with pytest.raises(ArgumentError, match=f"^F {tmp_path}: is a folder, expected a file$"):
        input_file("F", tmp_path)
    with pytest.raises(ArgumentError, match=f"^--out {afile}: exists and is not a folder"):
        output_folder("--out", afile)
