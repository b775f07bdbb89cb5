"""Can a numba-cuda kernel skip later graph nodes on the device? (CUDA conditional nodes, 12.3+)

A feasibility and cost probe, not product code (docs/PERF_NOTES.md, twenty-first session):
1. a numba-cuda kernel calls ``cudaGraphSetConditional`` (declared with ``cuda.declare_device``,
   C ABI; ptxas resolves it as a built-in, as ``vprintf``), and the module loads;
2. under a stream capture, a conditional IF node is added to the capturing graph
   (``cuStreamGetCaptureInfo`` + ``cuGraphAddNode`` + ``cuStreamUpdateCaptureDependencies``),
   its body filled by a capture into the body graph (``cuStreamBeginCaptureToGraph``);
3. graph-timed (20 iterations a graph, events around replays): A alone; A -> B -> C (two
   dependent kernels that leave at once, 512 blocks with 37 KB of static shared memory, as the
   histogram lane's passes); A -> IF{B -> C} with the condition left 0 (skipped) and set 1
   (taken), each checked by B's and C's counts.
A reads 64 x 151936 float32 (the benchmark's shape) like phase 1 and sets the condition from one
thread. Prints "COND <variant> us=N ok=..." lines.
Usage: python3 tools/gpu/cond_probe.py
"""
import sys

import numpy as np
from cuda.bindings import driver as d
from numba import cuda, types

ROWS, VOCAB, SPLITS, BLOCK = 64, 151936, 10, 256
ITERS, REPS = 20, 7

setc = cuda.declare_device("cudaGraphSetConditional", types.void(types.uint64, types.uint32),
                           abi="c")


def ok(res, what):
    if not isinstance(res, tuple):
        res = (res,)
    if int(res[0]) != 0:
        raise RuntimeError(f"{what}: {res[0]!r}")
    return res[1:] if len(res) > 2 else (res[1] if len(res) == 2 else None)


@cuda.jit
def kern_a(x, chunk, h, need, out):
    split = cuda.blockIdx.x
    row = cuda.blockIdx.y
    tid = cuda.threadIdx.x
    lo = split * chunk
    hi = min(lo + chunk, x.shape[1])
    best = np.float32(-np.inf)
    i = lo + tid
    while i < hi:
        v = x[row, i]
        if v > best:
            best = v
        i += cuda.blockDim.x
    sm = cuda.shared.array(256, np.float32)
    sm[tid] = best
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if tid < s and sm[tid + s] > sm[tid]:
            sm[tid] = sm[tid + s]
        cuda.syncthreads()
        s //= 2
    if tid == 0:
        out[row, split] = sm[0]
        if split == 0 and row == 0 and h != 0 and need[0] != 0:
            setc(h, np.uint32(1))


@cuda.jit
def kern_lane(gate, count, scratch):
    big = cuda.shared.array(9000, np.float32)   # ~36 KB static, as the histogram kernel's
    tid = cuda.threadIdx.x
    if gate[0] == 0:
        return
    big[tid] = np.float32(tid)
    cuda.syncthreads()
    if tid == 0:
        cuda.atomic.add(count, 0, 1)
        scratch[cuda.blockIdx.x] = big[(cuda.blockIdx.x * 7) % 256]


