"""What broke (seen on two H200s): a numba stream of device 1 used while device 0 was current was
normalised as a device-0 stream, so its scratch was allocated on device 0 and cuEventRecord on it
failed with INVALID_HANDLE. numba-cuda 0.30's Stream has no context attribute; the device must be
asked of the driver (cuStreamGetDevice), never assumed to be the current one.
"""

from __future__ import annotations

from types import SimpleNamespace

from rocsample.backends._driver import DriverRuntime


class _FakeVendor:
    def __init__(self):
        self.cuda = SimpleNamespace(get_current_device=lambda: SimpleNamespace(id=0), gpus=[None, None],
                                    external_stream=lambda h: ("ext", h))
        self.capturing = set()
        self.driver = SimpleNamespace(cuStreamIsCapturing=lambda h: (0, 1 if h in self.capturing else 0))
        self.asked = []

    def stream_device(self, rt, handle):
        self.asked.append(handle)
        return {0x10: 1, 0x20: 0}[handle]

    @staticmethod
    def stream_handle(stream):
        return int(stream.handle)


class _NumbaLikeStream:
    def __init__(self, handle):
        self.handle = handle

    def synchronize(self):
        pass


def test_stream_device_comes_from_the_driver_not_the_current_device():
    v = _FakeVendor()
    rt = DriverRuntime(v)
    assert rt.stream(_NumbaLikeStream(0x10)).device == 1  # current device is 0
    assert rt.stream(_NumbaLikeStream(0x20)).device == 0
    assert rt.stream(SimpleNamespace(cuda_stream=0x10)).device == 1  # torch-style stream
    assert rt.stream(None).device == 0  # the default stream is the current device's
    assert v.asked == [0x10, 0x20, 0x10]


def test_inside_a_capture_the_last_answer_stands_and_the_driver_is_not_asked():
    # cuStreamGetDevice inside a capture is refused and invalidates the capture (seen on H200)
    v = _FakeVendor()
    rt = DriverRuntime(v)
    assert rt.stream(_NumbaLikeStream(0x10)).device == 1
    v.capturing.add(0x10)
    assert rt.stream(_NumbaLikeStream(0x10)).device == 1
    assert v.asked == [0x10]
