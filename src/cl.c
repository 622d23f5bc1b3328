/*
 * cl.c - the OpenCL back end: device listing, context and program set-up,
 * and the LBM-SWE and SWE solvers on a device (API and error contract in
 * cl.h; kernels in the src/cl/ kernel files, embedded by scripts/embed.sh; design,
 * tolerances and measurements in docs/opencl.md).
 *
 * Compiled only with -DWB_OPENCL (make OPENCL=1); otherwise this is an
 * empty translation unit.
 *
 * How a solver runs here: the host builds the CPU solver's context
 * (lbm_init / swe_init: parameters, initial state, ghost-cell kinds, the
 * lists of special cells), uploads its arrays in the same padded layout
 * (stride W = nx + 2, one-cell ghost ring, structure of arrays) and then
 * enqueues, per step, the kernels that replace the CPU's per-row loops. The
 * host never touches the fields between steps: boundary filling, edge
 * fluxes and special cells run on the device too, from index lists built
 * once. Bookkeeping (mass in/out, clamp counts) is accumulated per list
 * item or per work-group in device memory, each slot written by one work
 * item or one work-group only, and summed on the host in a fixed order:
 * results are deterministic run to run, with no floating-point atomics.
 */
#ifdef WB_OPENCL

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <CL/cl.h>
#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define WB_HAVE_CSR 1
#endif

#include "cl.h"
#include "lbm.h"
#include "solve.h"
#include "swe.h"

/* generated from the src/cl/ kernel files by scripts/embed.sh */
extern const char *const wb_cl_sources[];
extern const char *const wb_cl_names[];

#define MAXD(a, b) ((a) > (b) ? (a) : (b))

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *cl_errname(cl_int e)
{
	switch (e) {
	case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
	case CL_DEVICE_NOT_AVAILABLE: return "CL_DEVICE_NOT_AVAILABLE";
	case CL_COMPILER_NOT_AVAILABLE: return "CL_COMPILER_NOT_AVAILABLE";
	case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
	case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
	case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
	case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
	case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
	case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
	case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
	case CL_INVALID_ARG_SIZE: return "CL_INVALID_ARG_SIZE";
	case CL_INVALID_ARG_VALUE: return "CL_INVALID_ARG_VALUE";
	case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
	case CL_INVALID_KERNEL_NAME: return "CL_INVALID_KERNEL_NAME";
	case -1001: return "CL_PLATFORM_NOT_FOUND_KHR (no OpenCL platform installed)";
	default: return "OpenCL error";
	}
}

/* Map an OpenCL error to a status: allocation failures are WB_EIO. */
static enum wb_status cl_fail(struct wb_diags *d, cl_int err, const char *what)
{
	enum wb_status st = WB_ESIM;
	if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_HOST_MEMORY ||
	    err == CL_INVALID_BUFFER_SIZE || err == CL_OUT_OF_RESOURCES)
		st = WB_EIO;
	return wb_fail(d, st, NULL, "opencl: %s failed: %s (%d)", what,
		       cl_errname(err), (int)err);
}

/* ---- floating-point state ------------------------------------------------ */

/* Some OpenCL drivers are built with -ffast-math, whose start-up code sets
 * flush-to-zero and denormals-are-zero in the loading thread's MXCSR when
 * the ICD loader opens them. The CPU solvers (and our host-side set-up)
 * would then round differently in the same process, so every entry that
 * can load or initialise a driver restores the caller's state. */
#ifdef WB_HAVE_CSR
#define FP_SAVE() const unsigned int fp_csr_saved = _mm_getcsr()
#define FP_RESTORE() _mm_setcsr(fp_csr_saved)
#else
#define FP_SAVE() (void)0
#define FP_RESTORE() (void)0
#endif

/* ---- devices ------------------------------------------------------------ */

struct cl_dev {
	cl_platform_id plat;
	cl_device_id dev;
};

/* Every device of every platform, in the documented order. Returns the
 * count (>= 0) or a negative OpenCL error; *out malloc'd. */
