"""Regression: the cpu backend's ``Sampler`` call skipped checks the device path makes.

What broke: ``Sampler.__call__`` sends the cpu backend to ``_call_cpu``, which validated the
parameters with its own, shorter list. Two checks the device path makes were missing:

* a plan built with ``filters=False`` ("raises if a call needs them", its docstring) sampled
  top_k / top_p rows anyway on cpu, while sim/cuda/hip raised ``ValueError``;
* a device array (anything with ``__cuda_array_interface__``) as a parameter, logits or ``out``
  was not refused up front: it reached NumPy and failed with messages that did not name the
  argument ("float() argument must be a string or a real number, not ...") or named the wrong
  thing ("logits: expected float32 ..., got object").
"""

from __future__ import annotations

import numpy as np
import pytest

import rocsample.sampling as rs


def _block(backend):
    return backend.warp_size() if backend.name == "sim" else None


@pytest.mark.parametrize("kw", [dict(top_k=3), dict(top_p=0.5)])
def test_filters_false_plan_refuses_top_k_and_top_p(backend, kw):
    plan = rs.Sampler(2, 16, "float32", filters=False, _block=_block(backend))
    with pytest.raises(ValueError, match=r"^top_k/top_p: expected"):
        plan(np.zeros((2, 16), np.float32), seed=0, position=0, **kw)
    # what the plan is for still works
    plan(np.zeros((2, 16), np.float32), seed=0, position=0, temperature=0.5, min_p=0.1)


class _FakeDeviceArray:
    """A device array as the cpu backend meets it: only ``__cuda_array_interface__``."""

    def __init__(self, shape, typestr):
        self.shape = shape
        self.dtype = np.dtype(typestr)
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr,
                                         "data": (0, False), "version": 3}


@pytest.mark.parametrize("name,typestr", [("temperature", "<f4"), ("top_k", "<i8"),
                                          ("top_p", "<f4"), ("min_p", "<f4"), ("seed", "<i8"),
                                          ("position", "<i8"), ("out", "<i4")])
def test_cpu_refuses_device_arrays_naming_them(backend, name, typestr):
    if backend.is_device:
        pytest.skip("cpu-only: the cpu backend's refusal of device memory")
    args = dict(seed=0, position=0)
    args[name] = _FakeDeviceArray((2,), typestr)
    with pytest.raises(TypeError, match=rf"^{name}: expected"):
        rs.sample(np.zeros((2, 8), np.float32), **args)


def test_cpu_refuses_device_logits_naming_them(backend):
    if backend.is_device:
        pytest.skip("cpu-only: the cpu backend's refusal of device memory")
    with pytest.raises(TypeError, match=r"^logits: expected a NumPy array"):
        rs.sample(_FakeDeviceArray((2, 8), "<f4"), seed=0, position=0)
