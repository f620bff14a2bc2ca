#!/usr/bin/python3
"""The estimator's errors over several measured tables taken together.

    bench/estimate_pool.py docs/bench/estimate_eval8.json docs/bench/estimate_eval9.json ...

Each file is a --json output of bench/estimate_measure.py. Prints, over all
their measured rows (rows that could not be measured are counted apart):
the median and 90th percentile of the absolute error of peak memory and of
step time, step time at the calibration's speed (the measured time divided
by the row's speed, where the row has one), and the signed median of the
step-time error (a bias shows there). The percentile is
bench/estimate_measure.py's (linear between order statistics), so one
table alone reads as its own summary line.
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from estimate_measure import p90  # noqa: E402


def load(path):
    try:
        rows = json.load(open(path))
    except (OSError, ValueError) as ex:
        sys.exit(f"estimate_pool.py: {path}: {ex}")
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        sys.exit(f"estimate_pool.py: {path}: expected a JSON list of rows "
                 "(bench/estimate_measure.py --json)")
    return rows


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    rows, skipped = [], 0
    for path in argv:
        for r in load(path):
            if "measured_s" in r and "estimated_s" in r and r["measured_s"] > 0:
                rows.append(r)
            else:
                skipped += 1
    if not rows:
        sys.exit("estimate_pool.py: no measured row in " + ", ".join(argv))
    mem = [abs(r["estimated_bytes"] / r["measured_bytes"] - 1) for r in rows]
    signed = [r["estimated_s"] / r["measured_s"] - 1 for r in rows]
    time_err = [abs(x) for x in signed]
    cal = [abs(r["estimated_s"] * r["speed"] / r["measured_s"] - 1) for r in rows if r.get("speed")]
    print(f"{len(rows)} rows from {len(argv)} tables" + (f" ({skipped} not measured)" if skipped else ""))
    print(f"memory: median {100 * statistics.median(mem):.1f}%, 90th percentile {100 * p90(mem):.1f}%")
    print(f"step time: median {100 * statistics.median(time_err):.1f}%, 90th percentile "
          f"{100 * p90(time_err):.1f}%; signed median {100 * statistics.median(signed):+.1f}%")
    if cal:
        print(f"step time at the calibration's speed ({len(cal)} rows): median "
              f"{100 * statistics.median(cal):.1f}%, 90th percentile {100 * p90(cal):.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