static int cl_devices_raw(struct cl_dev **out)
{
	cl_uint np = 0;
	*out = NULL;
	cl_int err = clGetPlatformIDs(0, NULL, &np);
	if (err == -1001 || (err == CL_SUCCESS && np == 0))
		return 0;
	if (err != CL_SUCCESS)
		return err < 0 ? err : -1;
	cl_platform_id *ps = malloc(np * sizeof(*ps));
	if (!ps)
		return CL_OUT_OF_HOST_MEMORY;
	clGetPlatformIDs(np, ps, NULL);
	int n = 0, cap = 0;
	struct cl_dev *v = NULL;
	for (cl_uint p = 0; p < np; p++) {
		cl_uint nd = 0;
		if (clGetDeviceIDs(ps[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS ||
		    nd == 0)
			continue;
		cl_device_id *ds = malloc(nd * sizeof(*ds));
		if (!ds)
			break;
		clGetDeviceIDs(ps[p], CL_DEVICE_TYPE_ALL, nd, ds, NULL);
		for (cl_uint k = 0; k < nd; k++) {
			if (n == cap) {
				cap = cap ? 2 * cap : 8;
				struct cl_dev *nv = realloc(v, (size_t)cap * sizeof(*v));
				if (!nv)
					break;
				v = nv;
			}
			if (n < cap) {
				v[n].plat = ps[p];
				v[n].dev = ds[k];
				n++;
			}
		}
		free(ds);
	}
	free(ps);
	*out = v;
	return n;
}

static int cl_devices(struct cl_dev **out)
{
	FP_SAVE();
	int n = cl_devices_raw(out);
	FP_RESTORE();
	return n;
}

static void dev_str(cl_device_id dv, cl_device_info what, char *buf, size_t size)
{
	buf[0] = 0;
	if (clGetDeviceInfo(dv, what, size, buf, NULL) != CL_SUCCESS)
		snprintf(buf, size, "?");
	buf[size - 1] = 0;
}

static void plat_name(cl_platform_id p, char *buf, size_t size)
{
	buf[0] = 0;
	if (clGetPlatformInfo(p, CL_PLATFORM_NAME, size, buf, NULL) != CL_SUCCESS)
		snprintf(buf, size, "?");
	buf[size - 1] = 0;
}

static const char *type_name(cl_device_type t)
{
	if (t & CL_DEVICE_TYPE_GPU)
		return "GPU";
	if (t & CL_DEVICE_TYPE_ACCELERATOR)
		return "accelerator";
	if (t & CL_DEVICE_TYPE_CPU)
		return "CPU";
	return "other";
}

enum wb_status wb_cl_list_devices(char **text, struct wb_diags *d)
{
	*text = NULL;
	struct cl_dev *v;
	int n = cl_devices(&v);
	if (n < 0)
		return cl_fail(d, n, "listing OpenCL platforms");
	if (n == 0) {
		free(v);
		return wb_fail(d, WB_EUSAGE, NULL,
			       "opencl: no OpenCL platform or device found (install a driver, e.g. Debian's pocl-opencl-icd for CPUs)");
	}
	size_t cap = 512 * (size_t)n, len = 0;
	char *s = malloc(cap);
	if (!s) {
		free(v);
		return wb_fail(d, WB_EIO, NULL, "opencl: out of memory");
	}
	s[0] = 0;
	for (int k = 0; k < n; k++) {
		char name[256], pname[256];
		cl_device_type t = 0;
		cl_ulong mem = 0;
		cl_uint cu = 0;
		dev_str(v[k].dev, CL_DEVICE_NAME, name, sizeof(name));
		plat_name(v[k].plat, pname, sizeof(pname));
		clGetDeviceInfo(v[k].dev, CL_DEVICE_TYPE, sizeof(t), &t, NULL);
		clGetDeviceInfo(v[k].dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(mem), &mem, NULL);
		clGetDeviceInfo(v[k].dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(cu), &cu, NULL);
		int w = snprintf(s + len, cap - len,
				 "%d: %s [%s] %s, %llu MiB global memory, %u compute units\n",
				 k, name, pname, type_name(t),
				 (unsigned long long)(mem >> 20), (unsigned)cu);
		if (w > 0)
			len += (size_t)w < cap - len ? (size_t)w : cap - len - 1;
	}
	free(v);
	*text = s;
	return WB_OK;
}

int cl_default_device(void)
{
	struct cl_dev *v;
	int n = cl_devices(&v);
	int pick = n > 0 ? 0 : -1;
	for (int k = 0; k < n; k++) {
		cl_device_type t = 0;
		clGetDeviceInfo(v[k].dev, CL_DEVICE_TYPE, sizeof(t), &t, NULL);
		if (t & CL_DEVICE_TYPE_GPU) {
			pick = k;
			break;
		}
	}
	free(v);
	return pick;
}

/* ---- environment: context, queue, program ------------------------------- */

struct cl_env {
	cl_platform_id plat;
	cl_device_id dev;
	cl_context ctx;
	cl_command_queue q;
	cl_program prog;
	int fp64, gpu;
	size_t realsz;     /* sizeof(real) in the kernels */
	cl_ulong max_alloc;
	char name[512];
};

const char *cl_env_name(const struct cl_env *e)
{
	return e->name;
}

int cl_env_is_gpu(const struct cl_env *e)
{
	return e->gpu;
}

void cl_env_free(struct cl_env *e)
{
	if (!e)
		return;
	if (e->prog)
		clReleaseProgram(e->prog);
	if (e->q)
		clReleaseCommandQueue(e->q);
	if (e->ctx)
		clReleaseContext(e->ctx);
	free(e);
}

static enum wb_status build_program(struct cl_env *e, struct wb_diags *d)
{
	cl_uint ns = 0;
	while (wb_cl_sources[ns])
		ns++;
	cl_int err;
	e->prog = clCreateProgramWithSource(e->ctx, ns, (const char **)wb_cl_sources,
					    NULL, &err);
	if (!e->prog)
		return cl_fail(d, err, "clCreateProgramWithSource");
	cl_device_fp_config fc = 0;
	clGetDeviceInfo(e->dev, CL_DEVICE_SINGLE_FP_CONFIG, sizeof(fc), &fc, NULL);
	char opts[256];
	snprintf(opts, sizeof(opts), "-cl-std=CL1.2 -DWB_FP64=%d%s", e->fp64,
		 (fc & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) ?
			 " -cl-fp32-correctly-rounded-divide-sqrt" : "");
	err = clBuildProgram(e->prog, 1, &e->dev, opts, NULL, NULL);
	if (err != CL_SUCCESS) {
		size_t len = 0;
		clGetProgramBuildInfo(e->prog, e->dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &len);
		char *log = malloc(len + 1);
		if (log) {
			log[0] = 0;
			clGetProgramBuildInfo(e->prog, e->dev, CL_PROGRAM_BUILD_LOG, len,
					      log, NULL);
			log[len] = 0;
		}
		char files[256] = "";
		for (int k = 0; wb_cl_names[k]; k++) {
			size_t l = strlen(files);
			snprintf(files + l, sizeof(files) - l, "%s%s", k ? " " : "",
				 wb_cl_names[k]);
		}
		wb_fail(d, WB_ESIM, NULL,
			"opencl: the kernels (%s) do not build on %s: %s (%d); compiler log:\n%.6000s",
			files, e->name, cl_errname(err), (int)err, log ? log : "(none)");
		free(log);
		return WB_ESIM;
	}
	return WB_OK;
}

static enum wb_status cl_env_open_raw(int index, struct cl_env **out,
				      struct wb_diags *d)
{
	*out = NULL;
	struct cl_dev *v;
	int n = cl_devices(&v);
	if (n < 0)
		return cl_fail(d, n, "listing OpenCL platforms");
	if (n == 0) {
		free(v);
		return wb_fail(d, WB_EUSAGE, NULL,
			       "opencl: no OpenCL device found (install a driver, e.g. Debian's pocl-opencl-icd); run on the CPU with --device cpu");
	}
	if (index < 0 || index >= n) {
		free(v);
		return wb_fail(d, WB_EUSAGE, NULL,
			       "opencl: no device %d: there %s %d (0..%d; see wbake --list-devices)",
			       index, n == 1 ? "is" : "are", n, n - 1);
	}
	struct cl_env *e = calloc(1, sizeof(*e));
	if (!e) {
		free(v);
		return wb_fail(d, WB_EIO, NULL, "opencl: out of memory");
	}
	e->plat = v[index].plat;
	e->dev = v[index].dev;
	free(v);
	char dn[256], pn[256], ext[4096];
	dev_str(e->dev, CL_DEVICE_NAME, dn, sizeof(dn));
	plat_name(e->plat, pn, sizeof(pn));
	snprintf(e->name, sizeof(e->name), "%s [%s]", dn, pn);
	dev_str(e->dev, CL_DEVICE_EXTENSIONS, ext, sizeof(ext));
	e->fp64 = strstr(ext, "cl_khr_fp64") != NULL;
	e->realsz = e->fp64 ? sizeof(double) : sizeof(float);
	cl_device_type t = 0;
	clGetDeviceInfo(e->dev, CL_DEVICE_TYPE, sizeof(t), &t, NULL);
	e->gpu = (t & CL_DEVICE_TYPE_GPU) != 0;
	clGetDeviceInfo(e->dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(e->max_alloc),
			&e->max_alloc, NULL);
	cl_int err;
	cl_context_properties props[] = { CL_CONTEXT_PLATFORM,
					  (cl_context_properties)e->plat, 0 };
	e->ctx = clCreateContext(props, 1, &e->dev, NULL, NULL, &err);
	if (!e->ctx) {
		cl_env_free(e);
		return cl_fail(d, err, "clCreateContext");
	}
	e->q = clCreateCommandQueue(e->ctx, e->dev, 0, &err);
	if (!e->q) {
		cl_env_free(e);
		return cl_fail(d, err, "clCreateCommandQueue");
	}
	enum wb_status st = build_program(e, d);
	if (st != WB_OK) {
		cl_env_free(e);
		return st;
	}
	*out = e;
	return WB_OK;
}

enum wb_status cl_env_open(int index, struct cl_env **out, struct wb_diags *d)
{
	FP_SAVE();
	enum wb_status st = cl_env_open_raw(index, out, d);
	FP_RESTORE();
	return st;
}

/* ---- small helpers -------------------------------------------------------- */

static cl_mem buf_new(struct cl_env *e, size_t bytes, cl_int *err)
{
	if (bytes == 0)
		bytes = 16;
	if (bytes > e->max_alloc) {
		*err = CL_INVALID_BUFFER_SIZE;
		return NULL;
	}
	return clCreateBuffer(e->ctx, CL_MEM_READ_WRITE, bytes, NULL, err);
}

static void buf_free(cl_mem *m)
{
	if (*m)
		clReleaseMemObject(*m);
	*m = NULL;
}

static cl_int buf_zero(struct cl_env *e, cl_mem m, size_t bytes)
{
	const cl_uint zero = 0;
	if (bytes == 0)
		return CL_SUCCESS;
	return clEnqueueFillBuffer(e->q, m, &zero, sizeof(zero), 0, bytes, 0, NULL,
				   NULL);
}

static cl_int buf_write(struct cl_env *e, cl_mem m, size_t off, size_t bytes,
			const void *src)
{
	if (bytes == 0)
		return CL_SUCCESS;
	return clEnqueueWriteBuffer(e->q, m, CL_TRUE, off, bytes, src, 0, NULL, NULL);
}

static cl_int buf_read(struct cl_env *e, cl_mem m, size_t off, size_t bytes,
		       void *dst)
{
	if (bytes == 0)
		return CL_SUCCESS;
	return clEnqueueReadBuffer(e->q, m, CL_TRUE, off, bytes, dst, 0, NULL, NULL);
}

/* Read n reals (double or float on the device) as doubles. */
static cl_int read_reals(struct cl_env *e, cl_mem m, size_t n, double *dst)
{
	if (n == 0)
		return CL_SUCCESS;
	if (e->fp64)
		return buf_read(e, m, 0, n * sizeof(double), dst);
	float *t = malloc(n * sizeof(float));
	if (!t)
		return CL_OUT_OF_HOST_MEMORY;
	cl_int err = buf_read(e, m, 0, n * sizeof(float), t);
	for (size_t k = 0; k < n; k++)
		dst[k] = t[k];
	free(t);
	return err;
}

/* Set kernel argument 'i' from a host value of the kernel's 'real' type. */
static cl_int set_real(struct cl_env *e, cl_kernel k, cl_uint i, double v)
{
	if (e->fp64)
		return clSetKernelArg(k, i, sizeof(double), &v);
	float f = (float)v;
	return clSetKernelArg(k, i, sizeof(float), &f);
}

#define ARG(k, i, v) clSetKernelArg((k), (i), sizeof(v), &(v))

static size_t round_up(size_t n, size_t m)
{
	return (n + m - 1) / m * m;
}

static cl_int run1d(struct cl_env *e, cl_kernel k, size_t n)
{
	if (n == 0)
		return CL_SUCCESS;
	size_t g = round_up(n, 64);
	return clEnqueueNDRangeKernel(e->q, k, 1, NULL, &g, NULL, 0, NULL, NULL);
}

/* Local size along x for 2D grid kernels. */
static size_t pick_lx(struct cl_env *e, cl_kernel k)
{
	size_t wg = 0;
	clGetKernelWorkGroupInfo(k, e->dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof(wg), &wg,
				 NULL);
	size_t lx = e->gpu ? 128 : 64;
	while (lx > 1 && lx > wg)
		lx /= 2;
	return lx;
}

enum wb_status cl_copy_bandwidth(struct cl_env *e, size_t bytes, int reps,
				 double *gbs, struct wb_diags *d)
{
	*gbs = 0;
	bytes = bytes / 16 * 16;
	cl_int err;
	cl_mem a = buf_new(e, bytes, &err), b = NULL;
	cl_kernel k = NULL;
	enum wb_status st = WB_OK;
	if (!a || !(b = buf_new(e, bytes, &err))) {
		st = cl_fail(d, err, "allocating the copy buffers");
		goto out;
	}
	if (!(k = clCreateKernel(e->prog, "wb_copy", &err))) {
		st = cl_fail(d, err, "clCreateKernel(wb_copy)");
		goto out;
	}
	buf_zero(e, a, bytes);
	ARG(k, 0, a);
	ARG(k, 1, b);
	size_t n = bytes / 16, best = 0;
	double tbest = INFINITY;
	for (int r = 0; r <= reps; r++) {
		clFinish(e->q);
		double t0 = now_s();
		err = clEnqueueNDRangeKernel(e->q, k, 1, NULL, &n, NULL, 0, NULL, NULL);
		if (err != CL_SUCCESS) {
			st = cl_fail(d, err, "running the copy kernel");
			goto out;
		}
		clFinish(e->q);
		double t = now_s() - t0;
		if (r > 0 && t < tbest) /* run 0 warms up */
			tbest = t, best = 1;
	}
	if (best)
		*gbs = 2.0 * (double)bytes / tbest * 1e-9;
out:
	if (k)
		clReleaseKernel(k);
	buf_free(&a);
	buf_free(&b);
	return st;
}

/* ---- LBM-SWE ------------------------------------------------------------ */

/* Kernel parameters of lbm_step; layout must match struct lbm_kp in
 * src/cl/lbm.cl (thirteen floats). */
struct lbm_kp {
	cl_float hd, hthin, om, om1, ghk, Gax, Gdg, umax2, fr2, kf, hlim, unit, inv;
};

struct cl_lbm {
	struct cl_env *env;
	struct lbm L;        /* host context: parameters, lists, bookkeeping */
	int N;               /* padded cells */
	cl_mem f[2], h[2], z, c;
	cl_mem gi, gf, fg;   /* ghost lists, flux ghost list */
	int n1, n2, nf;
	cl_mem si, sf;       /* special cells */
	cl_mem acc_fin, acc_fout, acc_sin, acc_sout, acc_scl, clamp_acc, bad;
	cl_mem mh, mu[2], mv[2], rows, rnum, rden, rwet;
	size_t lx, ngroups;
	int mcur;            /* which of mu/mv holds the latest macro */
	cl_kernel k_ghost, k_flux, k_step, k_spec, k_macro, k_rowsum, k_resid;
	struct lbm_kp kp;
	int cur;
};

int cl_lbm_bytes_per_cell(const struct cl_lbm *c)
{
	(void)c;
	return LBM_BYTES_PER_CELL;
}

void cl_lbm_free(struct cl_lbm *c)
{
	if (!c)
		return;
	cl_mem *m[] = { &c->f[0], &c->f[1], &c->h[0], &c->h[1], &c->z, &c->c,
			&c->gi, &c->gf, &c->fg, &c->si, &c->sf, &c->acc_fin,
			&c->acc_fout, &c->acc_sin, &c->acc_sout, &c->acc_scl,
			&c->clamp_acc, &c->bad, &c->mh, &c->mu[0], &c->mu[1],
			&c->mv[0], &c->mv[1], &c->rows, &c->rnum, &c->rden,
			&c->rwet };
	for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++)
		buf_free(m[k]);
	cl_kernel ks[] = { c->k_ghost, c->k_flux, c->k_step, c->k_spec,
			   c->k_macro, c->k_rowsum, c->k_resid };
	for (size_t k = 0; k < sizeof(ks) / sizeof(ks[0]); k++)
		if (ks[k])
			clReleaseKernel(ks[k]);
	lbm_release(&c->L);
	free(c);
}

/* edge_cell of lbm.c */
static void lbm_edge_cell(const struct lbm *L, int s, int k, int *g, int *p,
			  int *nxn, int *nyn)
{
#define PX(i, j) (((i) + 1) + ((j) + 1) * L->W)
	switch (s) {
	case WB_WEST:
		*g = PX(-1, k), *p = PX(0, k), *nxn = 1, *nyn = 0;
		break;
	case WB_EAST:
		*g = PX(L->nx, k), *p = PX(L->nx - 1, k), *nxn = -1, *nyn = 0;
		break;
	case WB_NORTH:
		*g = PX(k, -1), *p = PX(k, 0), *nxn = 0, *nyn = 1;
		break;
	default:
		*g = PX(k, L->ny), *p = PX(k, L->ny - 1), *nxn = 0, *nyn = -1;
		break;
	}
#undef PX
}

static double lbm_ramp(const struct lbm *L)
{
	if (L->ramp_steps <= 0 || L->step >= L->ramp_steps)
		return 1.0;
	return (double)L->step / (double)L->ramp_steps;
}

/* Build the ghost, flux and special lists and upload them. */
static enum wb_status lbm_lists(struct cl_lbm *c, struct wb_diags *d)
{
	struct lbm *L = &c->L;
	struct cl_env *e = c->env;
	int cap = 2 * (L->nx + L->ny) + 4;
	cl_int4 *gi = calloc((size_t)2 * cap, sizeof(*gi));
	cl_float4 *gf = calloc((size_t)2 * cap, sizeof(*gf));
	cl_int *fg = calloc((size_t)cap, sizeof(*fg));
	cl_int2 *si = calloc((size_t)L->nsp + 1, sizeof(*si));
	cl_float *sf = calloc((size_t)6 * (L->nsp + 1), sizeof(*sf));
	enum wb_status st = WB_OK;
	cl_int err = CL_SUCCESS;
	if (!gi || !gf || !fg || !si || !sf) {
		st = wb_fail(d, WB_EIO, NULL, "opencl: out of memory");
		goto out;
	}
	int n1 = 0, nf = 0;
	for (int s = 0; s < 4; s++) {
		int len = (s == WB_WEST || s == WB_EAST) ? L->ny : L->nx;
		for (int k = 0; k < len; k++) {
			int g, p, nxn, nyn;
			lbm_edge_cell(L, s, k, &g, &p, &nxn, &nyn);
			int kind = L->gkind[g];
			if (kind == LBM_G_ZOU || kind == LBM_G_EXTRAP)
				fg[nf++] = g;
			if (kind == LBM_G_SOLID)
				continue;
			gi[n1].s[0] = g;
			gi[n1].s[1] = p;
			gi[n1].s[2] = L->gpart[g];
			gi[n1].s[3] = kind | (nxn != 0) << 8;
			gf[n1].s[0] = L->ginit[g];
			gf[n1].s[1] = L->gspec[g];
			gf[n1].s[2] = L->gq[g];
			gf[n1].s[3] = L->gvel[g];
			n1++;
		}
	}
	const int ci[4] = { -1, L->nx, -1, L->nx }, cj[4] = { -1, -1, L->ny, L->ny };
	for (int q = 0; q < 4; q++) {
		int g = (ci[q] + 1) + (cj[q] + 1) * L->W;
		if (L->gkind[g] != LBM_G_PERIODIC)
			continue;
		gi[n1].s[0] = g;
		gi[n1].s[1] = L->gpart[g];
		gi[n1].s[2] = L->gpart[g];
		gi[n1].s[3] = LBM_G_PERIODIC;
		n1++;
	}
	int n2 = 0;
	for (int s = 0; s < 4; s++) {
		int len = (s == WB_WEST || s == WB_EAST) ? L->ny : L->nx;
		for (int k = 0; k < len; k++) {
			int g, p, nxn, nyn;
			lbm_edge_cell(L, s, k, &g, &p, &nxn, &nyn);
			if (L->gkind[g] != LBM_G_ZOU)
				continue;
			int m = n1 + n2++;
			gi[m].s[0] = g;
			gi[m].s[1] = p;
			gi[m].s[2] = nxn + 1;
			gi[m].s[3] = nyn + 1;
			gf[m].s[0] = L->ginit[g];
			gf[m].s[1] = L->gspec[g];
			gf[m].s[2] = L->gq[g];
			gf[m].s[3] = L->gvel[g];
		}
	}
	for (int k = 0; k < L->nsp; k++) {
		const struct lbm_special *q = &L->sp[k];
		si[k].s[0] = q->n;
		si[k].s[1] = q->flags;
		sf[6 * k] = q->src;
		sf[6 * k + 1] = q->level;
		sf[6 * k + 2] = q->mu;
		sf[6 * k + 3] = q->mv;
		sf[6 * k + 4] = q->mk;
		sf[6 * k + 5] = L->z[q->n];
	}
	c->n1 = n1;
	c->n2 = n2;
	c->nf = nf;
	size_t rs = sizeof(cl_long); /* integer mass units */
	if (!(c->gi = buf_new(e, (size_t)(n1 + n2) * sizeof(*gi), &err)) ||
	    !(c->gf = buf_new(e, (size_t)(n1 + n2) * sizeof(*gf), &err)) ||
	    !(c->fg = buf_new(e, (size_t)nf * sizeof(*fg), &err)) ||
	    !(c->si = buf_new(e, (size_t)L->nsp * sizeof(*si), &err)) ||
	    !(c->sf = buf_new(e, (size_t)L->nsp * 6 * sizeof(*sf), &err)) ||
	    !(c->acc_fin = buf_new(e, (size_t)nf * rs, &err)) ||
	    !(c->acc_fout = buf_new(e, (size_t)nf * rs, &err)) ||
	    !(c->acc_sin = buf_new(e, (size_t)L->nsp * rs, &err)) ||
	    !(c->acc_sout = buf_new(e, (size_t)L->nsp * rs, &err)) ||
	    !(c->acc_scl = buf_new(e, (size_t)L->nsp * sizeof(cl_ulong), &err))) {
		st = cl_fail(d, err, "allocating the boundary lists");
		goto out;
	}
	err = buf_write(e, c->gi, 0, (size_t)(n1 + n2) * sizeof(*gi), gi);
	err |= buf_write(e, c->gf, 0, (size_t)(n1 + n2) * sizeof(*gf), gf);
	err |= buf_write(e, c->fg, 0, (size_t)nf * sizeof(*fg), fg);
	err |= buf_write(e, c->si, 0, (size_t)L->nsp * sizeof(*si), si);
	err |= buf_write(e, c->sf, 0, (size_t)L->nsp * 6 * sizeof(*sf), sf);
	err |= buf_zero(e, c->acc_fin, (size_t)nf * rs);
	err |= buf_zero(e, c->acc_fout, (size_t)nf * rs);
	err |= buf_zero(e, c->acc_sin, (size_t)L->nsp * rs);
	err |= buf_zero(e, c->acc_sout, (size_t)L->nsp * rs);
	err |= buf_zero(e, c->acc_scl, (size_t)L->nsp * sizeof(cl_ulong));
	if (err != CL_SUCCESS)
		st = cl_fail(d, err, "uploading the boundary lists");
out:
	free(gi);
	free(gf);
	free(fg);
	free(si);
	free(sf);
	return st;
}

enum wb_status cl_lbm_create(struct cl_env *e, const struct wb_raster *r,
			     const struct wb_sim *sim, int threads, int half,
			     struct cl_lbm **out, struct wb_diags *d)
{
	*out = NULL;
	if (half)
		return wb_fail(d, WB_EUSAGE, NULL,
			       "opencl: 16-bit distributions are not implemented (docs/opencl.md)");
	if ((double)(r->nx + 2) * (r->ny + 2) * LBM_Q >= (double)INT_MAX)
		return wb_fail(d, WB_EINPUT, NULL,
			       "opencl: a %dx%d grid is too large for 32-bit indices (at most about 15000x15000 cells)",
			       r->nx, r->ny);
	struct cl_lbm *c = calloc(1, sizeof(*c));
	if (!c)
		return wb_fail(d, WB_EIO, NULL, "opencl: out of memory");
	c->env = e;
	enum wb_status st = lbm_init(&c->L, r, sim, threads, d);
	if (st != WB_OK) {
		free(c);
		return st;
	}
	struct lbm *L = &c->L;
	c->N = (int)L->ncell;
	c->cur = 0;
	const size_t N = L->ncell, fb = N * sizeof(float);
	cl_int err = CL_SUCCESS;
	const char *kn[] = { "lbm_ghost", "lbm_flux", "lbm_step", "lbm_special",
			     "lbm_macro", "lbm_rowsum", "wb_resid_rows" };
	cl_kernel *kp[] = { &c->k_ghost, &c->k_flux, &c->k_step, &c->k_spec,
			    &c->k_macro, &c->k_rowsum, &c->k_resid };
	for (int k = 0; k < 7; k++)
		if (!(*kp[k] = clCreateKernel(e->prog, kn[k], &err))) {
			st = cl_fail(d, err, kn[k]);
			goto fail;
		}
	c->lx = pick_lx(e, c->k_step);
	c->ngroups = round_up((size_t)L->nx, c->lx) / c->lx * (size_t)L->ny;
	const size_t nn = (size_t)L->nx * L->ny;
	if (!(c->f[0] = buf_new(e, LBM_Q * fb, &err)) ||
	    !(c->f[1] = buf_new(e, LBM_Q * fb, &err)) ||
	    !(c->h[0] = buf_new(e, fb, &err)) || !(c->h[1] = buf_new(e, fb, &err)) ||
	    !(c->z = buf_new(e, fb, &err)) || !(c->c = buf_new(e, fb, &err)) ||
	    !(c->clamp_acc = buf_new(e, c->ngroups * sizeof(cl_ulong), &err)) ||
	    !(c->bad = buf_new(e, sizeof(cl_int), &err)) ||
	    !(c->mh = buf_new(e, nn * sizeof(float), &err)) ||
	    !(c->mu[0] = buf_new(e, nn * sizeof(float), &err)) ||
	    !(c->mu[1] = buf_new(e, nn * sizeof(float), &err)) ||
	    !(c->mv[0] = buf_new(e, nn * sizeof(float), &err)) ||
	    !(c->mv[1] = buf_new(e, nn * sizeof(float), &err)) ||
	    !(c->rows = buf_new(e, (size_t)L->ny * sizeof(cl_long), &err)) ||
	    !(c->rnum = buf_new(e, (size_t)L->ny * e->realsz, &err)) ||
	    !(c->rden = buf_new(e, (size_t)L->ny * e->realsz, &err)) ||
	    !(c->rwet = buf_new(e, (size_t)L->ny * sizeof(cl_int), &err))) {
		st = cl_fail(d, err, "allocating device memory for the LBM fields");
		goto fail;
	}
	for (int a = 0; a < LBM_Q && err == CL_SUCCESS; a++)
		err = buf_write(e, c->f[0], a * fb, fb, L->f[L->cur][a]);
	if (err == CL_SUCCESS)
		err = buf_zero(e, c->f[1], LBM_Q * fb);
	if (err == CL_SUCCESS)
		err = buf_write(e, c->h[0], 0, fb, L->h[L->cur]);
	if (err == CL_SUCCESS)
		err = buf_write(e, c->h[1], 0, fb, L->h[!L->cur]);
	if (err == CL_SUCCESS)
		err = buf_write(e, c->z, 0, fb, L->z);
	if (err == CL_SUCCESS)
		err = buf_write(e, c->c, 0, fb, L->c);
	if (err == CL_SUCCESS)
		err = buf_zero(e, c->clamp_acc, c->ngroups * sizeof(cl_ulong));
	cl_int big = INT_MAX;
	if (err == CL_SUCCESS)
		err = buf_write(e, c->bad, 0, sizeof(big), &big);
	if (err != CL_SUCCESS) {
		st = cl_fail(d, err, "uploading the LBM fields");
		goto fail;
	}
	st = lbm_lists(c, d);
	if (st != WB_OK)
		goto fail;
	/* the host copies of the distributions are no longer needed */
	for (int b = 0; b < 2; b++)
		for (int a = 0; a < LBM_Q; a++) {
			free(L->f[b][a]);
			L->f[b][a] = NULL;
		}
	/* parameters exactly as lbm_kernel_row computes them */
	const struct lbm_params *p = &L->p;
	struct lbm_kp *k = &c->kp;
	k->hd = (float)p->h_dry;
	k->hthin = (float)(LBM_THIN * p->h_dry);
	k->om = (float)p->omega;
	k->om1 = 1.0f - k->om;
	k->ghk = (float)(p->g / (p->e * p->e));
	k->Gax = (float)(p->g / (6 * p->e * p->e));
	k->Gdg = 0.25f * k->Gax;
	k->umax2 = (float)(LBM_U_MAX * LBM_U_MAX);
	k->fr2 = (float)(p->fr_max * p->fr_max);
	k->kf = (float)(p->g * p->manning * p->manning * p->dx);
	k->hlim = (float)(32 * p->h_deep);
	k->unit = (float)L->unit;
	k->inv = (float)(1.0 / L->unit);
	*out = c;
	return WB_OK;
fail:
	cl_lbm_free(c);
	return st;
}

/* Ghost ring (both passes) on f[cur], h[cur] at the current ramp. */
static cl_int lbm_enq_ghosts(struct cl_lbm *c)
{
	struct cl_env *e = c->env;
	if (c->n1 + c->n2 == 0)
		return CL_SUCCESS;
	cl_kernel k = c->k_ghost;
	const struct lbm *L = &c->L;
	cl_int W = L->W, H = L->H;
	cl_float hd = c->kp.hd, ev = (cl_float)L->p.e;
	cl_int err = ARG(k, 0, c->f[c->cur]);
	err |= ARG(k, 1, c->h[c->cur]);
	err |= ARG(k, 2, c->z);
	err |= ARG(k, 3, c->c);
	err |= ARG(k, 4, c->gi);
	err |= ARG(k, 5, c->gf);
	err |= ARG(k, 6, c->n1);
	err |= ARG(k, 7, c->n2);
	err |= ARG(k, 8, c->N);
	err |= ARG(k, 9, W);
	err |= ARG(k, 10, H);
	err |= ARG(k, 11, hd);
	err |= ARG(k, 12, ev);
	err |= ARG(k, 13, c->kp.unit);
	err |= ARG(k, 14, c->kp.inv);
	err |= set_real(e, k, 15, lbm_ramp(L));
	if (err != CL_SUCCESS)
		return err;
	return run1d(e, k, (size_t)(c->n1 + c->n2));
}

static cl_int lbm_enq_step(struct cl_lbm *c)
{
	struct cl_env *e = c->env;
	struct lbm *L = &c->L;
	cl_int err = lbm_enq_ghosts(c);
	if (err != CL_SUCCESS)
		return err;
	cl_int W = L->W, H = L->H, nx = L->nx, ny = L->ny;
	cl_float hd = c->kp.hd;
	if (c->nf) {
		cl_kernel k = c->k_flux;
		err |= ARG(k, 0, c->f[c->cur]);
		err |= ARG(k, 1, c->h[c->cur]);
		err |= ARG(k, 2, c->z);
		err |= ARG(k, 3, c->c);
		err |= ARG(k, 4, c->fg);
		err |= ARG(k, 5, c->nf);
		err |= ARG(k, 6, c->N);
		err |= ARG(k, 7, W);
		err |= ARG(k, 8, H);
		err |= ARG(k, 9, hd);
		err |= ARG(k, 10, c->kp.Gax);
		err |= ARG(k, 11, c->kp.inv);
		err |= ARG(k, 12, c->acc_fin);
		err |= ARG(k, 13, c->acc_fout);
		if (err == CL_SUCCESS)
			err = run1d(e, k, (size_t)c->nf);
		if (err != CL_SUCCESS)
			return err;
	}
	cl_kernel k = c->k_step;
	cl_int step = (cl_int)(L->step < INT_MAX ? L->step : INT_MAX - 1);
	err |= ARG(k, 0, c->f[c->cur]);
	err |= ARG(k, 1, c->f[!c->cur]);
	err |= ARG(k, 2, c->h[c->cur]);
	err |= ARG(k, 3, c->h[!c->cur]);
	err |= ARG(k, 4, c->z);
	err |= ARG(k, 5, c->c);
	err |= ARG(k, 6, c->N);
	err |= ARG(k, 7, W);
	err |= ARG(k, 8, nx);
	err |= ARG(k, 9, ny);
	err |= ARG(k, 10, c->kp);
	err |= ARG(k, 11, c->clamp_acc);
	err |= ARG(k, 12, c->bad);
	err |= ARG(k, 13, step);
	if (err != CL_SUCCESS)
		return err;
	size_t gs[2] = { round_up((size_t)nx, c->lx), (size_t)ny }, ls[2] = { c->lx, 1 };
	err = clEnqueueNDRangeKernel(e->q, k, 2, NULL, gs, ls, 0, NULL, NULL);
	if (err != CL_SUCCESS)
		return err;
	if (L->nsp) {
		k = c->k_spec;
		cl_float ghk = c->kp.ghk;
		err |= ARG(k, 0, c->f[!c->cur]);
		err |= ARG(k, 1, c->si);
		err |= ARG(k, 2, c->sf);
		err |= ARG(k, 3, L->nsp);
		err |= ARG(k, 4, c->N);
		err |= set_real(e, k, 5, L->p.dt);
		err |= set_real(e, k, 6, L->p.e);
		err |= ARG(k, 7, ghk);
		err |= ARG(k, 8, hd);
		err |= ARG(k, 9, c->kp.unit);
		err |= ARG(k, 10, c->kp.inv);
		err |= ARG(k, 11, c->acc_sin);
		err |= ARG(k, 12, c->acc_sout);
		err |= ARG(k, 13, c->acc_scl);
		if (err == CL_SUCCESS)
			err = run1d(e, k, (size_t)L->nsp);
		if (err != CL_SUCCESS)
			return err;
	}
	c->cur = !c->cur;
	L->cur = c->cur;
	L->step++;
	return CL_SUCCESS;
}

enum wb_status cl_lbm_enqueue(struct cl_lbm *c, long n, struct wb_diags *d)
{
	for (long s = 0; s < n; s++) {
		cl_int err = lbm_enq_step(c);
		if (err != CL_SUCCESS)
			return cl_fail(d, err, "enqueueing an LBM step");
	}
	return WB_OK;
}

/* Macroscopic fields into the device buffers mh, mu[slot], mv[slot]. */
static cl_int lbm_enq_macro(struct cl_lbm *c, int slot)
{
	cl_int err = lbm_enq_ghosts(c);
	if (err != CL_SUCCESS)
		return err;
	const struct lbm *L = &c->L;
	cl_kernel k = c->k_macro;
	cl_int W = L->W, nx = L->nx, ny = L->ny;
	cl_float ev = (cl_float)L->p.e;
	err |= ARG(k, 0, c->f[c->cur]);
	err |= ARG(k, 1, c->h[c->cur]);
	err |= ARG(k, 2, c->z);
	err |= ARG(k, 3, c->c);
	err |= ARG(k, 4, c->N);
	err |= ARG(k, 5, W);
	err |= ARG(k, 6, nx);
	err |= ARG(k, 7, ny);
	err |= ARG(k, 8, c->kp.hd);
	err |= ARG(k, 9, c->kp.hthin);
	err |= ARG(k, 10, c->kp.unit);
	err |= ARG(k, 11, ev);
	err |= ARG(k, 12, c->kp.ghk);
	err |= ARG(k, 13, c->kp.umax2);
	err |= ARG(k, 14, c->kp.fr2);
	err |= ARG(k, 15, c->mh);
	err |= ARG(k, 16, c->mu[slot]);
	err |= ARG(k, 17, c->mv[slot]);
	if (err != CL_SUCCESS)
		return err;
	size_t gs[2] = { round_up((size_t)nx, 16), round_up((size_t)ny, 4) };
	size_t ls[2] = { 16, 4 };
	return clEnqueueNDRangeKernel(c->env->q, k, 2, NULL, gs, ls, 0, NULL, NULL);
}

/* Find a diverged cell for the message (after the fact: the step number is
 * the one the kernel flagged). */
static void lbm_report_bad(struct cl_lbm *c, int step, struct wb_diags *d)
{
	const struct lbm *L = &c->L;
	size_t nn = (size_t)L->nx * L->ny;
	float *h = malloc(nn * sizeof(float));
	double hlim = 32 * L->p.h_deep;
	if (h && lbm_enq_macro(c, c->mcur) == CL_SUCCESS &&
	    buf_read(c->env, c->mh, 0, nn * sizeof(float), h) == CL_SUCCESS) {
		for (size_t k = 0; k < nn; k++) {
			if (h[k] < hlim && h[k] > -hlim)
				continue;
			int i = (int)(k % (size_t)L->nx), j = (int)(k / (size_t)L->nx);
			wb_diag_add(d, WB_SEV_ERROR, NULL, NULL, 0, 0,
				    "lbm (opencl): diverged at step %d (t = %.3f s): cell (%d, %d) at x = %.2f m, y = %.2f m: depth not finite or above %g m (%g m after step %ld; e = %g m/s, tau = %g)",
				    step + 1, (step + 1) * L->p.dt, i, j,
				    L->origin[0] + (i + 0.5) * L->p.dx,
				    L->origin[1] + (j + 0.5) * L->p.dx, hlim, h[k],
				    L->step, L->p.e, L->p.tau);
			free(h);
			return;
		}
	}
	free(h);
	wb_diag_add(d, WB_SEV_ERROR, NULL, NULL, 0, 0,
		    "lbm (opencl): diverged at step %d", step + 1);
}

enum wb_status cl_lbm_sync(struct cl_lbm *c, struct wb_diags *d)
{
	cl_int bad = INT_MAX;
	cl_int err = buf_read(c->env, c->bad, 0, sizeof(bad), &bad);
	if (err != CL_SUCCESS)
		return cl_fail(d, err, "running the LBM kernels");
	if (bad != INT_MAX) {
		lbm_report_bad(c, bad, d);
		return WB_ESIM;
	}
	return WB_OK;
}

enum wb_status cl_lbm_macro(struct cl_lbm *c, float *h, float *u, float *v,
			    struct wb_diags *d)
{
	struct cl_env *e = c->env;
	size_t nb = (size_t)c->L.nx * c->L.ny * sizeof(float);
	cl_int err = lbm_enq_macro(c, c->mcur);
	if (err == CL_SUCCESS && h)
		err = buf_read(e, c->mh, 0, nb, h);
	if (err == CL_SUCCESS && u)
		err = buf_read(e, c->mu[c->mcur], 0, nb, u);
	if (err == CL_SUCCESS && v)
		err = buf_read(e, c->mv[c->mcur], 0, nb, v);
	if (err == CL_SUCCESS)
		err = clFinish(e->q);
	if (err != CL_SUCCESS)
		return cl_fail(d, err, "reading the LBM fields");
	return WB_OK;
}

/* Water volume (m^3) on the device: exact integer mass (rows summed on
 * the host), as lbm_volume. */
static cl_int lbm_volume_dev(struct cl_lbm *c, double *vol)
{
	const struct lbm *L = &c->L;
	cl_kernel k = c->k_rowsum;
	cl_int W = L->W, nx = L->nx, ny = L->ny;
	cl_int err = ARG(k, 0, c->f[c->cur]);
	err |= ARG(k, 1, c->N);
	err |= ARG(k, 2, W);
	err |= ARG(k, 3, nx);
	err |= ARG(k, 4, ny);
	err |= ARG(k, 5, c->rows);
	if (err == CL_SUCCESS)
		err = run1d(c->env, k, (size_t)ny);
	cl_long *rows = malloc((size_t)ny * sizeof(cl_long));
	if (!rows)
		return CL_OUT_OF_HOST_MEMORY;
	if (err == CL_SUCCESS)
		err = buf_read(c->env, c->rows, 0, (size_t)ny * sizeof(cl_long), rows);
	long long m = 0;
	for (int j = 0; err == CL_SUCCESS && j < ny; j++)
		m += rows[j];
	free(rows);
	*vol = (double)m * L->unit * L->p.dx * L->p.dx;
	return err;
}

/* rel_change of lbm.c between mu/mv[!mcur] (previous) and [mcur]. */
static cl_int lbm_resid_dev(struct cl_lbm *c, double *res)
{
	const struct lbm *L = &c->L;
	cl_kernel k = c->k_resid;
	cl_int nx = L->nx, ny = L->ny;
	int p = !c->mcur, q = c->mcur;
	cl_int err = ARG(k, 0, c->mh);
	err |= ARG(k, 1, c->mu[p]);
	err |= ARG(k, 2, c->mv[p]);
	err |= ARG(k, 3, c->mu[q]);
	err |= ARG(k, 4, c->mv[q]);
	err |= ARG(k, 5, nx);
	err |= ARG(k, 6, ny);
	err |= ARG(k, 7, c->kp.hd);
	err |= ARG(k, 8, c->rnum);
	err |= ARG(k, 9, c->rden);
	err |= ARG(k, 10, c->rwet);
	if (err == CL_SUCCESS)
		err = run1d(c->env, k, (size_t)ny);
	double *num = malloc((size_t)ny * sizeof(double));
	double *den = malloc((size_t)ny * sizeof(double));
	cl_int *wet = malloc((size_t)ny * sizeof(cl_int));
	if (!num || !den || !wet)
		err = CL_OUT_OF_HOST_MEMORY;
	if (err == CL_SUCCESS)
		err = read_reals(c->env, c->rnum, (size_t)ny, num);
	if (err == CL_SUCCESS)
		err = read_reals(c->env, c->rden, (size_t)ny, den);
	if (err == CL_SUCCESS)
		err = buf_read(c->env, c->rwet, 0, (size_t)ny * sizeof(cl_int), wet);
	if (err == CL_SUCCESS) {
		double sn = 0, sd = 0;
		long w = 0;
		for (int j = 0; j < ny; j++) {
			sn += num[j];
			sd += den[j];
			w += wet[j];
		}
		sd = MAXD(sd, 1e-6 * (double)(w > 0 ? w : 1));
		*res = sqrt(sn / sd);
	}
	free(num);
	free(den);
	free(wet);
	return err;
}

/* Sum the bookkeeping slots (integer mass units, exact). */
static cl_int lbm_books(struct cl_lbm *c, long long *in, long long *out,
			long *clamped)
{
	struct cl_env *e = c->env;
	const struct lbm *L = &c->L;
	size_t nf = (size_t)c->nf, ns = (size_t)L->nsp;
	size_t nmax = MAXD(MAXD(nf, ns), c->ngroups) + 1;
	cl_long *t = malloc(nmax * sizeof(cl_long));
	cl_ulong *u = malloc(nmax * sizeof(cl_ulong));
	if (!t || !u) {
		free(t);
		free(u);
		return CL_OUT_OF_HOST_MEMORY;
	}
	long long si = 0, so = 0;
	unsigned long long cl = 0;
	cl_int err = buf_read(e, c->acc_fin, 0, nf * sizeof(cl_long), t);
	for (size_t k = 0; err == CL_SUCCESS && k < nf; k++)
		si += t[k];
	if (err == CL_SUCCESS)
		err = buf_read(e, c->acc_fout, 0, nf * sizeof(cl_long), t);
	for (size_t k = 0; err == CL_SUCCESS && k < nf; k++)
		so += t[k];
	if (err == CL_SUCCESS)
		err = buf_read(e, c->acc_sin, 0, ns * sizeof(cl_long), t);
	for (size_t k = 0; err == CL_SUCCESS && k < ns; k++)
		si += t[k];
	if (err == CL_SUCCESS)
		err = buf_read(e, c->acc_sout, 0, ns * sizeof(cl_long), t);
	for (size_t k = 0; err == CL_SUCCESS && k < ns; k++)
		so += t[k];
	if (err == CL_SUCCESS)
		err = buf_read(e, c->acc_scl, 0, ns * sizeof(cl_ulong), u);
	for (size_t k = 0; err == CL_SUCCESS && k < ns; k++)
		cl += u[k];
	if (err == CL_SUCCESS)
		err = buf_read(e, c->clamp_acc, 0, c->ngroups * sizeof(cl_ulong), u);
	for (size_t k = 0; err == CL_SUCCESS && k < c->ngroups; k++)
		cl += u[k];
	free(t);
	free(u);
	*in = si;
	*out = so;
	*clamped = (long)cl;
	return err;
}

static enum wb_status solve_env(int dev, struct cl_env **e, struct wb_diags *d)
{
	enum wb_status st = cl_env_open(dev, e, d);
	if (st != WB_OK)
		wb_diag_add(d, WB_SEV_NOTE, NULL, NULL, 0, 0,
			    "opencl: --device opencl never falls back to the CPU; use --device cpu to run there");
	return st;
}

enum wb_status cl_lbm_solve(const struct wb_raster *r, const struct wb_sim *sim,
			    const struct wb_solve_opts *o, struct wb_state *out,
			    struct wb_solve_report *rep, struct wb_diags *d)
{
	double t0 = now_s();
	memset(out, 0, sizeof(*out));
	memset(rep, 0, sizeof(*rep));
	struct cl_env *e = NULL;
	struct cl_lbm *c = NULL;
	enum wb_status st = solve_env(o ? o->cl_device : 0, &e, d);
	if (st != WB_OK)
		return st;
	st = cl_lbm_create(e, r, sim, o ? o->threads : 0, 0, &c, d);
	if (st != WB_OK)
		goto done;
	struct lbm *L = &c->L;
	cl_int err;
	if ((err = lbm_volume_dev(c, &rep->vol_initial)) != CL_SUCCESS) {
		st = cl_fail(d, err, "summing the initial volume");
		goto done;
	}
	long fixed = o && o->steps > 0 ? o->steps : 0;
	long cap = fixed ? fixed : (sim->max_steps > 0 ? sim->max_steps : 100000);
	long window = sim->window > 0 ? sim->window : 200;
	double tol = sim->tolerance > 0 ? sim->tolerance : 1e-4;
	long every = window < 100 ? window : 100;
	double res = INFINITY;
	int have_prev = 0;
	/* previous velocities: the initial state's */
	c->mcur = 0;
	if ((err = lbm_enq_macro(c, 1)) != CL_SUCCESS) {
		st = cl_fail(d, err, "computing the initial fields");
		goto done;
	}
	c->mcur = 1;
	while (L->step < cap) {
		long k = every;
		if (cap - L->step < k)
			k = cap - L->step;
		st = cl_lbm_enqueue(c, k, d);
		if (st == WB_OK)
			st = cl_lbm_sync(c, d);
		if (st != WB_OK)
			goto done;
		if (L->step % window == 0) {
			c->mcur = !c->mcur;
			err = lbm_enq_macro(c, c->mcur);
			if (err == CL_SUCCESS && (have_prev || L->step >= window)) {
				err = lbm_resid_dev(c, &res);
				have_prev = 1;
			}
			if (err != CL_SUCCESS) {
				st = cl_fail(d, err, "computing the residual");
				goto done;
			}
			if (!fixed && res < tol &&
			    L->step >= L->ramp_steps + 2 * window) {
				rep->converged = 1;
				break;
			}
		}
		if (o && o->progress)
			o->progress(o->progress_user, L->step, cap,
				    isfinite(res) ? res : 1.0);
	}
	size_t n = (size_t)r->nx * r->ny;
	out->nx = r->nx;
	out->ny = r->ny;
	out->dx = r->dx;
	out->h = malloc(n * sizeof(float));
	out->u = malloc(n * sizeof(float));
	out->v = malloc(n * sizeof(float));
	if (!out->h || !out->u || !out->v) {
		st = wb_fail(d, WB_EIO, NULL, "lbm (opencl): out of memory");
		goto done;
	}
	st = cl_lbm_macro(c, out->h, out->u, out->v, d);
	if (st != WB_OK)
		goto done;
	long long vin = 0, vout = 0;
	long clamped = 0;
	if ((err = lbm_volume_dev(c, &rep->vol_final)) != CL_SUCCESS ||
	    (err = lbm_books(c, &vin, &vout, &clamped)) != CL_SUCCESS) {
		st = cl_fail(d, err, "reading the bookkeeping");
		goto done;
	}
	double dx2 = L->p.dx * L->p.dx;
	rep->steps = L->step;
	rep->residual = isfinite(res) ? res : 0;
	rep->sim_time = L->step * L->p.dt;
	rep->dt = L->p.dt;
	rep->lattice_speed = L->p.e;
	rep->tau = L->p.tau;
	rep->vol_in = (double)vin * L->unit * dx2;
	rep->vol_out = (double)vout * L->unit * dx2;
	double scale = MAXD(MAXD(rep->vol_initial, rep->vol_final),
			    MAXD(rep->vol_in, rep->vol_out));
	rep->balance_error =
		scale > 0 ? fabs(rep->vol_initial + rep->vol_in - rep->vol_out -
				 rep->vol_final) / scale : 0;
	rep->clamped = clamped;
	rep->bytes_per_cell = cl_lbm_bytes_per_cell(c);
	if (rep->balance_error > 1e-3)
		st = wb_fail(d, WB_ESIM, NULL,
			     "lbm (opencl): mass balance does not close after %ld steps: initial %g + in %g - out %g != final %g m^3",
			     L->step, rep->vol_initial, rep->vol_in, rep->vol_out,
			     rep->vol_final);
done:
	if (st != WB_OK && st != WB_ESIM)
		wb_state_free(out);
	rep->seconds = now_s() - t0;
	cl_lbm_free(c);
	cl_env_free(e);
	return st;
}

/* ---- SWE ---------------------------------------------------------------- */

struct cl_swe {
	int unused;
};

enum wb_status cl_swe_create(struct cl_env *e, const struct wb_raster *r,
			     const struct wb_sim *sim, int threads,
			     struct cl_swe **out, struct wb_diags *d)
{
	*out = NULL;
	return wb_fail(d, WB_EUSAGE, NULL, "opencl: the SWE solver is not ported yet");
}

enum wb_status cl_swe_run(struct cl_swe *c, long n, struct wb_diags *d)
{
	return wb_fail(d, WB_EUSAGE, NULL, "opencl: the SWE solver is not ported yet");
}

int cl_swe_bytes_per_cell(const struct cl_swe *c)
{
	return 0;
}

void cl_swe_free(struct cl_swe *c)
{
	free(c);
}

enum wb_status cl_swe_solve(const struct wb_raster *r, const struct wb_sim *sim,
			    const struct wb_solve_opts *o, struct wb_state *out,
			    struct wb_solve_report *rep, struct wb_diags *d)
{
	memset(out, 0, sizeof(*out));
	memset(rep, 0, sizeof(*rep));
	return wb_fail(d, WB_EUSAGE, NULL, "opencl: the SWE solver is not ported yet");
}

#else
/* ISO C forbids an empty translation unit. */
typedef int wb_cl_unused;
#endif /* WB_OPENCL */
