"""The argument binder: pointers in, bound launches out (Sampler, one-off calls, set_rows).

A launcher reduces each call to a *key*: per argument what its launches depend on apart from
device addresses (for an array its framework, shape, strides, dtype, device and address modulo
16, see :func:`rocsample.backends.interop.device_key`; for a host value its type and value),
plus the stream and the flags. Launches bound for the first calls with a key serve every later
call with it, whatever objects carry the arrays: :meth:`BoundCall.run` writes the current
call's data addresses into the packed kernel parameters where they changed, then launches.

Object identity is never part of a key, and a bound call keeps no caller array alive: the
launcher names its *slots* (the caller's arrays: logits, seeds, outputs given by the caller,
dst/src/idx ...), and every bound array argument whose address lies inside a slot's bytes is
re-pointed from that slot on each call (its offset into the slot kept) and released; the other
array arguments (the plan's own buffers: scratch views, parameter copies, outputs it owns) are
kept alive by the bound call.

Locking: a :class:`BoundCall` writes shared parameter buffers; the launcher holds one lock from
:meth:`BoundCall.run` to the end of its launches (the sampling launchers hold their stream's
lock, which also keeps two calls' launches on one stream from interleaving).

The repeated call (:meth:`BoundCall.ready`): a launcher that found its key bound takes the bound
call's stream lock, asks :meth:`BoundCall.ready` and, when it answers True, writes this call's
addresses and launches — nothing else. ``ready`` is one capture-status query of the stream
(``Runtime.capture_probe``) and a look at the scratch entries the launches address
(``ScratchPool.unchanged``): True only when the stream is not capturing, the pool has nothing
queued (frees, deferred releases, held numba frees) and every scratch buffer bound is still the
stream's. Anything else takes the launcher's full path, which makes the same launches after the
pool's request (pinning under a capture, holding numba's frees under a foreign one, raising on an
invalidated capture).
"""

from __future__ import annotations

import ctypes
import os
import threading

# The repeated call in C (rocsample/_fastcall.c): absent where the extension was not built
try:
    from rocsample import _fastcall
except ImportError:
    _fastcall = None

__all__ = ["Binder", "BoundCall", "bind_call", "gaps", "stream_lock"]

# One lock per (device, stream), striped (bounded, never cleared; re-entrant: ring_write holds it
# around its set_rows): a launcher holds its stream's lock from its first launch to its last, so
# two threads' calls on one stream never interleave their launches (they share the stream's
# scratch) nor re-point one bound call at once.
_LOCKS = tuple(threading.RLock() for _ in range(64))


def stream_lock(be, st) -> threading.RLock:
    """The lock of (backend, device, stream handle)."""
    return _LOCKS[hash((id(be), st.device, st.handle)) % len(_LOCKS)]

def fastcall(name: str):
    """rocsample._fastcall's function ``name`` (a launcher's repeated call in C), or None where
    the extension was not built or ``ROCSAMPLE_FASTCALL=0`` (then Python serves every call)."""
    if _fastcall is None or os.environ.get("ROCSAMPLE_FASTCALL", "1") == "0":
        return None
    return getattr(_fastcall, name)


#: entries for rocsample._fastcall a Binder keeps (Binder.note_fast; the oldest goes first)
_FAST_ENTRIES = 8

#: bound calls a Binder keeps (the oldest goes first); keys seen once are remembered 4x as many
_ENTRIES = 8
#: driver graphs a bound call keeps, one per list of slot addresses (see BoundCall.run), unless
#: its Binder says otherwise (set_rows: one per layer's KV cache, Binder(execs=...)). Eight: a
#: loop whose arrays come back to at most eight addresses re-points no node (a node update cost
#: the H200's host 2.2-2.7 us, PERF_NOTES "Fifth session"); a graph holds only addresses, no array
_EXECS = 8


