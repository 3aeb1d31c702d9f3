"""`reprolab wsi tile` as a user types it."""

from __future__ import annotations

import pandas as pd

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
