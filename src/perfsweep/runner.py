"""The command a run job starts: ``python -m perfsweep.runner ...`` (workflow/rules/run.smk), which runs
perfsweep.sweep.run (where the runner lives), or with ``--pack`` perfsweep.sweep.pack_run (a pack's job).

Kept at this name because stored files name it: Snakemake's metadata of every results tree
(``.snakemake/metadata``) holds the run rule's shell command, and a changed command text is a "code
change" that measures every run record of the tree again. Nothing imports this module.
"""

import sys

if "--pack" in sys.argv[1:]:  # a pack's job (bundle: packs)
    from perfsweep.sweep.pack_run import start
else:
    from perfsweep.sweep.run import start

if __name__ == "__main__":
    sys.exit(start())