class BoundCall:
    """The bound launches of one key, and where each slot's address goes in them.

    ``run(ptrs)`` takes the current call's slot addresses in slot order (None for an absent
    slot, which is then never addressed by the bound launches). ``extents``: per slot, the
    (lowest, one past the highest) byte of its array relative to its address (fixed by the
    layout the key names; None for an absent slot), for launchers whose contract refuses
    overlapping arguments (:func:`gaps`).

    The launcher completes a bound call with :meth:`guard` before it serves repeated calls.
    """

    __slots__ = ("launches", "sites", "ptrs", "keep", "scratch", "extra", "extents", "lock",
                 "_probe", "_pool", "_leases", "_live", "_nlive", "_native", "_gmake", "_gx", "_gptrs",
                 "_execs", "_cap", "_fork", "_cond")

    def __init__(self, launches, sites, ptrs, keep, scratch, extra, extents=None, masks=(),
                 graph=None, execs: int = _EXECS, fork=None, cond=None) -> None:
        self.launches = launches  # callables, in stream order
        self.sites = sites  # per slot: [(cell, byte offset from the slot's address), ...]
        self.ptrs = tuple(ptrs)  # the slot addresses the cells hold now
        # (slot, ((cell, offset), ...), bit mask of the launches among them) of the slots some
        # launch addresses
        self._live = tuple((i, tuple(s), masks[i] if masks else 0)
                           for i, s in enumerate(sites) if s)
        # the same with each cell as its address (ctypes cells: rocsample._fastcall writes them
        # itself when it re-points a graph for a new address), or None
        self._nlive = _cell_addresses(self._live)
        # every launch a driver call made here (GpuBackend.bind's ``native``), or None
        nat = [getattr(b, "native", None) for b in keep]
        self._native = tuple(n[:3] for n in nat) if nat and None not in nat else None
        self.keep = keep  # the plan's own arrays the launches address (alive with this call)
        self.scratch = scratch  # what the launcher checks before reuse (its scratch buffers)
        self.extra = extra  # launcher data (a sampler's outputs, for instance)
        self.extents = extents
        self.lock = None  # the stream's lock (stream_lock), set by guard()
        self._probe = None
        self._pool = None
        self._leases = ()
        # graph(): the launches as one driver graph (NodeGraph), None (never) or False (not
        # now); the first made at the first repeated call, its nodes then read the cells as they
        # are; only for driver launches (their packed parameters are what a node copies) whose
        # slots' launches are known (``masks``: what a moved slot re-points)
        self._gmake = graph if masks and self._native is not None else None
        # the graphs by the slot addresses their nodes hold (at most ``execs``, oldest first), and
        # the last one launched with the address list it was launched for
        self._execs: dict = {}
        self._cap = execs
        self._gx = None
        self._gptrs = None
        # launch by launch with branches (GpuBackend.forked: the launches' ``after`` lanes on two
        # streams), or None: one after another on the bound stream
        self._fork = fork
        # under a capture, the launches with a conditional lane (GpuBackend.conditional: returns
        # False, having launched nothing, when the stream is not capturing), or None
        self._cond = cond

    def guard(self, lock, probe, pool, leases) -> None:
        """What :meth:`ready` asks: ``probe()`` (True: the stream is not capturing), ``pool``
        (its ``unchanged(leases)``) and the stream's ``lock``, held around ready and run."""
        self.lock = lock
        self._probe = probe
        self._pool = pool
        self._leases = leases

    def ready(self) -> bool:
        """Whether a call may run these launches with nothing else (see the module docstring).
        The caller holds ``lock``. False until :meth:`guard` was called."""
        probe = self._probe
        return probe is not None and probe() and self._pool.unchanged(self._leases)

    def run(self, ptrs, graph: bool = True) -> None:
        """Launch with the slot addresses ``ptrs`` (a list or tuple, slot order).

        ``graph``: the stream is not capturing (:meth:`ready` said so): the launches go as one
        driver graph launch where the backend makes graphs. A bound call keeps up to
        ``execs`` graphs (8 unless its Binder says) by the addresses their nodes hold, so arrays
        that come back (a decode loop's logits alternate between a few allocator blocks,
        one-off outputs reuse theirs) launch with nothing re-pointed; new addresses get a graph of their own while there is
        room, else re-point the oldest graph's nodes whose launches address a slot that moved.
        Else, and under a capture, launch by launch from the cells: where the launcher gave
        branches (``after``), on two streams joined by events, which a capture records as
        parallel branches; under a capture with a conditional lane (``cond`` of
        :func:`bind_call`), its launches into a conditional node.
        """
        if graph:
            gx = self._gx
            if gx is not None and ptrs == self._gptrs:  # the last graph's addresses again
                gx.launch()
                return
            key = tuple(ptrs)
            gx = self._execs.get(key)
            if gx is None and (self._execs or self._gmake is not None):
                gx = self._exec_for(key)
            if gx is not None:
                self._gx = gx
                self._gptrs = ptrs
                gx.launch()
                return
        self._point(ptrs)
        if self._cond is not None and self._cond():
            return
        if self._fork is not None:
            self._fork()
            return
        native = self._native
        if native is None:
            for launch in self.launches:
                launch()
            return
        for fn, args, sym in native:
            err = fn(*args)
            if err:
                raise RuntimeError(f"{sym} failed: error {err}")

    def _point(self, ptrs) -> None:
        """Write ``ptrs`` into the cells where they differ from what the cells hold."""
        cur = self.ptrs
        if ptrs == cur:
            return
        for i, sites, _m in self._live:
            p = ptrs[i]
            if p != cur[i]:
                for cell, off in sites:
                    cell.value = p + off
        self.ptrs = tuple(ptrs)

    def _exec_for(self, key):
        """A graph whose nodes hold the addresses ``key`` (no graph holds them now): a new one
        while the table has room, else the oldest graph with its moved nodes re-pointed. None
        where no graph can be made."""
        execs = self._execs
        self._point(key)  # (a new graph's nodes, and a re-pointed node, read the cells)
        if len(execs) < self._cap and self._gmake is not None:
            gx = self._gmake()
            if gx is None:
                self._gmake = None  # never (the driver refused a node): launch by launch
            elif gx is not False:  # (False: not now, an open capture on the device)
                execs[key] = gx
                return gx
        if not execs:
            return None
        old = next(iter(execs))
        gx = execs.pop(old)
        dirty = 0  # the launches whose nodes in the oldest graph hold other addresses than key
        for i, _sites, m in self._live:
            if key[i] != old[i]:
                dirty |= m
        k = 0
        while dirty:
            if dirty & 1:
                gx.repoint(k)
            dirty >>= 1
            k += 1
        execs[key] = gx
        return gx


