"""`reprolab wsi tile` as a user types it."""

from __future__ import annotations

import pandas as pd
import pytest

from reprolab.cli import main
from tests.preprocess.wsi.conftest import tissue_image


def test_tile_command_tiles_a_folder(tmp_path, make_slide, capsys):
    make_slide("a.svs", tissue_image(2048))
    (tmp_path / "slides" / "broken.svs").write_bytes(b"\0" * 100)
    out = tmp_path / "out"
    argv = ["wsi", "tile", "--slides", str(tmp_path / "slides"), "--out", str(out)]
    code = main([*argv, "--patch-size", "128", "--overlap", "16", "--workers", "2", "--quiet"])
    assert code == 0
    assert "2 slides: 1 processed, 1 failed_open" in capsys.readouterr().out
    frame = pd.read_csv(out / "process_list.csv")
    assert frame.set_index("slide").loc["a.svs", "n_patches"] > 0
    assert (out / "patches" / "a.h5").is_file() and (out / "qc" / "a.png").is_file()


def test_tile_command_rejects_bad_options(tmp_path, capsys):
    (tmp_path / "slides").mkdir()
    argv = ["wsi", "tile", "--slides", str(tmp_path / "slides"), "--out", str(tmp_path / "out")]
    assert main([*argv, "--patch-size", "256", "--overlap", "256"]) == 2
    assert "--overlap (256) must be smaller than --patch-size (256)" in capsys.readouterr().err
    (tmp_path / "mpp.csv").write_text("name,mpp\n")
    assert main([*argv, "--mpp-override", str(tmp_path / "mpp.csv")]) == 2
    assert "columns slide,mpp" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--target-mpp", "inf", "--target-mpp must be a finite number, got inf"),
        ("--target-mpp", "nan", "--target-mpp must be a finite number, got nan"),
        ("--seg-mpp", "inf", "--seg-mpp must be a finite number, got inf"),
        ("--min-tissue-area", "-5", "--min-tissue-area must be >= 0, got -5.0"),
        ("--min-hole-area", "inf", "--min-hole-area must be a finite number, got inf"),
        ("--workers", "0", "--workers must be an integer in [1, 256], got 0"),
    ],
)
def test_tile_command_refuses_non_finite_and_negative_values(
    tmp_path, capsys, flag, value, message
):
    (tmp_path / "slides").mkdir()
    argv = ["wsi", "tile", "--slides", str(tmp_path / "slides"), "--out", str(tmp_path / "out")]
    assert main([*argv, flag, value]) == 2
    assert capsys.readouterr().err == f"error: {message}\n"
    assert not (tmp_path / "out").exists()


def test_tile_command_refuses_a_file_as_out(tmp_path, make_slide, capsys):
    """An existing file as --out ended in a FileExistsError traceback."""
    make_slide("a.svs")
    afile = tmp_path / "afile"
    afile.write_text("keep")
    argv = ["wsi", "tile", "--slides", str(tmp_path / "slides"), "--out", str(afile), "--quiet"]
    assert main(argv) == 2
    expected = f"error: --out {afile}: exists and is not a folder; expected an output folder\n"
    assert capsys.readouterr().err == expected and afile.read_text() == "keep"
