"""Bad input to sample / argmax / Sampler: every refusal names the argument, comes before any
launch, and loses nothing (SPEC §1-§2, STYLE "Validate before launching").

Written from an audit of the sampling contract against the tests: each test here covers a
statement no other test would have failed on. Shapes are tiny (2 rows, vocab 40, one 32-thread
block on the simulator). "Nothing lost" means: the plan's previous tokens, an ``out=`` array
and the positions (with ``advance_position=True``) read the same after a refused call, and no
kernel was launched (``backend.launch`` is watched).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import rocsample.sampling as rs
from rocsample.errors import RocsampleError, SamplingError
from rocsample.reference import sampling as R

ROWS, VOCAB = 2, 40


@pytest.fixture
def blk(backend):
    # the simulator pays per thread: one 32-thread block; GPUs use their own default
    return backend.warp_size() if backend.name == "sim" else None


def _host(backend, a):
    return np.asarray(backend.to_host(a)) if backend.is_device else np.asarray(a)


def _dev(backend, a):
    return backend.as_array(np.asarray(a), "x") if backend.is_device else np.asarray(a)


def _lg(seed=0, rows=ROWS, vocab=VOCAB):
    return np.random.default_rng(seed).standard_normal((rows, vocab)).astype(np.float32)


def _same(got, lg, **params):
    """Tokens equal the reference's, except rows it flags as on a rounding boundary."""
    want, _, _, near = R.sample_with_margin(lg, **params)
    bad = np.flatnonzero((np.asarray(got) != want) & ~near)
    assert not bad.size, f"rows {bad}: got {np.asarray(got)[bad]}, want {want[bad]}"


@pytest.fixture
def no_launch(backend, monkeypatch):
    """Fail the test if a refused call launched (or enqueued) anything."""
    seen = []
    if backend.is_device:
        monkeypatch.setattr(backend, "launch", lambda *a, **k: seen.append(a))
        monkeypatch.setattr(backend, "bind", lambda *a, **k: seen.append(a))
    else:
        monkeypatch.setattr(backend, "enqueue", lambda *a, **k: seen.append(a))
    yield seen
    assert not seen, f"a refused call launched {len(seen)} kernel(s)"


# ---- scalar parameters: NaN / inf / out of range --------------------------------------------
SCALAR_BAD = [
    ("temperature", float("inf")), ("temperature", -float("inf")), ("temperature", -1e-30),
    ("top_p", float("nan")), ("top_p", float("inf")), ("top_p", -float("inf")),
    ("top_p", 1.0000001), ("top_p", -0.5),
    ("top_k", float("nan")), ("top_k", -float("inf")), ("top_k", -3),
    ("min_p", float("nan")), ("min_p", float("inf")), ("min_p", -float("inf")),
    ("min_p", 1.0001),
]


@pytest.mark.parametrize("name,value", SCALAR_BAD)
def test_scalar_out_of_range_raises_naming_it(backend, blk, no_launch, name, value):
    with pytest.raises(ValueError, match=rf"^{name}: expected .*, got "):
        rs.sample(_lg(), seed=0, position=0, _block=blk, **{name: value})


@pytest.mark.parametrize("name,value", [("top_p", 1.5), ("temperature", float("nan")),
                                        ("min_p", -0.1)])
def test_plan_call_out_of_range_raises_naming_it(backend, blk, no_launch, name, value):
    plan = rs.Sampler(ROWS, VOCAB, "float32", _block=blk)
    with pytest.raises(ValueError, match=rf"^{name}: expected"):
        plan(_lg(), seed=0, position=0, **{name: value})


# ---- per-row host arrays --------------------------------------------------------------------
ROW_BAD = [  # (name, per-row value, the first bad row)
    ("temperature", [1.0, -0.5], 1), ("temperature", [np.nan, 1.0], 0),
    ("top_p", [0.5, np.nan], 1), ("top_p", [0.0, 0.5], 0),
    ("top_p", np.array([0.9, 1.5], np.float32), 1),
    ("top_k", [3, 2.5], 1), ("top_k", np.array([-1, 3]), 0), ("top_k", [np.nan, 2], 0),
    ("min_p", [0.1, 2.0], 1), ("min_p", np.array([-np.inf, 0.5]), 0),
]


