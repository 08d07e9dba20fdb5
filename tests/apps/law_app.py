"""A stand-in app whose time is a known law of n with seeded noise, not the host's: a real sweep whose
decisions must not hang on the host's load (tests/test_decide.py).

    python law_app.py N STATE_DIR

prints ``time: <1e-4 N (1 + 0.01 z)>``, z a standard normal draw seeded by (N, k) for the k-th call for
this N (k counted by the files the calls create in STATE_DIR, each taken atomically: two calls at once
get two draws). The times of a configuration's k runs are the same k draws whatever the order and the
load, so the medians, their noise and any model of them are the same in every sweep.
"""

import os
import sys

import numpy as np

n, state = int(float(sys.argv[1])), sys.argv[2]
k = 0
while True:
    try:
        os.close(os.open(os.path.join(state, f"n{n}-call{k}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        break
    except FileExistsError:
        k += 1
z = np.random.default_rng([n, k]).standard_normal()
print(f"time: {1e-4 * n * (1 + 0.01 * z):.9g}")
