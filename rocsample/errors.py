"""Exceptions raised by rocsample.

Every error names what went wrong and, where the fix is on the user's side, how to fix it.
"""


class RocsampleError(Exception):
    """Base class of rocsample's own errors."""


class BackendUnavailable(RocsampleError, RuntimeError):
    """The requested backend cannot run here; the message names what is missing."""


class SamplingError(RocsampleError, RuntimeError):
    """Some rows had no finite logit to sample from.

    Attributes
    ----------
    rows : list[int]
        The rows that yielded token -1.
    status : numpy.ndarray
        The per-row status array (0 = ok).
    """

    def __init__(self, message: str, rows=(), status=None):
        super().__init__(message)
        self.rows = list(rows)
        self.status = status


class CaptureError(RocsampleError, RuntimeError):
    """Stream capture failed or was invalidated."""


class ScratchNotWarmed(CaptureError):
    """A call during a stream capture needed device memory that was not prewarmed.

    Raised before anything is allocated or published (and before any driver call), so the
    capture — rocsample's or a foreign one such as ``torch.cuda.graph`` — stays valid: end it,
    prewarm (``rocsample.scratch.prewarm``, ``Sampler.prewarm``, one call outside the capture)
    and capture again. A kind of :class:`CaptureError`.
    """
