"""perfsweep's sbatch shim (perfsweep.cluster.sbatch_retry): a refused or timed-out submission is tried
again, and anything else passes through. The real sbatch is a fake one here. It refuses its first N
calls with a given message and then takes the job, and it logs each call's arguments and stdin."""

import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perfsweep.cluster import sbatch_retry
from perfsweep.cluster.sbatch_retry import PYTHON_ENV, install_on_path, shim_dir, transient, wait_before

MODULE = Path(sbatch_retry.__file__)
SCRIPT = "#!/bin/sh\nsnakemake --jobs 1 --target-jobs 'run:p=4,n=100' \"quoted\" $HOME\n"
TIMEOUT = ("sbatch: error: slurm_receive_msg: Socket timed out on send/recv operation\n"
           "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation\n")
FAST = {"PERFSWEEP_SBATCH_BACKOFF": "0.01", "PERFSWEEP_SBATCH_DEADLINE": "60"}
FAKE = '''#!{python}
import json, os, sys
log, fails, message, code, reads = {log!r}, {fails!r}, {message!r}, {code!r}, {reads!r}
args = sys.argv[1:]
stdin = None if not reads or any(a.startswith("--wrap") for a in args) else (
    open(args[-1], "rb").read() if args and args[-1].startswith("/dev/") else sys.stdin.buffer.read())
with open(log, "a") as f:
    f.write(json.dumps({{"argv": args, "stdin": None if stdin is None else stdin.decode()}}) + "\\n")
with open(log) as f:
    calls = len(f.readlines())
if calls <= fails:
    sys.stderr.write(message)
    sys.exit(code)
sys.stderr.write("sbatch: warning: fake sbatch took the job\\n")
print("123" if "--parsable" in args else "Submitted batch job 123")
'''


