"""The `reprolab` command.

Subcommands run a part of the project outside Snakemake: `params-check` validates params.yaml,
`dvc-export` writes (or with --check compares) dvc.yaml, `compare` checks that two results trees
agree in substance. The preprocessing families add their own (`reprolab wsi ...`,
`reprolab video ...`, `reprolab streams ...`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reprolab import compare, dvc_export
from reprolab.core.io import write_json, write_text
from reprolab.core.layout import known_studies
from reprolab.core.params import ParamsError, check_config, load_yaml
from reprolab.preprocess.instr import streams_command
from reprolab.preprocess.video import frames_command
from reprolab.preprocess.wsi import features_command, tile_command

SCHEMA = Path("workflow/schemas/params.schema.yaml")


def _load_checked(params_path: str) -> dict:
    import jsonschema

    config = load_yaml(params_path)
    schema = load_yaml(SCHEMA)
    try:
        jsonschema.validate(config, schema)
    except jsonschema.ValidationError as exc:
        key = ".".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise ParamsError(f"{params_path}: key '{key}': {exc.message}") from exc
    check_config(config, SCHEMA, known_studies())
    return config


def cmd_params_check(args: argparse.Namespace) -> int:
    """Validate params.yaml as the workflow would; print what is wrong."""
    _load_checked(args.params)
    print(f"{args.params}: valid")
    return 0


def cmd_dvc_export(args: argparse.Namespace) -> int:
    """Write dvc.yaml from the workflow, or with --check exit 1 when the file is stale."""
    text = dvc_export.render(_load_checked(args.params))
    target = Path(args.output)
    if args.check:
        if not target.is_file() or target.read_text() != text:
            print(
                f"{target} is out of date with the workflow: run `reprolab dvc-export`",
                file=sys.stderr,
            )
            return 1
        print(f"{target} is up to date")
        return 0
    write_text(target, text)
    print(f"wrote {target}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Compare results tree A with the reference B; 1 when a cell or claim outcome differs."""
    try:
        tolerance = compare.Tolerance(rtol=args.rtol, atol=args.atol)
        report = compare.compare_trees(args.a, args.b, tolerance, args.studies)
    except compare.CompareError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(report.to_text(), end="")
    if args.json:
        write_json(args.json, report.to_dict())
    return 0 if report.ok else 1


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `reprolab` command."""
    parser = argparse.ArgumentParser(prog="reprolab", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("params-check", help="validate params.yaml")
    check.add_argument("--params", default="params.yaml")
    check.set_defaults(func=cmd_params_check)
    export = sub.add_parser("dvc-export", help="write dvc.yaml from the Snakemake workflow")
    export.add_argument("--params", default="params.yaml")
    export.add_argument("--output", default="dvc.yaml")
    export.add_argument("--check", action="store_true", help="only compare with the existing file")
    export.set_defaults(func=cmd_dvc_export)
    diff = sub.add_parser(
        "compare",
        help="check that two results trees agree in substance (table cells, claim outcomes)",
        description=compare.Tolerance().describe(),
    )
    diff.add_argument("a", help="results tree to check: a folder of <id>/ studies, or git:REV")
    diff.add_argument("b", help="reference results tree: a folder, or git:REV (results/ at REV)")
    diff.add_argument("--rtol", type=float, default=compare.Tolerance.rtol)
    diff.add_argument("--atol", type=float, default=compare.Tolerance.atol)
    diff.add_argument("--studies", nargs="+", metavar="ID", help="compare only these studies")
    diff.add_argument("--json", metavar="OUT", help="also write the report as JSON to OUT")
    diff.set_defaults(func=cmd_compare)
    wsi = sub.add_parser("wsi", help="whole-slide images: tile slides, embed their tiles")
    wsi_sub = wsi.add_subparsers(dest="wsi_command", required=True)
    tile_command.add_parser(wsi_sub)
    features_command.add_parser(wsi_sub)
    video = sub.add_parser("video", help="videos: extract frame-exact clips")
    video_sub = video.add_subparsers(dest="video_command", required=True)
    frames_command.add_parser(video_sub)
    streams = sub.add_parser("streams", help="instruction streams: build SynthCIT, check records")
    streams_sub = streams.add_subparsers(dest="streams_command", required=True)
    streams_command.add_parser(streams_sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ParamsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
