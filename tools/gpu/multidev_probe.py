"""Where do allocations land on two GPUs, by every way of asking?"""
import numpy as np
from cuda.bindings import driver as drv
from cuda.bindings import runtime as cudart

import rocsample

be = rocsample.use_backend("cuda")
cuda = be.cuda
rt = be.runtime
for d in (0, 1):
    with be.on_device(d):
        a = cuda.to_device(np.zeros(16, np.float32))
        al = rt.mem_alloc(256, d)
        cur = drv.cuCtxGetCurrent()[1]
        for label, ptr in (("numba to_device", a.__cuda_array_interface__["data"][0]), ("rt.mem_alloc", al.ptr)):
            ordv = drv.cuPointerGetAttribute(drv.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr)
            ctxv = drv.cuPointerGetAttribute(drv.CUpointer_attribute.CU_POINTER_ATTRIBUTE_CONTEXT, ptr)
            rtv = cudart.cudaPointerGetAttributes(ptr)
            print(f"on_device({d}) {label}: DEVICE_ORDINAL={ordv} CONTEXT==current:{int(ctxv[1]) == int(cur)} "
                  f"cudart.device={getattr(rtv[1], 'device', rtv)} rocsample={rt.pointer_device(ptr)}")
        rt.mem_free(al)
