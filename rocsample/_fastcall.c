/* rocsample._fastcall: a Sampler's plain repeated call and a repeated unchecked set_rows with
 * torch tensors, in C (issue #17). set_rows_repeat (below) is the same for set_rows' repeated path.
 *
 * repeat(entries, x, temperature, top_k, top_p, min_p, seed, position, return_logprobs,
 *        advance_position, check, out, dtype) serves exactly the calls that
 * rocsample.sampling.Sampler._torch_repeat serves without ``fresh`` and with torch seed and
 * position tensors and no ``out``, and returns None for every other call (Python then does
 * everything, as without this module). ``entries`` is the Sampler's list of entries, each a tuple
 * made by Sampler._fast_entry for one bound key (see there for the layout); the Binder empties the
 * list whenever a bound call leaves its table, so an entry's BoundCall is always the one the
 * key's lookup would find.
 *
 * A call: the four filters are Python floats or ints equal to the entry's (type and value, as
 * the key compares them); x, seed and position are objects of the entry's torch type whose device,
 * shape, strides, dtype and address modulo 16 are the entry's; the flags are equal; the stream
 * (torch's current raw stream of x's device, where the plan follows it) is the entry's. Then,
 * under the bound call's stream lock taken without blocking: the capture probe's driver query and
 * the scratch pool's check (BoundCall.ready, ScratchPool.unchanged: the same reads), the slot
 * addresses compared with the last driver graph's, and one driver graph launch; any other case
 * calls BoundCall.run with the address list, as Python would. Nothing here keeps a caller's
 * array: the entries hold layouts (torch.Size, stride tuples, dtype objects) and the plan's own
 * outputs.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <time.h>

typedef int (*probe_fn)(void *stream, int *status);
typedef int (*launch_fn)(void *exec, void *stream);
typedef int (*setp_fn)(void *exec, void *node, const void *params);

static PyObject *s_get_device, *s_data_ptr, *s_stride, *s_shape, *s_dtype, *s_acquire,
    *s_release, *s_lock, *s_probe, *s_pool, *s_leases, *s_gx, *s_gptrs, *s_run, *s_native,
    *s_deferred, *s_retired, *s_numba_held, *s_entries, *s_alloc, *s_torch, *s_execs, *s_current,
    *s_cap, *s_gmake, *s_nlive, *s_ptrs, *s_points;
static unsigned long long served = 0;

/* timing(on): where a served call's host time goes, off unless asked (two clock reads a part) */
enum { T_PROBE, T_OUTS, T_UPDATE, T_LAUNCH, T_READS, T_MATCH, T_TOTAL, T_CALLS, T_N };
static int timing_on = 0;
static unsigned long long t_acc[T_N];

static inline unsigned long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}
#define T_START(v) unsigned long long v = timing_on ? now_ns() : 0
#define T_ADD(part, v) do { if (timing_on) t_acc[part] += now_ns() - (v); } while (0)

/* entry layout (Sampler._fast_entry) */
enum {
    E_KEY, E_XTYPE, E_X, E_S, E_P, E_FILT, E_FLAGS, E_RAW, E_HANDLE, E_HIT,
    E_RESULT, E_FINISH, E_OPTRS, E_N
};

/* A tensor's (device, address, shape, strides, dtype), read once a call. */
typedef struct {
    long dev;
    unsigned long long ptr;
    PyObject *shape, *stride, *dtype;
} view_t;

static void view_clear(view_t *v)
{
    Py_CLEAR(v->shape);
    Py_CLEAR(v->stride);
    Py_CLEAR(v->dtype);
}

/* 1: read; 0: not a CUDA tensor of this kind (no error set); -1: error */
static int view_read(PyObject *t, view_t *v)
{
    PyObject *r = PyObject_CallMethodNoArgs(t, s_get_device);
    if (r == NULL)
        return -1;
    v->dev = PyLong_AsLong(r);
    Py_DECREF(r);
    if (v->dev == -1 && PyErr_Occurred())
        return -1;
    if (v->dev < 0)
        return 0;
    r = PyObject_CallMethodNoArgs(t, s_data_ptr);
    if (r == NULL)
        return -1;
    v->ptr = PyLong_AsUnsignedLongLongMask(r);
    Py_DECREF(r);
    if (PyErr_Occurred())
        return -1;
    v->shape = PyObject_GetAttr(t, s_shape);
    if (v->shape == NULL)
        return -1;
    v->stride = PyObject_CallMethodNoArgs(t, s_stride);
    if (v->stride == NULL)
        return -1;
    v->dtype = PyObject_GetAttr(t, s_dtype);
    if (v->dtype == NULL)
        return -1;
    return 1;
}

/* spec: (shape, stride, dtype, device, address mod 16). 1 equal, 0 not, -1 error */
static int view_matches(const view_t *v, PyObject *spec)
{
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 5)
        return 0;
    if (PyLong_AsLong(PyTuple_GET_ITEM(spec, 3)) != v->dev)
        return PyErr_Occurred() ? -1 : 0;
    if ((long)PyLong_AsLong(PyTuple_GET_ITEM(spec, 4)) != (long)(v->ptr & 15))
        return PyErr_Occurred() ? -1 : 0;
    int eq = PyObject_RichCompareBool(v->dtype, PyTuple_GET_ITEM(spec, 2), Py_EQ);
    if (eq != 1)
        return eq;
    eq = PyObject_RichCompareBool(v->shape, PyTuple_GET_ITEM(spec, 0), Py_EQ);
    if (eq != 1)
        return eq;
    return PyObject_RichCompareBool(v->stride, PyTuple_GET_ITEM(spec, 1), Py_EQ);
}