def _cell_addresses(live):
    """``BoundCall._live`` with each cell as its address, or None where a cell is no ctypes
    object (a backend whose launches are not packed by ctypes)."""
    try:
        return tuple((i, tuple((ctypes.addressof(c), off) for c, off in s), m)
                     for i, s, m in live)
    except TypeError:
        return None


def gaps(call: BoundCall, first: int, others) -> tuple:
    """Per slot in ``others``: ``(lo, hi)`` such that its bytes meet slot ``first``'s exactly when
    ``lo < ptrs[first] - ptrs[slot] < hi`` (from the layout extents bound with ``call``;
    ``(0, 0)``, never, for an empty array). For launchers whose contract refuses overlaps."""
    ext = call.extents
    a0, b0 = ext[first]
    out = []
    for i in others:
        a, b = ext[i]
        out.append((0, 0) if a == b or a0 == b0 else (a - b0, b - a0))
    return tuple(out)


def bind_call(be, stream, launches, slots, scratch=None, extra=None,
              execs: int = _EXECS, after=None, cond=None) -> BoundCall | None:
    """Bind ``launches`` ([(kernel, grid, block, args)], stream order) with ``slots``.

    ``after``: per launch, ``(lane, indices of the launches it must follow)`` where the launches
    are not a chain (lane 0 or 1; every launch follows its lane's previous one in stream order):
    the bound call's driver graph gets those dependencies, and its launches by stream two lanes
    (:meth:`BoundCall.run`). None: each launch follows the one before it.

    ``cond``: ``(body, gate)``: ``body`` the launch indices of a lane that only some launches
    need (``rocsample.sampling_router.conditional``), ``gate`` the (kernel, grid, block, args)
    that decides on the device (``_lane_gate_kernel``, its first argument a conditional node's
    handle): under a capture, where the backend has conditional nodes
    (``GpuBackend.conditional``), the body's launches go into one that the gate sets. None:
    every launch is captured as it is.

    ``slots``: the caller's arrays of this call in slot order, as backend device arrays (None
    for an absent slot). Returns None when the call cannot be re-pointed safely: two slots whose
    bytes overlap (one cell could not tell which to follow), or a launch whose packing is unknown.
    """
    spans = [None if a is None else be.array_span(a) for a in slots]
    live = [(i, s) for i, s in enumerate(spans) if s is not None]
    for n, (_, (_, lo, hi)) in enumerate(live):
        for _, (_, lo2, hi2) in live[n + 1:]:
            if lo < hi2 and lo2 < hi or (lo == lo2 and hi == hi2):
                return None
    sites: list[list] = [[] for _ in slots]
    masks = [0] * len(slots)  # per slot: bit k set when launch k addresses it
    bound = []
    keep = []
    for n_launch, (kernel, grid, block, args) in enumerate(launches):
        bl = be.bind(kernel, grid, block, stream, *args)
        if bl.cells is None:
            return None
        for k, cell in enumerate(bl.cells):
            p = int(cell.value)
            # a slot's own address first: slots may be adjacent (one buffer cut in three)
            owner = next(((i, base) for i, (base, _, _) in live if p == base), None)
            if owner is None:
                owner = next(((i, base) for i, (base, lo, hi) in live if lo <= p < hi), None)
            if owner is None:
                continue  # one of the plan's own buffers: kept alive below, never re-pointed
            sites[owner[0]].append((cell, p - owner[1]))
            masks[owner[0]] |= 1 << n_launch
            bl.release(k)
        bound.append(getattr(bl, "run", bl))
        keep.append(bl)
    ptrs = tuple(None if s is None else s[0] for s in spans)
    extents = tuple(None if s is None else (s[1] - s[0], s[2] - s[0]) for s in spans)
    make = getattr(be, "node_graph", None)
    graph = None
    if make is not None:
        def graph(make=make, bounds=tuple(keep), device=stream.device):
            return make(bounds, device, after)
    forked = getattr(be, "forked", None)
    fork = None if forked is None or after is None else forked(tuple(keep), after, stream)
    condf = getattr(be, "conditional", None)
    cond = None if condf is None or cond is None else condf(tuple(keep), after, cond, stream)
    return BoundCall(bound, sites, ptrs, keep, scratch, extra, extents, masks, graph, execs, fork,
                     cond)


