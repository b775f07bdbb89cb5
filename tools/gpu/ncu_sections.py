"""A few lines a profiled kernel from ncu's ``--csv --page details`` output (the file ncu's
stdout went to, the profiled program's MARK lines among it): the kernel's ID, name (50
characters), grid and block, then the metrics named in KEEP that its sections reported (time,
throughputs, registers, occupancy, waves, issue rate). Usage:
``python3 tools/gpu/ncu_sections.py NCU_CSV`` (tools/gpu/s50_why.sh)."""

import csv
import sys

KEEP = ("Duration", "Memory Throughput", "DRAM Throughput", "Compute (SM) Throughput",
        "Registers Per Thread", "Shared Memory Configuration Size", "Waves Per SM",
        "Block Limit Registers", "Block Limit Shared Mem", "Theoretical Occupancy",
        "Achieved Occupancy", "Warp Cycles Per Issued Instruction", "Issued Warp Per Scheduler",
        "No Eligible", "Executed Ipc Active")


def main(path: str) -> None:
    head = None
    cur = None
    vals: list = []

    def flush():
        if cur is not None:
            print(*cur)
            print("   ", "; ".join(vals))

    for line in open(path):
        if line.startswith("MARK"):
            flush()
            cur, vals = None, []
            print(line.strip())
        elif line.startswith('"'):
            x = next(csv.reader([line]))
            if head is None:
                head = {n: x.index(n) for n in ("ID", "Kernel Name", "Grid Size", "Block Size",
                                                 "Metric Name", "Metric Unit", "Metric Value")}
                continue
            key = (x[head["ID"]], x[head["Kernel Name"]][:50], x[head["Grid Size"]],
                   x[head["Block Size"]])
            if key != cur:
                flush()
                cur, vals = key, []
            name = x[head["Metric Name"]]
            if name in KEEP:
                vals.append(f"{name} {x[head['Metric Value']]} {x[head['Metric Unit']]}".strip())
    flush()


if __name__ == "__main__":
    main(sys.argv[1])