/* a filter value equal to the entry's: same exact type (float or int) and value */
static int same_scalar(PyObject *a, PyObject *b)
{
    if (Py_TYPE(a) != Py_TYPE(b))
        return 0;
    if (PyFloat_CheckExact(a))
        return PyFloat_AS_DOUBLE(a) == PyFloat_AS_DOUBLE(b);
    if (PyLong_CheckExact(a))
        return PyObject_RichCompareBool(a, b, Py_EQ);
    return 0;
}

/* ScratchPool.unchanged(leases): 1 yes, 0 no, -1 error */
static int pool_unchanged(PyObject *pool, PyObject *leases)
{
    PyObject *names[3] = {s_deferred, s_retired, s_numba_held};
    for (int i = 0; i < 3; i++) {
        PyObject *q = PyObject_GetAttr(pool, names[i]);
        if (q == NULL)
            return -1;
        int t = PyObject_IsTrue(q);
        Py_DECREF(q);
        if (t != 0)
            return t < 0 ? -1 : 0;
    }
    PyObject *entries = PyObject_GetAttr(pool, s_entries);
    if (entries == NULL)
        return -1;
    if (!PyDict_Check(entries) || !PyTuple_Check(leases)) {
        Py_DECREF(entries);
        return 0;
    }
    int ok = 1;
    for (Py_ssize_t i = 0; ok == 1 && i < PyTuple_GET_SIZE(leases); i++) {
        PyObject *lease = PyTuple_GET_ITEM(leases, i);
        if (!PyTuple_Check(lease) || PyTuple_GET_SIZE(lease) != 2) {
            ok = 0;
            break;
        }
        PyObject *e = PyDict_GetItemWithError(entries, PyTuple_GET_ITEM(lease, 0));
        if (e == NULL) {
            ok = PyErr_Occurred() ? -1 : 0;
            break;
        }
        PyObject *a = PyObject_GetAttr(e, s_alloc);
        if (a == NULL) {
            ok = -1;
            break;
        }
        ok = a == PyTuple_GET_ITEM(lease, 1);
        Py_DECREF(a);
    }
    Py_DECREF(entries);
    return ok;
}

/* BoundCall.ready: the capture probe, then the pool. 1 yes, 0 no, -1 error */
static int hit_ready(PyObject *hit)
{
    PyObject *probe = PyObject_GetAttr(hit, s_probe);
    if (probe == NULL)
        return -1;
    if (probe == Py_None) {
        Py_DECREF(probe);
        return 0;
    }
    /* a driver probe (DriverRuntime.capture_probe) carries (function address, stream handle) */
    PyObject *nat = PyObject_GetAttr(probe, s_native);
    int idle;
    if (nat != NULL && PyTuple_Check(nat) && PyTuple_GET_SIZE(nat) == 2) {
        void *fn = PyLong_AsVoidPtr(PyTuple_GET_ITEM(nat, 0));
        void *h = PyLong_AsVoidPtr(PyTuple_GET_ITEM(nat, 1));
        Py_DECREF(nat);
        Py_DECREF(probe);
        if (PyErr_Occurred())
            return -1;
        int status = 0, err;
        T_START(t0);
        Py_BEGIN_ALLOW_THREADS
        err = ((probe_fn)fn)(h, &status);
        Py_END_ALLOW_THREADS
        T_ADD(T_PROBE, t0);
        idle = err == 0 && status == 0;
    } else {
        Py_XDECREF(nat);
        PyErr_Clear();
        PyObject *r = PyObject_CallNoArgs(probe);
        Py_DECREF(probe);
        if (r == NULL)
            return -1;
        idle = PyObject_IsTrue(r);
        Py_DECREF(r);
        if (idle < 0)
            return -1;
    }
    if (!idle)
        return 0;
    PyObject *pool = PyObject_GetAttr(hit, s_pool);
    if (pool == NULL)
        return -1;
    PyObject *leases = PyObject_GetAttr(hit, s_leases);
    if (leases == NULL) {
        Py_DECREF(pool);
        return -1;
    }
    int ok = pool_unchanged(pool, leases);
    Py_DECREF(pool);
    Py_DECREF(leases);
    return ok;
}

#define NSLOT 10

/* the slot addresses BoundCall.run takes, as the launcher passes them (a Sampler: a list
 * [x, None x4, seed, position, tokens, logprobs, status]; set_rows: a tuple (dst, src, idx)) */
static PyObject *slot_list(const unsigned long long *p, const int *present, int n, int as_tuple)
{
    PyObject *l = as_tuple ? PyTuple_New(n) : PyList_New(n);
    if (l == NULL)
        return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *v;
        if (present[i]) {
            v = PyLong_FromUnsignedLongLong(p[i]);
            if (v == NULL) {
                Py_DECREF(l);
                return NULL;
            }
        } else {
            v = Py_NewRef(Py_None);
        }
        if (as_tuple)
            PyTuple_SET_ITEM(l, i, v);
        else
            PyList_SET_ITEM(l, i, v);
    }
    return l;
}

/* whether BoundCall._gptrs (the last graph's slot addresses, of the type the launcher passes:
 * run() compares with ==) holds exactly these addresses */
