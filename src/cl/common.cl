/*
 * common.cl - definitions shared by every wbake OpenCL kernel (this file is
 * the first of the src/cl/ kernel files, which are built as one program).
 *
 * Arithmetic follows the CPU solvers operation for operation: no fused
 * multiply-add (the CPU build uses -ffp-contract=off), the same select
 * forms (MAXF/MINF, not fmax/fmin, which differ on NaN), the same
 * bit-level rsqrt/rcbrt, and 'real' = double for the few sums and ramps
 * the CPU does in double (float on devices without cl_khr_fp64; the host
 * passes -DWB_FP64=1 when the device has it).
 */
#pragma OPENCL FP_CONTRACT OFF
#if WB_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double real;
#else
typedef float real;
#endif

#define MAXF(a, b) ((a) > (b) ? (a) : (b))
#define MINF(a, b) ((a) < (b) ? (a) : (b))

/* Plain copy for the bandwidth roofline (float4 per work item). */
kernel void wb_copy(global const float4 *restrict a, global float4 *restrict b)
{
	size_t i = get_global_id(0);
	b[i] = a[i];
}
