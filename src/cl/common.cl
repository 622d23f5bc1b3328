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

/* Fill and copy of 32-bit words base .. base + n - 1: cl.c's buf_zero,
 * buf_fill32 and buf_copy32 use them for whole fields instead of
 * clEnqueueFillBuffer / clEnqueueCopyBuffer, which fail on NVIDIA from
 * 2^31 bytes on (CL_OUT_OF_RESOURCES; the LBM's distributions are 9.7 GB
 * at 16384^2). */
kernel void wb_fill32(global uint *p, ulong base, ulong n, uint v)
{
	const ulong i = get_global_id(0);
	if (i < n)
		p[base + i] = v;
}

kernel void wb_copy32(global const uint *a, global uint *b, ulong base,
		      ulong n)
{
	const ulong i = get_global_id(0);
	if (i < n)
		b[base + i] = a[base + i];
}

/* WB_SLICE(a[k], N, n[k]) for the tests (tests/test_opencl_idx64.c). */
kernel void wb_slice_probe(global const int *a, global const int *n, int N,
			   int cnt, global long *out)
{
	const int k = get_global_id(0);
	if (k < cnt)
		out[k] = WB_SLICE(a[k], N, n[k]);
}
