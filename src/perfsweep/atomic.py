"""Files written atomically: a reader sees either nothing or the whole file, never a half-written one
(run records, the apps' own output, plans). Below everything that writes files, so the apps a run
launches and the cluster's ended-job records use it without reaching into the sweep."""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterator


@contextmanager
def atomic_file(path: str | os.PathLike[str], mode: str = "wb") -> Iterator[IO[Any]]:
    """A temporary file beside ``path`` to write to; on leaving it is synced and renamed to ``path``, so
    that readers see either nothing or the whole file. On an error it is removed and ``path`` stays."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> None:
    """Write JSON so that readers see either nothing or the whole file (atomic_file)."""
    with atomic_file(path, "w") as fh:
        json.dump(data, fh, indent=1, sort_keys=False)
        fh.write("\n")
