"""The `reprolab` command.

Subcommands run a part of the project outside Snakemake: `params-check` validates params.yaml,
`data-check` lists the real datasets and checkpoints a scale needs, `dvc-export` writes (or with
--check compares) dvc.yaml, `compare` checks that two results trees agree in substance,
`fragility` records which claim outcomes flip in another run (kernel level, vendor), `new-study`
writes a study's skeleton. The preprocessing families add their own (`reprolab wsi ...`,
`reprolab video ...`, `reprolab streams ...`).

A subcommand's module is imported only when that subcommand runs or its help is shown, so
`reprolab --help` and `reprolab params-check` load no torch, transformers or pandas.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from reprolab.core.arguments import input_file
from reprolab.core.params import SCALES

Register = Callable[[argparse.ArgumentParser], None]


class Parser(argparse.ArgumentParser):
    """An argument parser that shows defaults in its help and may add its arguments late.

    `register(parser)`, when given, adds the parser's arguments (or subcommands) the first time
    the parser parses or formats its help or usage, so a subcommand whose options come from a
    heavy module imports it only when that subcommand is used. Subparsers are Parsers too.
    """

    def __init__(
        self,
        *args: Any,
        register: Register | None = None,
        formatter_class: type[argparse.HelpFormatter] = argparse.ArgumentDefaultsHelpFormatter,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, formatter_class=formatter_class, **kwargs)
        self._register = register

    def _ensure_registered(self) -> None:
        register, self._register = self._register, None
        if register is not None:
            register(self)

    def parse_known_args(self, args=None, namespace=None):
        self._ensure_registered()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self._ensure_registered()
        return super().format_help()

    def format_usage(self) -> str:
        self._ensure_registered()
        return super().format_usage()


def version() -> str:
    """The installed distribution's version of reprolab."""
    try:
        return metadata.version("reprolab")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _load_checked(params_path: str) -> dict:
    """params.yaml at `params_path`, validated as the workflow validates it."""
    from reprolab.core.params import check_config, load_yaml

    config = load_yaml(input_file("params file", params_path))
    check_config(config, source=params_path)
    return config


def cmd_params_check(args: argparse.Namespace) -> int:
    """Validate params.yaml as the workflow would; print what is wrong."""
    path = args.params_option or args.params
    _load_checked(path)
    print(f"{path}: valid")
    return 0


def cmd_dvc_export(args: argparse.Namespace) -> int:
    """Write dvc.yaml from the workflow, or with --check exit 1 when the file is stale."""
    from reprolab import dvc_export
    from reprolab.core.io import write_text

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


def cmd_dvc_lock(args: argparse.Namespace) -> int:
    """Exit 1 naming the stages whose sources changed since dvc.lock recorded them, or with
    --record STAGE... write their current hashes."""
    from reprolab import dvc_lock

    root = Path(".")
    if args.record:
        for line in dvc_lock.record_sources(root, args.record) or ["nothing changed"]:
            print(line)
        return 0
    stale = dvc_lock.stale_sources(dvc_lock.dvc_status(root), dvc_lock.produced_paths(root))
    for stage, paths in stale.items():
        print(f"{stage}: {', '.join(paths)} changed since dvc.lock recorded it", file=sys.stderr)
    if stale:
        print(
            "rerun those stages (dvc repro STAGE, then dvc commit -f STAGE), or, where a "
            "reproduction showed their outputs unchanged, `reprolab dvc-lock --record STAGE...`",
            file=sys.stderr,
        )
        return 1
    print("dvc.lock records the sources of every stage")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Compare results tree A with the reference B; 1 when a cell or claim outcome differs."""
    from reprolab import compare
    from reprolab.core.io import write_json

    tolerance = compare.Tolerance(rtol=args.rtol, atol=args.atol)
    report = compare.compare_trees(args.a, args.b, tolerance, args.studies)
    print(report.to_text(), end="")
    if args.json:
        write_json(args.json, report.to_dict())
    return 0 if report.ok else 1


def cmd_run_times(args: argparse.Namespace) -> int:
    """Print where a workflow run's time went, per study and preprocessing family."""
    from reprolab.core.layout import known_families, known_studies
    from reprolab.core.run_times import format_breakdown, latest_log, parse_log

    log = Path(args.log) if args.log else latest_log(args.root)
    with open(log, encoding="utf-8") as handle:
        jobs = parse_log(handle)
    print(f"{log}:")
    print(format_breakdown(jobs, [*known_studies(), *known_families()]))
    return 0