static int same_slots(PyObject *g, const unsigned long long *p, const int *present, int n,
                      int as_tuple)
{
    if (as_tuple ? !PyTuple_CheckExact(g) : !PyList_CheckExact(g))
        return 0;
    if (Py_SIZE(g) != n)
        return 0;
    for (int i = 0; i < n; i++) {
        PyObject *v = as_tuple ? PyTuple_GET_ITEM(g, i) : PyList_GET_ITEM(g, i);
        if (!present[i]) {
            if (v != Py_None)
                return 0;
            continue;
        }
        if (!PyLong_CheckExact(v))
            return 0;
        unsigned long long q = PyLong_AsUnsignedLongLongMask(v);
        if (q != p[i])
            return 0;
    }
    return 1;
}

/* one driver graph launch by NodeGraph.native: (the launch's address, the exec, the stream,
 * its name). 0 done, -1 error */
static int graph_launch(PyObject *gx)
{
    PyObject *nat = PyObject_GetAttr(gx, s_native);
    if (nat == NULL)
        return -1;
    if (!PyTuple_Check(nat) || PyTuple_GET_SIZE(nat) != 4) {
        Py_DECREF(nat);
        PyErr_SetString(PyExc_RuntimeError, "rocsample._fastcall: NodeGraph.native");
        return -1;
    }
    void *fn = PyLong_AsVoidPtr(PyTuple_GET_ITEM(nat, 0));
    void *ex = PyLong_AsVoidPtr(PyTuple_GET_ITEM(nat, 1));
    void *st = PyLong_AsVoidPtr(PyTuple_GET_ITEM(nat, 2));
    if (PyErr_Occurred()) {
        Py_DECREF(nat);
        return -1;
    }
    int err;
    T_START(t0);
    Py_BEGIN_ALLOW_THREADS
    err = ((launch_fn)fn)(ex, st);
    Py_END_ALLOW_THREADS
    T_ADD(T_LAUNCH, t0);
    if (err != 0)
        PyErr_Format(PyExc_RuntimeError, "%S failed: error %d", PyTuple_GET_ITEM(nat, 3), err);
    Py_DECREF(nat);
    return err != 0 ? -1 : 0;
}

