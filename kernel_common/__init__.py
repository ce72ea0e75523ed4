"""What ``cuda_ref`` and ``triton_impl`` share: argument checks and small helpers.

Both backends promise the same behaviour for bad input (a ``TypeError`` or ``ValueError`` that
names the argument), so the checks live here once instead of twice. This package imports only
torch; it never imports CuPy or Triton.
"""

from kernel_common.util import (DEFAULT_SM_COUNT, INT_BY_SIZE, balanced_grid, base_phase, batch_chunks, bucket, capability, cdiv,
                                current_device, current_stream, device_name, dtype_name, float32_matmul_precision, hand_over, interpreting,
                                is_fake, kept_hand_over, padded, rows_aligned16, single_gpu, sm_count, tf32_allowed, tma_batch_view, tma_rows,
                                waves_balanced)
from kernel_common.validate import (
    batch_view,
    check_batched_matmul_args,
    check_bias,
    check_gemv_args,
    check_matmul_args,
    check_matrix,
    check_out,
    check_output,
    check_transpose_args,
    check_variant,
    is_batch,
    look_inside,
    matmul_out_dtype,
    matrix_layout,
    output,
    overlaps,
    to_layout,
    variants_lookup,
)

__all__ = ["DEFAULT_SM_COUNT", "INT_BY_SIZE", "balanced_grid", "base_phase", "batch_chunks", "batch_view", "bucket", "capability", "cdiv",
           "check_batched_matmul_args", "check_bias", "check_gemv_args", "check_matmul_args", "check_matrix", "check_out", "check_output",
           "check_transpose_args", "check_variant", "current_device", "current_stream", "device_name", "dtype_name", "float32_matmul_precision",
           "hand_over", "interpreting", "is_batch", "is_fake", "kept_hand_over", "look_inside",
           "matmul_out_dtype", "matrix_layout", "output", "overlaps", "padded", "rows_aligned16", "single_gpu",
           "sm_count", "tf32_allowed", "tma_batch_view", "tma_rows", "to_layout", "variants_lookup", "waves_balanced"]
