"""Where things live: the paths every rule, the DVC export and the index agree on."""

from __future__ import annotations

import pkgutil
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

import reprolab.preprocess
import reprolab.studies

COMMITTED_FILES = (
    "table.csv",
    "table.md",
    "table.tex",
    "claims.json",
    "metrics.json",
    "provenance.json",
    "curves.csv",
)
"""The small text files of the contract that git carries (DVC outs with `cache: false`), so a
fresh clone can show, diff and compare results without the DVC remote; the reports and runs
live in DVC's cache."""

CONTRACT_FILES = (*COMMITTED_FILES, "report.ipynb", "report.html")
"""Files every study writes under results/<id>/ (docs/architecture.md, the study contract)."""

CURVES = "curves.csv"
"""Long-format learning curve of a study (`x,series,y`), drawn by `dvc plots`."""

INDEX = Path("results/index.html")


def known_studies() -> list[str]:
    """Ids of the study packages under reprolab.studies, sorted."""
    return sorted(m.name for m in pkgutil.iter_modules(reprolab.studies.__path__) if m.ispkg)


def known_families() -> list[str]:
    """Names of the preprocessing families under reprolab.preprocess (wsi, video, ...), sorted."""
    return sorted(m.name for m in pkgutil.iter_modules(reprolab.preprocess.__path__) if m.ispkg)


def wildcard_choices(names: Iterable[str]) -> str:
    """A rule's wildcard constraint that matches one of `names` (the entries of a params
    mapping or list): the names as a regex alternation, each re.escape'd, so the `.` of
    `dclip_0.1` matches only a dot and a name can never widen what the wildcard accepts."""
    return "|".join(re.escape(name) for name in names)


def results_dir(study: str) -> Path:
    """results/<id>: the study's runs, table, claims and report."""
    return Path("results") / study


def data_dir(study: str) -> Path:
    """data/<id>: the study's prepared inputs."""
    return Path("data") / study


PAPERS = Path("src/reprolab/papers.yaml")
"""The nineteen papers (number, id, title) and every stage's smoke run time: the repository
path a rule declares as input; `load_papers()` reads the package's copy by default."""


@dataclass(frozen=True)
class Paper:
    """One paper of src/reprolab/papers.yaml."""

    number: int
    id: str
    title: str
    smoke_minutes: float | None
    """Smoke run time of the paper's own DVC stage (minutes), None when not measured."""


@dataclass(frozen=True)
class Papers:
    """The papers in the order of their numbers, and the smoke minutes of every DVC stage (the
    papers' stages, the preprocessing families', the index)."""

    papers: tuple[Paper, ...]
    smoke_minutes: dict[str, float]

    def ids(self) -> list[str]:
        return [paper.id for paper in self.papers]


def load_papers(path: str | Path | None = None) -> Papers:
    """Read papers.yaml (the package's copy unless `path` is given) and check its form: papers
    numbered 1, 2, ... in order, unique ids, a title each, smoke minutes as non-negative
    numbers. Raise ValueError naming the file otherwise."""
    if path is None:
        where = "reprolab/papers.yaml"
        text = resources.files("reprolab").joinpath("papers.yaml").read_text(encoding="utf-8")
    else:
        where = str(path)
        text = Path(path).read_text(encoding="utf-8")
    document = yaml.safe_load(text)
    if not isinstance(document, dict) or not isinstance(document.get("papers"), list):
        raise ValueError(f"{where}: expected a mapping with a `papers` list")
    minutes = document.get("smoke_minutes") or {}
    if not isinstance(minutes, dict) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in minutes.values()
    ):
        raise ValueError(f"{where}: `smoke_minutes` must map stage names to minutes (>= 0)")
    papers = []
    for position, entry in enumerate(document["papers"], start=1):
        if not isinstance(entry, dict) or set(entry) != {"number", "id", "title"}:
            raise ValueError(f"{where}: paper {position} must have exactly number, id and title")
        if entry["number"] != position:
            raise ValueError(
                f"{where}: paper {entry.get('id')!r} has number {entry['number']!r}, "
                f"expected {position} (papers are listed in the order of their numbers)"
            )
        if not isinstance(entry["id"], str) or not isinstance(entry["title"], str):
            raise ValueError(f"{where}: paper {position}: id and title must be strings")
        stage_minutes = minutes.get(entry["id"])
        papers.append(
            Paper(
                number=position,
                id=entry["id"],
                title=entry["title"],
                smoke_minutes=None if stage_minutes is None else float(stage_minutes),
            )
        )
    ids = [paper.id for paper in papers]
    duplicated = sorted({i for i in ids if ids.count(i) > 1})
    if duplicated:
        raise ValueError(f"{where}: paper id(s) {duplicated} listed more than once")
    return Papers(papers=tuple(papers), smoke_minutes={k: float(v) for k, v in minutes.items()})