/* an unsigned long long in a Python int equal to q (0 for anything else, no error set) */
static int long_is(PyObject *v, unsigned long long q)
{
    if (!PyLong_CheckExact(v))
        return 0;
    unsigned long long a = PyLong_AsUnsignedLongLongMask(v);
    if (a == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return a == q;
}

/* BoundCall._exec_for's re-point for addresses no graph holds, once the bound call's graph
 * table is full (or makes no more graphs): the cells written with the addresses (BoundCall._point,
 * by BoundCall._nlive's cell addresses), the oldest graph taken from the table and put back under
 * these addresses, the nodes of the launches that address a moved slot re-pointed
 * (NodeGraph.points: the driver's kernel-node update), then that graph launched as run() does.
 * ``l``: the slot addresses as run() takes them. 1 done, 0 not this case (Python's run() does it;
 * nothing changed), -1 error */
static int native_repoint(PyObject *hit, PyObject *l, const unsigned long long *p,
                          const int *present, int n)
{
    int rc = 0;
    PyObject *execs = NULL, *cap = NULL, *gmake = NULL, *nl = NULL, *cur = NULL, *pts = NULL;
    PyObject *okey = NULL, *gx = NULL, *key = NULL;
    execs = PyObject_GetAttr(hit, s_execs);
    cap = execs == NULL ? NULL : PyObject_GetAttr(hit, s_cap);
    gmake = cap == NULL ? NULL : PyObject_GetAttr(hit, s_gmake);
    nl = gmake == NULL ? NULL : PyObject_GetAttr(hit, s_nlive);
    cur = nl == NULL ? NULL : PyObject_GetAttr(hit, s_ptrs);
    if (cur == NULL) {
        rc = -1;
        goto done;
    }
    if (!PyDict_CheckExact(execs) || PyDict_GET_SIZE(execs) == 0 || !PyLong_CheckExact(cap)
        || !PyTuple_CheckExact(nl) || !PyTuple_CheckExact(cur) || PyTuple_GET_SIZE(cur) != n)
        goto done;
    if (gmake != Py_None && PyDict_GET_SIZE(execs) < PyLong_AsSsize_t(cap))
        goto done;  /* (room for a graph of their own: Python makes it) */
    if (PyErr_Occurred()) {
        rc = -1;
        goto done;
    }
    Py_ssize_t pos = 0;
    PyObject *k0, *g0;
    if (!PyDict_Next(execs, &pos, &k0, &g0) || !PyTuple_CheckExact(k0) || PyTuple_GET_SIZE(k0) != n)
        goto done;
    okey = Py_NewRef(k0);
    gx = Py_NewRef(g0);
    pts = PyObject_GetAttr(gx, s_points);
    if (pts == NULL) {
        PyErr_Clear();
        goto done;
    }
    /* every item checked before anything is written */
    Py_ssize_t nlive = PyTuple_GET_SIZE(nl), npts = PyTuple_CheckExact(pts) ? PyTuple_GET_SIZE(pts) : 0;
    for (Py_ssize_t j = 0; j < nlive; j++) {
        PyObject *it = PyTuple_GET_ITEM(nl, j);
        if (!PyTuple_CheckExact(it) || PyTuple_GET_SIZE(it) != 3
            || !PyTuple_CheckExact(PyTuple_GET_ITEM(it, 1)))
            goto done;
        long i = PyLong_AsLong(PyTuple_GET_ITEM(it, 0));
        unsigned long long m = PyLong_AsUnsignedLongLongMask(PyTuple_GET_ITEM(it, 2));
        if (PyErr_Occurred()) {
            PyErr_Clear();
            goto done;
        }
        if (i < 0 || i >= n || !present[i] || (m >> (npts < 64 ? npts : 63)) != 0)
            goto done;
        PyObject *sites = PyTuple_GET_ITEM(it, 1);
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(sites); k++) {
            PyObject *st = PyTuple_GET_ITEM(sites, k);
            if (!PyTuple_CheckExact(st) || PyTuple_GET_SIZE(st) != 2
                || !PyLong_CheckExact(PyTuple_GET_ITEM(st, 0))
                || !PyLong_CheckExact(PyTuple_GET_ITEM(st, 1)))
                goto done;
        }
    }
    for (Py_ssize_t k = 0; k < npts; k++) {
        PyObject *q = PyTuple_GET_ITEM(pts, k);
        if (!PyTuple_CheckExact(q) || PyTuple_GET_SIZE(q) != 4)
            goto done;
    }
    key = PyList_CheckExact(l) ? PyList_AsTuple(l) : Py_NewRef(l);
    if (key == NULL) {
        rc = -1;
        goto done;
    }
    /* BoundCall._point(key): the cells of the slots that moved */
    unsigned long long dirty = 0;
    for (Py_ssize_t j = 0; j < nlive; j++) {
        PyObject *it = PyTuple_GET_ITEM(nl, j);
        long i = PyLong_AsLong(PyTuple_GET_ITEM(it, 0));
        if (!long_is(PyTuple_GET_ITEM(okey, i), p[i]))
            dirty |= PyLong_AsUnsignedLongLongMask(PyTuple_GET_ITEM(it, 2));
        if (long_is(PyTuple_GET_ITEM(cur, i), p[i]))
            continue;
        PyObject *sites = PyTuple_GET_ITEM(it, 1);
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(sites); k++) {
            PyObject *st = PyTuple_GET_ITEM(sites, k);
            int64_t *cell = (int64_t *)PyLong_AsVoidPtr(PyTuple_GET_ITEM(st, 0));
            long long off = PyLong_AsLongLong(PyTuple_GET_ITEM(st, 1));
            if (PyErr_Occurred()) {
                rc = -1;
                goto done;
            }
            *cell = (int64_t)(p[i] + (unsigned long long)off);
        }
    }
    if (PyObject_SetAttr(hit, s_ptrs, key) < 0) {
        rc = -1;
        goto done;
    }
    /* the oldest graph, now under these addresses (the newest entry of the table) */
    if (PyDict_DelItem(execs, okey) < 0 || PyDict_SetItem(execs, key, gx) < 0) {
        rc = -1;
        goto done;
    }
    for (Py_ssize_t k = 0; dirty != 0 && k < npts; k++, dirty >>= 1) {
        if (!(dirty & 1))
            continue;
        PyObject *q = PyTuple_GET_ITEM(pts, k);
        void *fn = PyLong_AsVoidPtr(PyTuple_GET_ITEM(q, 0));
        void *ex = PyLong_AsVoidPtr(PyTuple_GET_ITEM(q, 1));
        void *node = PyLong_AsVoidPtr(PyTuple_GET_ITEM(q, 2));
        void *par = PyLong_AsVoidPtr(PyTuple_GET_ITEM(q, 3));
        if (PyErr_Occurred()) {
            rc = -1;
            goto done;
        }
        int err;
        T_START(t0);
        Py_BEGIN_ALLOW_THREADS
        err = ((setp_fn)fn)(ex, node, par);
        Py_END_ALLOW_THREADS
        T_ADD(T_UPDATE, t0);
        if (err != 0) {
            PyErr_Format(PyExc_RuntimeError, "rocsample._fastcall: a graph node's update failed: "
                         "error %d", err);
            rc = -1;
            goto done;
        }
    }
    if (PyObject_SetAttr(hit, s_gx, gx) < 0 || PyObject_SetAttr(hit, s_gptrs, l) < 0) {
        rc = -1;
        goto done;
    }
    rc = graph_launch(gx) < 0 ? -1 : 1;
done:
    Py_XDECREF(execs); Py_XDECREF(cap); Py_XDECREF(gmake); Py_XDECREF(nl); Py_XDECREF(cur);
    Py_XDECREF(pts); Py_XDECREF(okey); Py_XDECREF(gx); Py_XDECREF(key);
    return rc;
}

/* BoundCall.run(ptrs) for a call whose stream is not capturing, the stream lock held: the last
 * graph's addresses again, or another graph holding these addresses (then the last one, as
 * run() records it), or the oldest graph re-pointed once the table is full (native_repoint);
 * else run() itself (a new graph, launch by launch).
 * 0 done, -1 error */