@pytest.mark.parametrize("name,value,row", ROW_BAD)
def test_per_row_bad_value_names_argument_and_row(backend, blk, no_launch, name, value, row):
    with pytest.raises(ValueError, match=rf"^{name}: expected .*\(row {row}\)$"):
        rs.sample(_lg(), seed=0, position=0, _block=blk, **{name: value})


@pytest.mark.parametrize("name", ["temperature", "top_k", "top_p", "min_p", "seed", "position"])
@pytest.mark.parametrize("shape", [(ROWS + 1,), (ROWS - 1,), (ROWS, 1), (1, ROWS)])
def test_per_row_wrong_shape_raises_naming_it(backend, blk, no_launch, name, shape):
    args = dict(seed=0, position=0)
    args[name] = np.ones(shape, np.int64 if name in ("top_k", "seed", "position") else np.float32)
    with pytest.raises(ValueError, match=rf"^{name}: expected a scalar or an array of length "
                                         rf"n_rows={ROWS}, got an array of shape"):
        rs.sample(_lg(), _block=blk, **args)


WRONG_TYPE = [True, "0.5", None, np.array([True, False]), np.array(["a", "b"]), [None, None],
              {"a": 1}]


@pytest.mark.parametrize("name", ["temperature", "top_k", "top_p", "min_p"])
@pytest.mark.parametrize("value", WRONG_TYPE, ids=lambda v: type(v).__name__ + repr(v)[:12])
def test_filter_param_wrong_type_raises_type_error(backend, blk, no_launch, name, value):
    with pytest.raises(TypeError, match=rf"^{name}: expected"):
        rs.sample(_lg(), seed=0, position=0, _block=blk, **{name: value})


@pytest.mark.parametrize("name", ["seed", "position"])
@pytest.mark.parametrize("value", [1.5, None, True, np.bool_(False), "3", np.array([1.0, 2.0]),
                                   np.array(["1", "2"]), [1.5, 2.5]],
                         ids=lambda v: type(v).__name__ + repr(v)[:12])
def test_seed_position_wrong_type_raises_type_error(backend, blk, no_launch, name, value):
    args = dict(seed=0, position=0)
    args[name] = value
    with pytest.raises(TypeError, match=rf"^{name}: expected an integer or an array of integers"):
        rs.sample(_lg(), _block=blk, **args)


def test_seed_and_position_are_required(backend):
    with pytest.raises(TypeError, match="seed"):
        rs.sample(_lg(), position=0)
    with pytest.raises(TypeError, match="position"):
        rs.sample(_lg(), seed=0)


# ---- device parameter arrays ----------------------------------------------------------------
DEV_BAD_DTYPE = [("temperature", np.float64), ("temperature", np.float16), ("top_k", np.int32),
                 ("top_k", np.float32), ("top_p", np.float64), ("min_p", np.float16),
                 ("seed", np.int32), ("seed", np.float64), ("position", np.uint32),
                 ("position", np.float32)]


@pytest.mark.parametrize("name,dtype", DEV_BAD_DTYPE)
def test_device_param_wrong_dtype_raises_type_error(backend, blk, no_launch, name, dtype):
    if not backend.is_device:
        pytest.skip("device arrays")
    args = dict(seed=0, position=0)
    args[name] = _dev(backend, np.ones(ROWS, dtype))
    with pytest.raises(TypeError, match=rf"^{name}: expected .*device array"):
        rs.sample(_lg(), _block=blk, **args)


