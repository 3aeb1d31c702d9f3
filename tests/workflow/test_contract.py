"""The study contract, checked over every known study: results interface, rules (a tune rule
whose records every run job reads), schema, notebook, design notes, resources at paper scale,
tuning winners off their grids' edges, a summary that never loads torch and rule files whose
imports load nothing heavy."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import nbformat
import pytest

from reprolab.core.layout import known_studies
from reprolab.core.summary import StudyResults, results_module
from tests.conftest import ROOT
from tests.workflow.rules_api import paper_scale_rules

TAIL = ("summarize", "provenance", "report")
HEAVY = ("torch", "transformers")
PARSE_HEAVY = (*HEAVY, "scipy")
"""Packages the workflow's own imports may not load: each costs about a second or more."""
RULE_IMPORT = re.compile(
    r"^[ \t]*(from[ \t]+(reprolab[\w.]*)[ \t]+import[ \t]+(?:\([^)]*\)|.*)"
    r"|import[ \t]+(reprolab[\w.]*).*)$",
    re.MULTILINE,
)
"""A `from reprolab… import …` (names in parentheses too) or `import reprolab…` statement:
(statement, module of a from-import, module of a plain import)."""


@pytest.mark.parametrize("study", known_studies())
def test_results_module_implements_the_interface(study: str):
    assert isinstance(results_module(study), StudyResults)
    assert results_module(study).NOTES.strip()


@pytest.mark.parametrize("study", known_studies())
def test_rules_schema_notebook_and_notes_are_there(study: str):
    rules = paper_scale_rules()
    for name in (study, f"{study}_tune", *(f"{study}_{step}" for step in TAIL)):
        assert name in rules, f"no rule {name}"
    assert (ROOT / f"src/reprolab/schemas/studies/{study}.schema.yaml").is_file()
    notebook = nbformat.read(ROOT / f"workflow/notebooks/{study}.ipynb", as_version=4)
    tagged = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, f"{study}.ipynb needs one cell tagged `parameters`"
    assert (ROOT / f"docs/studies/{study}.md").is_file()


@pytest.mark.parametrize("study", known_studies())
def test_every_job_rule_has_resources_at_paper_scale(study: str):
    own = {
        name: rule
        for name, rule in paper_scale_rules().items()
        if name.startswith(f"{study}_") and rule["job"] and not rule["local"]
    }
    assert own, f"{study} has no job rules"
    for name, rule in own.items():
        assert {"mem_mb", "runtime"} <= set(rule["resources"]), name


@pytest.mark.parametrize("study", known_studies())
def test_tuning_records_live_under_data_and_every_run_job_reads_them(study: str):
    """`<id>_tune` gathers tuning records under data/<id>/tuning/; a job that writes
    results/<id>/runs reads them, so no table job uses a value chosen outside the workflow."""
    rules = paper_scale_rules()
    tuning = f"data/{study}/tuning/"
    records = rules[f"{study}_tune"]["inputs"]
    assert records and all(path.startswith(tuning) for path in records), records
    runs = f"results/{study}/runs/"
    run_jobs = [
        name
        for name, rule in rules.items()
        if name.startswith(f"{study}_") and any(o.startswith(runs) for o in rule["outputs"])
    ]
    assert run_jobs, f"{study}: no job writes {runs}"
    for name in run_jobs:
        assert any(i.startswith(tuning) for i in rules[name]["inputs"]), (
            f"{name} writes {runs} without reading a tuning record under {tuning}"
        )


@pytest.mark.parametrize("study", known_studies())
def test_committed_tuning_winners_are_off_their_grids_edges(study: str):
    """A winner at the end of a numeric axis means the grid was too narrow (core.tuning),
    unless the curve is flat within the tuning seeds' noise (core.tuning.is_flat): then no
    widening moves the winner, which is noise."""
    metrics = ROOT / f"results/{study}/metrics.json"
    if not metrics.is_file():
        pytest.skip(f"{study} has no committed results")
    tuning = json.loads(metrics.read_text()).get("tuning", {})
    assert tuning, f"{study}: metrics.json has no tuning summary (register_study(tuning=...))"
    edges = {
        method: entry["on_edge"]
        for method, entry in tuning.items()
        if entry["on_edge"] and not entry["flat"]
    }
    assert not edges, f"{study}: tuning winners on a grid edge (widen the grid): {edges}"


def test_summaries_and_reports_never_import_torch():
    """A summary job imports core.summary and the study's results module; a report job runs
    the notebook's imports: none of them may load torch or transformers."""
    imports = ["import reprolab.core.summary", "import reprolab.core.report"]
    for study in known_studies():
        imports.append(f"import reprolab.studies.{study}.results")
        notebook = nbformat.read(ROOT / f"workflow/notebooks/{study}.ipynb", as_version=4)
        for cell in notebook.cells:
            if cell.cell_type == "code":
                imports += [
                    line.strip()
                    for line in cell.source.splitlines()
                    if line.startswith(("import ", "from ")) and " import " in f" {line}"
                ]
    probe = "\n".join(
        [
            *dict.fromkeys(imports),
            "import sys",
            f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r}))",
        ]
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]", result.stdout


def test_rule_files_import_nothing_heavy():
    """Snakemake runs the imports of the Snakefile and of every rule file whenever it parses the
    workflow: at every start (a dry run too) and, on a SLURM cluster, twice per job. Those
    imports must not load torch, transformers or scipy, which would add seconds to each; what a
    rule file needs from a study lives in a light module (`workflow_io`). The statements run one
    by one in a fresh interpreter, so the failure names the first module that loads one."""
    statements: dict[str, str] = {}
    for path in [ROOT / "Snakefile", *sorted((ROOT / "workflow/rules").glob("*.smk"))]:
        for match in RULE_IMPORT.finditer(path.read_text()):
            statements[" ".join(match[1].split())] = match[2] or match[3]
    assert any(m.startswith("reprolab.studies.") for m in statements.values()), statements
    probe = "\n".join(
        [
            "import sys",
            f"for statement, module in {list(statements.items())!r}:",
            "    exec(statement)",
            f"    heavy = sorted({{m.split('.')[0] for m in sys.modules}} & {set(PARSE_HEAVY)!r})",
            "    if heavy:",
            "        print(f'{module} loads {heavy}')",
            "        break",
        ]
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert not result.stdout.strip(), result.stdout
