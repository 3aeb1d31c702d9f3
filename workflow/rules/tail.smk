# The rules every study shares, written once: the `<id>_tune` target (every tuning record),
# summarize (table, claims, metrics, curves), provenance, the papermill report and the `<id>`
# target, for each study registered with `register_study` in its own .smk (see common.smk).


for _study, _tail in STUDY_TAILS.items():

    rule:
        name:
            f"{_study}_tune"
        input:
            tuning_outputs(_study),
        localrule: True

    rule:
        name:
            f"{_study}_summarize"
        input:
            runs=_tail["runs"],
            tuning=_tail["tuning"],
            fragility=fragility_record(_study),
        output:
            table=report(
                f"results/{_study}/table.csv",
                caption="../report/study_table.rst",
                category=_study,
                subcategory="table",
                labels={"study": _study, "kind": "table"},
            ),
            table_md=f"results/{_study}/table.md",
            table_tex=f"results/{_study}/table.tex",
            claims=f"results/{_study}/claims.json",
            metrics=f"results/{_study}/metrics.json",
            curves=report(
                f"results/{_study}/curves.csv",
                caption="../report/study_curves.rst",
                category=_study,
                subcategory="curves",
                labels={"study": _study, "kind": "curves"},
            ),
        log:
            f"logs/{_study}/summarize.log",
        conda:
            "../../envs/report.yaml"
        threads: 1
        resources:
            **job_resources(mem_mb=(2000, 8000), runtime=(10, 60)),
        params:
            study=_study,
            section=section(_study),
            seeds=_tail["seeds"],
            captions=_tail["captions"],
        script:
            "../scripts/summarize.py"

    rule:
        name:
            f"{_study}_provenance"
        input:
            metrics=f"results/{_study}/metrics.json",
        output:
            provenance=f"results/{_study}/provenance.json",
        log:
            f"logs/{_study}/provenance.log",
        localrule: True
        conda:
            "../../envs/report.yaml"
        threads: 1
        params:
            study=_study,
            values=_tail["provenance_values"],
            scale=SCALE,
            seeds=_tail["seeds"],
            threads=THREADS,
        script:
            "../scripts/provenance.py"

    rule:
        name:
            f"{_study}_report"
        input:
            **_tail["report_inputs"],
            notebook=f"workflow/notebooks/{_study}.ipynb",
            doc=f"docs/studies/{_study}.md",
            table=f"results/{_study}/table.csv",
            claims=f"results/{_study}/claims.json",
            metrics=f"results/{_study}/metrics.json",
            runs=_tail["runs"],
        output:
            notebook=f"results/{_study}/report.ipynb",
            html=report(
                f"results/{_study}/report.html",
                caption="../report/study_report.rst",
                category=_study,
                subcategory="report",
                labels={"study": _study, "kind": "report"},
            ),
        log:
            f"logs/{_study}/report.log",
        conda:
            "../../envs/report.yaml"
        threads: 1
        resources:
            **job_resources(mem_mb=(2000, 8000), runtime=(15, 60)),
        params:
            parameters={
                "results_dir": f"results/{_study}",
                "seeds": _tail["seeds"],
                "scale": SCALE,
                **_tail["report_params"],
            },
            captions=_tail["captions"],
        script:
            "../scripts/report.py"

    rule:
        name:
            _study
        input:
            study_target(_study),
        localrule: True
