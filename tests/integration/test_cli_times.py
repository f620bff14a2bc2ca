"""The CLI's time options read through core's RFC 3339 parser
(loom_time_parse_datetime): `loom jobs --since`, `loom usage --since` and
`loom sacct -S/-E`. No loomd: a form that parses gets as far as connecting
(exit 3, nothing listens at --url), a form that does not is a usage error
(exit 2) whose message names the text, the byte and what was expected."""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import build_dir  # noqa: E402

LOOM = os.path.join(build_dir(), "loom")
NOWHERE = "unix:/nonexistent/loomd.sock"


def loom(*args):
    e = {k: v for k, v in os.environ.items() if not k.startswith("LOOM_")}
    p = subprocess.run([LOOM, "--url", NOWHERE] + list(args), capture_output=True, text=True,
                       env=e, timeout=60)
    return p.returncode, p.stderr


class CliTimes(unittest.TestCase):
    def parsed(self, *args):
        rc, err = loom(*args)
        self.assertEqual(rc, 3, f"{args}: {err}")
        self.assertIn("cannot reach loomd", err)

    def refused(self, needle, *args):
        rc, err = loom(*args)
        self.assertEqual(rc, 2, f"{args}: {err}")
        self.assertIn(needle, err)

    def test_jobs_since(self):
        for t in ["2026-12-03", "2026-12-03T10:00:00", "2026-12-03T10:00:00Z",
                  "2026-12-03T11:00:00+01:00", "2026-12-03T10:00:00.25z", "1h30m"]:
            self.parsed("jobs", "--since", t)
        self.refused("'2026-02-30': byte 8: expected a two-digit day 01-28 (February 2026), "
                     "found '30'", "jobs", "--since", "2026-02-30")
        self.refused("'2026-12-03T10:00': byte 16: expected ':' after the minute",
                     "jobs", "--since", "2026-12-03T10:00")
        self.refused("expected a duration (1h30m) or a UTC time", "jobs", "--since", "yesterday")

    def test_usage_since(self):
        for t in ["2026-12-03T13:00:00Z", "2026-12-03T14:00:00.123456+01:00", "24h"]:
            self.parsed("usage", "--since", t)
        self.refused("'2026-12-03': byte 10: expected 'T' and a time of day",
                     "usage", "--since", "2026-12-03")
        self.refused("'2026-04-31T00:00:00Z': byte 8: expected a two-digit day 01-30 (April 2026)",
                     "usage", "--since", "2026-04-31T00:00:00Z")

    def test_sacct_start_end(self):
        for t in ["2026-12-03", "2026-12-03T10:00", "2026-12-03T10:00:00",
                  "2026-12-03T10:00:00Z", "2026-12-03T11:00+01:00", "10:00", "10:00:30",
                  "now-2hours", "today", "midnight"]:
            self.parsed("sacct", "-S", t)
            self.parsed("sacct", "-E", t)
        for t in ["2026-02-30", "2026-13-01T00:00", "2026-12-03T10", "25:00", "tomorrow"]:
            self.refused(f"'{t}': expected YYYY-MM-DD", "sacct", "-S", t)


if __name__ == "__main__":
    unittest.main(verbosity=2)
