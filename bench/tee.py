"""stdout and a copy in a file, for the benches that print their figures and keep them under bench/results
(``sys.stdout = Tee(sys.stdout, open(out, "w"))``); imported as ``from tee import Tee`` by a bench run as
``python bench/<name>.py`` (its folder is then first on sys.path)."""

import io


class Tee(io.TextIOBase):
    """stdout, and a copy in a file."""

    def __init__(self, *streams):
        self.streams = streams

    def write(self, s):
        for f in self.streams:
            f.write(s)
        return len(s)

    def flush(self):
        for f in self.streams:
            f.flush()