static int hit_run(PyObject *hit, const unsigned long long *p, const int *present, int n,
                   int as_tuple)
{
    PyObject *gx = PyObject_GetAttr(hit, s_gx);
    if (gx == NULL)
        return -1;
    if (gx != Py_None) {
        PyObject *g = PyObject_GetAttr(hit, s_gptrs);
        if (g == NULL) {
            Py_DECREF(gx);
            return -1;
        }
        int same = same_slots(g, p, present, n, as_tuple);
        Py_DECREF(g);
        if (same) {
            int r = graph_launch(gx);
            Py_DECREF(gx);
            return r;
        }
    }
    Py_DECREF(gx);
    PyObject *l = slot_list(p, present, n, as_tuple);
    if (l == NULL)
        return -1;
    PyObject *execs = PyObject_GetAttr(hit, s_execs);
    if (execs == NULL) {
        Py_DECREF(l);
        return -1;
    }
    if (PyDict_Check(execs) && PyDict_GET_SIZE(execs) > 0) {
        PyObject *t = as_tuple ? Py_NewRef(l) : PyList_AsTuple(l);
        PyObject *g2 = t == NULL ? NULL : PyDict_GetItemWithError(execs, t);
        Py_XDECREF(t);
        if (g2 != NULL) {
            Py_INCREF(g2);
            int r = PyObject_SetAttr(hit, s_gx, g2);
            if (r == 0)
                r = PyObject_SetAttr(hit, s_gptrs, l);
            if (r == 0)
                r = graph_launch(g2);
            Py_DECREF(g2);
            Py_DECREF(execs);
            Py_DECREF(l);
            return r;
        }
        if (PyErr_Occurred()) {
            Py_DECREF(execs);
            Py_DECREF(l);
            return -1;
        }
    }
    Py_DECREF(execs);
    int nr = native_repoint(hit, l, p, present, n);
    if (nr != 0) {
        Py_DECREF(l);
        return nr < 0 ? -1 : 0;
    }
    PyObject *r = PyObject_CallMethodOneArg(hit, s_run, l);
    Py_DECREF(l);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* A bound call's repeated launch at addresses p: under its stream lock (BoundCall.lock, taken
 * without blocking), ready() then run(). ``outs`` (or NULL): a callable making this call's
 * outputs (a one-off call's new tensors), called once ready() said yes, before the launch; it
 * returns (tokens, logprobs, status, (their three addresses)), which go to slots 7-9 of p and to
 * *made. 1 served, 0 not (busy, capturing, the pool has work, no lock yet), -1 error (the lock
 * released) */
static int serve(PyObject *hit, unsigned long long *p, const int *present, int n, int as_tuple,
                 PyObject *outs, PyObject **made)
{
    PyObject *lock = PyObject_GetAttr(hit, s_lock);
    if (lock == NULL)
        return -1;
    if (lock == Py_None) {
        Py_DECREF(lock);
        return 0;
    }
    PyObject *got = PyObject_CallMethodOneArg(lock, s_acquire, Py_False);
    if (got == NULL) {
        Py_DECREF(lock);
        return -1;
    }
    int held = PyObject_IsTrue(got);
    Py_DECREF(got);
    if (held != 1) {
        Py_DECREF(lock);
        return held < 0 ? -1 : 0;  /* (busy: Python waits for it) */
    }
    int ready = hit_ready(hit);
    int ran = 0;
    if (ready == 1 && outs != NULL) {
        T_START(t0);
        PyObject *o = PyObject_CallNoArgs(outs);
        T_ADD(T_OUTS, t0);
        if (o == NULL || !PyTuple_Check(o) || PyTuple_GET_SIZE(o) != 4
            || !PyTuple_Check(PyTuple_GET_ITEM(o, 3)) || PyTuple_GET_SIZE(PyTuple_GET_ITEM(o, 3)) != 3) {
            if (o != NULL)
                PyErr_SetString(PyExc_RuntimeError, "rocsample._fastcall: outputs");
            Py_XDECREF(o);
            ran = -1;
        } else {
            for (int j = 0; j < 3; j++)
                p[7 + j] = PyLong_AsUnsignedLongLongMask(PyTuple_GET_ITEM(PyTuple_GET_ITEM(o, 3), j));
            if (PyErr_Occurred()) {
                Py_DECREF(o);
                ran = -1;
            } else {
                *made = o;
            }
        }
    }
    if (ready == 1 && ran == 0)
        ran = hit_run(hit, p, present, n, as_tuple);
    /* release, keeping an error from above */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *r = PyObject_CallMethodNoArgs(lock, s_release);
    Py_DECREF(lock);
    if (r == NULL) {
        Py_XDECREF(et); Py_XDECREF(ev); Py_XDECREF(tb);
        ready = -1;
    } else {
        Py_DECREF(r);
        PyErr_Restore(et, ev, tb);
    }
    if (ready < 0 || ran < 0) {
        if (made != NULL)
            Py_CLEAR(*made);
        return -1;
    }
    return ready;
}

/* a seed or position argument against an entry's spec: a tensor's 5-tuple layout (view_matches
 * on what view_read read; *ptr its address), or (value, device copy's address, the copy) for a
 * Python int, whose device copy the entry keeps. 1 equal, 0 not, -1 error */
static int arg_matches(PyObject *arg, const view_t *v, PyObject *spec, unsigned long long *ptr)
{
    if (PyTuple_Check(spec) && PyTuple_GET_SIZE(spec) == 3) {
        if (!PyLong_CheckExact(arg))
            return 0;
        int eq = PyObject_RichCompareBool(arg, PyTuple_GET_ITEM(spec, 0), Py_EQ);
        if (eq != 1)
            return eq;
        *ptr = PyLong_AsUnsignedLongLongMask(PyTuple_GET_ITEM(spec, 1));
        return PyErr_Occurred() ? -1 : 1;
    }
    if (v->shape == NULL)  /* (an int given where the entry has a tensor) */
        return 0;
    int m = view_matches(v, spec);
    if (m == 1)
        *ptr = v->ptr;
    return m;
}

/* the entry's stream: where it follows torch's current stream (raw: (torch, its
 * current-raw-stream function)), that function's answer for device dev equals the entry's
 * handle. The answer is asked once a call: *fn is the function last asked (compared by
 * identity only) and *h its answer (a new reference the caller clears). 1 yes, 0 no, -1 error */
static int same_stream(PyObject *raw, PyObject *handle, long dev, PyObject **fn, PyObject **h)
{
    if (raw == Py_None)
        return 1;
    /* (the torch module the function came from is still sys.modules["torch"]) */
    PyObject *mods = PyImport_GetModuleDict();
    PyObject *torch = PyDict_GetItemWithError(mods, s_torch);
    if (torch == NULL || !PyTuple_Check(raw) || torch != PyTuple_GET_ITEM(raw, 0))
        return PyErr_Occurred() ? -1 : 0;
    PyObject *f = PyTuple_GET_ITEM(raw, 1);
    if (*h == NULL || *fn != f) {
        Py_CLEAR(*h);
        PyObject *dv = PyLong_FromLong(dev);
        if (dv == NULL)
            return -1;
        *h = PyObject_CallOneArg(f, dv);
        Py_DECREF(dv);
        if (*h == NULL)
            return -1;
        *fn = f;
    }
    return PyObject_RichCompareBool(*h, handle, Py_EQ);
}

/* whether e is an entry of ``size`` items whose item ``at`` is the tensors' type tx */
static int entry_of(PyObject *e, Py_ssize_t size, Py_ssize_t at, PyTypeObject *tx)
{
    return PyTuple_Check(e) && PyTuple_GET_SIZE(e) == size
        && PyTuple_GET_ITEM(e, at) == (PyObject *)tx;
}

/* some entry of ``entries`` (a list) is of size ``size`` with tensor type tx at ``at``: the
 * quick look before any torch call */
static int any_entry(PyObject *entries, Py_ssize_t size, Py_ssize_t at, PyTypeObject *tx)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(entries); i++)
        if (entry_of(PyList_GET_ITEM(entries, i), size, at, tx))
            return 1;
    return 0;
}