class Binder:
    """A small table of :class:`BoundCall` by key; binds a key on its second call.

    Binding costs about a millisecond on a GPU (numba specialises and packs every launch), so a
    key seen once (a host value that changes every step) never pays it. Bounded: at most
    ``entries`` bound calls (the oldest is dropped) and ``4 * entries`` remembered keys; each
    bound call keeps at most ``execs`` driver graphs.
    ``lookup`` takes no lock (one dict read); the changes (offer, drop, clear) take the table's
    own lock, since one Sampler serves calls on several streams (several stream locks) at once.
    """

    def __init__(self, entries: int = _ENTRIES, execs: int = _EXECS) -> None:
        self.entries = entries
        self.execs = execs  # driver graphs each bound call keeps (BoundCall.run)
        self._table: dict = {}
        self._seen: dict = {}
        self._lock = threading.Lock()
        self.lookup = self._table.get  # BoundCall or None
        # a launcher's entries for rocsample._fastcall (Sampler._fast_entry), each naming one
        # bound call of this table: emptied whenever a bound call leaves the table, so an entry
        # never serves a key the table no longer binds
        self.fast: list = []

    def __len__(self) -> int:
        return len(self._table)

    def note_fast(self, key, make) -> None:
        """Add the entry ``make()`` builds for a bound ``key`` to :attr:`fast` unless one for
        ``key`` is there (``make`` is not called then) or ``make()`` is None; at most
        ``_FAST_ENTRIES`` (the oldest goes first). An entry's item 0 is its key."""
        fast = self.fast
        for e in fast:
            if e[0] == key:
                return
        entry = make()
        if entry is None:
            return
        if len(fast) >= _FAST_ENTRIES:
            del fast[0]
        fast.append(entry)

    def drop(self, key) -> None:
        with self._lock:
            if self._table.pop(key, None) is not None:
                self.fast.clear()

    def clear(self) -> None:
        with self._lock:
            self._table.clear()
            self._seen.clear()
            self.fast.clear()

    def offer(self, key, be, stream, launches, slots, scratch=None, extra=None,
              after=None, cond=None) -> BoundCall | None:
        """After an unbound call with ``key``: bind it if the key was seen before, else remember it."""
        with self._lock:
            hit = self._table.get(key)
            if hit is not None:
                return hit
            if not self._seen.pop(key, False):
                if len(self._seen) >= 4 * self.entries:
                    self._seen.clear()
                self._seen[key] = True
                return None
        call = bind_call(be, stream, launches, slots, scratch, extra, self.execs, after, cond)
        if call is None:
            return None
        with self._lock:
            while len(self._table) >= self.entries:
                self._table.pop(next(iter(self._table)), None)
                self.fast.clear()
            self._table[key] = call
        return call