def main():
    cuda.select_device(0)
    ctx = ok(d.cuCtxGetCurrent(), "cuCtxGetCurrent")
    rng = np.random.default_rng(1)
    x = cuda.to_device(rng.standard_normal((ROWS, VOCAB)).astype(np.float32))
    out = cuda.device_array((ROWS, SPLITS), np.float32)
    need = cuda.to_device(np.zeros(1, np.int32))
    gate = cuda.to_device(np.zeros(1, np.int32))   # 0: B and C leave at once
    count = cuda.to_device(np.zeros(1, np.int32))
    scratch = cuda.device_array(512, np.float32)
    chunk = -(-VOCAB // SPLITS)
    s_main = ok(d.cuStreamCreate(1), "cuStreamCreate")
    s_body = ok(d.cuStreamCreate(1), "cuStreamCreate")
    ns_main = cuda.external_stream(int(s_main))
    ns_body = cuda.external_stream(int(s_body))

    def launch_a(h, st):
        kern_a[(SPLITS, ROWS), BLOCK, st](x, chunk, np.uint64(h), need, out)

    def launch_lane(st):
        kern_lane[512, BLOCK, st](gate, count, scratch)
        kern_lane[512, BLOCK, st](gate, count, scratch)

    # warm every kernel (compile, load) outside capture
    launch_a(0, ns_main)
    launch_lane(ns_main)
    cuda.synchronize()

    def capture_info(st):
        r = d.cuStreamGetCaptureInfo(st)
        vals = ok(r, "cuStreamGetCaptureInfo")
        # (status, id, graph, deps, [edgeData,] numDeps)
        status, _id, graph = vals[0], vals[1], vals[2]
        deps = vals[3]
        ndeps = vals[-1]
        return status, graph, deps, ndeps

    forms = {}

    def set_deps(st, node):
        flag = d.CUstreamUpdateCaptureDependencies_flags.CU_STREAM_SET_CAPTURE_DEPENDENCIES
        try:
            ok(d.cuStreamUpdateCaptureDependencies(st, [node], None, 1, flag), "update(edge)")
            forms["upd"] = "edge"
        except TypeError:
            ok(d.cuStreamUpdateCaptureDependencies(st, [node], 1, flag), "update")
            forms["upd"] = "plain"

    def fill_body(body):
        mode = d.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
        try:
            ok(d.cuStreamBeginCaptureToGraph(s_body, body, None, None, 0, mode), "toGraph")
        except TypeError:
            ok(d.cuStreamBeginCaptureToGraph(s_body, body, None, 0, mode), "toGraph")
        launch_lane(ns_body)
        ok(d.cuStreamEndCapture(s_body), "end body capture")

    def build(variant):
        mode = d.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
        ok(d.cuStreamBeginCapture(s_main, mode), "cuStreamBeginCapture")
        for _ in range(ITERS):
            if variant == "a":
                launch_a(0, ns_main)
            elif variant == "abc":
                launch_a(0, ns_main)
                launch_lane(ns_main)
            else:
                _st, graph, _deps, _n = capture_info(s_main)
                h = ok(d.cuGraphConditionalHandleCreate(graph, ctx, 0, 1), "handle")
                launch_a(int(h), ns_main)
                # the conditional node after A, with its own handle
                _st, graph, deps, ndeps = capture_info(s_main)
                p = d.CUgraphNodeParams()
                p.type = d.CUgraphNodeType.CU_GRAPH_NODE_TYPE_CONDITIONAL
                p.conditional.handle = h
                p.conditional.type = d.CUgraphConditionalNodeType.CU_GRAPH_COND_TYPE_IF
                p.conditional.size = 1
                try:
                    p.conditional.ctx = ctx
                except AttributeError:
                    pass
                deps = list(deps)[:ndeps]
                try:
                    node = ok(d.cuGraphAddNode(graph, deps, None, ndeps, p), "add(edge)")
                    forms["add"] = "edge"
                except TypeError:
                    node = ok(d.cuGraphAddNode(graph, deps, ndeps, p), "add")
                    forms["add"] = "plain"
                fill_body(p.conditional.phGraph_out[0])
                set_deps(s_main, node)
        graph = ok(d.cuStreamEndCapture(s_main), "cuStreamEndCapture")
        ex = ok(d.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        return graph, ex

    def time_graph(ex):
        e0 = ok(d.cuEventCreate(0), "ev")
        e1 = ok(d.cuEventCreate(0), "ev")
        ok(d.cuGraphLaunch(ex, s_main), "launch")   # warm
        ok(d.cuStreamSynchronize(s_main), "sync")
        ts = []
        for _ in range(REPS):
            ok(d.cuEventRecord(e0, s_main), "rec")
            ok(d.cuGraphLaunch(ex, s_main), "launch")
            ok(d.cuEventRecord(e1, s_main), "rec")
            ok(d.cuEventSynchronize(e1), "sync")
            ts.append(ok(d.cuEventElapsedTime(e0, e1), "elapsed") * 1e3 / ITERS)
        return float(np.median(ts))

    for variant, want_need in (("a", 0), ("abc", 0), ("cond_skip", 0), ("cond_take", 1),
                               ("abc", 0), ("cond_skip", 0), ("a", 0)):
        need.copy_to_device(np.array([want_need], np.int32))
        gate.copy_to_device(np.array([0], np.int32))
        count.copy_to_device(np.zeros(1, np.int32))
        try:
            _g, ex = build(variant)
        except Exception as e:  # report and go on: the probe's point is what works
            print(f"COND {variant} build failed: {type(e).__name__}: {e}", flush=True)
            try:
                d.cuStreamEndCapture(s_main)
            except Exception:
                pass
            continue
        # a correctness replay with the lanes doing work: the count says how often B and C ran
        gate.copy_to_device(np.array([1], np.int32))
        ok(d.cuGraphLaunch(ex, s_main), "launch")
        ok(d.cuStreamSynchronize(s_main), "sync")
        ran = int(count.copy_to_host()[0])
        gate.copy_to_device(np.array([0], np.int32))
        us = time_graph(ex)
        expect = {"a": 0, "abc": 2 * 512 * ITERS, "cond_skip": 0, "cond_take": 2 * 512 * ITERS}
        print(f"COND {variant} us={us:.3f} lane_blocks_run={ran} ok={ran == expect[variant]} "
              f"forms={forms}", flush=True)
    print("COND done", flush=True)


if __name__ == "__main__":
    sys.exit(main())
