"""A stand-in external app that misbehaves on purpose, chosen by its parameter n (tests/test_faults.py).

    python fault_app.py N STATE_DIR [SLEEP]

prints ``time: <0.01 N>`` and exits 0, except for these n:
  3 crash (exit 3, message on stderr)   5 SIGSEGV           7 hangs (with a child) past any timeout
  11 non-UTF-8 bytes, then a valid time  13 non-UTF-8 garbage and no number   17 prints nothing
  19 flaky: the first call for n=19 fails, later calls succeed
  29 hangs, with helpers that left its process group (setsid, a daemon)
  31 the first call fills STATE_DIR's filesystem (up to the last byte), then succeeds
"""

import os
import signal
import subprocess
import sys
import time

n, state = int(float(sys.argv[1])), sys.argv[2]
time.sleep(float(sys.argv[3]) if len(sys.argv) > 3 else 0.0)
out = sys.stdout.buffer
if n == 3:
    print("fault_app: simulated crash", file=sys.stderr)
    sys.exit(3)
if n == 5:
    os.kill(os.getpid(), signal.SIGSEGV)
if n == 7:
    # a grandchild too: the runner must take the whole process tree down at the timeout
    subprocess.Popen([sys.executable, "-c", f"import time; time.sleep(120) # fault-child {state}"])
    time.sleep(120)
if n == 29:
    # helpers that leave the process group: one in its own session (setsid), one daemonized (setsid, then
    # its parent exits), both with their output closed as a daemon's is
    helper = f"import time; time.sleep(600) # fault-helper {state}"
    quiet = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.Popen([sys.executable, "-c", helper], start_new_session=True, **quiet)
    subprocess.Popen([sys.executable, "-c", "import os, subprocess, sys; subprocess.Popen([sys.executable, '-c', "
                      "sys.argv[1]], start_new_session=True, stdin=-3, stdout=-3, stderr=-3); os._exit(0)", helper],
                     **quiet).wait()
    time.sleep(120)
if n == 31 and not os.path.exists(os.path.join(state, "filled-31")):
    # the first call fills the filesystem of STATE_DIR (another program's output), then succeeds
    open(os.path.join(state, "filled-31"), "w").close()
    try:
        with open(os.path.join(state, "filler"), "wb") as fh:
            while True:
                fh.write(bytes(1 << 16))
                fh.flush()
    except OSError:
        pass
if n == 11:
    out.write(b"\xff\xfe\xfd binary noise \x80\x81\n")
if n == 13:
    out.write(b"\xff\xfe noise\ntime: \xc3\x28 garbage\n")
    sys.exit(0)
if n == 17:
    sys.exit(0)
if n == 19:
    try:
        os.close(os.open(os.path.join(state, "flaky-19"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        sys.exit("fault_app: flaky failure (first call)")
    except FileExistsError:
        pass
out.write(f"time: {0.01 * n:.4f}\n".encode())
