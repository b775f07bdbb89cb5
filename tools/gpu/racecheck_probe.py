"""Where does compute-sanitizer racecheck crash on a captured rank route's conditional lane?

A probe, not product code (docs/PERF_NOTES.md, thirty-fifth session). Under racecheck the host
segfaults in the first device-to-host copy after the first replay of
tests/kernels/test_graph_cond.py's captured rank route (plain, memcheck and synccheck pass the
test). This replays the same route with one thing changed at a time, from the environment:
  COND   sampling_router.NUC_COND_MAX_ROWS (4: the two passes a conditional node; 0: plain nodes)
  ORDER  the replays: "L" a batch with rows the pass leaves (the lane runs), "P" one without
         (default LPL)
Each step prints a line before and after the replay's synchronize and after the copy, so the
last line before a crash says which of them crashed. Ends with "PROBE OK".
Usage: COND=4 ORDER=LPL python3 tools/gpu/racecheck_probe.py  (under compute-sanitizer)
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "kernels"))

from test_graph_cond import _RANK_SEED, _rank_rows  # noqa: E402

import rocsample  # noqa: E402
from rocsample import graphs  # noqa: E402
from rocsample import sampling_router as R  # noqa: E402
from rocsample.reference import sampling as ref  # noqa: E402


def say(*a):
    print(*a, flush=True)


def main():
    R.TILE_KMAX = 1
    R.NUC_FINISH_VOCAB = 0
    R.NUC_COND_MAX_ROWS = int(os.environ.get("COND", "4"))
    order = os.environ.get("ORDER", "LPL")
    backend = rocsample.get_backend()
    rows, vocab = 4, 4096
    values = dict(temperature=np.ones(rows, np.float32), top_k=np.full(rows, 2, np.int64))
    s = backend.runtime.new_stream(None)
    st = backend.stream(s)
    x = backend.as_array(_rank_rows(vocab, _RANK_SEED, 0), "logits", st)
    seed = backend.as_array(np.full(rows, _RANK_SEED, np.int64), "seed", st)
    pos = backend.as_array(np.zeros(rows, np.int64), "position", st)
    sp = rocsample.Sampler(rows, vocab, "float32", stream=s)
    for _ in range(2):
        sp(x, seed=seed, position=pos, advance_position=True, check=False, **values)
    backend.synchronize(s)
    say("eager calls done; backend", backend.name, "COND", R.NUC_COND_MAX_ROWS)
    with graphs.capture(s) as g:
        tok = sp(x, seed=seed, position=pos, advance_position=True, check=False, **values)[0]
    say("captured")
    peaked = np.zeros((rows, vocab), np.float32)
    for r in range(rows):
        peaked[r, [r, 2 * r + 10]] = 40.0
    for step, c in enumerate(order):
        position = 2 + step
        logits = _rank_rows(vocab, _RANK_SEED, position) if c == "L" else peaked
        graphs.copy_to_device(x, logits, s)
        say(f"step {step} {c}: replay")
        g.replay(s)
        backend.synchronize(s)
        say(f"step {step} {c}: synchronized")
        got = backend.to_host(tok, st)
        want = ref.sample(logits, seed=np.full(rows, _RANK_SEED), position=position, **values)
        say(f"step {step} {c}: copied, tokens {got.tolist()} {'ok' if (got == want).all() else 'WRONG ' + str(want.tolist())}")
    g.release()
    say("PROBE OK")


if __name__ == "__main__":
    main()