@pytest.mark.parametrize("name", ["temperature", "top_k", "top_p", "min_p", "seed", "position"])
@pytest.mark.parametrize("shape", [(ROWS + 1,), (ROWS, 1)])
def test_device_param_wrong_shape_raises(backend, blk, no_launch, name, shape):
    if not backend.is_device:
        pytest.skip("device arrays")
    dt = {"temperature": np.float32, "top_p": np.float32, "min_p": np.float32}.get(name, np.int64)
    args = dict(seed=0, position=0)
    args[name] = _dev(backend, np.ones(shape, dt))
    with pytest.raises(ValueError, match=rf"^{name}: expected a scalar or an array of length"):
        rs.sample(_lg(), _block=blk, **args)


def test_device_params_of_the_right_dtype_match_reference(backend, blk):
    # The accepted forms the refusals above border on: float32 / int64 / uint64 device arrays.
    if not backend.is_device:
        pytest.skip("device arrays")
    lg = _lg(3)
    p = dict(temperature=np.array([0.7, 1.3], np.float32), top_k=np.array([5, 0], np.int64),
             top_p=np.array([0.9, 0.6], np.float32), min_p=np.array([0.0, 0.05], np.float32))
    seed, pos = np.array([11, 2**63 + 5], np.uint64), np.array([-1, 7], np.int64)
    tok = rs.sample(lg, seed=_dev(backend, seed), position=_dev(backend, pos), _block=blk,
                    **{k: _dev(backend, v) for k, v in p.items()})
    _same(_host(backend, tok), lg, seed=seed, position=pos, **p)


# ---- logits ---------------------------------------------------------------------------------
@pytest.mark.parametrize("logits,exc,match", [
    (np.zeros((2, 8), np.float64), TypeError, r"^logits: expected float32, float16 or bfloat16"),
    (np.zeros((2, 8), bool), TypeError, r"^logits: expected float32"),
    (np.zeros((2, 8), np.complex64), TypeError, r"^logits: expected float32"),
    (np.zeros((0, 8), np.float32), ValueError, r"^logits: expected at least one row"),
    (np.zeros((2, 0), np.float32), ValueError, r"^logits: expected at least one column"),
    (np.zeros((1, 2, 2, 8), np.float32), ValueError, r"^logits: expected a 2-D array"),
    (np.float32(1.0), ValueError, r"^logits: expected a 2-D array"),
    (None, TypeError, r"^logits: expected an array"),
])
def test_bad_logits_raise_naming_logits(backend, no_launch, logits, exc, match):
    with pytest.raises(exc, match=match):
        rs.sample(logits, seed=0, position=0)


def test_bad_logits_on_device_raise(backend, blk, no_launch):
    if not backend.is_device:
        pytest.skip("device arrays")
    with pytest.raises(ValueError, match=r"^logits: expected a 2-D array"):
        rs.sample(_dev(backend, _lg()[0]), seed=0, position=0, _block=blk)
    with pytest.raises(ValueError, match=r"^logits: expected a 2-D array"):
        rs.sample(_dev(backend, _lg()[None]), seed=0, position=0, _block=blk)
    with pytest.raises(TypeError, match=r"^logits: expected float32"):
        rs.sample(_dev(backend, _lg().astype(np.int32)), seed=0, position=0, _block=blk)


def test_device_logits_with_strided_elements_raise(backend, blk):
    # SPEC §2: "C-contiguous rows (a row stride is allowed)" - an element stride is not.
    if not backend.is_device:
        pytest.skip("device arrays")
    wide = _dev(backend, np.ascontiguousarray(np.repeat(_lg(), 2, axis=1)))
    with pytest.raises(ValueError, match=r"^logits: expected rows with unit element stride"):
        rs.sample(wide[:, ::2], seed=0, position=0, _block=blk)


