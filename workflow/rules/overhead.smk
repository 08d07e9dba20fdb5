# Seed 003: the Höfinger overhead model for every study that varies the number of processes, and the
# reproduction of the paper's WIEN2k/NWCHEM analysis (target: paper_hofinger).

localrules:
    overhead,
    paper_hofinger,


rule overhead:
    input:
        medians=rules.aggregate.output.medians,
    output:
        fits=stage_output("overhead", "fits"),
        curves=stage_output("overhead", "curves"),
        figure=report(stage_output("overhead", "figure"), caption="../report/overhead.rst",
                      category="{study}", subcategory="scaling"),
    params:
        varied=lambda wc: STUDIES[wc.study].varied,
        processes=SWEEP.processes,
    log:
        stage_log("overhead"),
    conda:
        ENV
    script:
        "../../scripts/overhead.py"


rule paper_hofinger:
    input:
        table=get_paper_input("hofinger_table", "hofinger2018/table1.csv"),
    output:
        **stage_outputs("paper_hofinger"),
    log:
        stage_log("paper_hofinger"),
    conda:
        ENV
    script:
        "../../scripts/paper_hofinger.py"
