#!/usr/bin/python3
"""Prints one table from RESULT|system|test|unit|value lines.

    table.py FILE [FILE...]      ("-" reads standard input)

Each repetition of a benchmark prints its own RESULT line, so one (system, test, unit) usually has several
values: a row shows their median, their smallest and largest, and how many there were. Rows keep the order in
which their first line appeared. Anything that is not a well-formed RESULT line is ignored, so a whole log
can be passed in. Python 3 standard library only.
"""

import statistics
import sys
from collections import OrderedDict


def read_results(paths):
    """Maps (system, test, unit) to the list of its values, in first-seen order."""
    rows = OrderedDict()
    for path in paths:
        stream = sys.stdin if path == "-" else open(path, encoding="utf-8", errors="replace")
        with stream:
            for line in stream:
                fields = line.rstrip("\n").split("|")
                if len(fields) != 5 or fields[0] != "RESULT":
                    continue
                try:
                    value = float(fields[4])
                except ValueError:
                    continue
                rows.setdefault(tuple(fields[1:4]), []).append(value)
    return rows


# How a value is written, by unit: rates and sizes as grouped integers, counts as plain integers, load averages
# with two decimals, latencies (us) and anything else with one.
FORMATS = {
    "msg/s": "{:,.0f}",
    "KiB": "{:,.0f}",
    "msgs": "{:.0f}",
    "load": "{:.2f}",
}


def shown(value, unit):
    return FORMATS.get(unit, "{:,.1f}").format(value)


def main(argv):
    if len(argv) < 2:
        sys.stderr.write("usage: table.py FILE [FILE...]\n")
        return 2
    rows = read_results(argv[1:])
    if not rows:
        sys.stderr.write("table.py: no RESULT lines\n")
        return 1

    header = ("system", "test", "median", "unit", "min .. max", "n")
    lines = []
    for (system, test, unit), values in rows.items():
        spread = f"{shown(min(values), unit)} .. {shown(max(values), unit)}"
        lines.append((system, test, shown(statistics.median(values), unit), unit, spread, str(len(values))))

    widths = [max(len(row[i]) for row in lines + [header]) for i in range(len(header))]
    # system and test left-aligned, the median right-aligned so that digits line up, the rest left-aligned
    def render(row):
        return "  ".join(
            cell.rjust(widths[i]) if i == 2 else cell.ljust(widths[i]) for i, cell in enumerate(row)
        ).rstrip()

    print(render(header))
    print("-" * (sum(widths) + 2 * (len(widths) - 1)))
    for row in lines:
        print(render(row))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
