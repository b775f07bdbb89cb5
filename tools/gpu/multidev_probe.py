"""Where do numba allocations land, and what does rocsample report for them (two GPUs)?"""
import numpy as np

import rocsample

be = rocsample.use_backend("cuda")
cuda = be.cuda
rt = be.runtime
for d in (0, 1):
    with be.on_device(d):
        a = cuda.to_device(np.zeros(16, np.float32))
        s = rt.new_stream(d)
        st = be.stream(s)
        b = be.as_array(np.zeros(16, np.float32), "x", st)
        ptr = a.__cuda_array_interface__["data"][0]
        print(f"on_device({d}): current={rt.current_device()} to_device ptr dev={rt.pointer_device(ptr)} "
              f"as_array dev={be.array_device(b)} stream dev={st.device} ctx dev={a.gpu_data.context.device.id}")
