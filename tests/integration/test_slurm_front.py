"""Conformance of loom's Slurm-compatible commands against a real Slurm.

The same commands (sbatch, squeue, scancel, sacct, sinfo with the options
people use) are fed, in the same order and from the same state, to the test
Slurm of scripts/slurm/cluster.sh (one node, loom1: 2 CPUs, 4 GPUs) and to
`loom sbatch|squeue|...` against a loomd with the local executor whose one
node is declared the same (loom1, 2 CPUs, 4 GPUs). Their outputs are
compared line by line and field by field:

- header lines must be equal, byte for byte;
- each data field must be equal, or, in the columns a case names (job ids,
  times, the partition's name, priorities), match the same shape (regex);
- in fixed-width formats each field must sit in the same columns (start or
  end, as it is left- or right-justified);
- the same number of lines.

A difference the case does not allow fails the test. Known differences
are listed with their reason (the test Slurm has no slurmdbd: sacct runs
there with -c, reading the job completion log, whose records lack some
fields). The table of every case (option, Slurm's output, loom's, verdict)
is written to $LOOM_SLURM_FRONT_TABLE (default: the build dir's
slurm_front.md); docs/slurm.md's "Slurm-compatible commands" section is that
file (scripts/slurm/front-table.sh regenerates it).
"""

import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd, build_dir  # noqa: E402

