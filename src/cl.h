/*
 * cl.h - the OpenCL back end of the two solvers (cl.c, kernels in src/cl/).
 *
 * Only in OPENCL=1 builds (-DWB_OPENCL): everything here is declared, and
 * cl.c compiled, under #ifdef WB_OPENCL. The kernels are embedded in the
 * binary at build time (scripts/embed.sh -> wb_cl_sources[]), so nothing is
 * looked up at run time except the ICD loader (libOpenCL.so.1) and a
 * platform's driver.
 *
 * Devices are numbered in the order of clGetPlatformIDs, then of
 * clGetDeviceIDs(CL_DEVICE_TYPE_ALL) inside each platform; that index is
 * wb_solve_opts.cl_device and wbake's --cl-device. docs/opencl.md describes
 * the kernels, the memory layout, the tolerances against the CPU and the
 * measured speed.
 *
 * The solvers keep the CPU solvers' semantics cell by cell: the host sets
 * up the CPU context (lbm_init / swe_init) and the device runs the same
 * per-cell updates, with the same boundary handling, clamps and
 * bookkeeping. Results are deterministic run to run (no floating-point
 * atomics; reductions per work-group or per row, summed on the host in a
 * fixed order).
 *
 * Errors: no platform, no device or a bad index is WB_EUSAGE (exit 1) with
 * the devices available named in d; a kernel that does not build is WB_ESIM
 * with the compiler's log; out of device memory is WB_EIO.
 */
#ifndef WB_CL_H
#define WB_CL_H

#ifdef WB_OPENCL

#include "wbake.h"

/* A malloc'd text (caller frees) with one line per device:
 * "<index>: <name> [<platform>] <type>, <global memory> MiB, <units> compute
 * units". WB_EUSAGE when no OpenCL platform is installed. */
enum wb_status wb_cl_list_devices(char **text, struct wb_diags *d);

/* The solvers of solve.h on the OpenCL device o->cl_device (o may be NULL:
 * device 0). Same contract as lbm_solve / swe_solve. */
enum wb_status cl_lbm_solve(const struct wb_raster *r, const struct wb_sim *sim,
			    const struct wb_solve_opts *o, struct wb_state *out,
			    struct wb_solve_report *rep, struct wb_diags *d);
enum wb_status cl_swe_solve(const struct wb_raster *r, const struct wb_sim *sim,
			    const struct wb_solve_opts *o, struct wb_state *out,
			    struct wb_solve_report *rep, struct wb_diags *d);

/* ---- lower level, for the tests and the benchmark ----------------------- */

/* An open device: context, in-order queue and the built program. */
struct cl_env;

/* Index of the first GPU device, else 0; -1 when there is no device. */
int cl_default_device(void);
/* How many OpenCL devices there are (0 when none or on error). */
int cl_device_count(void);
/* Open device 'index' and build the embedded kernels. *out is freed with
 * cl_env_free. */
enum wb_status cl_env_open(int index, struct cl_env **out, struct wb_diags *d);
/* The same with extra compiler options (tuning, e.g. -cl-nv-verbose);
 * cl_env_build_log() returns the compiler's log (owned by e, may be ""). */
enum wb_status cl_env_open_opts(int index, const char *opts,
				struct cl_env **out, struct wb_diags *d);
const char *cl_env_build_log(const struct cl_env *e);
void cl_env_free(struct cl_env *e);
/* "<name> [<platform>]" of the open device (owned by e). */
const char *cl_env_name(const struct cl_env *e);
/* 1 when the device is a GPU. */
int cl_env_is_gpu(const struct cl_env *e);
/* Work-group width of the per-cell kernels (0: the default, 128 on GPUs,
 * 64 otherwise); for tuning with bench_opencl --lx. */
void cl_env_set_lx(struct cl_env *e, size_t lx);
/* With WB_CL_PROFILE=1 in the environment when e was opened, the queue
 * times every kernel launch; this adds a note to d with each kernel's
 * launches and device time since the last call (the largest first) and
 * the device's idle time in that span, and returns the kernels' seconds.
 * Nothing without it (returns 0). */
double cl_env_profile(struct cl_env *e, const char *what, struct wb_diags *d);
/* Device-to-device copy bandwidth (GB/s, read + written bytes / time) of a
 * plain float4 copy kernel over two buffers of 'bytes' each, best of
 * 'reps' runs. */