static PyObject *repeat(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 14) {
        PyErr_SetString(PyExc_TypeError, "repeat: 14 arguments");
        return NULL;
    }
    PyObject *entries = args[0], *x = args[1], *seed = args[6], *pos = args[7];
    PyObject *out = args[11];
    if (!PyList_Check(entries) || PyList_GET_SIZE(entries) == 0 || out != Py_None)
        Py_RETURN_NONE;
    PyTypeObject *tx = Py_TYPE(x);
    /* seed and position: tensors of x's type, or Python ints */
    int seed_t = Py_TYPE(seed) == tx, pos_t = Py_TYPE(pos) == tx;
    if ((!seed_t && !PyLong_CheckExact(seed)) || (!pos_t && !PyLong_CheckExact(pos)))
        Py_RETURN_NONE;
    for (int i = 2; i < 6; i++)
        if (!PyFloat_CheckExact(args[i]) && !PyLong_CheckExact(args[i]))
            Py_RETURN_NONE;
    if (!any_entry(entries, E_N, E_XTYPE, tx))
        Py_RETURN_NONE;

    T_START(t_call);
    view_t vx = {0}, vs = {0}, vp = {0};
    PyObject *entry = NULL, *result = NULL, *made = NULL;
    PyObject *cur_fn = NULL, *cur_h = NULL;  /* torch's current stream, asked once (same_stream) */
    unsigned long long ps = 0, pq = 0;
    T_START(t_reads);
    int rc = view_read(x, &vx);
    if (rc == 1 && seed_t)
        rc = view_read(seed, &vs);
    if (rc == 1 && pos_t)
        rc = view_read(pos, &vp);
    T_ADD(T_READS, t_reads);
    if (rc != 1)
        goto done;
    T_START(t_match);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(entries); i++) {
        PyObject *e = PyList_GET_ITEM(entries, i);
        if (!entry_of(e, E_N, E_XTYPE, tx))
            continue;
        Py_INCREF(e);  /* (held while compared: a comparison may run Python that empties the list) */
        PyObject *f = PyTuple_GET_ITEM(e, E_FILT), *fl = PyTuple_GET_ITEM(e, E_FLAGS);
        int m = 1;
        for (int j = 0; m == 1 && j < 4; j++)
            m = same_scalar(args[2 + j], PyTuple_GET_ITEM(f, j));
        /* return_logprobs, advance_position, dtype, fresh: compared as the key's tuple does */
        PyObject *fv[4] = {args[8], args[9], args[12], args[13]};
        for (int j = 0; m == 1 && j < 4; j++)
            m = PyObject_RichCompareBool(fv[j], PyTuple_GET_ITEM(fl, j), Py_EQ);
        if (m == 1)
            m = view_matches(&vx, PyTuple_GET_ITEM(e, E_X));
        if (m == 1)
            m = arg_matches(seed, &vs, PyTuple_GET_ITEM(e, E_S), &ps);
        if (m == 1)
            m = arg_matches(pos, &vp, PyTuple_GET_ITEM(e, E_P), &pq);
        /* the stream: torch's current raw stream of x's device (the entry's: view_matches
         * compared it), where the plan follows it; a plan used on several streams has an
         * entry for each */
        if (m == 1)
            m = same_stream(PyTuple_GET_ITEM(e, E_RAW), PyTuple_GET_ITEM(e, E_HANDLE), vx.dev,
                            &cur_fn, &cur_h);
        if (m == 1) {
            entry = e;  /* (the reference taken above) */
            break;
        }
        Py_DECREF(e);
        if (m < 0) { rc = -1; goto done; }
    }
    T_ADD(T_MATCH, t_match);
    if (entry == NULL)
        goto done;
    PyObject *hit = PyTuple_GET_ITEM(entry, E_HIT);
    unsigned long long p[NSLOT] = {0};
    int present[NSLOT] = {0};
    p[0] = vx.ptr; present[0] = 1;
    p[5] = ps; present[5] = 1;
    p[6] = pq; present[6] = 1;
    for (int j = 7; j < 10; j++)
        present[j] = 1;
    /* E_OPTRS: the plan's outputs' addresses, or (a one-off call's) a callable making new ones */
    PyObject *o = PyTuple_GET_ITEM(entry, E_OPTRS);
    PyObject *outs = NULL;
    if (PyTuple_Check(o)) {
        for (int j = 0; j < 3; j++)
            p[7 + j] = PyLong_AsUnsignedLongLongMask(PyTuple_GET_ITEM(o, j));
        if (PyErr_Occurred()) { rc = -1; goto done; }
    } else {
        outs = o;
    }
    int sv = serve(hit, p, present, NSLOT, 0, outs, &made);
    if (sv != 1) {
        if (sv < 0) rc = -1;
        goto done;
    }
    served++;
    int chk = PyObject_IsTrue(args[10]);
    if (chk < 0) { rc = -1; goto done; }
    if (chk) {
        /* E_FINISH(outputs made or None, check): the result as Python builds it */
        PyObject *fa[2] = {made != NULL ? made : Py_None, args[10]};
        result = PyObject_Vectorcall(PyTuple_GET_ITEM(entry, E_FINISH), fa, 2, NULL);
    } else if (made != NULL) {
        /* (tokens, logprobs, status) with return_logprobs, else (tokens, status): as finish() */
        int rl = PyObject_IsTrue(PyTuple_GET_ITEM(PyTuple_GET_ITEM(entry, E_FLAGS), 0));
        if (rl < 0) { rc = -1; goto done; }
        result = rl ? PyTuple_Pack(3, PyTuple_GET_ITEM(made, 0), PyTuple_GET_ITEM(made, 1),
                                   PyTuple_GET_ITEM(made, 2))
                    : PyTuple_Pack(2, PyTuple_GET_ITEM(made, 0), PyTuple_GET_ITEM(made, 2));
    } else {
        result = Py_NewRef(PyTuple_GET_ITEM(entry, E_RESULT));
    }
    if (result == NULL)
        rc = -1;
    else if (timing_on) {
        t_acc[T_TOTAL] += now_ns() - t_call;
        t_acc[T_CALLS]++;
    }