LOOM = os.path.join(build_dir(), "loom")
SRC = os.environ.get("LOOM_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
CLUSTER = os.path.join(SRC, "scripts", "slurm", "cluster.sh")
PORTS = {"SLURM_CTLD_PORT": os.environ.get("SLURM_CTLD_PORT", "6947"),
         "SLURM_SLURMD_PORT": os.environ.get("SLURM_SLURMD_PORT", "6948")}
NODE = {"SLURM_NODE_CPUS": "2", "SLURM_NODE_MEM_MB": "4096"}
TABLE = os.environ.get("LOOM_SLURM_FRONT_TABLE") or os.path.join(build_dir(), "slurm_front.md")

# Shapes of the values that must differ between the two.
SHAPE = {
    "id": r"\d+(_\d+|_\[[\d,%-]+\])?",
    "part": r"(debug|loom)\*?",
    "dur": r"\d+:\d\d|\d+:\d\d:\d\d|\d+-\d\d:\d\d:\d\d",
    "time": r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d",
    "num": r"\d+",
    # a pending job's expected start: Slurm's backfill may have planned one
    "start": r"N/A|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d",
    "schednode": r"\(null\)|loom1",
}

SCRIPT = """#!/bin/bash
#SBATCH --job-name=train
#SBATCH --time=00:10:00
#SBATCH --cpus-per-task=2
#SBATCH --gres=gpu:1
#SBATCH --output=train-%j.out
sleep 300
"""


def tokens(line, sep=None):
    """The fields of a line with their places: runs of non-blanks, or with
    sep (sacct -p/-P) what lies between separators."""
    pattern = r"[^%s]+" % re.escape(sep) if sep else r"\S+"
    return [(m.group(0), m.start(), m.end()) for m in re.finditer(pattern, line)]


class Case:
    """One command: args (Slurm's words), shapes {column: shape} of the
    fields that may differ, fixed (a fixed-width format: positions are
    compared), allowed {column: reason} known differences, sort (compare
    the lines sorted), slurm_extra (words only Slurm's side gets)."""

    def __init__(self, args, shapes=None, fixed=True, allowed=None, sort=False, slurm_extra=(),
                 note=""):
        self.args, self.shapes, self.fixed = args, shapes or {}, fixed
        self.allowed, self.sort, self.slurm_extra, self.note = allowed or {}, sort, slurm_extra, note


class SlurmFront(unittest.TestCase):
    rows = []

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="loom-slurmfront-")
        cls.env = dict(os.environ, **PORTS, **NODE)
        up = subprocess.run([CLUSTER, "up", cls.tmp + "/cluster", "1", "4"], env=cls.env,
                            capture_output=True, text=True)
        if up.returncode != 0:
            raise RuntimeError("test Slurm did not start: " + up.stderr)
        cls.env["SLURM_CONF"] = cls.tmp + "/cluster/slurm.conf"
        cls.d = Loomd(extra_args=["--executor", "local", "--node",
                                  "name=loom1,cpus=2,memory=4096MiB,gpus=4"]).start()
        cls.work = {side: os.path.join(cls.tmp, side) for side in ("slurm", "loom")}
        for w in cls.work.values():
            os.makedirs(w)
            with open(os.path.join(w, "job.sh"), "w") as f:
                f.write(SCRIPT)
        cls.ids = {"slurm": {}, "loom": {}}

    @classmethod
    def tearDownClass(cls):
        cls.write_table()
        cls.d.cleanup()
        subprocess.run([CLUSTER, "down", cls.tmp + "/cluster"], env=cls.env)
        subprocess.run(["rm", "-rf", cls.tmp])

    # ------------------------------------------------------------ running

    def run_side(self, side, args, extra=()):
        args = [a.format(**self.ids[side]) for a in args]
        if side == "slurm":
            cmd = [args[0]] + list(extra) + args[1:]
            e = {k: v for k, v in self.env.items() if not k.startswith("LOOM_")}
        else:
            cmd = [LOOM] + args
            e = {k: v for k, v in self.env.items()
                 if not k.startswith("LOOM_") and not k.startswith("SQUEUE_")}
            e["LOOM_STATE_DIR"] = self.d.state_dir
            e.pop("SLURM_CONF", None)
        p = subprocess.run(cmd, capture_output=True, text=True, env=e, cwd=self.work[side],
                           timeout=60)
        return p

    def both(self, args, extra=()):
        return self.run_side("slurm", args, extra), self.run_side("loom", args)

    def submit(self, key, args):
        """sbatch on both sides; the job's id kept under key."""
        s, l = self.both(args)
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertEqual(l.returncode, 0, l.stderr)
        for side, p in (("slurm", s), ("loom", l)):
            self.ids[side][key] = re.search(r"(\d+)\s*$", p.stdout).group(1)
        return s, l

    def settle(self, want, timeout=30, fmt="%j %T %r"):
        """Waits until both sides' squeue -h -o FMT lines (sorted; with a
        format without %r, each distinct line once) equal want, or timeout
        (then fails)."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            got = []
            for side in ("slurm", "loom"):
                p = self.run_side(side, ["squeue", "-h", "-t", "PD,R", "-o", fmt])
                lines = p.stdout.split("\n")[:-1]
                got.append(sorted(lines if "%r" in fmt else set(lines)))
            last = got
            if got[0] == got[1] == sorted(want):
                return
            time.sleep(0.3)
        self.fail(f"the queues did not settle to {want}: Slurm {last[0]}, loom {last[1]}")

    def wait_ended(self, key, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s, l = self.both(["squeue", "-h", "-j", "{%s}" % key, "-t", "PD,R", "-o", "%i"])
            if not s.stdout.strip() and not l.stdout.strip():
                # Slurm writes the job completion record once the job is done
                p = self.run_side("slurm", ["sacct", "-n", "-j", "{%s}" % key, "-o", "JobID"],
                                  ["-c"])
                if p.stdout.strip():
                    return
            time.sleep(0.3)
        self.fail(f"job {key} did not end")

    # ---------------------------------------------------------- comparing

    def compare(self, case, s=None, l=None):
        if s is None:
            s, l = self.both(case.args, case.slurm_extra)
        verdict, why = self.judge(case, s, l)
        option = " ".join(case.args)
        self.rows.append((option, s, l, verdict, why or case.note))
        self.assertNotEqual(verdict, "DIFFERS", f"{option}: {why}\nSlurm:\n{s.stdout}{s.stderr}"
                            f"\nloom:\n{l.stdout}{l.stderr}")
        return s, l

    def judge(self, case, s, l):
        if (s.returncode == 0) != (l.returncode == 0):
            return "DIFFERS", f"exit status {s.returncode} against {l.returncode}"
        if s.stdout == l.stdout:
            return "equal", ""
        sl, ll = s.stdout.split("\n"), l.stdout.split("\n")
        if case.sort:
            sl, ll = sorted(sl), sorted(ll)
        if len(sl) != len(ll):
            return "DIFFERS", f"{len(sl) - 1} lines against {len(ll) - 1}"
        allowed_used = set()
        sep = "|" if {"-p", "-P", "--parsable", "--parsable2"} & set(case.args) else None
        for n, (a, b) in enumerate(zip(sl, ll)):
            ta, tb = tokens(a, sep), tokens(b, sep)
            header = n == 0 and not case.sort and "-h" not in case.args \
                and "--noheader" not in case.args and "-n" not in case.args
            if header and a != b:
                return "DIFFERS", f"header line {a!r} against {b!r}"
            if len(ta) != len(tb):
                if case.allowed and any(c >= min(len(ta), len(tb)) for c in case.allowed):
                    allowed_used.update(case.allowed)
                    continue
                return "DIFFERS", f"line {n + 1}: {len(ta)} fields against {len(tb)}: {a!r} {b!r}"
            for c, ((va, sa, ea), (vb, sb, eb)) in enumerate(zip(ta, tb)):
                shape = case.shapes.get(c)
                if va != vb:
                    if shape and re.fullmatch(SHAPE[shape], va) and re.fullmatch(SHAPE[shape], vb):
                        pass
                    elif c in case.allowed:
                        allowed_used.add(c)
                        continue
                    else:
                        return "DIFFERS", f"line {n + 1} field {c + 1}: {va!r} against {vb!r}"
                if case.fixed and sa != sb and ea != eb and c not in case.allowed:
                    return "DIFFERS", (f"line {n + 1} field {c + 1} ({va!r}): columns {sa}-{ea} "
                                       f"against {sb}-{eb}")
        if allowed_used:
            return "differs (known)", "; ".join(case.allowed[c] for c in sorted(allowed_used))
        return "shape-equal", "ids, times, partition names compared by shape"

    @classmethod
    def write_table(cls):
        def cell(p):
            text = (p.stdout + p.stderr).rstrip("\n")
            text = text.replace("|", "\\|").replace("\n", "<br>")
            return "<code>" + (text.replace(" ", "&nbsp;") or "(nothing)") + "</code>"
        with open(TABLE, "w") as f:
            f.write("| command | Slurm 22.05 | loom | verdict |\n|---|---|---|---|\n")
            for option, s, l, verdict, why in cls.rows:
                f.write(f"| `{option}` | {cell(s)} | {cell(l)} | {verdict}"
                        f"{': ' + why if why else ''} |\n")

    # --------------------------------------------------------------- the day

    def test_first_day(self):
        ID = {0: "id"}
        # sbatch: a script with #SBATCH directives, --parsable, --wrap
        self.compare(Case(["sbatch", "job.sh"], {3: "num"}), *self.submit("train", ["sbatch",
                                                                                   "job.sh"]))
        self.compare(Case(["sbatch", "--parsable", "-J", "wrapjob", "--wrap", "sleep 300"],
                          {0: "num"}),
                     *self.submit("wrap", ["sbatch", "--parsable", "-J", "wrapjob", "--wrap",
                                           "sleep 300"]))
        self.submit("held", ["sbatch", "--parsable", "-J", "held", "--hold", "--wrap", "true"])
        self.submit("arr", ["sbatch", "--parsable", "-J", "arr", "-a", "0-3%2", "--wrap",
                            "sleep 300"])
        self.settle(["train RUNNING None", "wrapjob PENDING Resources",
                     "held PENDING JobHeldUser", "arr PENDING Priority"])

        # squeue
        self.compare(Case(["squeue"], {0: "id", 1: "part", 5: "dur"}))
        self.compare(Case(["squeue", "-h", "-o", "%i %j %T %u"], ID, fixed=False))
        self.compare(Case(["squeue", "--format=%.10i %12j %5t %.9P %.10M %.10l %4D %.4C %b %R"],
                          {0: "id", 3: "part", 4: "dur"}))
        self.compare(Case(["squeue", "-o", "%.8i %.8j %.6T %S %V %.4Q"],
                          {0: "id", 3: "start", 4: "time", 5: "num"}, fixed=False,
                          note="%S, %V times and %Q priority by shape"))
        self.compare(Case(["squeue", "-t", "PD"], {0: "id", 1: "part"}))
        self.compare(Case(["squeue", "--start"], {0: "id", 1: "part", 5: "start",
                                                  7: "schednode"}))
        self.compare(Case(["squeue", "-j", "{train}"], {0: "id", 1: "part", 5: "dur"}))
        self.compare(Case(["squeue", "-h", "-j", "{arr}", "-r", "-o", "%i %K %T %r"], ID,
                          fixed=False))
        self.compare(Case(["squeue", "--me", "-t", "R"], {0: "id", 1: "part", 5: "dur"}))
        user = self.run_side("loom", ["squeue", "-h", "-o", "%u", "-j", "{train}"]).stdout.strip()
        self.compare(Case(["squeue", "-u", user, "-h", "-t", "PD", "-o", "%.6i %.8u %.2t"], ID))
        self.compare(Case(["squeue", "-u", "nobody"]))
        self.compare(Case(["squeue", "-u", "nosuchuser0"],
                          note="an unknown user named on stderr, no job listed, exit 0 (Slurm 22.05)"))
        self.compare(Case(["scancel", "-u", "nosuchuser0"]))
        self.compare(Case(["sacct", "-u", "nosuchuser0"], slurm_extra=["-c"]))

        # sinfo
        self.compare(Case(["sinfo"], {0: "part"}))
        self.compare(Case(["sinfo", "-N"], {2: "part"}))
        self.compare(Case(["sinfo", "-h", "-o", "%P %a %D %t"], {0: "part"}, fixed=False))
        self.compare(Case(["sinfo", "-o", "%10N %.4c %.6D %G %T"]))

        # scancel: by name, by user and state, by id
        self.compare(Case(["scancel", "-n", "wrapjob"]))
        # the array's reason now depends on when each scheduler last ran (the
        # new head of the queue: Slurm's next pass, loom's next step say
        # Resources for its first task), so this sync point compares states
        self.settle(["train RUNNING", "held PENDING", "arr PENDING"], fmt="%j %T")
        self.compare(Case(["scancel", "-u", user, "-t", "PENDING"]))
        self.settle(["train RUNNING None"])
        self.compare(Case(["scancel", "{train}"]))
        self.settle([])
        self.compare(Case(["squeue", "-h", "-t", "all", "-o", "%j %T"], sort=True, fixed=False))

        # sacct (Slurm: -c, the job completion log; there is no slurmdbd)
        self.submit("fail", ["sbatch", "--parsable", "-J", "fails", "--wrap", "exit 3"])
        self.wait_ended("fail")
        self.submit("ok", ["sbatch", "--parsable", "-J", "works", "-t", "5", "--wrap", "true"])
        self.wait_ended("ok")
        sacct = dict(slurm_extra=["-c"])
        self.compare(Case(["sacct", "-P", "--format=JobID,JobName,State,ExitCode", "-j",
                           "{fail},{ok}"], {0: "id"}, fixed=False, **sacct))
        self.compare(Case(["sacct", "-j", "{fail}", "--format=JobID,JobName,Partition,AllocCPUS,"
                           "State,ExitCode"], {0: "id", 2: "part"}, **sacct))
        self.compare(Case(["sacct", "--noheader", "-j", "{ok}", "--format=JobID,JobName,State,"
                           "ExitCode,Elapsed,NNodes,NodeList"], {0: "id", 4: "dur"}, **sacct))
        self.compare(Case(["sacct", "-p", "-j", "{ok}", "--format=JobID%20,JobName%-15,State%6,"
                           "Start,End,Submit"], {0: "id", 3: "time", 4: "time", 5: "time"},
                          fixed=False, **sacct))
        self.compare(Case(["sacct", "-j", "{ok}", "--format=JobID%20,JobName%-20,State%5"],
                          {0: "id"}, **sacct))
        self.compare(Case(["sacct", "-j", "{ok}", "--format=jobid,jobn,st,User,Timelimit"],
                          {0: "id", 2: "time"},
                          allowed={3: "User: the completion log writes root(0), sacct with "
                                      "accounting root",
                                   4: "Timelimit: the completion log keeps minutes (5), sacct "
                                      "with accounting prints 00:05:00"}, **sacct))

        # errors: one line each
        for args in (["squeue", "--bogus"], ["sacct", "--bogus"], ["sinfo", "--bogus"],
                     ["sbatch", "--bogus", "job.sh"], ["scancel", "--bogus"]):
            s, l = self.both(args)
            self.assertNotEqual(s.returncode, 0)
            self.assertNotEqual(l.returncode, 0, l.stdout)
            self.assertEqual(l.stdout, "")
            self.assertEqual(len(l.stderr.strip().split("\n")), 1, l.stderr)
            self.assertIn("unknown option '--bogus'", l.stderr)
            self.rows.append((" ".join(args), s, l, "differs (known)",
                              "both refuse it; loom's message is one line, as loom's other "
                              "commands"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
