"""`reprolab wsi features`: embed the tiles of a tiled folder of slides with a frozen encoder.

    reprolab wsi features --slides DIR --patches DIR --out DIR --encoder random_conv
        [--encoder-path P] [--batch-size N] [--workers N] [--threads N] [--seed S]

`--patches` is the tiling stage's folder of `<slide>.h5` coords files; its `process_list.csv`
is looked for there and in the folder above. Writes `<out>/<slide>.h5` and
`<out>/process_list.csv` through `features.extract_cohort`. Exit status 0 when the batch ran
(failed slides are listed in the process list and counted on stderr), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import sys

from reprolab.core.determinism import seed_everything
from reprolab.preprocess.wsi.encoders import ENCODER_KINDS
from reprolab.preprocess.wsi.features import PROCESS_LIST, extract_cohort


def encoder_spec(args: argparse.Namespace) -> dict:
    """The encoder spec the arguments name."""
    spec: dict = {"kind": args.encoder, "seed": args.seed}
    if args.encoder_path is not None:
        spec["path"] = args.encoder_path
    if args.input_size is not None:
        spec["input_size"] = args.input_size
    return spec


def cmd_features(args: argparse.Namespace) -> int:
    """Run the features stage on a folder; print a summary."""
    seed_everything(args.seed, args.threads)
    frame = extract_cohort(
        args.slides,
        args.patches,
        args.out,
        encoder_spec(args),
        batch_size=args.batch_size,
        workers=args.workers,
        threads=args.threads,
        device=args.device,
        show_progress=not args.quiet,
    )
    counts = frame["status"].value_counts().to_dict()
    summary = ", ".join(f"{counts[s]} {s}" for s in sorted(counts)) or "no slides"
    print(f"{args.out}: {summary} (see {args.out}/{PROCESS_LIST})", file=sys.stderr)
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `reprolab wsi features`."""
    parser = subparsers.add_parser(
        "features", help="embed the tiles of tiled slides with a frozen encoder"
    )
    parser.add_argument("--slides", required=True, help="folder of slide files")
    parser.add_argument("--patches", required=True, help="folder of <slide>.h5 coords files")
    parser.add_argument("--out", required=True, help="folder for <slide>.h5 features files")
    parser.add_argument("--encoder", choices=ENCODER_KINDS, default="random_conv")
    parser.add_argument("--encoder-path", help="model directory for hf_local")
    parser.add_argument("--input-size", type=int, help="encoder input side (default: the kind's)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--workers", type=int, default=1, help="DataLoader workers reading tiles")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--seed", type=int, default=0, help="seed (random_conv weights)")
    parser.add_argument("--device", default="cpu", help="torch device of the encoder")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.set_defaults(func=cmd_features)
