"""Prints the Signals benchmark table from a package-benchmark influx export directory.

Each measured iteration runs 1000 operations (scalingFactor .kilo); the exported values are raw
nanoseconds and allocation counts per iteration, so they are divided by 1000 here.
"""
import csv
import glob
import sys

OPERATIONS_PER_ITERATION = 1000

rows = {}
for path in glob.glob(sys.argv[1] + "/*.csv"):
    with open(path) as f:
        lines = [line for line in f if not line.startswith("#")]
    for row in csv.DictReader(lines):
        if float(row["percentile"]) != 50.0:
            continue
        metric = row["metric"].replace(" ", "").lower()
        rows.setdefault(row["test"], {})[metric] = float(row["value"]) / OPERATIONS_PER_ITERATION


def get(case, implementation, metric="time(wallclock)"):
    return rows.get(f"{case} / {implementation}", {}).get(metric)


def first(*values):
    return next((value for value in values if value is not None), None)


# (case, peer the goal compares with, goal ratio, peer multiplier)
cases = [
    ("send to 1 observer", "OpenCombine", 1 / 3),
    ("send to 10 observers", "closure", 1.5),
    ("property set 1 observer", "OpenCombine", 1 / 3),
    ("map + filter chain", "OpenCombine", 1 / 3),
    ("combineLatest", "OpenCombine (hand-made)", 1 / 2),
    ("observe + dispose", "OpenCombine", 1 / 6),
]


def show(value, digits=1):
    return "-" if value is None else f"{value:.{digits}f}"


line = "{:<24} {:>9} {:>12} {:>9} {:>7} {:>6} {:>5} {:>8} {:>8}"
print(line.format("case (ns/op, median)", "Signals", "OpenCombine", "closure", "ratio", "goal", "met",
                  "allocs", "OC allocs"))
all_met = True
for case, peer, goal in cases:
    signals = get(case, "Signals")
    opencombine = first(get(case, "OpenCombine"), get(case, "OpenCombine (hand-made)"))
    closure = get(case, "closure")
    reference = get(case, peer)
    ratio = signals / reference if signals is not None and reference else None
    met = ratio is not None and ratio <= goal
    all_met = all_met and met
    print(line.format(case, show(signals), show(opencombine), show(closure), show(ratio, 2), show(goal, 2),
                      "-" if ratio is None else ("yes" if met else "NO"),
                      show(get(case, "Signals", "malloc(total)"), 2),
                      show(first(get(case, "OpenCombine", "malloc(total)"),
                                 get(case, "OpenCombine (hand-made)", "malloc(total)")), 2)))
print("ratio = Signals / peer: OpenCombine, the hand-made OpenCombine combineLatest, or (send to 10)"
      " the ten closure calls. allocs = mallocs per operation (goal: 0 for the map + filter chain).")
map_filter_allocs = get("map + filter chain", "Signals", "malloc(total)")
all_met = all_met and map_filter_allocs == 0
print("all goals met" if all_met else "SOME GOALS NOT MET")
