"""What the transpose probes share: CUDA narrow's element-wise kernel, planned with its chunk
kernels (``cuda_ref._transpose._flat``) switched off."""
from cuda_ref import _transpose as cuda_t


def narrow_elementwise_plan(a):
    """The plan of CUDA ``narrow`` for ``a`` on its element-wise kernel; the plan cache is left empty."""
    shipped, cuda_t._flat = cuda_t._flat, (lambda a, out_on_16=True: None)
    cuda_t._PLANS._plans.clear()
    try:
        return cuda_t._PLANS.get((a,), "narrow", None)
    finally:
        cuda_t._flat = shipped
        cuda_t._PLANS._plans.clear()
