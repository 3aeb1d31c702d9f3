"""`reprolab wsi tile`: tile a folder of slides outside the workflow.

The flags map one to one onto `TilingOptions` (plus the folders and `--workers`), and the
command calls the same `tile_slides` as the workflow rule. It prints a one-line summary per
status; bad slides do not make it fail (their rows in `process_list.csv` say what went wrong),
bad options or an unreadable override CSV do (exit 2, with the message).
"""

from __future__ import annotations

import argparse

from reprolab.preprocess.wsi.tiling import STATUSES, TilingOptions, tile_slides
from reprolab.preprocess.wsi.tissue import TissueParams


def cmd_tile(args: argparse.Namespace) -> int:
    """Run the tiling stage on `--slides` into `--out` (bad options raise ArgumentError, which
    the `reprolab` command reports with exit status 2)."""
    options = TilingOptions(
        target_mpp=args.target_mpp,
        patch_size=args.patch_size,
        overlap=args.overlap,
        tissue_threshold=args.tissue_threshold,
        seg_mpp=args.seg_mpp,
        white_black=args.white_black,
        mpp_override=args.mpp_override,
        tissue=TissueParams(
            min_tissue_area_um2=args.min_tissue_area,
            min_hole_area_um2=args.min_hole_area,
        ),
    )
    frame = tile_slides(
        args.slides, args.out, options, workers=args.workers, show_progress=not args.quiet
    )
    counts = frame["status"].value_counts()
    summary = ", ".join(f"{counts[s]} {s}" for s in STATUSES if s in counts)
    print(f"{len(frame)} slides: {summary or 'none found'}; see {args.out}/process_list.csv")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `reprolab wsi tile`."""
    defaults = TilingOptions()
    tissue = defaults.tissue
    parser = subparsers.add_parser(
        "tile",
        help="segment tissue and write patch coordinates for a folder of slides",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("--slides", required=True, help="folder of slide files")
    parser.add_argument("--out", required=True, help="output folder (patches/, qc/, list)")
    parser.add_argument("--target-mpp", type=float, default=defaults.target_mpp)
    parser.add_argument("--patch-size", type=int, default=defaults.patch_size)
    parser.add_argument(
        "--overlap", type=int, default=defaults.overlap, help="pixels at --target-mpp"
    )
    parser.add_argument("--tissue-threshold", type=float, default=defaults.tissue_threshold)
    parser.add_argument("--seg-mpp", type=float, default=defaults.seg_mpp, help="µm/px of the mask")
    parser.add_argument(
        "--mpp-override", default=None, help="CSV with columns slide,mpp (wins when listed)"
    )
    parser.add_argument("--workers", type=int, default=1, help="tile-reading processes")
    parser.add_argument(
        "--min-tissue-area", type=float, default=tissue.min_tissue_area_um2, help="µm²"
    )
    parser.add_argument("--min-hole-area", type=float, default=tissue.min_hole_area_um2, help="µm²")
    parser.add_argument(
        "--no-white-black",
        dest="white_black",
        action="store_false",
        help="keep blank and black tiles",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=cmd_tile)