def cmd_fragility(args: argparse.Namespace) -> int:
    """Record, per study, the claim outcomes of another run (a second kernel level, or the other
    processor vendor) beside the study's results."""
    from reprolab.core.fragility import describe_run, record_second_run
    from reprolab.core.layout import results_dir
    from reprolab.core.params import load_yaml

    config = load_yaml(args.params)
    second = Path(args.second)
    studies = args.studies or [p.name for p in sorted(second.iterdir()) if p.is_dir()]
    status = 0
    for study in studies:
        try:
            record = record_second_run(study, second / study, config, results_dir(study))
        except (OSError, KeyError, ValueError) as exc:
            print(f"error: {study}: {exc}", file=sys.stderr)
            status = 2
            continue
        runs = record["runs"]
        print(f"{study}: {len(runs)} run(s) recorded, the last {describe_run(runs[-1])}")
    return status


def cmd_data_check(args: argparse.Namespace) -> int:
    """List the datasets and checkpoints the jobs read at `--scale`, present or missing (paths
    relative to the working directory, as the workflow reads them); 1 when one is missing."""
    from reprolab.core.paper_data import declared_inputs, input_table, is_present

    inputs = declared_inputs({**_load_checked(args.params), "scale": args.scale})
    if not inputs:
        print(f"scale {args.scale}: no external data needed (the workflow generates its data)")
        return 0
    declared = {i.path for i in inputs}
    missing = {i.path for i in inputs if not is_present(i)}
    print(input_table(inputs))
    print(
        f"\n{len(declared) - len(missing)} of {len(declared)} inputs present at scale {args.scale}"
    )
    return 1 if missing else 0


def cmd_new_study(args: argparse.Namespace) -> int:
    """Write the skeleton of a new study; 2 when the id is bad or taken."""
    from reprolab.scaffold import new_study

    written = new_study(args.study, args.root)
    for path in written:
        print(f"wrote {path}")
    print(
        f"next: add {args.study} to `studies` in params.yaml, then "
        f"`snakemake --cores 2 --config scale=ci {args.study}` and `reprolab dvc-export`"
    )
    return 0


def _compare_arguments(parser: argparse.ArgumentParser) -> None:
    from reprolab import compare

    parser.description = compare.Tolerance().describe()
    parser.add_argument("a", help="results tree to check: a folder of <id>/ studies, or git:REV")
    parser.add_argument("b", help="reference results tree: a folder, or git:REV (results/ at REV)")
    parser.add_argument(
        "--rtol", type=float, default=compare.Tolerance.rtol, help="relative tolerance of a cell"
    )
    parser.add_argument(
        "--atol", type=float, default=compare.Tolerance.atol, help="absolute tolerance of a cell"
    )
    parser.add_argument("--studies", nargs="+", metavar="ID", help="compare only these studies")
    parser.add_argument("--json", metavar="OUT", help="also write the report as JSON to OUT")
    parser.set_defaults(func=cmd_compare)


def _wsi_commands(parser: argparse.ArgumentParser) -> None:
    from reprolab.preprocess.wsi import features_command, tile_command

    sub = parser.add_subparsers(dest="wsi_command", required=True)
    tile_command.add_parser(sub)
    features_command.add_parser(sub)


def _video_commands(parser: argparse.ArgumentParser) -> None:
    from reprolab.preprocess.video import frames_command

    frames_command.add_parser(parser.add_subparsers(dest="video_command", required=True))


