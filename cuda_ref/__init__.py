"""Raw CUDA C kernels launched through CuPy, one ``.cu`` file per algorithm.

Functions accept torch CUDA tensors or CuPy arrays and return the kind they were given.
"""

from cuda_ref._gemv import VARIANTS as _GEMV_VARIANTS
from cuda_ref._gemv import gemv
from cuda_ref._matmul import VARIANTS as _MATMUL_VARIANTS
from cuda_ref._matmul import matmul
from cuda_ref._transpose import VARIANTS as _TRANSPOSE_VARIANTS
from cuda_ref._transpose import transpose
from kernel_common import variants_lookup

# variants(algorithm): the variant names, the default first
variants = variants_lookup({"transpose": _TRANSPOSE_VARIANTS, "gemv": _GEMV_VARIANTS, "matmul": _MATMUL_VARIANTS})

__all__ = ["gemv", "matmul", "transpose", "variants"]