def test_row_strided_logits_are_read_in_place(backend, blk):
    # A view of the first VOCAB columns of a wider buffer: rows VOCAB apart in the view,
    # 2 * VOCAB apart in memory. Wrong results if the kernels assumed a packed row stride.
    buf = np.ascontiguousarray(np.hstack([_lg(4), _lg(5)]))
    x = _dev(backend, buf)[:, :VOCAB]
    params = dict(top_k=7, top_p=0.9, temperature=0.8)
    got = _host(backend, rs.sample(x, seed=3, position=1, _block=blk, **params))
    _same(got, buf[:, :VOCAB], seed=3, position=1, **params)
    want = R.sample(buf[:, :VOCAB], seed=3, position=1, **params)
    assert (R.sample(buf[:, VOCAB:], seed=3, position=1, **params) != want).any(), \
        "the second half must sample differently, or a wrong stride would go unnoticed"


def test_column_strided_numpy_logits_are_copied(backend, blk):
    lg = _lg(6, vocab=2 * VOCAB)
    view = lg[:, ::2]
    got = _host(backend, rs.sample(view, seed=4, position=2, _block=blk, temperature=0.9))
    np.testing.assert_array_equal(got, R.sample(np.ascontiguousarray(view), seed=4, position=2,
                                                temperature=0.9))


# ---- Sampler: construction and the bound shape / dtype / order ------------------------------
@pytest.mark.parametrize("args,kw,exc,name", [
    ((0, VOCAB), {}, ValueError, "n_rows"), ((-1, VOCAB), {}, ValueError, "n_rows"),
    ((2.0, VOCAB), {}, TypeError, "n_rows"), ((True, VOCAB), {}, TypeError, "n_rows"),
    ((ROWS, 0), {}, ValueError, "n_vocab"), ((ROWS, 2**31), {}, ValueError, "n_vocab"),
    ((ROWS, VOCAB, "float64"), {}, TypeError, "dtype"), ((ROWS, VOCAB, "bf16"), {}, TypeError, "dtype"),
    ((ROWS, VOCAB), {"order": "hf"}, ValueError, "order"),
])
def test_sampler_constructor_refuses(backend, args, kw, exc, name):
    with pytest.raises(exc, match=rf"^{name}: expected"):
        rs.Sampler(*args, **kw)


def test_sampler_block_not_a_wave_multiple_refused(backend):
    if not backend.is_device:
        pytest.skip("block size is a device launch parameter")
    with pytest.raises(ValueError, match=r"^_block: expected a multiple of the wavefront size"):
        rs.Sampler(ROWS, VOCAB, _block=backend.warp_size() + 1)


@pytest.mark.parametrize("logits,exc,match", [
    (np.zeros((ROWS, VOCAB - 1), np.float32), ValueError,
     rf"^logits: expected shape \({ROWS}, {VOCAB}\) \(this plan's\), got \({ROWS}, {VOCAB - 1}\)"),
    (np.zeros((ROWS + 1, VOCAB), np.float32), ValueError, r"^logits: expected shape"),
    (np.zeros((VOCAB, ROWS), np.float32), ValueError, r"^logits: expected shape"),
    (np.zeros((ROWS, VOCAB), np.float16), TypeError,
     r"^logits: expected dtype float32 \(this plan's\), got float16"),
    (np.zeros((ROWS, VOCAB), np.uint16), TypeError, r"^logits: expected"),
])
def test_sampler_refuses_other_shape_or_dtype(backend, blk, no_launch, logits, exc, match):
    plan = rs.Sampler(ROWS, VOCAB, "float32", _block=blk)
    with pytest.raises(exc, match=match):
        plan(logits, seed=0, position=0)


def test_sampler_call_takes_no_stream_or_order(backend, blk):
    # Bound at construction: a per-call stream / order must not be silently accepted.
    plan = rs.Sampler(ROWS, VOCAB, "float32", _block=blk)
    for kw in (dict(stream=None), dict(order="vllm")):
        with pytest.raises(TypeError):
            plan(_lg(), seed=0, position=0, **kw)