def _streams_commands(parser: argparse.ArgumentParser) -> None:
    from reprolab.preprocess.instr import streams_command

    streams_command.add_parser(parser.add_subparsers(dest="streams_command", required=True))


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `reprolab` command."""
    parser = Parser(prog="reprolab", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser(
        "params-check",
        help="validate params.yaml",
        description="Validate a params file against the packaged schemas, as the workflow does.",
    )
    check.add_argument("params", nargs="?", default="params.yaml", help="params file to check")
    check.add_argument(
        "--params", dest="params_option", metavar="PARAMS", help="the params file, as an option"
    )
    check.set_defaults(func=cmd_params_check)
    export = sub.add_parser("dvc-export", help="write dvc.yaml from the Snakemake workflow")
    export.add_argument("--params", default="params.yaml", help="params file of the workflow")
    export.add_argument("--output", default="dvc.yaml", help="the dvc.yaml to write or check")
    export.add_argument("--check", action="store_true", help="only compare with the existing file")
    export.set_defaults(func=cmd_dvc_export)
    lock = sub.add_parser(
        "dvc-lock",
        help="check that dvc.lock records the current sources of every stage",
        description="Without options, exit 1 naming each stage whose code, notes or params "
        "differ from what dvc.lock recorded (the stage's inputs from other stages unchanged). "
        "--record writes the current hashes of those sources, leaving outputs as recorded: for "
        "a change that a reproduction showed leaves the outputs unchanged.",
    )
    lock.add_argument("--record", nargs="+", metavar="STAGE", help="record these stages' sources")
    lock.set_defaults(func=cmd_dvc_lock)
    data = sub.add_parser(
        "data-check",
        help="list the datasets and checkpoints a scale needs, present or missing",
        description="List the files of the real datasets and checkpoints the workflow's jobs "
        "read at a scale (the declared inputs of reprolab.core.paper_data), whether each is "
        "present and how to obtain it; exit 1 when one is missing.",
    )
    data.add_argument("--scale", choices=SCALES, default="paper", help="the scale to check")
    data.add_argument("--params", default="params.yaml", help="params file of the workflow")
    data.set_defaults(func=cmd_data_check)
    new = sub.add_parser(
        "new-study",
        help="write the skeleton of a new study",
        description="Write a new study's package, rule file, params section, schema, notebook, "
        "test and design notes: a study that runs, to be replaced by the paper's experiment.",
    )
    new.add_argument("study", help="the study id (lower case letters, digits, _)")
    new.add_argument("--root", default=".", help="the repository to write into")
    new.set_defaults(func=cmd_new_study)
    sub.add_parser(
        "compare",
        help="check that two results trees agree in substance (table cells, claim outcomes)",
        register=_compare_arguments,
    )
    fragility = sub.add_parser(
        "fragility",
        help="record claim outcomes of another run of the same params (fragile claims)",
        description="Add each study's claim outcomes in another run of the same params (SECOND: "
        "its results folder), at a second kernel level or on the other vendor's processor, to "
        "results/<id>/fragility.json (a run of the same configuration is replaced); the next "
        "summary marks the checks whose outcome differs in any recorded run fragile. `make "
        "fragility` runs the second level and calls this.",
    )
    fragility.add_argument("second", help="results folder of the other run")
    fragility.add_argument("--studies", nargs="+", metavar="ID", help="only these studies")
    fragility.add_argument("--params", default="params.yaml", help="params file of the runs")
    fragility.set_defaults(func=cmd_fragility)
    times = sub.add_parser(
        "run-times",
        help="print where a workflow run's time went, per study",
        description="Read a Snakemake log (the newest under .snakemake/log by default) and "
        "print, per study and preprocessing family, its finished jobs, their summed time, its "
        "share and the seconds per job, the slowest first (reprolab.core.run_times).",
    )
    times.add_argument("log", nargs="?", help="a Snakemake log file (default: the newest)")
    times.add_argument("--root", default=".", help="the workflow whose newest log to read")
    times.set_defaults(func=cmd_run_times)
    families = {
        "wsi": ("whole-slide images: tile slides, embed their tiles", _wsi_commands),
        "video": ("videos: extract frame-exact clips", _video_commands),
        "streams": ("instruction streams: build SynthCIT, check records", _streams_commands),
    }
    for name, (summary, register) in families.items():
        sub.add_parser(name, help=summary, description=summary, register=register)
    return parser


def describe_error(exc: ValueError | OSError) -> str:
    """The message of a refused input: the file and the system's reason for an OSError (not
    Python's `[Errno N]` form), else the exception's own message, which names the argument,
    key or file."""
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    return str(exc)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script.

    Bad input is handled here, for every subcommand: a ValueError (a bad argument, params key
    or file format; each message names it) or an OSError (a file that cannot be read or
    written) ends the command with `error: ...` on stderr and exit status 2, never a traceback.
    Argument syntax errors exit 2 through argparse. Anything else is a bug and keeps its
    traceback.
    """
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, OSError) as exc:
        print(f"error: {describe_error(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
