# Seed 003: the Höfinger overhead model for every study that varies the number of processes, and the
# reproduction of the paper's WIEN2k/NWCHEM analysis (target: paper_hofinger).

localrules:
    overhead,
    paper_hofinger,


rule overhead:
    input:
        medians=rules.aggregate.output.medians,
    output:
        fits=f"{R}/overhead/{{study}}/fits.csv",
        curves=f"{R}/overhead/{{study}}/curves.csv",
        figure=report(f"{R}/overhead/{{study}}/overhead.png", caption="../report/overhead.rst",
                      category="{study}", subcategory="scaling"),
    params:
        varied=lambda wc: STUDIES[wc.study].varied,
        processes=SWEEP.processes,
    log:
        f"{R}/logs/overhead/{{study}}.log",
    conda:
        ENV
    script:
        "../../scripts/overhead.py"


rule paper_hofinger:
    input:
        table=get_paper_input("hofinger_table", "hofinger2018/table1.csv"),
    output:
        note=f"{R}/paper/hofinger2018/NOTE.md",
        fits=f"{R}/paper/hofinger2018/fits.csv",
        triples=f"{R}/paper/hofinger2018/triples.csv",
        top=f"{R}/paper/hofinger2018/top_triples.csv",
        overhead=f"{R}/paper/hofinger2018/overhead.csv",
        figure=f"{R}/paper/hofinger2018/fig2_overhead.png",
    log:
        f"{R}/logs/paper_hofinger.log",
    conda:
        ENV
    script:
        "../../scripts/paper_hofinger.py"