def test_sampler_uses_its_bound_order(backend, blk):
    lg = _lg(7)
    params = dict(top_k=[3, 6], top_p=0.6, min_p=0.2, temperature=2.5)
    seed = np.array([1, 2], np.uint64)
    llama = R.sample(lg, seed=seed, position=0, order="llama", **params)
    vllm = R.sample(lg, seed=seed, position=0, order="vllm", **params)
    # find a position where the orders disagree, so a plan that ignored its order would fail
    pos = next(p for p in range(64) if (R.sample(lg, seed=seed, position=p, order="llama", **params)
                                        != R.sample(lg, seed=seed, position=p, order="vllm",
                                                    **params)).any())
    llama = R.sample(lg, seed=seed, position=pos, order="llama", **params)
    vllm = R.sample(lg, seed=seed, position=pos, order="vllm", **params)
    plan = rs.Sampler(ROWS, VOCAB, "float32", order="vllm", _block=blk)
    got = _host(backend, plan(lg, seed=seed, position=pos, **params))
    np.testing.assert_array_equal(got, vllm)
    assert (got != llama).any()


# ---- nothing lost ---------------------------------------------------------------------------
REFUSED = [dict(top_p=1.5), dict(top_k=-1), dict(temperature=[1.0, np.nan]), dict(seed=1.5),
           dict(position=[1, 2, 3]), dict(logits=np.zeros((ROWS, VOCAB + 1), np.float32)),
           dict(logits=np.zeros((ROWS, VOCAB), np.float16)), dict(out="bad")]


@pytest.mark.parametrize("bad", REFUSED, ids=lambda d: ",".join(d))
def test_refused_call_leaves_tokens_out_and_positions_untouched(backend, blk, monkeypatch, bad):
    plan = rs.Sampler(ROWS, VOCAB, "float32", _block=blk)
    lg = _lg(8)
    pos = _dev(backend, np.array([5, 9], np.uint64 if backend.is_device else np.int64))
    out = _dev(backend, np.full(ROWS, -7, np.int32))
    first = plan(lg, seed=1, position=pos, top_k=5, advance_position=True)
    tokens_before = _host(backend, first).copy()
    pos_before = _host(backend, pos).copy()
    np.testing.assert_array_equal(pos_before, [6, 10])  # the good call advanced them
    args = dict(logits=lg, seed=1, position=pos, top_k=5, advance_position=True, out=out)
    args.update(bad)
    launched = []
    if backend.is_device:
        monkeypatch.setattr(backend, "launch", lambda *a, **k: launched.append(a))
    else:
        monkeypatch.setattr(backend, "enqueue", lambda *a, **k: launched.append(a))
    logits = args.pop("logits")
    with pytest.raises((ValueError, TypeError)):
        plan(logits, **args)
    monkeypatch.undo()
    assert not launched
    np.testing.assert_array_equal(_host(backend, first), tokens_before)
    np.testing.assert_array_equal(_host(backend, pos), pos_before)
    np.testing.assert_array_equal(_host(backend, out), np.full(ROWS, -7, np.int32))


# ---- out= -----------------------------------------------------------------------------------
def test_out_receives_the_tokens(backend, blk):
    lg = _lg(9)
    out = _dev(backend, np.full(ROWS, -7, np.int32))
    res = rs.sample(lg, seed=2, position=3, top_k=4, out=out, _block=blk)
    assert res is out
    np.testing.assert_array_equal(_host(backend, out), R.sample(lg, seed=2, position=3, top_k=4))


@pytest.mark.parametrize("shape,dtype", [((ROWS,), np.int64), ((ROWS + 1,), np.int32),
                                         ((ROWS, 1), np.int32), ((ROWS,), np.float32)])
def test_out_of_wrong_shape_or_dtype_raises(backend, blk, no_launch, shape, dtype):
    out = _dev(backend, np.zeros(shape, dtype))
    with pytest.raises(TypeError, match=r"^out: expected an int32"):
        rs.sample(_lg(), seed=0, position=0, out=out, _block=blk)


def test_host_out_is_written_on_every_backend(backend, blk):
    # SEMANTICS "Outputs": a NumPy out= is copied back synchronously on device backends
    # (tests/regress/test_numpy_out_refused_on_gpu_backends.py)
    lg = _lg(3)
    out = np.full(ROWS, -7, np.int32)
    assert rs.sample(lg, seed=0, position=0, out=out, _block=blk) is out
    np.testing.assert_array_equal(out, R.sample(lg, seed=0, position=0))


