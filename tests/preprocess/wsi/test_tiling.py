"""`tile_slides` end to end on real slide files: statuses, outputs, reruns, determinism."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import h5py
import numpy as np
import openslide
import pandas as pd
import pytest

from reprolab.preprocess.wsi import tile_check, tiling
from reprolab.preprocess.wsi.coords_h5 import read_coords
from reprolab.preprocess.wsi.reader import read_patch
from reprolab.preprocess.wsi.tiling import COLUMNS, TilingOptions, tile_slides
from tests.core.test_parent_death import kill_once_started, needs_proc
from tests.preprocess.wsi.conftest import tissue_image, zero_tile
from tests.preprocess.wsi.worker_crash import crash_on_c

IMAGE = tissue_image(2048, strong=True, faint=True)
BLANK = tissue_image(2048, strong=False)
FAST = TilingOptions(patch_size=128)
SMALL = TilingOptions(patch_size=64)
KILL_RUNS = 20
MAIN_KILLS = 10
POOL_KILLS = 3
BIG_QC = {"patch_size": 64, "seg_mpp": 0.5}
"""Options whose segmentation thumbnail is the whole 1024 px slide: drawing and encoding the QC
image is then about a third of a run, a wide window between coords file and QC image."""


def rows(frame: pd.DataFrame) -> dict[str, dict]:
    return {row["slide"]: row for row in frame.to_dict("records")}


def test_bad_inputs_get_a_status_while_the_others_are_tiled(tmp_path, make_slide):
    slides = tmp_path / "slides"
    make_slide("good.svs", IMAGE)
    make_slide("gewebe_ü_测试.svs", IMAGE)
    make_slide("blank.svs", BLANK)
    zero_tile(make_slide("zeroed.svs", IMAGE), 512, 512)
    truncated = make_slide("truncated.svs", IMAGE)
    truncated.write_bytes(truncated.read_bytes()[: truncated.stat().st_size * 9 // 10])
    (slides / "empty.svs").write_bytes(b"")
    (slides / "notes.tiff").write_text("not a slide\n")
    (slides / "README.txt").write_text("ignored: not a slide suffix\n")
    make_slide("dpi72.tiff", IMAGE, resolution_mpp=25400 / 72, resolution_unit="inch")
    frame = tile_slides(slides, tmp_path / "out", FAST, workers=2, show_progress=False)

    assert list(frame.columns) == COLUMNS
    assert list(frame["slide"]) == sorted(frame["slide"]) and "README.txt" not in set(frame.slide)
    got = rows(frame)
    assert got["good.svs"]["status"] == "processed" and got["good.svs"]["n_patches"] > 20
    assert got["gewebe_ü_测试.svs"]["status"] == "processed"
    assert got["gewebe_ü_测试.svs"]["n_patches"] == got["good.svs"]["n_patches"]
    assert got["blank.svs"]["status"] == "no_tissue"
    assert got["zeroed.svs"]["status"] == "failed_read"
    assert (
        "zeroed.svs" in got["zeroed.svs"]["error"] and "x=512 y=512" in got["zeroed.svs"]["error"]
    )
    assert got["truncated.svs"]["status"] in {"failed_open", "failed_read"}
    assert got["empty.svs"]["status"] == "failed_open"
    assert (
        got["notes.tiff"]["status"] == "failed_open" and "notes.tiff" in got["notes.tiff"]["error"]
    )
    assert got["dpi72.tiff"]["status"] == "bad_mpp"
    assert "352.778" in got["dpi72.tiff"]["error"] and "slide,mpp" in got["dpi72.tiff"]["error"]
    for name, row in got.items():
        assert bool(row["error"] == row["error"] and row["error"]) == (
            row["status"] not in {"processed", "no_tissue"}
        ), name

    out = tmp_path / "out"
    assert (out / "patches" / "gewebe_ü_测试.h5").is_file()
    assert (out / "qc" / "good.png").stat().st_size > 1000
    blank, _ = read_coords(out / "patches" / "blank.h5")
    assert blank.shape == (0, 2) and blank.dtype == np.int64
    assert not (out / "patches" / "zeroed.h5").exists()
    assert pd.read_csv(out / "process_list.csv").shape == (len(frame), len(COLUMNS))

    # A rerun with the override tiles the 72-dpi slide and skips what was already done.
    (tmp_path / "mpp.csv").write_text("slide,mpp\ndpi72,0.5\n")
    good_h5 = out / "patches" / "good.h5"
    before = good_h5.stat().st_mtime_ns
    options = TilingOptions(patch_size=128, mpp_override=str(tmp_path / "mpp.csv"))
    again = rows(tile_slides(slides, out, options, workers=1, show_progress=False))
    assert again["dpi72.tiff"]["status"] == "processed"
    assert again["dpi72.tiff"]["mpp_source"] == "override"
    assert again["dpi72.tiff"]["n_patches"] == got["good.svs"]["n_patches"]
    assert good_h5.stat().st_mtime_ns == before
    assert again["good.svs"]["n_patches"] == got["good.svs"]["n_patches"]
    changed = rows(tile_slides(slides, out, TilingOptions(patch_size=64), show_progress=False))
    assert good_h5.stat().st_mtime_ns != before
    assert changed["good.svs"]["n_patches"] > got["good.svs"]["n_patches"]


def test_coords_file_reads_like_clam_and_trident(tmp_path, make_slide):
    """CLAM's Whole_Slide_Bag_FP: f['coords'], attrs patch_level/patch_size, read_region."""
    path = make_slide("pyr.svs", IMAGE, mpp=0.25, level_factor=2, min_level_size=256)
    tile_slides(path.parent, tmp_path / "out", FAST, show_progress=False)
    with h5py.File(tmp_path / "out" / "patches" / "pyr.h5", "r") as f:
        coords = f["coords"][:]
        attrs = dict(f["coords"].attrs)
        patch_level = f["coords"].attrs["patch_level"]
        patch_size = f["coords"].attrs["patch_size"]
    assert coords.dtype == np.int64 and coords.shape[1] == 2 and len(coords) >= 4
    assert (patch_level, patch_size, attrs["patch_size_level0"]) == (1, 128, 256)
    for key in ("downsample", "downsampled_level_dim", "level_dim", "name", "save_path"):
        assert key in attrs
    assert attrs["name"] == "pyr" and attrs["mpp"] == pytest.approx(0.25)
    assert attrs["target_mpp"] == 0.5 and attrs["overlap"] == 0
    # TRIDENT: patch_size * level0_magnification / target_magnification = size at level 0.
    trident = attrs["patch_size"] * attrs["level0_magnification"] / attrs["target_magnification"]
    assert round(trident) == attrs["patch_size_level0"]
    with openslide.OpenSlide(path) as wsi:
        for x, y in coords[:: max(1, len(coords) // 5)]:
            clam = np.asarray(wsi.read_region((int(x), int(y)), patch_level, (patch_size,) * 2))
            ours = read_patch(path, x, y, int(attrs["patch_size_level0"]), int(patch_size))
            np.testing.assert_array_equal(clam[:, :, :3], ours)


def test_two_runs_give_identical_bytes(tmp_path, make_slide):
    make_slide("a.svs", IMAGE)
    make_slide("b.tiff", IMAGE, mpp=0.4)
    make_slide("blank.svs", BLANK)
    slides = tmp_path / "slides"
    tile_slides(slides, tmp_path / "one", FAST, workers=2, show_progress=False)
    tile_slides(slides, tmp_path / "two", FAST, workers=1, show_progress=False)
    files = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*.*"))
    assert len(files) == 7
    for name in files:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


def test_options_are_checked_before_any_slide(tmp_path):
    with pytest.raises(ValueError, match="--overlap"):
        tile_slides(tmp_path, tmp_path / "out", TilingOptions(overlap=256))
    with pytest.raises(ValueError, match="--tissue-threshold"):
        tile_slides(tmp_path, tmp_path / "out", TilingOptions(tissue_threshold=1.5))
    with pytest.raises(ValueError, match="no such folder"):
        tile_slides(tmp_path / "absent", tmp_path / "out")


def test_openslide_sdist_fixtures(tmp_path, openslide_fixtures):
    slides = tmp_path / "slides"
    slides.mkdir()
    for name in ("small.svs", "unreadable.svs", "unopenable.tiff", "boxes.tiff", "😐.svs"):
        shutil.copy(openslide_fixtures / name, slides / name)
    options = TilingOptions(patch_size=4, target_mpp=0.499, seg_mpp=0.499)
    got = rows(tile_slides(slides, tmp_path / "out", options, workers=2, show_progress=False))
    assert got["unreadable.svs"]["status"] == "failed_read"
    assert got["unopenable.tiff"]["status"] == "failed_open"
    assert "unopenable.tiff" in got["unopenable.tiff"]["error"]
    assert got["boxes.tiff"]["status"] == "bad_mpp"
    assert "352.77" in got["boxes.tiff"]["error"] and "--mpp-override" in got["boxes.tiff"]["error"]
    assert got["small.svs"]["status"] in {"processed", "no_tissue"}
    assert got["small.svs"]["mpp"] == pytest.approx(0.499)
    assert got["😐.svs"]["status"] == got["small.svs"]["status"]
    assert got["😐.svs"]["n_patches"] == got["small.svs"]["n_patches"]


def test_a_killed_worker_does_not_stop_the_batch(tmp_path, make_slide):
    make_slide("a.svs", IMAGE)
    make_slide("b.svs", IMAGE)
    pool = tile_check._pool(2)
    pool.submit(int, 0).result()
    for process in list(pool._processes.values()):
        os.kill(process.pid, signal.SIGKILL)
    got = rows(tile_slides(tmp_path / "slides", tmp_path / "out", FAST, 2, show_progress=False))
    assert [row["status"] for row in got.values()] == ["processed", "processed"]
    assert got["a.svs"]["n_patches"] == got["b.svs"]["n_patches"] > 0
    assert tile_check._pool(2) is not pool  # the broken pool was replaced


def outputs(out_dir: Path, names: tuple[str, ...] | None = None) -> dict[str, bytes]:
    """The bytes of every output file under `out_dir` (or of the slides with stem in `names`)."""
    files = {str(p.relative_to(out_dir)): p for p in out_dir.rglob("*.*")}
    if names is not None:
        files = {key: p for key, p in files.items() if p.stem in names}
    return {key: p.read_bytes() for key, p in sorted(files.items())}


def children(pid: int) -> list[int]:
    """Pids of the living (not zombie) children of `pid`, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):
            state, parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
            if int(parent) == pid and state != "Z":
                found.append(int(entry.name))
    return found


def pool_workers() -> list[int]:
    """Every tile-check worker of this process, of the shared pool or of a rerun's own pool:
    the children of its forkserver."""
    servers = []
    for pid in children(os.getpid()):
        with contextlib.suppress(OSError):
            if b"forkserver" in Path(f"/proc/{pid}/cmdline").read_bytes():
                servers.append(pid)
    return [worker for server in servers for worker in children(server)]


def kill_workers_after(delay: float, rng: random.Random) -> list[int]:
    """After `delay` s, SIGKILL a random non-empty set of the workers alive then (waiting up to
    a second for some, as pools start lazily); returns the pids it killed."""
    time.sleep(delay)
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        workers = pool_workers()
        if workers:
            killed = rng.sample(workers, rng.randint(1, len(workers)))
            for pid in killed:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            return killed
        time.sleep(0.002)
    return []


def tile_while_killing(
    slides: Path, out: Path, delay: float, rng: random.Random
) -> tuple[pd.DataFrame, list[int]]:
    """`tile_slides` with 2 workers while a thread kills workers `delay` s in (mid-batch, or
    after it on the idle pool, which the next batch then finds broken); the process list and
    the killed pids."""
    killed: list[int] = []
    killer = threading.Thread(target=lambda: killed.extend(kill_workers_after(delay, rng)))
    killer.start()
    try:
        return tile_slides(slides, out, SMALL, workers=2, show_progress=False), killed
    finally:
        killer.join()


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="finds workers in /proc")
@pytest.mark.timeout(300)
def test_workers_killed_at_random_points_leave_every_good_slide_processed(tmp_path, make_slide):
    """20 batches, each with workers SIGKILLed at a seeded random moment (a third of them after
    the batch, on the idle pool): every slide still ends `processed`, with outputs
    byte-identical to an undisturbed batch."""
    names = ("a", "b", "c", "d")
    for seed, name in enumerate(names):
        make_slide(f"{name}.svs", tissue_image(1024, seed=seed))
    slides = tmp_path / "slides"
    tile_slides(slides, tmp_path / "cold", SMALL, workers=2, show_progress=False)
    start = time.perf_counter()  # kill points are drawn over a run on the warm pool
    tile_slides(slides, tmp_path / "undisturbed", SMALL, workers=2, show_progress=False)
    span = time.perf_counter() - start
    expected = outputs(tmp_path / "undisturbed")
    assert len(expected) == 2 * len(names) + 1 and outputs(tmp_path / "cold") == expected
    rng = random.Random(20240607)
    hit = 0
    for run in range(KILL_RUNS):
        frame, killed = tile_while_killing(
            slides, tmp_path / f"run{run}", rng.uniform(0, 1.5 * span), rng
        )
        assert list(frame["status"]) == ["processed"] * len(names), (run, list(frame["error"]))
        assert outputs(tmp_path / f"run{run}") == expected, run
        hit += bool(killed)
    assert hit >= KILL_RUNS // 2  # a kill misses only when no worker is alive for a second


def test_only_the_slide_whose_worker_is_killed_every_time_fails(tmp_path, make_slide, monkeypatch):
    """A slide that kills its worker each time fails, named; the slides that shared its broken
    pools are rerun and end as in an undisturbed batch."""
    for seed, name in enumerate("abcd"):
        make_slide(f"{name}.svs", tissue_image(1024, seed=seed))
    slides = tmp_path / "slides"
    reference = rows(tile_slides(slides, tmp_path / "ref", SMALL, 2, show_progress=False))
    monkeypatch.setattr(tile_check, "check_tiles", crash_on_c)
    got = rows(tile_slides(slides, tmp_path / "out", SMALL, 2, show_progress=False))
    assert got["c.svs"]["status"] == "failed_read"
    assert got["c.svs"]["error"].startswith("c.svs: its tile-reading worker process died")
    assert not (tmp_path / "out" / "patches" / "c.h5").exists()
    for name in ("a.svs", "b.svs", "d.svs"):
        assert got[name] == reference[name]
    good = ("a", "b", "d")
    assert outputs(tmp_path / "out", good) == outputs(tmp_path / "ref", good)


def finished_outputs(out_dir: Path) -> dict[str, bytes]:
    """`outputs` without the hidden temporary files of writes that a kill cut short."""
    return {name: data for name, data in outputs(out_dir).items() if "/." not in f"/{name}"}


def four_slides(make_slide) -> Path:
    """Four different 1024 px slides; their folder."""
    paths = [make_slide(f"{n}.svs", tissue_image(1024, seed=i)) for i, n in enumerate("abcd")]
    return paths[0].parent


def fail_for(slide: str, step):
    """`step` (a writer of tiling's), except that it raises for the outputs of `slide`, as a
    kill at that moment would stop the batch there."""

    def failing(path, *args, **kwargs):
        if Path(path).stem == slide:
            raise OSError(f"simulated crash writing {path}")
        return step(path, *args, **kwargs)

    return failing


def test_a_slide_cut_off_before_its_qc_image_is_redone(tmp_path, make_slide, monkeypatch):
    """The QC image of b fails to be written (as if the run died there): the rerun tiles b again
    and writes its image, and every output equals an undisturbed run's."""
    make_slide("a.svs", IMAGE)
    make_slide("b.svs", IMAGE)
    slides, out = tmp_path / "slides", tmp_path / "out"
    tile_slides(slides, tmp_path / "ref", FAST, show_progress=False)
    monkeypatch.setattr(tiling, "write_png", fail_for("b", tiling.write_png))
    first = rows(tile_slides(slides, out, FAST, show_progress=False))
    assert first["b.svs"]["status"] == "failed_read"
    assert "simulated crash" in first["b.svs"]["error"]
    assert not (out / "qc" / "b.png").exists()
    monkeypatch.undo()
    again = rows(tile_slides(slides, out, FAST, show_progress=False))
    assert again["b.svs"]["status"] == "processed"
    assert outputs(out) == outputs(tmp_path / "ref")


def test_a_slide_missing_an_output_is_redone(tmp_path, make_slide):
    """A slide whose QC image or coords file is gone after a finished run is tiled again on the
    rerun (and only that slide), with the same bytes as before."""
    make_slide("a.svs", IMAGE)
    make_slide("b.svs", IMAGE)
    slides, out = tmp_path / "slides", tmp_path / "out"
    tile_slides(slides, out, FAST, show_progress=False)
    before = outputs(out)
    kept = (out / "patches" / "a.h5").stat().st_mtime_ns
    for lost in (out / "qc" / "b.png", out / "patches" / "b.h5"):
        lost.unlink()
        tile_slides(slides, out, FAST, show_progress=False)
        assert outputs(out) == before, lost
    assert (out / "patches" / "a.h5").stat().st_mtime_ns == kept


def test_a_rerun_cut_off_with_other_options_leaves_no_stale_slide(
    tmp_path, make_slide, monkeypatch
):
    """A run with other options dies after b's new QC image but before its coords file: the old
    coords file must not pass for b's completion record beside the new image, so a rerun with
    the first options tiles b again."""
    make_slide("b.svs", IMAGE)
    slides, out = tmp_path / "slides", tmp_path / "out"
    tile_slides(slides, out, FAST, show_progress=False)
    before = outputs(out)
    monkeypatch.setattr(tiling, "write_coords", fail_for("b", tiling.write_coords))
    tile_slides(slides, out, SMALL, show_progress=False)
    monkeypatch.undo()
    again = rows(tile_slides(slides, out, FAST, show_progress=False))
    assert again["b.svs"]["status"] == "processed"
    assert outputs(out) == before


def tile_code(slides: Path, out: Path, workers: int) -> str:
    """`python -c` code that tiles `slides` into `out` with BIG_QC, printing "ready" once its
    imports are done."""
    return (
        "from reprolab.preprocess.wsi.tiling import TilingOptions, tile_slides\n"
        "print('ready', flush=True)\n"
        f"tile_slides({str(slides)!r}, {str(out)!r}, TilingOptions(**{BIG_QC!r}), "
        f"workers={workers}, show_progress=False)\n"
    )


def tile_in_subprocess(slides: Path, out: Path, kill_after: float | None) -> tuple[float, int]:
    """Tile in a child process, SIGKILLed `kill_after` s after its imports (never when None);
    the seconds it ran after its imports and its return code."""
    child = subprocess.Popen(
        [sys.executable, "-c", tile_code(slides, out, workers=1)], stdout=subprocess.PIPE
    )
    try:
        assert child.stdout.readline() == b"ready\n"
        start = time.perf_counter()
        if kill_after is not None:
            time.sleep(kill_after)
            child.send_signal(signal.SIGKILL)
        child.wait()
        return time.perf_counter() - start, child.returncode
    finally:
        child.kill()
        child.wait()
        child.stdout.close()


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="kills with SIGKILL")
@pytest.mark.timeout(300)
def test_tile_killed_at_staggered_moments_then_rerun_leaves_every_output(tmp_path, make_slide):
    """10 runs of `tile_slides` in a child process, SIGKILLed at 5 %, 15 %, ... 95 % of an
    undisturbed run's time (counted after the imports), each then rerun to the end: every slide
    ends `processed` with its coords file and QC image, byte-identical to the undisturbed run.
    With BIG_QC about a third of the kills land between a slide's coords file and its QC image,
    where the old completion check then skipped the slide forever without its image."""
    slides = four_slides(make_slide)
    span, code = tile_in_subprocess(slides, tmp_path / "undisturbed", kill_after=None)
    assert code == 0
    expected = outputs(tmp_path / "undisturbed")
    killed = 0
    for run in range(MAIN_KILLS):
        out = tmp_path / f"run{run}"
        _, code = tile_in_subprocess(slides, out, kill_after=span * (run + 0.5) / MAIN_KILLS)
        killed += code == -signal.SIGKILL
        frame = tile_slides(slides, out, TilingOptions(**BIG_QC), show_progress=False)
        assert list(frame["status"]) == ["processed"] * len(frame), (run, list(frame["error"]))
        assert finished_outputs(out) == expected, run
    assert killed >= MAIN_KILLS // 2  # a run ends before its kill only near the end of the span


@needs_proc
@pytest.mark.timeout(300)
def test_killing_tile_with_workers_leaves_no_process_behind(tmp_path, make_slide):
    """3 times: `tile_slides` with 2 workers in a session of its own is SIGKILLed once both
    workers run; its workers, forkserver and resource tracker all end within the liveness wait
    (before, they were still alive 30 s later)."""
    slides = four_slides(make_slide)
    for run in range(POOL_KILLS):
        code = tile_code(slides, tmp_path / f"run{run}", workers=2)
        kill_once_started(code, tmp_path / f"run{run}.log", children=2)
