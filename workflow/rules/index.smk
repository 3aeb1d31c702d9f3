# results/index.html: a scoreboard of every paper of papers.yaml, then the table and claim
# checks of every study in `studies`.


rule index:
    input:
        contract=[contract_outputs(study) for study in config["studies"]],
        papers="src/reprolab/papers.yaml",
    output:
        html="results/index.html",
    log:
        "logs/index.log",
    localrule: True
    conda:
        "../../envs/report.yaml"
    threads: 1
    params:
        studies=config["studies"],
        scale=SCALE,
    script:
        "../scripts/index.py"
