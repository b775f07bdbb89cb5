"""One line a profiled kernel from ncu's ``--csv`` output (the file ncu's stdout went to, the
profiled program's own lines among it): kprofile.py's MARK lines as they come, then for each
kernel row its ID, name (60 characters), grid, block, metric name and value. Usage:
``python3 tools/gpu/ncu_table.py NCU_CSV`` (tools/gpu/kprofile.sh, s48_stages.sh)."""

import csv
import sys


def main(path: str) -> None:
    head = None
    for line in open(path):
        if line.startswith("MARK"):
            print(line.strip())
        elif line.startswith('"'):
            x = next(csv.reader([line]))
            if head is None:
                head = {n: x.index(n) for n in ("Kernel Name", "Grid Size", "Block Size",
                                                 "Metric Name", "Metric Value")}
                continue
            print(x[0], x[head["Kernel Name"]][:60], x[head["Grid Size"]],
                  x[head["Block Size"]], x[head["Metric Name"]], x[head["Metric Value"]])


if __name__ == "__main__":
    main(sys.argv[1])