class Fake:
    """A fake sbatch in its own directory: refuses the first `fails` calls with `message` and `code`."""

    def __init__(self, tmp_path, fails=0, message=TIMEOUT, code=1, tool="sbatch"):
        self.dir = tmp_path / "slurm-bin"
        self.dir.mkdir()
        self.log = tmp_path / f"{tool}.log"
        exe = self.dir / tool
        exe.write_text(FAKE.format(python=sys.executable, log=str(self.log), fails=fails, message=message, code=code,
                                   reads=tool == "sbatch"))  # (squeue and scontrol read no stdin)
        exe.chmod(0o755)

    def calls(self):
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []

    def env(self, *front, **settings):
        """os.environ with PATH = front..., the fake, the rest; settings as environment variables."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PERFSWEEP_SBATCH")}
        env["PATH"] = os.pathsep.join([*map(str, front), str(self.dir), os.environ.get("PATH", os.defpath)])
        return {**env, **FAST, **{k: str(v) for k, v in settings.items()}}


def shim(args, env, stdin=b"", **kw):
    """This file run as a script, as the shim runs it."""
    return subprocess.run([sys.executable, str(MODULE), *args], input=stdin, capture_output=True, env=env,
                          timeout=30, **kw)


def as_the_plugin_does(call, script, env):
    """snakemake-executor-plugin-slurm's submission (run_job): the shell, stdin a pipe fed `script` (None:
    closed at once)."""
    process = subprocess.Popen(call, shell=True, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=env)
    out, err = process.communicate(input=script, timeout=30)
    return process.returncode, out, err


def retry_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("perfsweep: sbatch refused (")]


def test_transient_refusals_are_tried_again_with_the_same_arguments_and_stdin(tmp_path):
    fake = Fake(tmp_path, fails=2)
    args = ["--parsable", "--job-name", "a uuid", "--comment", "rule_run_wildcards_p=4", "--time=5", "/dev/stdin"]
    proc = shim(args, fake.env(), stdin=SCRIPT.encode())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"123\n"  # exactly sbatch's stdout: the plugin parses the job id from it
    calls = fake.calls()
    assert len(calls) == 3 and all(c == {"argv": args, "stdin": SCRIPT} for c in calls), calls
    err = proc.stderr.decode()
    lines = retry_lines(err)
    assert len(lines) == 2, err
    for n, line in enumerate(lines, start=2):
        assert re.fullmatch(rf"perfsweep: sbatch refused \(sbatch: error: slurm_receive_msg: Socket timed out on "
                            rf"send/recv operation\); try {n} of 8 in [0-9.e-]+ s", line), line
    assert err.endswith("sbatch: warning: fake sbatch took the job\n")  # the last try's stderr, passed on
    # the plugin takes stderr containing "submission failed" for a failed submission even at exit 0
    assert "submission failed" not in err


@pytest.mark.parametrize("message", [
    "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)\n",
    "sbatch: error: Batch job submission failed: Zero Bytes were transmitted or received\n",
    "sbatch: error: Batch job submission failed: Resource temporarily unavailable\n",
    "sbatch: error: QOSMaxSubmitJobPerUserLimit\nsbatch: error: Batch job submission failed: Job violates "
    "accounting/QOS policy (job submit limit, user's size and/or time limits)\n",
])
def test_each_kind_of_transient_refusal_is_retried(tmp_path, message):
    fake = Fake(tmp_path, fails=1, message=message)
    proc = shim(["--wrap=hostname"], fake.env(), stdin=None)
    assert proc.returncode == 0 and proc.stdout == b"Submitted batch job 123\n", proc.stderr
    assert len(fake.calls()) == 2
    assert "submission failed" not in proc.stderr.decode()


@pytest.mark.parametrize("tool, query, other", [
    ("squeue", ["--format=%i|%T", "--states=all", "--noheader", "--name", "a-uuid"], ["-h", "-j", "5", "-o", "%L"]),
    ("scontrol", ["show", "config"], ["show", "job", "-o", "5"]),
])
def test_the_plugins_status_queries_are_tried_again_and_any_other_call_goes_straight_through(tmp_path, tool, query,
                                                                                             other):
    """Plugin 2.8 forgets the jobs it polls when every status query of a poll failed, and then waits for
    them for good (a slurmctld restart during a poll did it on the local cluster). So its queries, `squeue
    ... --name RUN` and `scontrol show config` (MinJobAge), are tried again while the controller is out of
    reach. Any other squeue or scontrol call (the runner's, inside every job) runs the real one at once,
    without a Python (PERFSWEEP_SBATCH_PYTHON=/bin/false would fail it) and untried again. Neither reads
    stdin: every Snakemake start asks `scontrol show config` (the plugin's settings), and inside a job its
    stdin is a pipe the jobstep plugin never closes (a shim that read it waited out the plugin's 10 s)."""
    down = f"{tool}: error: slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n"
    fake = Fake(tmp_path, fails=2, message=down, tool=tool)
    env = fake.env(shim_dir(), PERFSWEEP_SBATCH_PYTHON=sys.executable)
    with subprocess.Popen([tool, *query], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE) as call:  # stdin open, never written nor closed
        call.wait(timeout=20)
        proc = subprocess.CompletedProcess(call.args, call.returncode, call.stdout.read(), call.stderr.read())
    assert proc.returncode == 0 and proc.stdout == b"Submitted batch job 123\n", proc.stderr
    assert [c["argv"] for c in fake.calls()] == [query] * 3
    tries = re.findall(rf"^perfsweep: {tool} refused \(.*Unable to contact slurm controller \(connect failure\)\); "
                       rf"try (\d) until \d+ s in [0-9.e-]+ s$", proc.stderr.decode(), re.M)
    assert tries == ["2", "3"], proc.stderr
    fake.log.unlink()  # refused once more
    proc = subprocess.run([tool, *other], env={**env, PYTHON_ENV: "/bin/false"}, capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr.decode()) == (1, b"", down)
    assert [c["argv"] for c in fake.calls()] == [other]


def test_a_permanent_refusal_runs_sbatch_once_and_passes_it_through(tmp_path):
    message = "sbatch: error: Batch job submission failed: Invalid partition name specified\n"
    fake = Fake(tmp_path, fails=5, message=message, code=3)
    proc = shim(["--partition=nope", "/dev/stdin"], fake.env(), stdin=SCRIPT.encode())
    assert (proc.returncode, proc.stdout, proc.stderr.decode()) == (3, b"", message)
    assert fake.calls() == [{"argv": ["--partition=nope", "/dev/stdin"], "stdin": SCRIPT}]


def test_gives_up_after_the_tries_with_the_last_code_and_stderr(tmp_path):
    fake = Fake(tmp_path, fails=99, code=7)
    proc = shim(["--parsable", "/dev/stdin"], fake.env(PERFSWEEP_SBATCH_TRIES=3), stdin=SCRIPT.encode())
    assert proc.returncode == 7 and proc.stdout == b""
    assert len(fake.calls()) == 3
    err = proc.stderr.decode()
    assert [line.rsplit(";", 1)[1].split(" in ")[0] for line in retry_lines(err)] == [" try 2 of 3", " try 3 of 3"]
    body, last = err.rstrip("\n").rsplit("\n", 1)
    assert body.endswith(TIMEOUT.rstrip("\n"))  # sbatch's last stderr, whole
    assert re.fullmatch(r"perfsweep: sbatch refused 3 times in \d+ s \(PERFSWEEP_SBATCH_TRIES=3, "
                        r"PERFSWEEP_SBATCH_DEADLINE=60\); giving up", last), last


def test_no_wait_goes_past_the_deadline(tmp_path):
    fake = Fake(tmp_path, fails=99)
    proc = shim(["/dev/stdin"], fake.env(PERFSWEEP_SBATCH_BACKOFF=30, PERFSWEEP_SBATCH_DEADLINE=1), stdin=b"x")
    assert proc.returncode == 1 and len(fake.calls()) == 1
    assert retry_lines(proc.stderr.decode()) == [] and "refused 1 times" in proc.stderr.decode()


def test_the_waits_double_up_to_a_minute_with_jitter():
    rng = random.Random(1)
    for retry, full in [(1, 2), (2, 4), (3, 8), (5, 32), (6, 60), (7, 60), (500, 60)]:
        waits = [wait_before(retry, 2.0, rng) for _ in range(200)]
        assert all(full / 2 <= w <= full for w in waits) and max(waits) - min(waits) > full / 4, (retry, full)


@pytest.mark.parametrize("stderr, expected", [
    (TIMEOUT, True),
    ("sbatch: error: Batch job submission failed: Unable to contact slurm controller (receive failure)", True),
    ("sbatch: error: Error connecting slurm stream socket at 10.0.0.1:6817: Connection refused\n", True),
    ("sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying\n"
     "sbatch: error: Batch job submission failed: Resource temporarily unavailable", True),
    ("sbatch: error: Batch job submission failed: Unable to create job record, try again", True),
    ("sbatch: error: Batch job submission failed: MaxJobCount limit reached", True),
    ("sbatch: error: Batch job submission failed: Slurm backup controller in standby mode", True),
    ("sbatch: error: Batch job submission failed: Rate limit exceeded, please retry momentarily", True),
    ("sbatch: error: AssocMaxSubmitJobLimit\nsbatch: error: Batch job submission failed: Job violates "
     "accounting/QOS policy (job submit limit, user's size and/or time limits)", True),
    ("sbatch: error: Batch job submission failed: Job violates accounting/QOS policy (job submit limit, "
     "user's size and/or time limits)", True),  # older SLURM: no reason given
    ("sbatch: error: QOSMaxWallDurationPerJobLimit\nsbatch: error: Batch job submission failed: Job violates "
     "accounting/QOS policy (job submit limit, user's size and/or time limits)", False),
    ("sbatch: error: Batch job submission failed: Requested node configuration is not available", False),
    ("sbatch: error: Batch job submission failed: Invalid partition name specified", False),
    ("sbatch: error: Batch job submission failed: Required partition not available (inactive or drain)", False),
    ("sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified",
     False),
    ("sbatch: error: invalid partition specified: debug2", False),
    ("", False),
])
def test_transient_or_permanent(stderr, expected):
    assert transient(stderr) is expected


def test_the_shim_on_path_finds_the_real_sbatch_behind_itself(tmp_path):
    fake = Fake(tmp_path, fails=1)
    env = fake.env(shim_dir(), PERFSWEEP_SBATCH_PYTHON=sys.executable)
    assert shutil.which("sbatch", path=env["PATH"]) == os.path.join(shim_dir(), "sbatch")
    code, out, err = as_the_plugin_does("sbatch --parsable /dev/stdin", SCRIPT, env)
    assert (code, out) == (0, "123\n"), err
    assert fake.calls() == [{"argv": ["--parsable", "/dev/stdin"], "stdin": SCRIPT}] * 2
    assert len(retry_lines(err)) == 1 and "submission failed" not in err
    # --wrap: the plugin's stdin is a pipe it closes at once, and sbatch reads no script from it
    code, out, err = as_the_plugin_does('sbatch --parsable --job-name x --wrap="echo \\"hi\\""', None, env)
    assert (code, out) == (0, "123\n"), err
    assert fake.calls()[-1] == {"argv": ["--parsable", "--job-name", "x", '--wrap=echo "hi"'], "stdin": None}


def test_the_shim_without_perfsweeps_python_runs_python3(tmp_path):
    if shutil.which("python3") is None:
        pytest.skip("no python3 on PATH")
    fake = Fake(tmp_path)
    for python in (None, str(tmp_path / "gone" / "python")):  # unset, or a venv since removed
        env = fake.env(shim_dir())
        if python:
            env[PYTHON_ENV] = python
        code, out, err = as_the_plugin_does("sbatch /dev/stdin", SCRIPT, env)
        assert (code, out) == (0, "Submitted batch job 123\n"), err


def test_a_copy_of_the_shim_further_on_path_is_skipped(tmp_path):
    """Two checkouts' shims on PATH must not call each other: each goes straight to the real sbatch."""
    fake = Fake(tmp_path, fails=1)
    copy = tmp_path / "other-checkout" / "cluster"
    (copy / "bin").mkdir(parents=True)
    shutil.copy2(MODULE, copy / "sbatch_retry.py")
    shutil.copy2(Path(shim_dir()) / "sbatch", copy / "bin" / "sbatch")
    env = fake.env(shim_dir(), copy / "bin", PERFSWEEP_SBATCH_PYTHON=sys.executable)
    code, out, err = as_the_plugin_does("sbatch /dev/stdin", SCRIPT, env)
    assert (code, out) == (0, "Submitted batch job 123\n"), err
    assert len(fake.calls()) == 2 and len(retry_lines(err)) == 1
    assert sbatch_retry.find_sbatch(env["PATH"]) == str(fake.dir / "sbatch")


def test_no_real_sbatch_behind_the_shim(tmp_path):
    env = {**os.environ, "PATH": os.pathsep.join([shim_dir(), str(tmp_path)])}
    proc = shim(["--wrap=true"], env)
    assert proc.returncode == 127 and b"no sbatch on PATH" in proc.stderr


def test_a_closed_stdin(tmp_path):
    fake = Fake(tmp_path, fails=1)
    proc = subprocess.run([sys.executable, str(MODULE), "--wrap=true"], capture_output=True, env=fake.env(),
                          preexec_fn=lambda: os.close(0), timeout=30)
    assert proc.returncode == 0 and proc.stdout == b"Submitted batch job 123\n", proc.stderr
    assert len(fake.calls()) == 2


def test_main_in_process(tmp_path, monkeypatch, capfdbinary):
    fake = Fake(tmp_path, fails=1)
    for k, v in fake.env().items():
        monkeypatch.setenv(k, v)
    assert sbatch_retry.main(["--parsable", "--wrap=true"]) == 0
    out, err = capfdbinary.readouterr()
    assert out == b"123\n" and len(retry_lines(err.decode())) == 1


def test_install_on_path_once():
    environ = {"PATH": os.pathsep.join(["/usr/local/bin", "/usr/bin"])}
    assert install_on_path(environ) is True
    assert environ == {"PATH": os.pathsep.join([shim_dir(), "/usr/local/bin", "/usr/bin"]), PYTHON_ENV: sys.executable}
    before = dict(environ)
    assert install_on_path(environ) is False and environ == before
    # further on PATH (something put itself before it): moved to the front, not added twice
    environ["PATH"] = os.pathsep.join(["/opt/slurm/bin", shim_dir(), "/usr/bin"])
    assert install_on_path(environ) is True
    assert environ["PATH"] == os.pathsep.join([shim_dir(), "/opt/slurm/bin", "/usr/bin"])
    shim_file = Path(shim_dir()) / "sbatch"
    assert os.access(shim_file, os.X_OK) and shim_file.read_text().startswith("#!/bin/sh\n")
