"""Where things live: the paths every rule, the DVC export and the index agree on."""

from __future__ import annotations

import pkgutil
from pathlib import Path

import reprolab.preprocess
import reprolab.studies

CONTRACT_FILES = (
    "table.csv",
    "table.md",
    "table.tex",
    "claims.json",
    "metrics.json",
    "provenance.json",
    "curves.csv",
    "report.ipynb",
    "report.html",
)
"""Files every study writes under results/<id>/ (DESIGN.md, 'A study's contract')."""

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

CURVES = "curves.csv"
"""Long-format learning curve of a study (`x,series,y`), drawn by `dvc plots`."""

INDEX = Path("results/index.html")


def known_studies() -> list[str]:
    """Ids of the study packages under reprolab.studies, sorted."""
    return sorted(m.name for m in pkgutil.iter_modules(reprolab.studies.__path__) if m.ispkg)


def known_families() -> list[str]:
    """Names of the preprocessing families under reprolab.preprocess (wsi, video, ...), sorted."""
    return sorted(m.name for m in pkgutil.iter_modules(reprolab.preprocess.__path__) if m.ispkg)


def results_dir(study: str) -> Path:
    """results/<id>: the study's runs, table, claims and report."""
    return Path("results") / study


def data_dir(study: str) -> Path:
    """data/<id>: the study's prepared inputs."""
    return Path("data") / study
