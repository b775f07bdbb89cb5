"""The tile finalize with stops: a copy of ``rocsample/kernels/sampling_fast.py`` whose finalize
returns after stage ``ROCSAMPLE_FIN_STOP`` (tools/gpu/fin_stages.sh graph-times each stop; a
stage's cost is the difference of two stops). The stops are put in at anchors of the current
source (each must occur once), so they follow the kernel as it changes; a missing anchor fails
here, naming it.

Stops: 9 at once (phase 1 and an empty finalize), 1 after the split reduction, 2 the tile
histogram, 3 the bin of the k-th tile, 4 the tile list (2 to 4: the small form's), 5 the gather
(the large form: the copy of gather()'s lists), 6 the rank and sorted prefix, 7 the filters; 0
(or unset) the whole kernel. A stop writes a value made from its stage's results into
``tokens[row]``, so the compiler keeps the stage's work.

    python tools/gpu/fin_stages.py SRC DST     # SRC's sampling_fast.py, staged, written to DST
"""

from __future__ import annotations

import sys

_IND = " " * 10
_IND2 = _IND + "    "


def _stop(n: int, value: str, ind: str = _IND) -> str:
    return (f"{ind}if FIN_STOP == {n}:\n{ind}    if tid == 0:\n"
            f"{ind}        tokens[row] = np.int32({value})\n{ind}    return\n")


#: (anchor, text, where): text goes "after" or "before" the anchor's one occurrence (stop 9
#: after the finalize's tid and bs, before its shared arrays)
EDITS = [
    ('DRAW_FAST = os.environ.get("ROCSAMPLE_DRAW_FAST", "1") != "0"\n',
     'FIN_STOP = int(os.environ.get("ROCSAMPLE_FIN_STOP") or 0)\n', "after"),
    (f"{_IND}sm_c = cuda.shared.array(MAX_BLOCK, np.int64)\n"
     f"{_IND}sm_lm = cuda.shared.array(MAX_BLOCK, np.float64)\n", _stop(9, "n"), "before"),
    (f"{_IND}lse = row_lse(res)\n", _stop(1, "cv & 1023"), "after"),
    # (2 to 4: the small form's tile stages, in its branch; the large form has none)
    (f"{_IND2}# the bin where the count from the maximum down reaches k\n",
     _stop(2, "hist[3] + hist[7] + np.int32(kmax & 7)", _IND2), "before"),
    (f"{_IND2}tau = bin_tau(kmax, bsel)\n", _stop(3, "tau & 1023", _IND2), "after"),
    (f"{_IND2}nq = np.int64(cnt[1])\n", _stop(4, "nq + np.int64(tl[0])", _IND2), "after"),
    # (5: either form's candidates, the small form's gathered or the large form's copied)
    (f"{_IND}if nq > TLM or C > cap:\n", _stop(5, "C + (cand[0] & 255)"), "before"),
    (f"{_IND}# (c) filters on the sorted prefix.",
     _stop(6, "np.int64(cnt[2]) + (cand[0] & 255) + (mass[1] & 1023)"), "before"),
    (f"{_IND}# (d) Gumbel-max over the L survivors", _stop(7, "L"), "before"),
]


def staged(src: str) -> str:
    """``src`` (sampling_fast.py's text) with the stops; ValueError names an anchor that is not
    there exactly once."""
    out = src
    for anchor, text, where in EDITS:
        n = out.count(anchor)
        if n != 1:
            raise ValueError(f"fin_stages: anchor found {n} times, not once: {anchor!r}")
        out = out.replace(anchor, anchor + text if where == "after" else text + anchor)
    return out


def main(argv=None) -> int:
    src, dst = (argv or sys.argv[1:])
    with open(src) as f:
        text = staged(f.read())
    with open(dst, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