enum wb_status cl_copy_bandwidth(struct cl_env *e, size_t bytes, int reps,
				 double *gbs, struct wb_diags *d);

/* LBM-SWE on the device, step by step. */
/* out[k] = WB_SLICE(a[k], N, n[k]) computed by a kernel (src/cl/common.cl:
 * the 64-bit offset of element n of slice a of N elements that every
 * kernel uses), for tests of the index arithmetic above 2^31. */
enum wb_status cl_slice_probe(struct cl_env *e, const int *a, const int *n,
			      int N, int cnt, int64_t *out,
			      struct wb_diags *d);

struct cl_lbm;
/* Set up (lbm_init on the host, then upload). threads: host threads for
 * the set-up. half: store the distributions as 16-bit floats (bench only:
 * see docs/opencl.md for the accuracy it costs). */
enum wb_status cl_lbm_create(struct cl_env *e, const struct wb_raster *r,
			     const struct wb_sim *sim, int threads, int half,
			     struct cl_lbm **out, struct wb_diags *d);
/* Enqueue n steps (returns without waiting). */
enum wb_status cl_lbm_enqueue(struct cl_lbm *c, long n, struct wb_diags *d);
/* Wait for the queue; WB_ESIM when a step diverged. */
enum wb_status cl_lbm_sync(struct cl_lbm *c, struct wb_diags *d);
/* Depth and velocity (m, m/s) at cell centres into caller arrays of
 * nx*ny (lbm_macro's semantics). */
enum wb_status cl_lbm_macro(struct cl_lbm *c, float *h, float *u, float *v,
			    struct wb_diags *d);
/* Bytes read and written from device memory per cell update. */
int cl_lbm_bytes_per_cell(const struct cl_lbm *c);
/* Interior cell-steps the step kernel computed so far (the block-sparse
 * step: the cells of the listed 32 x 32 blocks; dense: every cell), and
 * whether the sparse step is on. */
long long cl_lbm_cells(const struct cl_lbm *c, int *sparse);
void cl_lbm_free(struct cl_lbm *c);

/* SWE on the device, step by step (foam included; particles on the host). */
struct cl_swe;
enum wb_status cl_swe_create(struct cl_env *e, const struct wb_raster *r,
			     const struct wb_sim *sim, int threads,
			     struct cl_swe **out, struct wb_diags *d);
/* Run n steps (SWE's adaptive time step needs the maximum speed and depth
 * of each step, so this waits at the end). */
enum wb_status cl_swe_run(struct cl_swe *c, long n, struct wb_diags *d);
int cl_swe_bytes_per_cell(const struct cl_swe *c);
/* Block-sparse stepping (docs/opencl.md): on by default, as the CPU
 * solver (WB_SWE_DENSE=1 in the environment at cl_swe_create selects the
 * dense step); cl_swe_set_sparse(c, 0 or 1) switches at any step (the
 * bytes do not change).
 * Returns whether the sparse step is in use (1) or not (0: off, or the
 * device cannot run work-groups of 128). */
int cl_swe_set_sparse(struct cl_swe *c, int on);
/* Seconds of cl_swe_create: the host context (swe_init), and the device
 * buffers, uploads and block lists. */
void cl_swe_setup_seconds(const struct cl_swe *c, double *init,
			  double *upload);
/* Blocks of the grid (32 x 32 cells) and the sum over the steps so far of
 * the active blocks stepped (the grid's block count per step when dense). */
void cl_swe_blocks(const struct cl_swe *c, long *nblk, long long *act_steps);
/* The padded fields now (stride nx + 2, one ghost ring, as swe.h's
 * context) into caller arrays of (nx + 2) (ny + 2) floats; foam may be
 * NULL (and is left alone when foam is off); t and dt may be NULL. */
enum wb_status cl_swe_fields(struct cl_swe *c, float *h, float *u, float *v,
			     float *foam, double *t, double *dt,
			     struct wb_diags *d);
/* Bytes moved between host and device for the waterfall particles so far;
 * particles in flight now. */
long long cl_swe_bytes_moved(const struct cl_swe *c);
long cl_swe_particles(const struct cl_swe *c);
void cl_swe_free(struct cl_swe *c);

#endif /* WB_OPENCL */
#endif /* WB_CL_H */