# ---- advance_position -----------------------------------------------------------------------
@pytest.mark.parametrize("position", [0, [1, 2], (1, 2)], ids=["scalar", "list", "tuple"])
def test_advance_position_needs_an_array_in_place(backend, blk, no_launch, position):
    with pytest.raises(ValueError, match=r"^position: expected a device array, or an int64 or "
                                         r"uint64 NumPy array, when advance_position=True"):
        rs.sample(_lg(), seed=0, position=position, advance_position=True, _block=blk)


def test_advance_position_bumps_a_host_array_on_every_backend(backend, blk):
    # read on the host, bumped in place (tests/regress/test_numpy_position_advance_backend_dependent.py)
    pos = np.array([4, 5], np.int64)
    rs.sample(_lg(), seed=0, position=pos, advance_position=True, _block=blk)
    np.testing.assert_array_equal(pos, [5, 6])


# the simulator runs the increment as NumPy scalars, which warn where the GPU wraps silently
@pytest.mark.filterwarnings("ignore:overflow encountered in scalar add:RuntimeWarning")
def test_advance_position_draws_at_the_old_positions_then_increments(backend, blk):
    lg = _lg(10)
    p0 = np.array([2**64 - 1, 41], np.uint64)
    pos = _dev(backend, p0.copy())
    params = dict(top_k=6, temperature=0.9)
    t1 = _host(backend, rs.sample(lg, seed=5, position=pos, advance_position=True, _block=blk,
                                  **params))
    _same(t1, lg, seed=5, position=p0, **params)
    np.testing.assert_array_equal(_host(backend, pos), [0, 42])  # mod 2**64
    t2 = _host(backend, rs.sample(lg, seed=5, position=pos, advance_position=True, _block=blk,
                                  **params))
    _same(t2, lg, seed=5, position=[0, 42], **params)
    np.testing.assert_array_equal(_host(backend, pos), [1, 43])
    rs.sample(lg, seed=5, position=pos, _block=blk, **params)  # default: not advanced
    np.testing.assert_array_equal(_host(backend, pos), [1, 43])


# ---- return_logprobs and check=False --------------------------------------------------------
def _log_softmax_at(lg, tok):
    out = np.full(tok.shape, np.nan)
    for r, t in enumerate(tok):
        row = lg[r].astype(np.float64)
        fin = row[np.isfinite(row)]
        if t >= 0:
            out[r] = row[t] - (fin.max() + math.log(np.exp(fin - fin.max()).sum()))
    return out


@pytest.mark.parametrize("order", ["llama", "vllm"])
def test_logprobs_are_raw_row_log_softmax_at_the_token(backend, blk, order):
    # Independent of the reference: float64 log-softmax of the raw row at T = 1 over its finite
    # logits, whatever the temperature and filters (SPEC §2 "return_logprobs").
    lg = _lg(12)
    lg[0, 3] = np.nan
    lg[1, 7] = -np.inf
    lg[1, 8] = np.inf
    tok, lp, st = rs.sample(lg, seed=3, position=9, temperature=[0.4, 2.0], top_k=[4, 0],
                            min_p=0.05, order=order, return_logprobs=True, check=False,
                            _block=blk)
    tok, lp, st = _host(backend, tok), _host(backend, lp), _host(backend, st)
    assert lp.dtype == np.float32 and st.dtype == np.int32 and tok.dtype == np.int32
    np.testing.assert_array_equal(st, [0, 0])
    np.testing.assert_allclose(lp, _log_softmax_at(lg, tok), rtol=1e-5, atol=2e-5)


