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

/* Element n of slice a of a buffer cut into slices of N elements (the
 * LBM's nine distributions, F_a at a N + n; records of several values per
 * item): in 64 bits. N and n are 32-bit (a padded grid holds fewer than
 * 2^31 cells: the host checks), but a N passes 2^31 once 9 N does, above
 * about 15000^2 cells. Every kernel indexes such a buffer through it;
 * wb_slice_probe lets tests check it with values above 2^31. */
#define WB_SLICE(a, N, n) ((long)(a) * (long)(N) + (long)(n))

#define MAXF(a, b) ((a) > (b) ? (a) : (b))
#define MINF(a, b) ((a) < (b) ? (a) : (b))

/* Plain copy for the bandwidth roofline (float4 per work item). */
kernel void wb_copy(global const float4 *restrict a, global float4 *restrict b)
{
	size_t i = get_global_id(0);
	b[i] = a[i];
}

/* WB_SLICE(a[k], N, n[k]) for the tests (tests/test_opencl_idx64.c). */
kernel void wb_slice_probe(global const int *a, global const int *n, int N,
			   int cnt, global long *out)
{
	const int k = get_global_id(0);
	if (k < cnt)
		out[k] = WB_SLICE(a[k], N, n[k]);
}
