# reprolab: one workflow for every study. Logic lives in src/reprolab; rules say what depends
# on what. Run `snakemake --cores 2 all` (smoke scale) or `snakemake --cores 2 <study>`.


configfile: "params.yaml"


report: "workflow/report/workflow.rst"


# Snakemake has read params.yaml (and any --configfile) with its own loader; read them again
# as `reprolab params-check` does, refusing YAML anchors, aliases, tags and yte
# (docs/architecture.md, What a params file may do). Then common.smk checks the values against
# src/reprolab/schemas/ before any job starts.
from reprolab.core.params import check_config_files

check_config_files(workflow.configfiles)


include: "workflow/rules/common.smk"
include: "workflow/rules/wsi.smk"
include: "workflow/rules/video.smk"
include: "workflow/rules/instr.smk"


for study in config["studies"]:

    include: f"workflow/rules/{study}.smk"


include: "workflow/rules/tail.smk"
include: "workflow/rules/index.smk"


rule all:
    default_target: True
    input:
        rules.index.output.html,
    localrule: True