def test_argmax_logprobs_and_status(backend, blk):
    lg = _lg(13)
    lg[1] = -np.inf
    tok, lp, st = rs.argmax(lg, return_logprobs=True, check=False, _block=blk)
    tok, lp, st = _host(backend, tok), _host(backend, lp), _host(backend, st)
    np.testing.assert_array_equal(tok, [int(np.argmax(lg[0])), -1])
    np.testing.assert_array_equal(st, [0, 1])
    assert np.isnan(lp[1])
    np.testing.assert_allclose(lp[0], _log_softmax_at(lg[:1], tok[:1])[0], rtol=1e-5, atol=2e-5)
    with pytest.raises(SamplingError, match=r"^logits: expected at least one finite logit per "
                                            r"row, got none in 1 row\(s\): 1$"):
        rs.argmax(lg, _block=blk)


def test_result_arity_follows_return_logprobs_and_check(backend, blk):
    lg = _lg(14)
    kw = dict(seed=0, position=0, _block=blk)
    assert not isinstance(rs.sample(lg, **kw), tuple)
    assert len(rs.sample(lg, return_logprobs=True, **kw)) == 2
    assert len(rs.sample(lg, check=False, **kw)) == 2
    assert len(rs.sample(lg, return_logprobs=True, check=False, **kw)) == 3


def test_positive_infinity_is_never_sampled_and_alone_is_no_finite_logit(backend, blk):
    lg = _lg(15)
    lg[0] = np.inf
    lg[1, ::2] = np.inf
    tok, st = rs.sample(lg, seed=1, position=0, temperature=0.0, check=False, _block=blk)
    tok, st = _host(backend, tok), _host(backend, st)
    np.testing.assert_array_equal(st, [1, 0])
    assert tok[0] == -1
    assert tok[1] % 2 == 1 and tok[1] == 1 + 2 * int(np.argmax(lg[1, 1::2]))


def test_sampling_error_carries_rows_and_status(backend, blk):
    lg = np.full((20, 4), np.nan, np.float32)
    lg[5] = 0.0
    with pytest.raises(SamplingError) as ei:
        rs.sample(lg, seed=0, position=0, _block=blk)
    e = ei.value
    assert isinstance(e, RocsampleError) and isinstance(e, RuntimeError)
    assert e.rows == [r for r in range(20) if r != 5]
    np.testing.assert_array_equal(np.asarray(e.status), [0 if r == 5 else 1 for r in range(20)])
    assert str(e).endswith("got none in 19 row(s): 0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, "
                           "14, 15, 16 ...")


# ---- streams --------------------------------------------------------------------------------
@pytest.mark.parametrize("stream", ["abc", 1.5, object()], ids=["str", "float", "object"])
def test_unusable_stream_raises_naming_stream(backend, no_launch, stream):
    with pytest.raises(TypeError, match=r"^stream: expected"):
        rs.sample(_lg(), seed=0, position=0, stream=stream)


def test_logits_on_another_device_than_the_stream_raise(backend, blk, new_stream, monkeypatch):
    if not backend.is_device or backend.runtime.device_count() < 2:
        pytest.skip("needs two devices on a device backend (the simulator emulates two)")
    s1 = new_stream(1)
    lg = _lg(16)
    with backend.on_device(1):
        plan = rs.Sampler(ROWS, VOCAB, "float32", stream=s1, _block=blk)
        first = plan(_dev(backend, lg), seed=0, position=0)  # logits on the plan's device: fine
        before = _host(backend, first).copy()
    with backend.on_device(0):
        x0 = _dev(backend, lg)
        launched = []
        monkeypatch.setattr(backend, "launch", lambda *a, **k: launched.append(a))
        with pytest.raises(ValueError, match=r"^stream: expected a stream on device 0 \(where "
                                             r"logits live\), got a stream on device 1"):
            rs.sample(x0, seed=0, position=0, stream=s1, _block=blk)
        with pytest.raises(ValueError, match=r"^stream: expected a stream on device 0"):
            plan(x0, seed=0, position=0)
        monkeypatch.undo()
    assert not launched
    with backend.on_device(1):
        np.testing.assert_array_equal(_host(backend, first), before)