done:
    view_clear(&vx);
    view_clear(&vs);
    view_clear(&vp);
    Py_XDECREF(entry);
    Py_XDECREF(made);
    Py_XDECREF(cur_h);
    if (rc < 0) {
        Py_XDECREF(result);
        return NULL;
    }
    if (result == NULL)
        Py_RETURN_NONE;
    return result;
}

/* set_rows entry layout (rocsample.set_rows._fast_entry) */
enum {
    R_KEY, R_TYPE, R_DST, R_SRC, R_IDX, R_DTYPE, R_RAW, R_HANDLE, R_HIT, R_GAPS, R_BE,
    R_N
};

/* set_rows_repeat(entries, backends, dst, src, idx, dst_type, stream, check_bounds): a repeated
 * unchecked set_rows with torch tensors on torch's current stream (stream None), as set_rows'
 * repeated path serves it; dst, or None for every other call. ``backends`` is the
 * rocsample.backends module: an entry serves only while its backend is the current one. */
static PyObject *set_rows_repeat(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "set_rows_repeat: 8 arguments");
        return NULL;
    }
    PyObject *entries = args[0], *backends = args[1], *dst = args[2], *src = args[3];
    PyObject *idx = args[4], *dst_type = args[5];
    if (!PyList_Check(entries) || PyList_GET_SIZE(entries) == 0 || args[6] != Py_None)
        Py_RETURN_NONE;
    int chk = PyObject_IsTrue(args[7]);
    if (chk != 0)
        return chk < 0 ? NULL : Py_NewRef(Py_None);
    PyTypeObject *tx = Py_TYPE(dst);
    if (Py_TYPE(src) != tx || Py_TYPE(idx) != tx)
        Py_RETURN_NONE;
    if (!any_entry(entries, R_N, R_TYPE, tx))
        Py_RETURN_NONE;
    view_t vd = {0}, vs = {0}, vi = {0};
    PyObject *entry = NULL, *be = NULL;
    PyObject *cur_fn = NULL, *cur_h = NULL;  /* torch's current stream, asked once (same_stream) */
    int served_now = 0;
    int rc = view_read(dst, &vd);
    if (rc == 1)
        rc = view_read(src, &vs);
    if (rc == 1)
        rc = view_read(idx, &vi);
    if (rc != 1)
        goto done;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(entries); i++) {
        PyObject *e = PyList_GET_ITEM(entries, i);
        if (!entry_of(e, R_N, R_TYPE, tx))
            continue;
        Py_INCREF(e);  /* (held while compared: a comparison may run Python that empties the list) */
        int m = PyObject_RichCompareBool(dst_type, PyTuple_GET_ITEM(e, R_DTYPE), Py_EQ);
        if (m == 1)
            m = view_matches(&vd, PyTuple_GET_ITEM(e, R_DST));
        if (m == 1)
            m = view_matches(&vs, PyTuple_GET_ITEM(e, R_SRC));
        if (m == 1)
            m = view_matches(&vi, PyTuple_GET_ITEM(e, R_IDX));
        /* torch's current stream: each stream's calls have an entry of their own */
        if (m == 1)
            m = same_stream(PyTuple_GET_ITEM(e, R_RAW), PyTuple_GET_ITEM(e, R_HANDLE), vd.dev,
                            &cur_fn, &cur_h);
        if (m == 1) {
            entry = e;  /* (the reference taken above) */
            break;
        }
        Py_DECREF(e);
        if (m < 0) { rc = -1; goto done; }
    }
    if (entry == NULL)
        goto done;
    be = PyObject_GetAttr(backends, s_current);
    if (be == NULL) { rc = -1; goto done; }
    if (be != PyTuple_GET_ITEM(entry, R_BE))
        goto done;
    /* src or idx meeting dst (lo < dst - src < hi: binder.gaps): the full path refuses it */
    PyObject *g = PyTuple_GET_ITEM(entry, R_GAPS);
    long long dd = (long long)vd.ptr, ds = dd - (long long)vs.ptr, di = dd - (long long)vi.ptr;
    long long ls = PyLong_AsLongLong(PyTuple_GET_ITEM(g, 0));
    long long hs = PyLong_AsLongLong(PyTuple_GET_ITEM(g, 1));
    long long li = PyLong_AsLongLong(PyTuple_GET_ITEM(g, 2));
    long long hi = PyLong_AsLongLong(PyTuple_GET_ITEM(g, 3));
    if (PyErr_Occurred()) { rc = -1; goto done; }
    if ((ls < ds && ds < hs) || (li < di && di < hi))
        goto done;
    unsigned long long p[3] = {vd.ptr, vs.ptr, vi.ptr};
    int present[3] = {1, 1, 1};
    int sv = serve(PyTuple_GET_ITEM(entry, R_HIT), p, present, 3, 1, NULL, NULL);
    if (sv < 0) { rc = -1; goto done; }
    served_now = sv == 1;
