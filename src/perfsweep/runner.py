"""The command a run job starts: ``python -m perfsweep.runner ...`` (workflow/rules/run.smk), which runs
perfsweep.sweep.run (where the runner lives).

Kept at this name because stored files name it: Snakemake's metadata of every results tree
(``.snakemake/metadata``) holds the run rule's shell command, and a changed command text is a "code
change" that measures every run record of the tree again. Nothing imports this module.
"""

import sys

from perfsweep.sweep.run import start

if __name__ == "__main__":
    sys.exit(start())