done:
    view_clear(&vd);
    view_clear(&vs);
    view_clear(&vi);
    Py_XDECREF(entry);
    Py_XDECREF(be);
    Py_XDECREF(cur_h);
    if (rc < 0)
        return NULL;
    if (!served_now)
        Py_RETURN_NONE;
    served++;
    return Py_NewRef(dst);
}

static PyObject *served_calls(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    return PyLong_FromUnsignedLongLong(served);
}

static PyObject *timing(PyObject *self, PyObject *on)
{
    (void)self;
    int t = PyObject_IsTrue(on);
    if (t < 0)
        return NULL;
    const char *names[T_N] = {"probe_ns", "outputs_ns", "node_update_ns", "graph_launch_ns",
                              "reads_ns", "match_ns", "total_ns", "calls"};
    PyObject *d = PyDict_New();
    for (int i = 0; d != NULL && i < T_N; i++) {
        PyObject *v = PyLong_FromUnsignedLongLong(t_acc[i]);
        if (v == NULL || PyDict_SetItemString(d, names[i], v) < 0)
            Py_CLEAR(d);
        Py_XDECREF(v);
        t_acc[i] = 0;
    }
    timing_on = t;
    return d;
}

static PyMethodDef methods[] = {
    {"repeat", (PyCFunction)(void (*)(void))repeat, METH_FASTCALL,
     "A Sampler's plain repeated call with torch tensors, or None (see the module's source)."},
    {"set_rows_repeat", (PyCFunction)(void (*)(void))set_rows_repeat, METH_FASTCALL,
     "A repeated unchecked set_rows with torch tensors, or None (see the module's source)."},
    {"served", served_calls, METH_NOARGS, "How many calls repeat() served in this process."},
    {"timing", timing, METH_O,
     "timing(on): the host ns repeat()'s served calls spent in their parts (the capture probe, a "
     "one-off call's outputs, node updates, graph launches, the arguments' reads, the entry "
     "match, the whole call) since the last "
     "timing() call, reset; then counts from now on only if ``on`` (off by default)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "rocsample._fastcall",
    "A Sampler's plain repeated call with torch tensors, in C (rocsample.sampling).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fastcall(void)
{
    struct { PyObject **p; const char *s; } names[] = {
        {&s_get_device, "get_device"}, {&s_data_ptr, "data_ptr"}, {&s_stride, "stride"},
        {&s_shape, "shape"}, {&s_dtype, "dtype"}, {&s_acquire, "acquire"},
        {&s_release, "release"}, {&s_lock, "lock"}, {&s_probe, "_probe"}, {&s_pool, "_pool"},
        {&s_leases, "_leases"}, {&s_gx, "_gx"}, {&s_gptrs, "_gptrs"}, {&s_run, "run"},
        {&s_native, "native"}, {&s_deferred, "_deferred"}, {&s_retired, "_retired"},
        {&s_numba_held, "_numba_held"}, {&s_entries, "_entries"}, {&s_alloc, "alloc"},
        {&s_torch, "torch"}, {&s_execs, "_execs"}, {&s_current, "_current"},
        {&s_cap, "_cap"}, {&s_gmake, "_gmake"}, {&s_nlive, "_nlive"}, {&s_ptrs, "ptrs"},
        {&s_points, "points"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        *names[i].p = PyUnicode_InternFromString(names[i].s);
        if (*names[i].p == NULL)
            return NULL;
    }
    return PyModule_Create(&module);
}
