/*
 * cl.c - the OpenCL back end: device listing, context and program set-up,
 * and the LBM-SWE and SWE solvers on a device (API and error contract in
 * cl.h; kernels in src/cl/, embedded by scripts/embed.sh; design,
 * tolerances and measurements in docs/opencl.md).
 *
 * Compiled only with -DWB_OPENCL (make OPENCL=1); otherwise this is an
 * empty translation unit.
 *
 * How a solver runs here: the host builds the CPU solver's context
 * (lbm_init / swe_init: parameters, initial state, ghost-cell kinds, the
 * lists of special cells), uploads its arrays in the same padded layout
 * (stride W = nx + 2, one-cell ghost ring, structure of arrays) and then
 * enqueues, per step, the kernels that replace the CPU's per-row loops.
 * Boundary filling, edge fluxes and special cells run on the device too,
 * from index lists built once. Between steps the host reads only what the
 * algorithm needs: a divergence flag every 100 LBM steps, SWE's two
 * maxima for the next time step (with the lengths of the next step's
 * block lists: SWE steps only the 32 x 32 blocks that hold water, the
 * active set kept on the device, "SWE block-sparse stepping" below), and
 * the cells around waterfalls and particles (swe_particles.c runs on the
 * host). Bookkeeping (mass in/out,
 * clamp counts) is accumulated per list item or per work-group in device
 * memory, each slot written by one work item or one work-group only, and
 * summed on the host in a fixed order: results are deterministic run to
 * run, with no floating-point atomics.
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
#include "par.h"
#include "solve.h"
#include "swe.h"
#include "util.h"

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

int cl_device_count(void)
{
	struct cl_dev *v;
	int n = cl_devices(&v);
	free(v);
	return n > 0 ? n : 0;
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

#define CL_PROF_MAX 48     /* kernels told apart by the profile */
#define CL_PROF_BATCH 4096 /* launches read at once */

struct cl_env {
	cl_platform_id plat;
	cl_device_id dev;
	cl_context ctx;
	cl_command_queue q;
	cl_program prog;
	int fp64, gpu;
	size_t realsz;     /* sizeof(real) in the kernels */
	cl_ulong max_alloc;
	cl_ulong gmem;     /* CL_DEVICE_GLOBAL_MEM_SIZE */
	cl_kernel k_fill, k_copy; /* wb_fill32, wb_copy32 (common.cl) */
	size_t lx;         /* requested work-group width, 0 = default */
	char *log;         /* compiler log */
	char name[512];
	/* WB_CL_PROFILE=1: the queue records each kernel's device time
	 * (enq_nd, prof_harvest, cl_env_profile) */
	int prof;
	cl_event *pev;     /* launches not yet read, their kernels */
	cl_kernel *pek;
	size_t nev;
	struct cl_prof { char name[48]; long n; double ns; } pt[CL_PROF_MAX];
	int npt;
	double pfirst, plast; /* device clock of the first start, last end (ns) */
};

const char *cl_env_name(const struct cl_env *e)
{
	return e->name;
}

int cl_env_is_gpu(const struct cl_env *e)
{
	return e->gpu;
}

void cl_env_set_lx(struct cl_env *e, size_t lx)
{
	e->lx = lx;
}

const char *cl_env_build_log(const struct cl_env *e)
{
	return e->log ? e->log : "";
}

static void prof_harvest(struct cl_env *e);
static cl_int enq_nd(struct cl_env *e, cl_kernel k, cl_uint dim,
		     const size_t *go, const size_t *gs, const size_t *ls);

void cl_env_free(struct cl_env *e)
{
	if (!e)
		return;
	prof_harvest(e);
	free(e->pev);
	free(e->pek);
	free(e->log);
	if (e->k_fill)
		clReleaseKernel(e->k_fill);
	if (e->k_copy)
		clReleaseKernel(e->k_copy);
	if (e->prog)
		clReleaseProgram(e->prog);
	if (e->q)
		clReleaseCommandQueue(e->q);
	if (e->ctx)
		clReleaseContext(e->ctx);
	free(e);
}

static enum wb_status build_program(struct cl_env *e, const char *extra,
				    struct wb_diags *d)
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
	char opts[512];
	snprintf(opts, sizeof(opts), "-cl-std=CL1.2 -DWB_FP64=%d%s %s", e->fp64,
		 (fc & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) ?
			 " -cl-fp32-correctly-rounded-divide-sqrt" : "",
		 extra ? extra : "");
	err = clBuildProgram(e->prog, 1, &e->dev, opts, NULL, NULL);
	if (err == CL_SUCCESS) {
		size_t len = 0;
		clGetProgramBuildInfo(e->prog, e->dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &len);
		e->log = malloc(len + 1);
		if (e->log) {
			e->log[0] = 0;
			clGetProgramBuildInfo(e->prog, e->dev, CL_PROGRAM_BUILD_LOG, len,
					      e->log, NULL);
			e->log[len] = 0;
		}
	}
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

static enum wb_status cl_env_open_raw(int index, const char *extra,
				      struct cl_env **out, struct wb_diags *d)
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
	clGetDeviceInfo(e->dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(e->gmem),
			&e->gmem, NULL);
	cl_int err;
	cl_context_properties props[] = { CL_CONTEXT_PLATFORM,
					  (cl_context_properties)e->plat, 0 };
	e->ctx = clCreateContext(props, 1, &e->dev, NULL, NULL, &err);
	if (!e->ctx) {
		cl_env_free(e);
		return cl_fail(d, err, "clCreateContext");
	}
	const char *pe = getenv("WB_CL_PROFILE");
	e->prof = pe && pe[0] == '1';
	if (e->prof && (!(e->pev = malloc(CL_PROF_BATCH * sizeof(cl_event))) ||
			!(e->pek = malloc(CL_PROF_BATCH * sizeof(cl_kernel)))))
		e->prof = 0;
	e->q = clCreateCommandQueue(e->ctx, e->dev,
				    e->prof ? CL_QUEUE_PROFILING_ENABLE : 0,
				    &err);
	if (!e->q) {
		cl_env_free(e);
		return cl_fail(d, err, "clCreateCommandQueue");
	}
	enum wb_status st = build_program(e, extra, d);
	if (st != WB_OK) {
		cl_env_free(e);
		return st;
	}
	if (!(e->k_fill = clCreateKernel(e->prog, "wb_fill32", &err)) ||
	    !(e->k_copy = clCreateKernel(e->prog, "wb_copy32", &err))) {
		cl_env_free(e);
		return cl_fail(d, err, "clCreateKernel(wb_fill32, wb_copy32)");
	}
	*out = e;
	return WB_OK;
}

enum wb_status cl_env_open_opts(int index, const char *opts,
				struct cl_env **out, struct wb_diags *d)
{
	FP_SAVE();
	enum wb_status st = cl_env_open_raw(index, opts, out, d);
	FP_RESTORE();
	return st;
}

enum wb_status cl_env_open(int index, struct cl_env **out, struct wb_diags *d)
{
	return cl_env_open_opts(index, NULL, out, d);
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

/* Words of one launch of wb_fill32 / wb_copy32 (1 GiB). */
#define BIG_CHUNK ((size_t)1 << 28)

/* Every 32-bit word of the first bytes of m set to v. Multiples of 4
 * bytes (every field) go through wb_fill32 in launches of 1 GiB: NVIDIA's
 * clEnqueueFillBuffer fails from 2^31 bytes on. */
static cl_int buf_fill32(struct cl_env *e, cl_mem m, size_t bytes, cl_uint v)
{
	if (bytes == 0)
		return CL_SUCCESS;
	if (bytes % 4)
		return clEnqueueFillBuffer(e->q, m, &v, 1, 0, bytes, 0, NULL,
					   NULL);
	const cl_ulong n = bytes / 4;
	cl_int err = CL_SUCCESS;
	for (cl_ulong base = 0; base < n && err == CL_SUCCESS; base += BIG_CHUNK) {
		cl_ulong cnt = n - base < BIG_CHUNK ? n - base : BIG_CHUNK;
		size_t g = ((size_t)cnt + 255) / 256 * 256;
		err = clSetKernelArg(e->k_fill, 0, sizeof(m), &m);
		err |= clSetKernelArg(e->k_fill, 1, sizeof(base), &base);
		err |= clSetKernelArg(e->k_fill, 2, sizeof(cnt), &cnt);
		err |= clSetKernelArg(e->k_fill, 3, sizeof(v), &v);
		if (err == CL_SUCCESS)
			err = enq_nd(e, e->k_fill, 1, NULL, &g, NULL);
	}
	return err;
}

static cl_int buf_zero(struct cl_env *e, cl_mem m, size_t bytes)
{
	return buf_fill32(e, m, bytes, 0);
}

/* The first bytes (a multiple of 4) of a into b, through wb_copy32 (as
 * buf_fill32: clEnqueueCopyBuffer is not trusted from 2^31 bytes on). */
static cl_int buf_copy32(struct cl_env *e, cl_mem a, cl_mem b, size_t bytes)
{
	if (bytes % 4)
		return clEnqueueCopyBuffer(e->q, a, b, 0, 0, bytes, 0, NULL,
					   NULL);
	const cl_ulong n = bytes / 4;
	cl_int err = CL_SUCCESS;
	for (cl_ulong base = 0; base < n && err == CL_SUCCESS; base += BIG_CHUNK) {
		cl_ulong cnt = n - base < BIG_CHUNK ? n - base : BIG_CHUNK;
		size_t g = ((size_t)cnt + 255) / 256 * 256;
		err = clSetKernelArg(e->k_copy, 0, sizeof(a), &a);
		err |= clSetKernelArg(e->k_copy, 1, sizeof(b), &b);
		err |= clSetKernelArg(e->k_copy, 2, sizeof(base), &base);
		err |= clSetKernelArg(e->k_copy, 3, sizeof(cnt), &cnt);
		if (err == CL_SUCCESS)
			err = enq_nd(e, e->k_copy, 1, NULL, &g, NULL);
	}
	return err;
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
#define SWAP_MEM(a, b) do { cl_mem t_ = (a); (a) = (b); (b) = t_; } while (0)

static size_t round_up(size_t n, size_t m)
{
	return (n + m - 1) / m * m;
}

/*
 * Profile (WB_CL_PROFILE=1, docs/opencl.md "Profile"): each launch keeps
 * its event; at cl_env_profile, cl_env_free or every CL_PROF_BATCH launches
 * the events are read and released, and each kernel's launches and
 * device time (start to end) are added to e->pt by its name. The
 * device's idle time is what is left of the span from the first start
 * to the last end.
 */
static void prof_harvest(struct cl_env *e)
{
	if (!e->prof || !e->nev)
		return;
	clFinish(e->q);
	for (size_t k = 0; k < e->nev; k++) {
		cl_ulong t0 = 0, t1 = 0;
		char nm[48] = "?";
		clGetEventProfilingInfo(e->pev[k], CL_PROFILING_COMMAND_START,
					sizeof(t0), &t0, NULL);
		clGetEventProfilingInfo(e->pev[k], CL_PROFILING_COMMAND_END,
					sizeof(t1), &t1, NULL);
		clReleaseEvent(e->pev[k]);
		clGetKernelInfo(e->pek[k], CL_KERNEL_FUNCTION_NAME, sizeof(nm),
				nm, NULL);
		nm[sizeof(nm) - 1] = 0;
		clReleaseKernel(e->pek[k]);
		if (e->pfirst == 0 || (double)t0 < e->pfirst)
			e->pfirst = (double)t0;
		if ((double)t1 > e->plast)
			e->plast = (double)t1;
		int i = 0;
		while (i < e->npt && strcmp(e->pt[i].name, nm))
			i++;
		if (i == e->npt) {
			if (e->npt == CL_PROF_MAX) { /* the rest, together */
				i = CL_PROF_MAX - 1;
				snprintf(e->pt[i].name, sizeof(nm), "(others)");
			} else {
				snprintf(e->pt[e->npt++].name, sizeof(nm), "%s", nm);
			}
		}
		e->pt[i].n++;
		e->pt[i].ns += t1 > t0 ? (double)(t1 - t0) : 0;
	}
	e->nev = 0;
}

/* clEnqueueNDRangeKernel on e's queue, the launch's event kept when
 * profiling. */
static cl_int enq_nd(struct cl_env *e, cl_kernel k, cl_uint dim,
		     const size_t *go, const size_t *gs, const size_t *ls)
{
	if (!e->prof)
		return clEnqueueNDRangeKernel(e->q, k, dim, go, gs, ls, 0, NULL,
					      NULL);
	if (e->nev == CL_PROF_BATCH)
		prof_harvest(e);
	cl_event ev;
	cl_int err = clEnqueueNDRangeKernel(e->q, k, dim, go, gs, ls, 0, NULL,
					    &ev);
	if (err == CL_SUCCESS) {
		clRetainKernel(k);
		e->pek[e->nev] = k;
		e->pev[e->nev++] = ev;
	}
	return err;
}

/* The profile as a note (nothing when not profiling): each kernel's
 * launches and device time, the largest first, and the device's idle
 * time within the span. */
double cl_env_profile(struct cl_env *e, const char *what, struct wb_diags *d)
{
	if (!e || !e->prof)
		return 0;
	prof_harvest(e);
	char buf[4096];
	double busy = 0;
	for (int i = 0; i < e->npt; i++)
		busy += e->pt[i].ns;
	const double span = e->plast > e->pfirst ? e->plast - e->pfirst : 0;
	int o = snprintf(buf, sizeof(buf),
			 "opencl profile (%s): %.4g ms of kernels in a span of %.4g ms (idle %.4g ms):",
			 what, busy * 1e-6, span * 1e-6,
			 span > busy ? (span - busy) * 1e-6 : 0);
	uint8_t done[CL_PROF_MAX] = { 0 };
	for (int r = 0; r < e->npt && o < (int)sizeof(buf); r++) {
		int b = -1;
		for (int i = 0; i < e->npt; i++)
			if (!done[i] && (b < 0 || e->pt[i].ns > e->pt[b].ns))
				b = i;
		done[b] = 1;
		o += snprintf(buf + o, sizeof(buf) - (size_t)o,
			      " %s %ld x %.4g us = %.4g ms;", e->pt[b].name,
			      e->pt[b].n, e->pt[b].ns * 1e-3 / (double)e->pt[b].n,
			      e->pt[b].ns * 1e-6);
	}
	wb_diag_add(d, WB_SEV_NOTE, NULL, NULL, 0, 0, "%s", buf);
	e->npt = 0;
	e->pfirst = e->plast = 0;
	return busy * 1e-9;
}

static cl_int run1d(struct cl_env *e, cl_kernel k, size_t n)
{
	if (n == 0)
		return CL_SUCCESS;
	size_t g = round_up(n, 64);
	return enq_nd(e, k, 1, NULL, &g, NULL);
}

/* Local size along x for 2D grid kernels. */
static size_t pick_lx(struct cl_env *e, cl_kernel k)
{
	size_t wg = 0;
	clGetKernelWorkGroupInfo(k, e->dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof(wg), &wg,
				 NULL);
	size_t lx = e->lx ? e->lx : e->gpu ? 128 : 64;
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
		err = enq_nd(e, k, 1, NULL, &n, NULL);
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

/* Whether the device can hold a grid of nx x ny cells: cell indices are
 * 32-bit (a padded grid below 2^31 cells; offsets into buffers of several
 * slices are 64-bit, WB_SLICE in src/cl/common.cl), the largest buffer
 * (big_per_cell bytes per padded cell) within CL_DEVICE_MAX_MEM_ALLOC_SIZE
 * and all of them (per_cell bytes per padded cell) within the device's
 * memory. Checked before any host work, so that a grid the device cannot
 * take fails at once: WB_EINPUT for the index range, WB_EIO (exit 4, out
 * of device memory) for the sizes. */
static enum wb_status cl_fits(const struct cl_env *e, const char *what,
			      int nx, int ny, double big_per_cell,
			      double per_cell, struct wb_diags *d)
{
	const double cells = (double)(nx + 2) * (ny + 2), gib = 1073741824.0;
	if (cells >= (double)INT_MAX)
		return wb_fail(d, WB_EINPUT, NULL,
			       "opencl: a %dx%d grid is too large for 32-bit cell indices (at most about 46000x46000 cells)",
			       nx, ny);
	if (cells * big_per_cell > (double)e->max_alloc)
		return wb_fail(d, WB_EIO, NULL,
			       "opencl: a %dx%d grid needs %.2f GiB buffers for the %s; "
			       "the device allocates at most %.2f GiB at once (CL_DEVICE_MAX_MEM_ALLOC_SIZE): "
			       "bake it on the CPU (--device cpu) or on a device with more memory",
			       nx, ny, cells * big_per_cell / gib, what,
			       (double)e->max_alloc / gib);
	if (e->gmem > 0 && cells * per_cell > (double)e->gmem)
		return wb_fail(d, WB_EIO, NULL,
			       "opencl: a %dx%d grid needs about %.2f GiB of device memory for the %s; "
			       "the device has %.2f GiB: bake it on the CPU (--device cpu) or on a device with more memory",
			       nx, ny, cells * per_cell / gib, what,
			       (double)e->gmem / gib);
	return WB_OK;
}

enum wb_status cl_slice_probe(struct cl_env *e, const int *a, const int *n,
			      int N, int cnt, int64_t *out,
			      struct wb_diags *d)
{
	cl_int err = CL_SUCCESS;
	cl_kernel k = NULL;
	cl_mem ba = NULL, bn = NULL, bo = NULL;
	enum wb_status st = WB_OK;
	const size_t ib = (size_t)(cnt > 0 ? cnt : 1) * sizeof(cl_int);
	if (!(ba = buf_new(e, ib, &err)) || !(bn = buf_new(e, ib, &err)) ||
	    !(bo = buf_new(e, ib * 2, &err))) {
		st = cl_fail(d, err, "allocating the probe buffers");
		goto out;
	}
	if (!(k = clCreateKernel(e->prog, "wb_slice_probe", &err))) {
		st = cl_fail(d, err, "clCreateKernel(wb_slice_probe)");
		goto out;
	}
	if (cnt > 0) {
		err = buf_write(e, ba, 0, (size_t)cnt * sizeof(cl_int), a);
		if (err == CL_SUCCESS)
			err = buf_write(e, bn, 0, (size_t)cnt * sizeof(cl_int), n);
	}
	err |= ARG(k, 0, ba);
	err |= ARG(k, 1, bn);
	err |= ARG(k, 2, N);
	err |= ARG(k, 3, cnt);
	err |= ARG(k, 4, bo);
	size_t g = (size_t)(cnt > 0 ? cnt : 1);
	if (err == CL_SUCCESS)
		err = enq_nd(e, k, 1, NULL, &g, NULL);
	if (err == CL_SUCCESS && cnt > 0)
		err = buf_read(e, bo, 0, (size_t)cnt * sizeof(cl_long), out);
	if (err != CL_SUCCESS)
		st = cl_fail(d, err, "running wb_slice_probe");
out:
	if (k)
		clReleaseKernel(k);
	buf_free(&ba);
	buf_free(&bn);
	buf_free(&bo);
	return st;
}

/* ---- LBM-SWE ------------------------------------------------------------ */

/* Parameters of the LBM kernels other than lbm_step (which takes lbm.h's
 * struct lbm_kpar, as struct lbm_kp in src/cl/lbm.cl), as lbm.c computes
 * them. */
struct lbm_kp {
	cl_float hd, hthin, ithin, hpos, om, omm, ghk, Gax, Gdg, Gai, Gdi, umax2,
		fr2, kf, hlim, unit, inv;
};

struct cl_lbm {
	struct cl_env *env;
	struct lbm L;        /* host context: parameters, lists, bookkeeping */
	int N;               /* padded cells */
	cl_mem f[2], h[2], z, c;
	cl_mem zi;           /* integer bed potential (lbm.zi) */
	cl_mem gi, gf, fg;   /* ghost lists, flux ghost list */
	cl_mem gH;           /* per gi item: a held level's integer depth */
	cl_mem gk;           /* ghost kind per padded cell */
	int n1e, n1, n2, nf; /* pass-1 edge items, + corners; pass 2; flux */
	cl_mem si, sf;       /* special cells */
	cl_mem acc_fin, acc_fout, acc_sin, acc_sout, acc_scl, clamp_acc, bad;
	cl_mem mh, mu[2], mv[2], rows, rnum, rden, rwet; /* rwet: sum h per row */
	cl_mem sh, su, sv, mm; /* lbm_solve's window sums and mean depth */
	size_t lx;
	size_t ncm;          /* clamp_acc: the clamp map's slots, ny rows of
				lbm.cnx (lbm.c, WB_CLAMP_BLOCK columns) */
	int mcur;            /* which of mu/mv holds the latest macro */
	cl_kernel k_ghost, k_flux, k_step, k_spec, k_macro, k_mfix, k_rowsum,
		  k_resid;
	struct lbm_kp kp;
	struct lbm_kpar ks;  /* lbm_step's parameters (lbm_kernel_params) */
	int cur;
	/* block-sparse step (lbm_sparse_*, lbm.cl lbm_blk_*): 32 x 32 blocks */
	int sp;              /* 1: sparse (the host context's L.sparse) */
	int nbx, nby;
	cl_mem b_wet[2];     /* per block (uint): f[b], h[b] may be nonzero */
	cl_mem b_estamp;     /* per block (uint): lbm_blk_edge's stamp */
	cl_uint estamp;      /* the stamp of its last run */
	cl_mem b_keep;       /* per block (uint): holds a special */
	cl_mem b_list;       /* stepped blocks from the front, cleared ones
				from the back */
	cl_mem b_elist;      /* several processes, the exchange behind the
				interior (ovl): the stepped blocks with a
				row among the band's first or last
				LBM_PAR_EDGE rows, stepped first */
	cl_mem b_cnt;        /* the counts: stepped, cleared, cells, edge */
	cl_mem b_acc;        /* (ulong) the cells of the lists stepped so far,
				but the last */
	cl_kernel k_brun, k_bedge;
	/* the window's samples on the blocks the next step runs
	 * (lbm_enq_sample): their list and its count */
	cl_mem b_slist, b_scnt;
	cl_kernel k_bsmp, k_macb, k_accb;
	int bgroups;         /* work-groups of a block-sparse launch (each
				on every bgroups-th block of its list) */
	int bly;             /* rows of a block per step work-group */
	int sly;             /* the same for a sample's macro and sums */
	long long sp_cells;  /* interior cell-steps stepped densely */
	/* the LBM/FV hybrid (cl_fv_*): the host keeps a copy of the lattice
	 * (L.f, L.h) that is current only in the rows it reads back */
	cl_kernel k_fvrows, k_fvput, k_fvg, k_fvs;
	cl_mem fvsegs;       /* per row segment: may hold a core cell */
	cl_mem fvidx, fvval; /* FV cells' macro values (lbm_fv_put) */
	size_t fvcap;        /* cells fvidx / fvval hold */
	int nsg;             /* segments (LBM_FV_SEG columns) per row */
	uint8_t *ssel, *snear; /* H nsg: segment selections */
	uint8_t *frf, *frh;  /* H nsg: host segments of f[cur], h[cur]
				current (fv_xfer) */
	uint8_t *mwork;      /* 3 H nsg: lbm_fv_mark_segs's scratch */
	uint8_t *rsel;       /* H: rows with a selected segment */
	/* fv_xfer: runs of cells (first, count, offset), values packed (in
	 * the mapped buffer xpin where the driver gives one) */
	cl_long *xrun;
	cl_uint *xval;
	cl_mem xpin;
	size_t xruncap, xvalcap;
	cl_mem grun, gval;   /* the same on the device */
	size_t gruncap, gvalcap;
	/* the hybrid's host time (s): transfers (fv_xfer, waits included),
	 * the re-runs of the FV segments, the FV update, the segment flags
	 * (device and read), the marking, and cl_fv_step and cl_fv_mark in
	 * all */
	double fvt[6];
	cl_int *fvi;         /* FV cells' unpadded indices, values */
	cl_float *fvv;
	long long fv_in, fv_out; /* FV update's change at inflow/level edges */
	uint32_t *cm_un;     /* per clamp-map slot (ncm): the device's clamps
				in FV cells (lbm.c skips them), and two */
	uint32_t *cm_a, *cm_b; /* scratch maps of the host's re-runs */
	cl_int *spn;         /* per special item of si: its cell */
	double fv_bytes;     /* moved between host and device for the hybrid */
	/* several processes (par.h): the padded rows this rank owns, the
	 * rows to exchange and the segments to read of one fetch
	 * (fv_fetch), the bytes received from the other ranks for the
	 * hybrid */
	uint8_t *rown, *xsel[3], *sown[3];
	double fv_xbytes;
	int nsp;             /* special cells in si/sf: this band's (par.h) */
	/* several processes (par.h): the exchange's cell lists */
	struct wb_par_plan plan;
	cl_mem pg, ps, pbuf;
	cl_kernel k_pack, k_unpack, k_zpack;
	/* the gathered records (par.h): this rank's ring cells (zo / 10 of
	 * them), the chunks' count at word zo of pbuf, their numbers, the
	 * slots; the read brings the first kread slots with the count (the
	 * rest, when more came, in a second read) */
	long zo, kread;
	/* the exchange behind the band's interior rows (cl_par_setup):
	 * ovl set when it runs so; the step kernel's first and last
	 * LBM_PAR_EDGE rows and the specials there (si[0 .. nsp_e)) run
	 * first, their records come back (prd) into pin while the interior
	 * rows step */
	int ovl, nsp_e;
	cl_event prd;
	/* the exchange's records (plan.buf; pin its start): a mapped
	 * CL_MEM_ALLOC_HOST_PTR buffer (pinm), which NVIDIA's driver pins,
	 * so that the copies to and from the device go by DMA at once,
	 * without staging through its own buffers; kept for the bake */
	void *pin;
	cl_mem pinm;
};

int cl_lbm_bytes_per_cell(const struct cl_lbm *c)
{
	(void)c;
	return LBM_BYTES_PER_CELL;
}

long long cl_lbm_cells(const struct cl_lbm *c, int *sparse)
{
	*sparse = c->sp;
	cl_ulong acc = 0;
	cl_int cnt[4] = { 0, 0, 0, 0 };
	if (c->sp && c->b_acc &&
	    (buf_read(c->env, c->b_acc, 0, sizeof(acc), &acc) != CL_SUCCESS ||
	     buf_read(c->env, c->b_cnt, 0, sizeof(cnt), cnt) != CL_SUCCESS))
		return -1;
	return c->sp_cells + (long long)acc + (long long)(cl_uint)cnt[2];
}
static void cl_fv_release(struct cl_lbm *c);

void cl_lbm_free(struct cl_lbm *c)
{
	if (!c)
		return;
	cl_mem *m[] = { &c->f[0], &c->f[1], &c->h[0], &c->h[1], &c->z, &c->c,
			&c->zi,
			&c->gk, &c->gi, &c->gf, &c->gH, &c->fg, &c->si, &c->sf, &c->acc_fin,
			&c->acc_fout, &c->acc_sin, &c->acc_sout, &c->acc_scl,
			&c->clamp_acc, &c->bad, &c->mh, &c->mu[0], &c->mu[1],
			&c->mv[0], &c->mv[1], &c->rows, &c->rnum, &c->rden,
			&c->rwet, &c->sh, &c->su, &c->sv, &c->mm, &c->b_wet[0],
			&c->b_wet[1], &c->b_keep, &c->b_list, &c->b_elist,
			&c->b_cnt, &c->b_acc, &c->b_slist, &c->b_scnt,
			&c->b_estamp, &c->pg, &c->ps, &c->pbuf };
	for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++)
		buf_free(m[k]);
	cl_kernel ks[] = { c->k_ghost, c->k_flux, c->k_step, c->k_spec,
			   c->k_macro, c->k_mfix, c->k_rowsum, c->k_resid,
			   c->k_brun, c->k_pack,
			   c->k_unpack, c->k_zpack, c->k_bsmp, c->k_macb,
			   c->k_accb, c->k_bedge };
	for (size_t k = 0; k < sizeof(ks) / sizeof(ks[0]); k++)
		if (ks[k])
			clReleaseKernel(ks[k]);
	cl_fv_release(c);
	if (c->prd) {
		clWaitForEvents(1, &c->prd);
		clReleaseEvent(c->prd);
	}
	if (c->pinm) {
		if (c->plan.buf)
			clEnqueueUnmapMemObject(c->env->q, c->pinm, c->plan.buf,
						0, NULL, NULL);
		clFinish(c->env->q);
		clReleaseMemObject(c->pinm);
	}
	wb_par_plan_release(&c->plan);
	free(c->cm_un);
	free(c->cm_a);
	free(c->cm_b);
	free(c->spn);
	lbm_release(&c->L);
	free(c);
}

/* Several processes (par.h): whether padded cell n lies in this band. */
static int lbm_par_mine(const struct lbm *L, int n)
{
	int j0, j1, j = n / L->W - 1;
	wb_par_band(L->par, L->ny, &j0, &j1);
	return j >= j0 && j < j1;
}

/* Several processes: whether padded row prow lies within LBM_PAR_EDGE
 * rows of the band's first or last row (or outside it), the rows whose
 * step the exchange waits for (cl_par_setup); every row without par. */
#define LBM_PAR_EDGE 3
static int lbm_par_edge_row(const struct lbm *L, int prow)
{
	int j0, j1, j = prow - 1;
	if (!L->par)
		return 1;
	wb_par_band(L->par, L->ny, &j0, &j1);
	return j < j0 + LBM_PAR_EDGE || j >= j1 - LBM_PAR_EDGE;
}

/* Several processes (par.h): whether this band fills the ghost of edge
 * s at position k (lbm_edge_cell; the corners: s = -1, k = q). The
 * band's kernel pulls from the ghosts of rows J0 - 1 .. J1; a ghost gets
 * populations from the closures of the rows either side of it, which
 * read rows k - 1 .. k + 1, and the exchange brings rows J0 - 3 .. J1 + 2
 * (cl_par_setup: the ring columns of the two rows past the halo row).
 * So the rows [J0 - 3, J1 + 3), and the north (south) side within 3
 * rows of the band, give every ghost of rows J0 - 1 .. J1 the values of
 * a fill of all ghosts (which computed the others from rows this rank
 * does not hold, for nothing). tests/cli/wbake_mpi_opencl.sh: with the
 * rows [J0 - 1, J1 + 1) the same bytes (the band pulls only what the
 * closures of its own rows write into the ghosts beside it), with [J0,
 * J1) not (the coast's level edge). One process: every ghost. */
static int lbm_par_ghost(const struct lbm *L, int s, int k)
{
	if (!L->par)
		return 1;
	int J0, J1;
	wb_par_band(L->par, L->ny, &J0, &J1);
	const int north = J0 - 3 <= 0, south = J1 + 3 >= L->ny;
	if (s < 0)
		return (k & 2) ? south : north;
	if (s == WB_WEST || s == WB_EAST)
		return k >= J0 - 3 && k < J1 + 3;
	return s == WB_NORTH ? north : south;
}

/* Build the ghost, flux and special lists (ghosts: those of this band and
 * its halo, fluxes and specials: this band's) and upload them. */
static enum wb_status lbm_lists(struct cl_lbm *c, struct wb_diags *d)
{
	struct lbm *L = &c->L;
	struct cl_env *e = c->env;
	int cap = 2 * (L->nx + L->ny) + 4;
	cl_int4 *gi = calloc((size_t)2 * cap, sizeof(*gi));
	cl_float4 *gf = calloc((size_t)2 * cap, sizeof(*gf));
	cl_int *fg = calloc((size_t)cap, sizeof(*fg));
	cl_int *gH = calloc((size_t)2 * cap, sizeof(*gH));
	cl_int2 *si = calloc((size_t)L->nsp + 1, sizeof(*si));
	cl_float *sf = calloc((size_t)8 * (L->nsp + 1), sizeof(*sf));
	enum wb_status st = WB_OK;
	cl_int err = CL_SUCCESS;
	if (!gi || !gf || !fg || !gH || !si || !sf) {
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
			/* several processes: the books of the ghosts of
			 * this band's rows (summed over the ranks) */
			if ((kind == LBM_G_ZOU || kind == LBM_G_EXTRAP) &&
			    (!L->par || wb_par_owns_cell(L->par, g, L->W, L->ny)))
				fg[nf++] = g;
			if (kind == LBM_G_SOLID || !lbm_par_ghost(L, s, k))
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
	c->n1e = n1;
	for (int q = 0; q < 4; q++) {
		int g = (((q & 1) ? L->nx : -1) + 1) + (((q & 2) ? L->ny : -1) + 1) * L->W;
		if (L->gkind[g] != LBM_G_SOLID &&
		    (L->ckind[q] == LBM_G_ZOU || L->ckind[q] == LBM_G_EXTRAP) &&
		    (!L->par || wb_par_owns_cell(L->par, g, L->W, L->ny)))
			fg[nf++] = g;
		if (L->gkind[g] != LBM_G_PERIODIC || !lbm_par_ghost(L, -1, q))
			continue;
		/* a corner continuing an open edge copies the interior
		 * corner cell its ghost copies (lbm.c lbm_fill_ghosts: the
		 * ghost before its bed transfers are swapped) */
		const int bed = L->cflip[q] && L->ckind[q] == LBM_G_EXTRAP;
		gi[n1].s[0] = g;
		gi[n1].s[1] = L->gpart[g];
		gi[n1].s[2] = bed ? L->gpart[L->gpart[g]] : L->gpart[g];
		gi[n1].s[3] = LBM_G_PERIODIC | L->cflip[q] << 10 | bed << 12;
		n1++;
	}
	/* the open edges' bed transfers (lbm.c extrap_bed), with the
	 * corners */
	for (int s = 0; s < 4; s++) {
		int len = (s == WB_WEST || s == WB_EAST) ? L->ny : L->nx;
		for (int k = 0; k < len; k++) {
			int g, p, nxn, nyn;
			lbm_edge_cell(L, s, k, &g, &p, &nxn, &nyn);
			if (L->gkind[g] != LBM_G_EXTRAP || !lbm_par_ghost(L, s, k))
				continue;
			gi[n1].s[0] = g;
			gi[n1].s[1] = p;
			gi[n1].s[2] = L->gpart[g];
			gi[n1].s[3] = LBM_G_EXTRAP | 1 << 13;
			n1++;
		}
	}
	int n2 = 0;
	for (int s = 0; s < 4; s++) {
		int len = (s == WB_WEST || s == WB_EAST) ? L->ny : L->nx;
		for (int k = 0; k < len; k++) {
			int g, p, nxn, nyn;
			lbm_edge_cell(L, s, k, &g, &p, &nxn, &nyn);
			if (L->gkind[g] != LBM_G_ZOU || !lbm_par_ghost(L, s, k))
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
			gH[m] = (cl_int)lbm_rest_depth(L, L->z[p], L->gspec[g]);
		}
	}
	/* several processes: the specials in the band's edge rows first
	 * (cl_par_setup; each special changes its own cell only, the
	 * books add integers, so the order does not change a bit) */
	int ns = 0;
	for (int pass = 0; pass < 2; pass++) {
		for (int j = 0; j < L->nsp; j++) {
			const struct lbm_special *q = &L->sp[j];
			if (!lbm_par_mine(L, q->n) ||
			    lbm_par_edge_row(L, (int)(q->n / L->W)) != !pass)
				continue;
			const int k = ns++;
			si[k].s[0] = q->n;
			si[k].s[1] = q->flags;
			sf[8 * k] = q->src;
			sf[8 * k + 1] = q->level;
			sf[8 * k + 2] = q->mu;
			sf[8 * k + 3] = q->mv;
			sf[8 * k + 4] = q->mk;
			sf[8 * k + 5] = L->z[q->n];
			/* the held level's integer depth (lbm_rest_depth),
			 * its bits in a float slot */
			const float hf = q->level - L->z[q->n];
			const int32_t Ht = (int32_t)lbm_rest_depth(
				L, L->z[q->n], hf > 0.0f ? hf : 0.0f);
			memcpy(&sf[8 * k + 6], &Ht, sizeof(Ht));
		}
		if (pass == 0)
			c->nsp_e = ns;
	}
	c->nsp = ns;
	if (!(c->spn = malloc(((size_t)ns + 1) * sizeof(cl_int)))) {
		st = wb_fail(d, WB_EIO, NULL, "opencl: out of memory");
		goto out;
	}
	for (int k = 0; k < ns; k++)
		c->spn[k] = si[k].s[0];
	c->n1 = n1;
	c->n2 = n2;
	c->nf = nf;
	size_t rs = sizeof(cl_long); /* integer mass units */
	if (!(c->gi = buf_new(e, (size_t)(n1 + n2) * sizeof(*gi), &err)) ||
	    !(c->gf = buf_new(e, (size_t)(n1 + n2) * sizeof(*gf), &err)) ||
	    !(c->gH = buf_new(e, (size_t)(n1 + n2) * sizeof(*gH), &err)) ||
	    !(c->fg = buf_new(e, (size_t)nf * sizeof(*fg), &err)) ||
	    !(c->si = buf_new(e, (size_t)L->nsp * sizeof(*si), &err)) ||
	    !(c->sf = buf_new(e, (size_t)L->nsp * 8 * sizeof(*sf), &err)) ||
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
	err |= buf_write(e, c->gH, 0, (size_t)(n1 + n2) * sizeof(*gH), gH);
	err |= buf_write(e, c->fg, 0, (size_t)nf * sizeof(*fg), fg);
	err |= buf_write(e, c->si, 0, (size_t)L->nsp * sizeof(*si), si);
	err |= buf_write(e, c->sf, 0, (size_t)L->nsp * 8 * sizeof(*sf), sf);
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
	free(gH);
	free(fg);
	free(si);
	free(sf);
	return st;
}

static enum wb_status lbm_sparse_create(struct cl_lbm *c, struct wb_diags *d);
static enum wb_status cl_fv_create(struct cl_lbm *c, struct wb_diags *d);
static enum wb_status lbm_create_par(struct cl_env *e,
				     const struct wb_raster *r,
				     const struct wb_sim *sim, int threads,
				     int half, struct wb_par *par,
				     struct cl_lbm **out, struct wb_diags *d);

enum wb_status cl_lbm_create(struct cl_env *e, const struct wb_raster *r,
			     const struct wb_sim *sim, int threads, int half,
			     struct cl_lbm **out, struct wb_diags *d)
{
	return lbm_create_par(e, r, sim, threads, half, NULL, out, d);
}

/* cl_lbm_create for the band of par (par.h; NULL: one process). */
static enum wb_status lbm_create_par(struct cl_env *e,
				     const struct wb_raster *r,
				     const struct wb_sim *sim, int threads,
				     int half, struct wb_par *par,
				     struct cl_lbm **out, struct wb_diags *d)
{
	*out = NULL;
	if (half)
		return wb_fail(d, WB_EUSAGE, NULL,
			       "opencl: 16-bit distributions are not implemented (docs/opencl.md)");
	/* the nine distributions of a time level are one buffer; two of
	 * them, h (two), z, c, the macroscopic outputs (five), the kinds */
	enum wb_status fit = cl_fits(e, "LBM distributions", r->nx, r->ny,
				     LBM_Q * 4.0, 2 * LBM_Q * 4.0 + 9 * 4.0 + 1,
				     d);
	if (fit != WB_OK)
		return fit;
	struct cl_lbm *c = calloc(1, sizeof(*c));
	if (!c)
		return wb_fail(d, WB_EIO, NULL, "opencl: out of memory");
	c->env = e;
	/* W = nx + 2: lbm.cl takes column W - 1 as the east ghost */
	enum wb_status st = lbm_init_layout(&c->L, r, sim, threads, 0, d);
	if (st != WB_OK) {
		free(c);
		return st;
	}
	struct lbm *L = &c->L;
	L->par = par && par->size > 1 ? par : NULL;
	for (int k = 0; L->par && k < par->size; k++)
		if (par->row0[k + 1] - par->row0[k] < 3) {
			lbm_release(L);
			free(c);
			return wb_fail(d, WB_EINPUT, NULL,
				       "opencl: %d MPI ranks for a grid of %d rows: each rank needs three rows at least",
				       par->size, r->ny);
		}
	c->N = (int)L->ncell;
	c->cur = 0;
	const size_t N = L->ncell, fb = N * sizeof(float);
	cl_int err = CL_SUCCESS;
	const char *kn[] = { "lbm_ghost", "lbm_flux", "lbm_step", "lbm_special",
			     "lbm_macro", "lbm_macro_fix", "lbm_rowsum",
			     "wb_resid_rows" };
	cl_kernel *kp[] = { &c->k_ghost, &c->k_flux, &c->k_step, &c->k_spec,
			    &c->k_macro, &c->k_mfix, &c->k_rowsum, &c->k_resid };
	for (int k = 0; k < 8; k++)
		if (!(*kp[k] = clCreateKernel(e->prog, kn[k], &err))) {
			st = cl_fail(d, err, kn[k]);
			goto fail;
		}
	c->lx = pick_lx(e, c->k_step);
	c->ncm = (size_t)L->cnx * L->ny;
	if (!(c->cm_un = calloc(c->ncm, sizeof(uint32_t))) ||
	    !(c->cm_a = calloc(c->ncm, sizeof(uint32_t))) ||
	    !(c->cm_b = calloc(c->ncm, sizeof(uint32_t)))) {
		st = cl_fail(d, CL_OUT_OF_HOST_MEMORY, "the clamp map");
		goto fail;
	}
	const size_t nn = (size_t)L->nx * L->ny;
	if (!(c->f[0] = buf_new(e, LBM_Q * fb, &err)) ||
	    !(c->f[1] = buf_new(e, LBM_Q * fb, &err)) ||
	    !(c->h[0] = buf_new(e, fb, &err)) || !(c->h[1] = buf_new(e, fb, &err)) ||
	    !(c->z = buf_new(e, fb, &err)) || !(c->c = buf_new(e, fb, &err)) ||
	    !(c->zi = buf_new(e, fb, &err)) ||
	    !(c->clamp_acc = buf_new(e, c->ncm * sizeof(cl_uint), &err)) ||
	    !(c->bad = buf_new(e, sizeof(cl_int), &err)) ||
	    !(c->mh = buf_new(e, nn * sizeof(float), &err)) ||
	    !(c->mu[0] = buf_new(e, nn * sizeof(float), &err)) ||
	    !(c->mu[1] = buf_new(e, nn * sizeof(float), &err)) ||
	    !(c->mv[0] = buf_new(e, nn * sizeof(float), &err)) ||
	    !(c->mv[1] = buf_new(e, nn * sizeof(float), &err)) ||
	    !(c->rows = buf_new(e, (size_t)L->ny * sizeof(cl_long), &err)) ||
	    !(c->rnum = buf_new(e, (size_t)L->ny * e->realsz, &err)) ||
	    !(c->rden = buf_new(e, (size_t)L->ny * e->realsz, &err)) ||
	    !(c->rwet = buf_new(e, (size_t)L->ny * e->realsz, &err))) {
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
		err = buf_write(e, c->zi, 0, fb, L->zi);
	if (err == CL_SUCCESS && !(c->gk = buf_new(e, N, &err)))
		err = err != CL_SUCCESS ? err : CL_OUT_OF_RESOURCES;
	if (err == CL_SUCCESS)
		err = buf_write(e, c->gk, 0, N, L->gkind);
	if (err == CL_SUCCESS)
		err = buf_zero(e, c->clamp_acc, c->ncm * sizeof(cl_uint));
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
	st = lbm_sparse_create(c, d);
	if (st != WB_OK)
		goto fail;
	/* the host copies of the distributions are no longer needed, but by
	 * the hybrid (its FV update runs on rows read back into them) */
	if (L->hybrid)
		st = cl_fv_create(c, d);
	else
		lbm_free_f(L);
	if (st != WB_OK)
		goto fail;
	/* parameters exactly as lbm_kernel_row computes them */
	const struct lbm_params *p = &L->p;
	struct lbm_kp *k = &c->kp;
	k->hd = (float)p->h_dry;
	k->hthin = (float)(LBM_THIN * p->h_dry);
	k->ithin = 1.0f / k->hthin;
	k->hpos = (float)(LBM_POS * p->h_dry);
	k->om = (float)p->omega;
	k->omm = (float)p->omega_m;
	k->ghk = (float)(p->g / (p->e * p->e));
	k->Gax = (float)(p->g / (6 * p->e * p->e));
	k->Gdg = 0.25f * k->Gax;
	k->Gai = L->kGi[1];
	k->Gdi = L->kGi[2];
	k->umax2 = (float)(LBM_U_MAX * LBM_U_MAX);
	k->fr2 = (float)(p->fr_max * p->fr_max);
	k->kf = (float)(p->g * p->manning * p->manning * p->dx);
	k->hlim = (float)(LBM_H_LIMIT * p->h_deep);
	k->unit = (float)L->unit;
	k->inv = (float)(1.0 / L->unit);
	lbm_kernel_params(L, &c->ks);
	*out = c;
	return WB_OK;
fail:
	cl_lbm_free(c);
	return st;
}

/* ---- LBM block-sparse stepping ------------------------------------------
 * lbm.c's rule (docs/scale.md, "Block-sparse LBM stepping") on the device:
 * before each step lbm_blk_run lists the blocks to step (wet or next to a
 * wet block, holding a special, or within one cell of a ghost cell with a
 * nonzero bit) and the sleeping blocks whose output buffer may not be
 * zero; lbm_step runs over the first (block-index indirection), ORs the
 * output of each block into its wet flag and clears the blocks of the
 * second (in its first launch of the step). The counts stay on the device: both launch a fixed number of
 * work-groups that read them and loop over the lists, so the host never
 * waits for the device within a step (a blocking read of the counts each
 * step idled the device for the round trip and the launches after it). Every block starts as wet in
 * both buffers, so the first step runs everything and the flags are exact
 * from then on. */

/* The block-sparse launches' shape: work-groups of 32 columns by
 * CL_BLK_ROWS rows of a block, CL_BLK_GROUPS group columns per compute
 * unit (each on every such column's block of the list). */
#ifndef CL_BLK_ROWS
#define CL_BLK_ROWS 4
#endif
#ifndef CL_BLK_GROUPS
#define CL_BLK_GROUPS 16
#endif

static enum wb_status lbm_sparse_create(struct cl_lbm *c, struct wb_diags *d)
{
	struct cl_env *e = c->env;
	struct lbm *L = &c->L;
	cl_int err = CL_SUCCESS;
	c->nbx = (L->nx + 31) / 32;
	c->nby = (L->ny + 31) / 32;
	const size_t nb = (size_t)c->nbx * c->nby;
	size_t wg = 0;
	clGetKernelWorkGroupInfo(c->k_step, e->dev, CL_KERNEL_WORK_GROUP_SIZE,
				 sizeof(wg), &wg, NULL);
	c->sp = L->sparse && wg >= 32 && L->sb_keep;
	if (!(c->k_brun = clCreateKernel(e->prog, "lbm_blk_run", &err)))
		return cl_fail(d, err, "lbm_blk_run");
	if (!(c->k_bedge = clCreateKernel(e->prog, "lbm_blk_edge", &err)))
		return cl_fail(d, err, "lbm_blk_edge");
	if (!(c->k_bsmp = clCreateKernel(e->prog, "lbm_blk_sample", &err)))
		return cl_fail(d, err, "lbm_blk_sample");
	if (!(c->k_macb = clCreateKernel(e->prog, "lbm_macro_blk", &err)))
		return cl_fail(d, err, "lbm_macro_blk");
	if (!(c->k_accb = clCreateKernel(e->prog, "lbm_accum_blk", &err)))
		return cl_fail(d, err, "lbm_accum_blk");
	size_t wm = 0, wa = 0;
	clGetKernelWorkGroupInfo(c->k_macb, e->dev, CL_KERNEL_WORK_GROUP_SIZE,
				 sizeof(wm), &wm, NULL);
	clGetKernelWorkGroupInfo(c->k_accb, e->dev, CL_KERNEL_WORK_GROUP_SIZE,
				 sizeof(wa), &wa, NULL);
	c->sly = wm >= 32 * CL_BLK_ROWS && wa >= 32 * CL_BLK_ROWS ?
		CL_BLK_ROWS : 1; /* as bly below */
	/* enough groups to fill the device several times over; the rest
	 * of a short list's groups return at once */
	cl_uint cu = 1;
	clGetDeviceInfo(e->dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(cu), &cu,
			NULL);
	c->bgroups = (int)(cu > 0 ? CL_BLK_GROUPS * cu : CL_BLK_GROUPS);
	/* the step's work-groups: 32 columns by 4 rows of a block where the
	 * kernel allows 128 items (a group of one 32-item row held one warp,
	 * and NVIDIA's limit of 32 groups per multiprocessor then left half
	 * its warp slots empty); the same cells whatever the shape */
	c->bly = wg >= 32 * CL_BLK_ROWS ? CL_BLK_ROWS : 1;
	if ((size_t)c->bgroups > nb)
		c->bgroups = (int)nb > 0 ? (int)nb : 1;
	cl_uint *keep = malloc(nb * sizeof(cl_uint));
	if (!keep)
		return wb_fail(d, WB_EIO, NULL, "opencl: out of memory");
	for (size_t b = 0; b < nb; b++) /* the host's blocks are the same */
		keep[b] = L->sb_keep ? L->sb_keep[b] : 1;
	const cl_uint one = 1;
	if (!(c->b_wet[0] = buf_new(e, nb * sizeof(cl_uint), &err)) ||
	    !(c->b_wet[1] = buf_new(e, nb * sizeof(cl_uint), &err)) ||
	    !(c->b_keep = buf_new(e, nb * sizeof(cl_uint), &err)) ||
	    !(c->b_list = buf_new(e, nb * sizeof(cl_int), &err)) ||
	    !(c->b_elist = buf_new(e, nb * sizeof(cl_int), &err)) ||
	    !(c->b_cnt = buf_new(e, 4 * sizeof(cl_int), &err)) ||
	    !(c->b_acc = buf_new(e, sizeof(cl_ulong), &err)) ||
	    !(c->b_slist = buf_new(e, nb * sizeof(cl_int), &err)) ||
	    !(c->b_scnt = buf_new(e, sizeof(cl_int), &err)) ||
	    !(c->b_estamp = buf_new(e, nb * sizeof(cl_uint), &err)))
		goto out;
	err = buf_write(e, c->b_keep, 0, nb * sizeof(cl_uint), keep);
	if (err == CL_SUCCESS)
		err = buf_zero(e, c->b_cnt, 4 * sizeof(cl_int));
	if (err == CL_SUCCESS)
		err = buf_zero(e, c->b_acc, sizeof(cl_ulong));
	if (err == CL_SUCCESS)
		err = buf_zero(e, c->b_estamp, nb * sizeof(cl_uint));
	c->estamp = 0;
	for (int k = 0; k < 2 && err == CL_SUCCESS; k++)
		err = clEnqueueFillBuffer(e->q, c->b_wet[k], &one, sizeof(one), 0,
					  nb * sizeof(cl_uint), 0, NULL, NULL);
out:
	free(keep);
	if (err != CL_SUCCESS)
		return cl_fail(d, err, "setting up the LBM block lists");
	return WB_OK;
}

/* The block rows [*br0, *br1) that this band's list kernels look at: the
 * band's and one on each side (one process: all). */
static void lbm_band_brows(const struct cl_lbm *c, int *br0, int *br1)
{
	const struct lbm *L = &c->L;
	cl_int J0, J1;
	wb_par_band(L->par, L->ny, &J0, &J1);
	*br0 = J0 / 32 > 0 ? J0 / 32 - 1 : 0;
	*br1 = (J1 - 1) / 32 + 2 < c->nby ? (J1 - 1) / 32 + 2 : c->nby;
}

/* lbm_blk_edge on f[cur], h[cur] (their ghosts filled) with a new stamp:
 * the edge blocks beside a nonzero ghost cell, for lbm_blk_live, over the
 * padded rows of the block rows [br0, br1) and their rings (the north
 * and south ghost rows where those block rows reach them); reset: the
 * lists' counts zeroed for lbm_blk_run, as before a step. */
static cl_int lbm_enq_edge(struct cl_lbm *c, int br0, int br1, int reset)
{
	const struct lbm *L = &c->L;
	const cl_int W = L->W, nx = L->nx, ny = L->ny, nbx = c->nbx,
		     nby = c->nby, r0 = 32 * br0,
		     r1 = 32 * br1 + 2 < L->H ? 32 * br1 + 2 : L->H;
	const cl_uint stamp = ++c->estamp;
	cl_kernel k = c->k_bedge;
	cl_int err = ARG(k, 0, c->f[c->cur]);
	err |= ARG(k, 1, c->h[c->cur]);
	err |= ARG(k, 2, c->N);
	err |= ARG(k, 3, W);
	err |= ARG(k, 4, nx);
	err |= ARG(k, 5, ny);
	err |= ARG(k, 6, nbx);
	err |= ARG(k, 7, nby);
	err |= ARG(k, 8, r0);
	err |= ARG(k, 9, r1);
	err |= ARG(k, 10, c->b_estamp);
	err |= ARG(k, 11, stamp);
	const cl_int north = br0 == 0, south = br1 == nby, rs = reset;
	err |= ARG(k, 12, north);
	err |= ARG(k, 13, south);
	err |= ARG(k, 14, c->b_cnt);
	err |= ARG(k, 15, c->b_acc);
	err |= ARG(k, 16, rs);
	const size_t n = 2 * (size_t)(r1 > r0 ? r1 - r0 : 0) +
			 (size_t)(north + south) * (size_t)W;
	if (err == CL_SUCCESS)
		err = run1d(c->env, k, n > 0 ? n : 1);
	return err;
}

/* The lists of this step (after the ghost fill), on the device: the
 * blocks to step in b_list (count b_cnt[0]); with the exchange behind
 * the interior (ovl), those with a row among the band's first or last
 * LBM_PAR_EDGE rows in b_elist instead (b_cnt[3]); the sleeping blocks
 * to clear from the back of b_list (b_cnt[1]), cleared by the step
 * kernel's first launch (lbm_enq_step). */
static cl_int lbm_sparse_lists(struct cl_lbm *c)
{
	struct cl_env *e = c->env;
	const struct lbm *L = &c->L;
	const cl_int nx = L->nx, ny = L->ny, nbx = c->nbx, nby = c->nby;
	cl_int err = CL_SUCCESS;
	/* several processes: the band's block rows and one on each side
	 * (their flags cleared before the exchange's scatter sets those of
	 * the halo; the blocks beyond are read by no kernel of this band) */
	int br0, br1;
	lbm_band_brows(c, &br0, &br1);
	if (err == CL_SUCCESS)
		err = lbm_enq_edge(c, br0, br1, 1);
	cl_kernel k = c->k_brun;
	err |= ARG(k, 0, c->b_wet[c->cur]);
	err |= ARG(k, 1, c->b_wet[!c->cur]);
	err |= ARG(k, 2, c->b_keep);
	err |= ARG(k, 3, c->b_estamp);
	err |= ARG(k, 4, c->estamp);
	err |= ARG(k, 5, nx);
	err |= ARG(k, 6, ny);
	err |= ARG(k, 7, nbx);
	err |= ARG(k, 8, nby);
	err |= ARG(k, 9, c->b_list);
	err |= ARG(k, 10, c->b_cnt);
	cl_int J0, J1; /* several processes: this band's rows (par.h) */
	wb_par_band(L->par, ny, &J0, &J1);
	err |= ARG(k, 11, J0);
	err |= ARG(k, 12, J1);
	const cl_int edge = c->ovl ? LBM_PAR_EDGE : 0;
	err |= ARG(k, 13, c->b_elist);
	err |= ARG(k, 14, edge);
	size_t go = (size_t)br0 * nbx,
	       gn = round_up((size_t)(br1 - br0) * nbx, 64);
	if (err == CL_SUCCESS && br1 > br0)
		err = enq_nd(e, k, 1, &go, &gn, NULL);
	return err;
}

/* Ghost ring on f[cur], h[cur] at the current ramp: pass 1 on the edges,
 * then the corners (they may copy an edge ghost), then the closures (they
 * read periodic and mirror ghosts), as lbm_fill_ghosts orders them. */
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
	err |= ARG(k, 4, c->gk);
	err |= ARG(k, 5, c->gi);
	err |= ARG(k, 6, c->gf);
	err |= ARG(k, 9, c->n1);
	err |= ARG(k, 10, c->N);
	err |= ARG(k, 11, W);
	err |= ARG(k, 12, H);
	err |= ARG(k, 13, hd);
	err |= ARG(k, 14, ev);
	err |= ARG(k, 15, c->kp.unit);
	err |= ARG(k, 16, c->kp.inv);
	err |= set_real(e, k, 17, lbm_ramp(L));
	err |= ARG(k, 18, c->gH);
	err |= ARG(k, 19, c->zi);
	err |= ARG(k, 20, c->ks.K);
	err |= ARG(k, 21, c->ks.kinv);
	err |= ARG(k, 22, c->h[L->bed_lvl ? !c->cur : c->cur]);
	const cl_int lim[4] = { 0, c->n1e, c->n1, c->n1 + c->n2 };
	for (int r = 0; r < 3 && err == CL_SUCCESS; r++) {
		if (lim[r + 1] <= lim[r])
			continue;
		err |= ARG(k, 7, lim[r]);
		err |= ARG(k, 8, lim[r + 1]);
		if (err == CL_SUCCESS)
			err = run1d(e, k, (size_t)(lim[r + 1] - lim[r]));
	}
	return err;
}

static cl_int cl_fv_step(struct cl_lbm *c);
static cl_int cl_fv_mark(struct cl_lbm *c);
static cl_int cl_fv_macro(struct cl_lbm *c, int slot);

static cl_int lbm_enq_rows(struct cl_lbm *c, cl_kernel k, int j0, int j1);
static cl_int lbm_enq_special(struct cl_lbm *c, cl_float hd, int from, int to);
static int cl_par_setup(struct cl_lbm *c);
static cl_int lbm_par_gather_early(struct cl_lbm *c);

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
		err |= ARG(k, 10, c->kp.Gai);
		err |= ARG(k, 11, c->kp.Gdi);
		err |= ARG(k, 12, c->acc_fin);
		err |= ARG(k, 13, c->acc_fout);
		err |= ARG(k, 14, c->zi);
		err |= ARG(k, 15, c->ks.K);
		err |= ARG(k, 16, c->ks.kinv);
		if (err == CL_SUCCESS)
			err = run1d(e, k, (size_t)c->nf);
		if (err != CL_SUCCESS)
			return err;
	}
	cl_kernel k;
	k = c->k_step;
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
	err |= ARG(k, 10, c->ks);
	err |= ARG(k, 11, c->clamp_acc);
	err |= ARG(k, 12, c->bad);
	err |= ARG(k, 13, step);
	cl_int sparse = c->sp, nbx = c->nbx, slx = (cl_int)c->lx, which = 0;
	if (L->par && !c->pbuf && cl_par_setup(c))
		return CL_OUT_OF_HOST_MEMORY;
	if (sparse && err == CL_SUCCESS)
		err = lbm_sparse_lists(c);
	else
		c->sp_cells += (long long)nx * ny;
	err |= ARG(k, 14, c->b_list);
	err |= ARG(k, 15, sparse);
	err |= ARG(k, 16, nbx);
	err |= ARG(k, 17, slx);
	err |= ARG(k, 18, c->b_wet[!c->cur]);
	cl_int J0, J1; /* several processes: this band's rows (par.h) */
	wb_par_band(L->par, ny, &J0, &J1);
	err |= ARG(k, 19, J0);
	err |= ARG(k, 20, J1);
	err |= ARG(k, 21, c->zi);
	err |= ARG(k, 22, c->b_cnt);
	err |= ARG(k, 23, which);
	/* the step's first launch clears the sleeping blocks that
	   lbm_blk_run listed (lbm_sparse_lists) */
	const cl_int znb = sparse ? c->nbx * c->nby : 0, zoff = 0;
	err |= ARG(k, 24, c->b_list);
	err |= ARG(k, 25, znb);
	if (err != CL_SUCCESS)
		return err;
	size_t gs[2] = { round_up((size_t)nx, c->lx), (size_t)(J1 - J0) },
	       ls[2] = { c->lx, 1 }, go[2] = { 0, (size_t)J0 };
	if (sparse) { /* whole blocks; the kernel keeps to the band's rows */
		gs[0] = 32 * (size_t)c->bgroups;
		gs[1] = 32;
		ls[0] = 32;
		ls[1] = (size_t)c->bly;
	}
	if (c->ovl) {
		/* the band's edge rows (by rows; block-sparse: the blocks
		 * with an edge row, lbm_sparse_lists) and their specials,
		 * their records on their way to the host, then the interior,
		 * which steps while the records go to the neighbours
		 * (lbm_par_cells; the pull step writes only the cells it is
		 * launched on) */
		const int E = LBM_PAR_EDGE;
		const cl_int edge_list = 3; /* b_cnt[3] */
		if (sparse) {
			err = ARG(k, 14, c->b_elist);
			err |= ARG(k, 23, edge_list);
			if (err == CL_SUCCESS)
				err = enq_nd(e, k, 2, NULL, gs, ls);
		} else {
			err = lbm_enq_rows(c, k, J0, J0 + E);
			if (err == CL_SUCCESS)
				err = lbm_enq_rows(c, k, J1 - E, J1);
		}
		if (err == CL_SUCCESS)
			err = lbm_enq_special(c, hd, 0, c->nsp_e);
		if (err == CL_SUCCESS)
			err = lbm_par_gather_early(c);
		if (err == CL_SUCCESS && sparse) {
			err = ARG(k, 14, c->b_list);
			err |= ARG(k, 23, which);
			err |= ARG(k, 25, zoff); /* cleared by the first */
			if (err == CL_SUCCESS)
				err = enq_nd(e, k, 2, NULL, gs, ls);
		} else if (err == CL_SUCCESS) {
			err = lbm_enq_rows(c, k, J0 + E, J1 - E);
		}
		if (err == CL_SUCCESS)
			err = lbm_enq_special(c, hd, c->nsp_e, c->nsp);
		if (err == CL_SUCCESS)
			err = clFlush(e->q);
		if (err != CL_SUCCESS)
			return err;
		goto swap;
	}
	if (gs[0] > 0)
		err = enq_nd(e, k, 2, J0 && !sparse ? go : NULL, gs, ls);
	if (err != CL_SUCCESS)
		return err;
	/* the hybrid: its FV update replaces the kernel's result in the FV
	 * cells before the sources and sinks act (lbm_step's order) */
	if (L->hybrid && (err = cl_fv_step(c)) != CL_SUCCESS)
		return err;
	if ((err = lbm_enq_special(c, hd, 0, c->nsp)) != CL_SUCCESS)
		return err;
swap:
	c->cur = !c->cur;
	L->cur = c->cur;
	L->bed_lvl = 1;
	L->step++;
	L->time += L->p.dt;
	/* the hybrid: the FV cells of the next step (several processes:
	 * after the exchange, cl_lbm_enqueue) */
	if (L->hybrid && !L->par)
		return cl_fv_mark(c);
	return CL_SUCCESS;
}

/* The step kernel k (its arguments set) over interior rows [j0, j1). */
static cl_int lbm_enq_rows(struct cl_lbm *c, cl_kernel k, int j0, int j1)
{
	size_t gs[2] = { round_up((size_t)c->L.nx, c->lx), (size_t)(j1 - j0) },
	       ls[2] = { c->lx, 1 }, go[2] = { 0, (size_t)j0 };
	if (j1 <= j0 || gs[0] == 0)
		return CL_SUCCESS;
	return enq_nd(c->env, k, 2, j0 ? go : NULL, gs, ls);
}

/* The sources, held levels and drains si[from .. to) after the step
 * kernel (lbm_special on f[!cur]). */
static cl_int lbm_enq_special(struct cl_lbm *c, cl_float hd, int from, int to)
{
	struct cl_env *e = c->env;
	struct lbm *L = &c->L;
	cl_int err = CL_SUCCESS, W = L->W;
	if (to > from) {
		cl_kernel k = c->k_spec;
		cl_float ghk = c->kp.ghk;
		err |= ARG(k, 0, c->f[!c->cur]);
		err |= ARG(k, 1, c->si);
		err |= ARG(k, 2, c->sf);
		err |= ARG(k, 3, to);
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
		err |= ARG(k, 14, c->h[c->cur]);
		err |= ARG(k, 15, c->z);
		err |= ARG(k, 16, c->c);
		err |= ARG(k, 17, W);
		err |= ARG(k, 18, c->kp.Gai);
		err |= ARG(k, 19, c->kp.Gdi);
		err |= ARG(k, 20, c->zi);
		err |= ARG(k, 21, c->ks.K);
		err |= ARG(k, 22, c->ks.kinv);
		size_t off = (size_t)from, g = round_up((size_t)(to - from), 64);
		if (err == CL_SUCCESS)
			err = enq_nd(e, k, 1, from ? &off : NULL, &g, NULL);
	}
	return err;
}

/* The fetch of the plan's records from f and h into pbuf (par.h's
 * layout: this rank's ring cells, the count and numbers of the halo's
 * nonzero chunks, their slots) and the read of its first part into pin
 * without waiting (event prd): the ring, the count, the numbers and the
 * first kread slots. */
static cl_int lbm_par_fetch(struct cl_lbm *c, cl_mem f, cl_mem h)
{
	struct cl_env *e = c->env;
	const struct wb_par_plan *q = &c->plan;
	const cl_int N = c->N, nh = (cl_int)q->nh, nch = (cl_int)q->nch,
		     zo = (cl_int)c->zo, m = (cl_int)(c->zo / 10), o = 2 * nh;
	const cl_uint zero = 0;
	cl_int err = CL_SUCCESS;
	if (m > 0) { /* the ring cells */
		cl_kernel k = c->k_pack;
		err |= ARG(k, 0, f);
		err |= ARG(k, 1, h);
		err |= ARG(k, 2, N);
		err |= ARG(k, 3, c->pg);
		err |= ARG(k, 4, o);
		err |= ARG(k, 5, m);
		err |= ARG(k, 6, c->pbuf);
		if (err == CL_SUCCESS)
			err = run1d(e, k, (size_t)m);
	}
	if (err == CL_SUCCESS)
		err = clEnqueueFillBuffer(e->q, c->pbuf, &zero, sizeof(zero),
					  (size_t)zo * 4, sizeof(zero), 0, NULL,
					  NULL);
	cl_kernel k = c->k_zpack;
	err |= ARG(k, 0, f);
	err |= ARG(k, 1, h);
	err |= ARG(k, 2, N);
	err |= ARG(k, 3, c->pg);
	err |= ARG(k, 4, nh);
	err |= ARG(k, 5, nch);
	err |= ARG(k, 6, c->pbuf);
	err |= ARG(k, 7, zo);
	if (err == CL_SUCCESS) {
		size_t g = (size_t)(2 * nch) * WB_PAR_CHUNK, l = WB_PAR_CHUNK;
		err = enq_nd(e, k, 1, NULL, &g, &l);
	}
	const size_t head = ((size_t)zo + 2 + 2 * (size_t)nch) * 4,
		     crec = WB_PAR_CHUNK * (LBM_Q + 1) * 4;
	if (err == CL_SUCCESS)
		err = clEnqueueReadBuffer(e->q, c->pbuf, CL_FALSE, 0,
					  head + (size_t)c->kread * crec, c->pin,
					  0, NULL, &c->prd);
	return err;
}

/* wb_par_cells on f[cur] and h[cur] (src/cl/par.cl): the plan's records
 * (par.h's layouts), with one copy each way while the halo's chunks fit
 * in kread slots. */
static int lbm_par_cells(void *user, int write, const int *cells, long n,
			 void *buf, size_t bytes)
{
	struct cl_lbm *c = user;
	struct cl_env *e = c->env;
	const struct wb_par_plan *q = &c->plan;
	const long nch = q->nch;
	const size_t head = ((size_t)c->zo + 2 + 2 * (size_t)nch) * 4,
		     crec = WB_PAR_CHUNK * (LBM_Q + 1) * 4;
	cl_int err = CL_SUCCESS, ni = (cl_int)n;
	(void)cells; /* the plan's lists, uploaded by cl_par_setup */
	if (!write) {
		/* gathered and read behind the edge rows (lbm_enq_step), or
		   now */
		if (!c->ovl)
			err = lbm_par_fetch(c, c->f[c->cur], c->h[c->cur]);
		if (err == CL_SUCCESS)
			err = c->prd ? clWaitForEvents(1, &c->prd) : CL_INVALID_EVENT;
		if (c->prd)
			clReleaseEvent(c->prd);
		c->prd = NULL;
		if (err != CL_SUCCESS || buf != c->pin)
			return -1;
		uint32_t cnt;
		memcpy(&cnt, (char *)buf + (size_t)c->zo * 4, 4);
		if (cnt > 2 * (uint32_t)nch || head + cnt * crec > bytes)
			return -1;
		if (cnt > (uint32_t)c->kread) /* the rest of the slots */
			err = buf_read(e, c->pbuf, head + (size_t)c->kread * crec,
				       (cnt - (size_t)c->kread) * crec,
				       (char *)buf + head + (size_t)c->kread * crec);
		/* the next read: twice this step's chunks, 64 at least */
		long kr = 2 * (long)cnt > 64 ? 2 * (long)cnt : 64;
		c->kread = kr < 2 * nch ? kr : 2 * nch;
		return err == CL_SUCCESS ? 0 : -1;
	}
	/* not waited for: buf (plan.buf) is written again only after the
	   next step's read or clFinish, which the queue runs after this
	   copy */
	const int me = c->L.par->rank;
	const cl_int np = (me > 0) + (me + 1 < c->L.par->size),
		     nh = (cl_int)q->nh, ch = (cl_int)nch,
		     mo = (cl_int)((q->ns - np * q->nh) * (LBM_Q + 1));
	cl_kernel k = c->k_unpack;
	if (bytes)
		err = clEnqueueWriteBuffer(e->q, c->pbuf, CL_FALSE, 0, bytes, buf,
					   0, NULL, NULL);
	cl_int sp = c->sp, W = c->L.W, nx = c->L.nx, ny = c->L.ny,
	       nbx = c->nbx;
	err |= ARG(k, 0, c->f[c->cur]);
	err |= ARG(k, 1, c->h[c->cur]);
	err |= ARG(k, 2, c->N);
	err |= ARG(k, 3, c->ps);
	err |= ARG(k, 4, ni);
	err |= ARG(k, 5, c->pbuf);
	err |= ARG(k, 6, nh);
	err |= ARG(k, 7, np);
	err |= ARG(k, 8, ch);
	err |= ARG(k, 9, mo);
	err |= ARG(k, 10, c->b_wet[c->cur]);
	err |= ARG(k, 11, sp);
	err |= ARG(k, 12, W);
	err |= ARG(k, 13, nx);
	err |= ARG(k, 14, ny);
	err |= ARG(k, 15, nbx);
	if (err == CL_SUCCESS && n > 0)
		err = run1d(e, k, (size_t)n);
	return err == CL_SUCCESS ? 0 : -1;
}

/* Several processes (par.h), once, before the first step: the plan of
 * what the band's next step and its edge ghosts read from the
 * neighbours' rows (wb_par_plan; its cell lists uploaded), and whether
 * the exchange runs behind the interior rows (ovl). */
static int cl_par_setup(struct cl_lbm *c)
{
	struct wb_par *p = c->L.par;
	struct cl_env *e = c->env;
	struct wb_par_plan *q = &c->plan;
	cl_int err = CL_SUCCESS;
	/* ring rows: only periodic north and south edges read the
	   other end's rows */
	int per = 0;
	for (int x = 0; x < c->L.W; x++)
		per |= c->L.gkind[x] == LBM_G_PERIODIC;
	if (wb_par_plan_make(p, c->L.nx, c->L.ny, per, q))
		return -1;
	/* pbuf: the gathered records or those to scatter (par.h) */
	const size_t rec = (LBM_Q + 1) * 4, crec = WB_PAR_CHUNK * rec,
		     zs = 2 * (size_t)q->nch * (4 + crec) + 8;
	c->zo = (q->ng - 2 * q->nh) * (LBM_Q + 1);
	c->kread = 64 < 2 * q->nch ? 64 : 2 * q->nch;
	long most = q->ng > q->ns ? q->ng : q->ns;
	if (!(c->k_pack = clCreateKernel(e->prog, "par_cells_gather", &err)) ||
	    !(c->k_unpack = clCreateKernel(e->prog, "par_cells_scatter", &err)) ||
	    !(c->k_zpack = clCreateKernel(e->prog, "par_chunks_gather", &err)) ||
	    !(c->pg = buf_new(e, (size_t)q->ng * sizeof(int), &err)) ||
	    !(c->ps = buf_new(e, (size_t)(q->ns + 1) * sizeof(int), &err)) ||
	    buf_write(e, c->pg, 0, (size_t)q->ng * sizeof(int), q->gather) ||
	    buf_write(e, c->ps, 0, (size_t)q->ns * sizeof(int), q->scatter) ||
	    !(c->pbuf = buf_new(e, (size_t)most * rec + zs, &err)))
		return -1;
	/* the exchange behind the interior rows: when every cell it sends
	 * lies in the band's first or last LBM_PAR_EDGE rows and there are
	 * interior rows (the dense step by rows, the block-sparse step by
	 * blocks; no hybrid; WB_CL_OVERLAP=0: off, to compare) */
	const char *env = getenv("WB_CL_OVERLAP");
	int J0, J1;
	wb_par_band(p, c->L.ny, &J0, &J1);
	int ok = !(env && env[0] == '0') && !c->L.hybrid &&
		 J1 - J0 > 2 * LBM_PAR_EDGE;
	for (long i = 0; ok && i < c->plan.ng; i++) {
		const int j = (int)(c->plan.gather[i] / c->L.W) - 1;
		ok = j >= J0 && j < J1 && lbm_par_edge_row(&c->L, j + 1);
	}
	/* the records' memory, pinned where the driver does it (pinm) */
	const size_t pb = wb_par_plan_bytes(p, q, LBM_Q + 1, 4) + (LBM_Q + 1) * 4;
	void *hp = NULL;
	c->pinm = clCreateBuffer(e->ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
				 pb, NULL, &err);
	if (c->pinm)
		hp = clEnqueueMapBuffer(e->q, c->pinm, CL_TRUE,
					CL_MAP_READ | CL_MAP_WRITE, 0, pb, 0,
					NULL, NULL, &err);
	if (!hp && c->pinm) { /* plain memory then */
		clReleaseMemObject(c->pinm);
		c->pinm = NULL;
	}
	q->buf = hp ? hp : malloc(pb);
	q->cap = pb;
	q->ext = hp != NULL;
	if (!q->buf)
		return -1;
	c->pin = q->buf;
	c->ovl = ok;
	return 0;
}

/* The gather of lbm_par_cells behind the edge rows (lbm_enq_step), from
 * the step's output. */
static cl_int lbm_par_gather_early(struct cl_lbm *c)
{
	return lbm_par_fetch(c, c->f[!c->cur], c->h[!c->cur]);
}

/* Several processes: after a step, the exchange of the plan. */
static int lbm_par_step(struct cl_lbm *c)
{
	return wb_par_plan_exchange(c->L.par, &c->plan, LBM_Q + 1, 4,
				    lbm_par_cells, c);
}

static enum wb_status lbm_par_failed(const struct cl_lbm *c,
				     struct wb_diags *d)
{
	return wb_fail(d, WB_EIO, NULL,
		       "lbm (opencl): step %ld: exchange between processes failed",
		       c->L.step);
}

enum wb_status cl_lbm_enqueue(struct cl_lbm *c, long n, struct wb_diags *d)
{
	for (long s = 0; s < n; s++) {
		cl_int err = lbm_enq_step(c);
		if (c->L.par && c->L.par->failed)
			return lbm_par_failed(c, d);
		if (err != CL_SUCCESS)
			return cl_fail(d, err, "enqueueing an LBM step");
		if (!c->L.par)
			continue;
		/* the exchange's cost (docs/mpi.md): timed from the end
		 * of the step kernel, which its first copy waits for
		 * anyway; behind the interior rows (ovl): the host's time
		 * in it, waiting for the edge rows' records included */
		if (!c->ovl && (err = clFinish(c->env->q)) != CL_SUCCESS)
			return cl_fail(d, err, "stepping the LBM");
		const double t0 = now_s();
		if (lbm_par_step(c))
			return lbm_par_failed(c, d);
		c->L.par->xsecs += now_s() - t0;
		/* the hybrid's marking reads the halo rows' depths and the
		 * ghosts the exchange's ring columns close (docs/mpi.md) */
		if (c->L.hybrid && (err = cl_fv_mark(c)) != CL_SUCCESS)
			return c->L.par->failed ? lbm_par_failed(c, d) :
				cl_fail(d, err, "marking the hybrid's FV cells");
	}
	return WB_OK;
}

/* lbm_macro's arguments 0 .. 17 of kernel k (lbm_macro, lbm_macro_blk):
 * the state f[cur], h[cur] into mh, mu[slot], mv[slot]. */
static cl_int lbm_macro_args(struct cl_lbm *c, cl_kernel k, int slot)
{
	const struct lbm *L = &c->L;
	cl_int W = L->W, nx = L->nx, ny = L->ny;
	cl_float ev = (cl_float)L->p.e;
	cl_int err = ARG(k, 0, c->f[c->cur]);
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
	return err;
}

/* The held levels and drains' own values over lbm_macro's (lbm_macro_fix). */
static cl_int lbm_enq_mfix(struct cl_lbm *c, int slot)
{
	if (!c->nsp)
		return CL_SUCCESS;
	cl_kernel k = c->k_mfix;
	cl_int W = c->L.W, nx = c->L.nx;
	cl_int err = ARG(k, 0, c->si);
	err |= ARG(k, 1, c->sf);
	err |= ARG(k, 2, c->nsp);
	err |= ARG(k, 3, W);
	err |= ARG(k, 4, nx);
	err |= ARG(k, 5, c->mh);
	err |= ARG(k, 6, c->mu[slot]);
	err |= ARG(k, 7, c->mv[slot]);
	if (err == CL_SUCCESS)
		err = run1d(c->env, k, (size_t)c->nsp);
	return err;
}

/* Macroscopic fields into the device buffers mh, mu[slot], mv[slot]. */
static cl_int lbm_enq_macro(struct cl_lbm *c, int slot)
{
	cl_int err = lbm_enq_ghosts(c);
	if (err != CL_SUCCESS)
		return err;
	const struct lbm *L = &c->L;
	cl_kernel k = c->k_macro;
	if ((err = lbm_macro_args(c, k, slot)) != CL_SUCCESS)
		return err;
	size_t gs[2] = { round_up((size_t)L->nx, 16), round_up((size_t)L->ny, 4) };
	size_t ls[2] = { 16, 4 };
	err = enq_nd(c->env, k, 2, NULL, gs, ls);
	/* the hybrid's FV cells show their own state (lbm_macro) */
	if (err == CL_SUCCESS && L->hybrid)
		err = cl_fv_macro(c, slot);
	if (err == CL_SUCCESS)
		err = lbm_enq_mfix(c, slot);
	return err;
}

/*
 * One sample of the window mean (lbm_solve's sample_add): the macroscopic
 * fields into mh, mu[slot], mv[slot], added to sh, su, sv. Block-sparse
 * (the pure LBM): only on the blocks of this band that the next step runs
 * (lbm_blk_sample); everywhere else lbm_macro gives +0 (every population
 * it pulls is 0: h = max(+0, +0), u = 0 (+0 U) e), and adding +0 to a sum
 * that started at +0 leaves it as it is, so the sums are the dense sums
 * bit for bit; mh, mu[slot], mv[slot] keep stale values there, which only
 * this sample reads (lbm_wmean writes every cell). Several processes:
 * the other bands' rows of the sums are replaced by their owners' at the
 * end (lbm_par_gather, lbm_resid_dev). Dense (and with the hybrid, whose
 * FV cells lbm_enq_macro writes from the host's list): kacc over every
 * cell.
 */
static cl_int lbm_enq_sample(struct cl_lbm *c, int slot, cl_kernel kacc)
{
	struct cl_env *e = c->env;
	const struct lbm *L = &c->L;
	cl_int err;
	if (!c->sp || L->hybrid) {
		const cl_int nni = (cl_int)((size_t)L->nx * L->ny);
		err = lbm_enq_macro(c, slot);
		err |= ARG(kacc, 0, c->mh);
		err |= ARG(kacc, 1, c->mu[slot]);
		err |= ARG(kacc, 2, c->mv[slot]);
		err |= ARG(kacc, 3, c->sh);
		err |= ARG(kacc, 4, c->su);
		err |= ARG(kacc, 5, c->sv);
		err |= ARG(kacc, 6, nni);
		if (err == CL_SUCCESS)
			err = run1d(e, kacc, (size_t)nni);
		return err;
	}
	if ((err = lbm_enq_ghosts(c)) != CL_SUCCESS)
		return err;
	const cl_int nx = L->nx, ny = L->ny, nbx = c->nbx, nby = c->nby;
	cl_int J0, J1; /* several processes: this band's rows (par.h) */
	wb_par_band(L->par, ny, &J0, &J1);
	cl_kernel k = c->k_bsmp;
	err = buf_zero(e, c->b_scnt, sizeof(cl_int));
	int br0, br1;
	lbm_band_brows(c, &br0, &br1);
	if (err == CL_SUCCESS)
		err = lbm_enq_edge(c, br0, br1, 0);
	err |= ARG(k, 0, c->b_wet[c->cur]);
	err |= ARG(k, 1, c->b_keep);
	err |= ARG(k, 2, c->b_estamp);
	err |= ARG(k, 3, c->estamp);
	err |= ARG(k, 4, nx);
	err |= ARG(k, 5, ny);
	err |= ARG(k, 6, nbx);
	err |= ARG(k, 7, nby);
	err |= ARG(k, 8, J0);
	err |= ARG(k, 9, J1);
	err |= ARG(k, 10, c->b_slist);
	err |= ARG(k, 11, c->b_scnt);
	if (err == CL_SUCCESS)
		err = run1d(e, k, (size_t)nbx * nby);
	/* whole blocks, as the step's block-sparse launch */
	size_t gs[2] = { 32 * (size_t)c->bgroups, 32 },
	       ls[2] = { 32, (size_t)c->sly };
	k = c->k_macb;
	err |= lbm_macro_args(c, k, slot);
	err |= ARG(k, 18, c->b_slist);
	err |= ARG(k, 19, c->b_scnt);
	err |= ARG(k, 20, nbx);
	err |= ARG(k, 21, J0);
	err |= ARG(k, 22, J1);
	if (err == CL_SUCCESS)
		err = enq_nd(e, k, 2, NULL, gs, ls);
	if (err == CL_SUCCESS)
		err = lbm_enq_mfix(c, slot);
	k = c->k_accb;
	err |= ARG(k, 0, c->mh);
	err |= ARG(k, 1, c->mu[slot]);
	err |= ARG(k, 2, c->mv[slot]);
	err |= ARG(k, 3, c->sh);
	err |= ARG(k, 4, c->su);
	err |= ARG(k, 5, c->sv);
	err |= ARG(k, 6, nx);
	err |= ARG(k, 7, ny);
	err |= ARG(k, 8, c->b_slist);
	err |= ARG(k, 9, c->b_scnt);
	err |= ARG(k, 10, nbx);
	err |= ARG(k, 11, J0);
	err |= ARG(k, 12, J1);
	if (err == CL_SUCCESS)
		err = enq_nd(e, k, 2, NULL, gs, ls);
	return err;
}

/* Find a diverged cell for the message (after the fact: the step number is
 * the one the kernel flagged). */
static void lbm_report_bad(struct cl_lbm *c, int step, struct wb_diags *d)
{
	const struct lbm *L = &c->L;
	size_t nn = (size_t)L->nx * L->ny;
	float *h = malloc(nn * sizeof(float));
	double hlim = LBM_H_LIMIT * L->p.h_deep;
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
	bad = wb_par_min(c->L.par, bad); /* the first of every band's */
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
/* Water on the device grid in exact integer units (lbm_mass). */
static cl_int lbm_mass_dev(struct cl_lbm *c, long long *mass)
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
	int J0, J1; /* several processes: this band's, then all (exact) */
	wb_par_band(L->par, ny, &J0, &J1);
	for (int j = J0; err == CL_SUCCESS && j < J1; j++)
		m += rows[j];
	free(rows);
	*mass = L->par ? wb_par_sum(L->par, m) : m;
	return err;
}

static cl_int lbm_volume_dev(struct cl_lbm *c, double *vol)
{
	long long m = 0;
	cl_int err = lbm_mass_dev(c, &m);
	*vol = (double)m * c->L.unit * c->L.p.dx * c->L.p.dx;
	return err;
}

/* rel_change of lbm.c: depth hb, previous velocities (u0, v0), new (u1,
 * v1), over cells deeper than h_thin, depth weighted. */
static cl_int lbm_resid_dev(struct cl_lbm *c, cl_mem hb, int p, int q,
			    double *res)
{
	const struct lbm *L = &c->L;
	cl_kernel k = c->k_resid;
	cl_int nx = L->nx, ny = L->ny;
	cl_int err = ARG(k, 0, hb);
	err |= ARG(k, 1, c->mu[p]);
	err |= ARG(k, 2, c->mv[p]);
	err |= ARG(k, 3, c->mu[q]);
	err |= ARG(k, 4, c->mv[q]);
	err |= ARG(k, 5, nx);
	err |= ARG(k, 6, ny);
	err |= ARG(k, 7, c->kp.hthin);
	err |= ARG(k, 8, c->rnum);
	err |= ARG(k, 9, c->rden);
	err |= ARG(k, 10, c->rwet);
	if (err == CL_SUCCESS)
		err = run1d(c->env, k, (size_t)ny);
	double *num = malloc((size_t)ny * sizeof(double));
	double *den = malloc((size_t)ny * sizeof(double));
	double *hs = malloc((size_t)ny * sizeof(double));
	if (!num || !den || !hs)
		err = CL_OUT_OF_HOST_MEMORY;
	if (err == CL_SUCCESS)
		err = read_reals(c->env, c->rnum, (size_t)ny, num);
	if (err == CL_SUCCESS)
		err = read_reals(c->env, c->rden, (size_t)ny, den);
	if (err == CL_SUCCESS)
		err = read_reals(c->env, c->rwet, (size_t)ny, hs);
	if (err == CL_SUCCESS && L->par) /* every band's rows, summed in order */
		err = wb_par_rows(L->par, num, sizeof(double), 1, 0, 0) |
		      wb_par_rows(L->par, den, sizeof(double), 1, 0, 0) |
		      wb_par_rows(L->par, hs, sizeof(double), 1, 0, 0) ?
			CL_OUT_OF_HOST_MEMORY : CL_SUCCESS;
	if (err == CL_SUCCESS) {
		double sn = 0, sd = 0, sh = 0;
		for (int j = 0; j < ny; j++) {
			sn += num[j];
			sd += den[j];
			sh += hs[j];
		}
		sd = MAXD(sd, LBM_RES_FLOOR * LBM_RES_FLOOR * sh);
		*res = sd > 0 ? sqrt(sn / sd) : 0;
	}
	free(num);
	free(den);
	free(hs);
	return err;
}

/* Several processes: the sums of every band's (exact integers). */
static void lbm_par_books(struct wb_par *p, long long *fi, long long *fo,
			  long long *si, long long *so)
{
	*fi = wb_par_sum(p, *fi);
	*fo = wb_par_sum(p, *fo);
	*si = wb_par_sum(p, *si);
	*so = wb_par_sum(p, *so);
}

/* Sum the bookkeeping slots (integer mass units, exact). */
static cl_int lbm_books(struct cl_lbm *c, long long *in, long long *out)
{
	struct cl_env *e = c->env;
	const struct lbm *L = &c->L;
	size_t nf = (size_t)c->nf, ns = (size_t)L->nsp;
	size_t nmax = MAXD(nf, ns) + 1;
	cl_long *t = malloc(nmax * sizeof(cl_long));
	if (!t)
		return CL_OUT_OF_HOST_MEMORY;
	long long si = 0, so = 0, fi = 0, fo = 0;
	/* several processes: the edge ghosts of this band (lbm_lists) */
	cl_int err = buf_read(e, c->acc_fin, 0, nf * sizeof(cl_long), t);
	for (size_t k = 0; err == CL_SUCCESS && k < nf; k++)
		fi += t[k];
	if (err == CL_SUCCESS)
		err = buf_read(e, c->acc_fout, 0, nf * sizeof(cl_long), t);
	for (size_t k = 0; err == CL_SUCCESS && k < nf; k++)
		fo += t[k];
	if (err == CL_SUCCESS)
		err = buf_read(e, c->acc_sin, 0, ns * sizeof(cl_long), t);
	for (size_t k = 0; err == CL_SUCCESS && k < ns; k++)
		si += t[k];
	if (err == CL_SUCCESS)
		err = buf_read(e, c->acc_sout, 0, ns * sizeof(cl_long), t);
	for (size_t k = 0; err == CL_SUCCESS && k < ns; k++)
		so += t[k];
	free(t);
	if (L->par) /* edges and specials: per band */
		lbm_par_books(L->par, &fi, &fo, &si, &so);
	/* the hybrid's books, kept on the host (cl_fv_step) */
	*in = fi + si + c->fv_in;
	*out = fo + so + c->fv_out;
	return err;
}

/* The run's clamp map into L.cmap (lbm_clamp_where reads it, as
 * lbm_solve's, and its total is the run's clamped cell-steps): the
 * device's slots, plus each special's clamps at its cell, over several
 * processes each band's rows from its rank, less what the device counted
 * in FV cells (the host's re-runs, cl_fv_step; the same on every rank). */
static cl_int lbm_where_books(struct cl_lbm *c)
{
	struct cl_env *e = c->env;
	struct lbm *L = &c->L;
	const size_t ns = (size_t)c->nsp;
	cl_int err = buf_read(e, c->clamp_acc, 0, c->ncm * sizeof(cl_uint),
			      L->cmap);
	cl_ulong *u = malloc((ns + 1) * sizeof(cl_ulong));
	if (!u)
		return CL_OUT_OF_HOST_MEMORY;
	if (err == CL_SUCCESS && ns)
		err = buf_read(e, c->acc_scl, 0, ns * sizeof(cl_ulong), u);
	for (size_t k = 0; err == CL_SUCCESS && k < ns; k++) {
		const int n = c->spn[k];
		L->cmap[(size_t)(n / L->W - 1) * L->cnx +
			(n % L->W - 1) / WB_CLAMP_BLOCK] += (uint32_t)u[k];
	}
	free(u);
	if (err == CL_SUCCESS && L->par &&
	    wb_par_rows(L->par, L->cmap, sizeof(uint32_t), L->cnx, 0, 0))
		err = CL_OUT_OF_RESOURCES;
	for (size_t q = 0; err == CL_SUCCESS && q < c->ncm; q++)
		L->cmap[q] -= c->cm_un[q];
	return err;
}


/* ---- the LBM/FV hybrid on the device ------------------------------------ */

/*
 * The hybrid (lbm_fv.c, docs/lbm.md "Supercritical flow") runs its FV
 * update and its marking on the host, the very C code of the CPU bake, on
 * a host copy of the lattice (L.f, L.h) that is current only in the rows
 * read back from the device for the purpose:
 *   after the step kernel (cl_fv_step): f[cur], h[cur], h[!cur] of the rows
 *     within CL_FV_REACH of an FV cell; the host kernel (lbm_kernel_row)
 *     recomputes the FV rows (the same bits as the device: it gives the
 *     whole rows to write back and the clamps the device counted in FV
 *     cells, which lbm_step does not count); lbm_fv_update; the FV rows
 *     of f[!cur], h[!cur] written back; then the device's specials;
 *   after the step (cl_fv_mark): lbm_fv_rows flags the rows that may hold
 *     a candidate (one int per row read back), their f[cur] and the h[cur]
 *     of them and their neighbours are read, lbm_fv_mark_rows marks;
 *   at a sample (cl_fv_macro): the FV rows read again (the macro refills
 *     the ghosts), lbm_fv_state of each FV cell, lbm_fv_put scatters them.
 * Rows without FV cells or candidates cost no transfer. Every read comes
 * after the device work that the CPU bake's read would follow, so the
 * host sees the CPU bake's state and the result is its bytes.
 *
 * Several processes (par.h; docs/mpi.md "The hybrid on OpenCL ranks"):
 * every rank's host runs all of the above on the whole FV list, so the
 * list, the FV cells and the hybrid's books (fv_in, fv_out, cm_un:
 * added once, not summed over the ranks) are every rank's. The segments
 * to read are chosen as in one process (the same on every rank); a rank
 * reads from its device the segments of the padded rows it owns, where
 * its device is current, and the rest come from their owners (fv_fetch,
 * wb_par_sel_rows, by rows); lbm_fv_rows runs over the band's rows and
 * the flags are ORed over the ranks (wb_par_or_rows_n); each rank writes
 * back its own FV segments, before the halo exchange takes them to the
 * neighbours;
 * the marking runs after that exchange (cl_lbm_enqueue): next to a band
 * edge it reads the halo rows and the ghosts their ring columns close.
 */
#ifdef LBM_FV_REACH
#define CL_FV_REACH LBM_FV_REACH
#else
#define CL_FV_REACH 2 /* rows an FV cell's update reads on either side */
#endif

/* The hybrid's packed values (fv_xfer, c->xval) released. */
static void xval_free(struct cl_lbm *c)
{
	if (c->xpin) {
		if (c->xval)
			clEnqueueUnmapMemObject(c->env->q, c->xpin, c->xval, 0,
						NULL, NULL);
		clFinish(c->env->q);
		clReleaseMemObject(c->xpin);
	} else {
		free(c->xval);
	}
	c->xpin = NULL;
	c->xval = NULL;
	c->xvalcap = 0;
}

/* c->xval of at least want words: pinned (a mapped
 * CL_MEM_ALLOC_HOST_PTR buffer, which NVIDIA's driver pins, so that
 * reads and writes go at the bus's speed) where the driver gives one,
 * plain memory otherwise. */
static int xval_grow(struct cl_lbm *c, size_t want)
{
	if (want <= c->xvalcap)
		return 0;
	const size_t n = want + want / 2;
	struct cl_env *e = c->env;
	cl_int err = CL_SUCCESS;
	void *hp = NULL;
	xval_free(c);
	c->xpin = clCreateBuffer(e->ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
				 n * sizeof(cl_uint), NULL, &err);
	if (c->xpin)
		hp = clEnqueueMapBuffer(e->q, c->xpin, CL_TRUE,
					CL_MAP_READ | CL_MAP_WRITE, 0,
					n * sizeof(cl_uint), 0, NULL, NULL, &err);
	if (!hp && c->xpin) { /* plain memory then */
		clReleaseMemObject(c->xpin);
		c->xpin = NULL;
	}
	c->xval = hp ? hp : malloc(n * sizeof(cl_uint));
	if (!c->xval)
		return -1;
	c->xvalcap = n;
	return 0;
}

static void cl_fv_release(struct cl_lbm *c)
{
	cl_kernel *ks[4] = { &c->k_fvrows, &c->k_fvput, &c->k_fvg, &c->k_fvs };
	for (int k = 0; k < 4; k++) {
		if (*ks[k])
			clReleaseKernel(*ks[k]);
		*ks[k] = NULL;
	}
	buf_free(&c->fvsegs);
	buf_free(&c->fvidx);
	buf_free(&c->fvval);
	buf_free(&c->grun);
	buf_free(&c->gval);
	c->gruncap = c->gvalcap = 0;
	uint8_t **bs[7] = { &c->ssel, &c->snear, &c->frf, &c->frh, &c->mwork,
			    &c->rsel, &c->rown };
	for (int k = 0; k < 7; k++) {
		free(*bs[k]);
		*bs[k] = NULL;
	}
	free(c->xrun);
	c->xrun = NULL;
	c->xruncap = 0;
	xval_free(c);
	free(c->fvi);
	free(c->fvv);
	for (int k = 0; k < 3; k++) {
		free(c->xsel[k]);
		free(c->sown[k]);
		c->xsel[k] = c->sown[k] = NULL;
	}
	c->fvi = NULL;
	c->fvv = NULL;
	c->fvcap = 0;
}

static enum wb_status cl_fv_create(struct cl_lbm *c, struct wb_diags *d)
{
	struct cl_env *e = c->env;
	const int H = c->L.H;
	cl_int err = CL_SUCCESS;
	static const char *const kn[4] = { "lbm_fv_rows", "lbm_fv_put",
					   "lbm_fv_gather", "lbm_fv_scatter" };
	cl_kernel *ks[4] = { &c->k_fvrows, &c->k_fvput, &c->k_fvg, &c->k_fvs };
	for (int k = 0; k < 4; k++)
		if (!(*ks[k] = clCreateKernel(e->prog, kn[k], &err)))
			return cl_fail(d, err, kn[k]);
	c->nsg = (c->L.nx + LBM_FV_SEG - 1) / LBM_FV_SEG;
	const size_t ns = (size_t)H * c->nsg;
	c->ssel = calloc(ns, 1);
	c->snear = calloc(ns, 1);
	c->frf = calloc(ns, 1);
	c->frh = calloc(ns, 1);
	c->mwork = calloc(3 * ns, 1);
	c->rsel = calloc((size_t)H, 1);
	if (!c->ssel || !c->snear || !c->frf || !c->frh || !c->mwork || !c->rsel)
		return wb_fail(d, WB_EIO, NULL, "opencl: out of memory");
	/* several processes: the padded rows to exchange and the segments
	 * this rank reads from its device, per request (fv_fetch) */
	for (int k = 0; c->L.par && k < 3; k++)
		if (!(c->xsel[k] = calloc((size_t)H, 1)) ||
		    !(c->sown[k] = calloc(ns, 1)))
			return wb_fail(d, WB_EIO, NULL, "opencl: out of memory");
	if (c->L.par) {
		if (!(c->rown = calloc((size_t)H, 1)))
			return wb_fail(d, WB_EIO, NULL, "opencl: out of memory");
		for (int R = 0; R < H; R++)
			c->rown[R] = (uint8_t)wb_par_owns_cell(c->L.par,
							       (long)R * c->L.W,
							       c->L.W, c->L.ny);
	}
	if (!(c->fvsegs = buf_new(e, ns, &err)))
		return cl_fail(d, err, "allocating the hybrid's segment flags");
	return WB_OK;
}

/* ---- segments: the hybrid's unit of transfer --------------------------- */

/*
 * The host copy is current where it was read, and what is read goes by
 * row segments of LBM_FV_SEG interior columns (lbm.h; the ghost columns
 * with the first and last segment of a row): a selection is one byte per
 * segment of each padded row (H x nsg). The device's lbm_fv_rows flags
 * the segments that may hold a core cell of the marking, and the FV
 * cells' segments are the update's; around them the host reads the
 * segments the code it runs reads (a ring of one segment either side
 * and CL_FV_REACH or 1 rows), so the transfers follow the FV cells and
 * the candidates, not the rows they lie in. Several processes: each
 * rank reads the segments of its own rows; the exchange between ranks
 * goes by rows (wb_par_sel_rows: a row's nonzero 32-cell chunks of the
 * owner's host copy), and a receiver takes as current only the segments
 * selected (fv_fetch).
 */

/* Whether any of the ns bytes at r is nonzero (8 at a time). */
static int row_any(const uint8_t *r, int ns)
{
	uint64_t a = 0;
	int s = 0;
	for (; s + 8 <= ns; s += 8) {
		uint64_t w;
		memcpy(&w, r + s, 8);
		a |= w;
	}
	for (; s < ns; s++)
		a |= r[s];
	return a != 0;
}

/* The columns [*c0, *c1) of a padded row that segment s covers: its
 * interior columns, and with ghosts the ghost column beside the first
 * and the last segment. */
static void seg_cols(const struct cl_lbm *c, int s, int ghosts, int *c0,
		     int *c1)
{
	const int nx = c->L.nx;
	*c0 = 1 + s * LBM_FV_SEG;
	*c1 = *c0 + LBM_FV_SEG < nx + 1 ? *c0 + LBM_FV_SEG : nx + 1;
	if (ghosts && s == 0)
		*c0 = 0;
	if (ghosts && s == c->nsg - 1)
		*c1 = nx + 2;
}

/* rows[j] = whether row j of m has a segment set; returns their count. */
static int seg_rows(const struct cl_lbm *c, const uint8_t *m, uint8_t *rows)
{
	const int ns = c->nsg;
	int nr = 0;
	for (int j = 0; j < c->L.H; j++) {
		rows[j] = (uint8_t)row_any(m + (size_t)j * ns, ns);
		nr += rows[j];
	}
	return nr;
}

/* dst = the segments of src and those within r rows and q segments of
 * one. */
static void seg_dilate(const struct cl_lbm *c, const uint8_t *src, int r,
		       int q, uint8_t *dst)
{
	const int H = c->L.H, ns = c->nsg;
	memset(dst, 0, (size_t)H * ns);
	for (int j = 0; j < H; j++) {
		const uint8_t *a = src + (size_t)j * ns;
		if (!row_any(a, ns))
			continue;
		for (int s = 0; s < ns; s++) {
			if (!a[s])
				continue;
			const int j0 = j - r > 0 ? j - r : 0,
				  j1 = j + r < H - 1 ? j + r : H - 1,
				  s0 = s - q > 0 ? s - q : 0,
				  s1 = s + q < ns - 1 ? s + q : ns - 1;
			for (int jj = j0; jj <= j1; jj++)
				memset(dst + (size_t)jj * ns + s0, 1,
				       (size_t)(s1 - s0 + 1));
		}
	}
}

/* ssel = the segments holding an FV cell (rsel their rows); returns the
 * rows' count. */
static int fv_segs_of_cells(struct cl_lbm *c)
{
	const struct lbm *L = &c->L;
	const int ns = c->nsg;
	memset(c->ssel, 0, (size_t)L->H * ns);
	for (int k = 0; k < L->nfv; k++) {
		const int n = L->fvl[k];
		c->ssel[(size_t)(n / L->W) * ns + (n % L->W - 1) / LBM_FV_SEG] = 1;
	}
	return seg_rows(c, c->ssel, c->rsel);
}

/* One field of a transfer between the device and the host copy
 * (fv_xfer): na arrays (the nine populations of buffer m, slice cells
 * apart, or its one depth array) at the segments of mask; reads: only
 * the ghost columns of a segment whose fresh flag is set, and the
 * segments read become fresh. */
struct fv_part {
	cl_mem m;
	void *const *hp;
	int na;
	cl_ulong slice;
	const uint8_t *mask;
	uint8_t *fresh;
	size_t r0, nr, po, cells; /* its runs, its values, its cells */
};

static int grow(void **p, size_t *cap, size_t want, size_t es)
{
	if (want <= *cap)
		return 0;
	size_t n = *cap ? *cap : 1024;
	while (n < want)
		n += n / 2;
	void *q = realloc(*p, n * es);
	if (!q)
		return -1;
	*p = q;
	*cap = n;
	return 0;
}

/* Cells n0 .. n0 + cnt - 1 of the padded grid into pt's runs (joined to
 * its last run where they continue it). */
static int add_run(struct cl_lbm *c, size_t *nrun, struct fv_part *pt,
		   cl_long n0, cl_long cnt)
{
	cl_long *last = c->xrun + 3 * (*nrun - 1);
	if (pt->nr && last[0] + last[1] == n0) {
		last[1] += cnt;
		pt->cells += (size_t)cnt;
		return 0;
	}
	if (grow((void **)&c->xrun, &c->xruncap, 3 * (*nrun + 1), sizeof(cl_long)))
		return -1;
	cl_long *r = c->xrun + 3 * *nrun;
	r[0] = n0;
	r[1] = cnt;
	r[2] = (cl_long)pt->cells;
	(*nrun)++;
	pt->nr++;
	pt->cells += (size_t)cnt;
	return 0;
}

static int part_runs(struct cl_lbm *c, struct fv_part *pt, int write,
		     size_t *nrun)
{
	const struct lbm *L = &c->L;
	const int ns = c->nsg, W = L->W;
	pt->r0 = *nrun;
	pt->nr = pt->cells = 0;
	for (int j = 0; j < L->H; j++) {
		const uint8_t *m = pt->mask + (size_t)j * ns;
		const uint8_t *fr = !write && pt->fresh ?
				    pt->fresh + (size_t)j * ns : NULL;
		const cl_long o = (cl_long)j * W;
		if (!row_any(m, ns))
			continue;
		for (int s = 0; s < ns; s++) {
			if (!m[s])
				continue;
			if (fr && fr[s]) { /* the ghost columns, which the ghost
					      fills rewrite */
				if (s == 0 && add_run(c, nrun, pt, o, 1))
					return -1;
				if (s == ns - 1 && add_run(c, nrun, pt, o + W - 1, 1))
					return -1;
				continue;
			}
			int c0, c1;
			seg_cols(c, s, !write, &c0, &c1);
			if (add_run(c, nrun, pt, o + c0, c1 - c0))
				return -1;
		}
	}
	return 0;
}

/* Device buffer *m of at least want bytes (capacity *cap). */
static cl_int buf_grow(struct cl_env *e, cl_mem *m, size_t *cap, size_t want)
{
	if (want <= *cap)
		return CL_SUCCESS;
	size_t n = want + want / 2;
	cl_int err = CL_SUCCESS;
	buf_free(m);
	*cap = 0;
	if (!(*m = buf_new(e, n, &err)))
		return err;
	*cap = n;
	return CL_SUCCESS;
}

/* Move the np parts between the device and the host copy: the runs of
 * cells go up in one write, the values in one packed buffer that
 * lbm_fv_gather fills (reads) or lbm_fv_scatter empties (writes), in
 * one read or write; waits for all. */
static cl_int fv_xfer_(struct cl_lbm *c, struct fv_part *pt, int np,
			int write);

static cl_int fv_xfer(struct cl_lbm *c, struct fv_part *pt, int np, int write)
{
	const double t0 = now_s();
	cl_int err = fv_xfer_(c, pt, np, write);
	c->fvt[0] += now_s() - t0;
	return err;
}

static cl_int fv_xfer_(struct cl_lbm *c, struct fv_part *pt, int np,
			int write)
{
	struct cl_env *e = c->env;
	const int H = c->L.H, ns = c->nsg;
	size_t nrun = 0, nval = 0;
	for (int p = 0; p < np; p++) {
		if (part_runs(c, &pt[p], write, &nrun))
			return CL_OUT_OF_HOST_MEMORY;
		pt[p].po = nval;
		nval += pt[p].cells * (size_t)pt[p].na;
	}
	cl_int err = CL_SUCCESS;
	if (nrun) {
		if (xval_grow(c, nval))
			return CL_OUT_OF_HOST_MEMORY;
		err = buf_grow(e, &c->grun, &c->gruncap, nrun * 3 * sizeof(cl_long));
		if (err == CL_SUCCESS)
			err = buf_grow(e, &c->gval, &c->gvalcap, nval * sizeof(cl_uint));
		if (err == CL_SUCCESS)
			err = buf_write(e, c->grun, 0, nrun * 3 * sizeof(cl_long),
					c->xrun);
		for (int p = 0; write && p < np; p++) /* pack */
#pragma omp parallel for num_threads(c->L.threads) schedule(static)
			for (size_t r = pt[p].r0; r < pt[p].r0 + pt[p].nr; r++) {
				const cl_long *q = c->xrun + 3 * r;
				for (int a = 0; a < pt[p].na; a++)
					memcpy(c->xval + pt[p].po + a * pt[p].cells + q[2],
					       (const cl_uint *)pt[p].hp[a] + q[0],
					       (size_t)q[1] * sizeof(cl_uint));
			}
		if (write && err == CL_SUCCESS)
			err = buf_write(e, c->gval, 0, nval * sizeof(cl_uint), c->xval);
		cl_kernel k = write ? c->k_fvs : c->k_fvg;
		for (int p = 0; p < np && err == CL_SUCCESS; p++) {
			if (!pt[p].nr)
				continue;
			cl_ulong r0 = pt[p].r0, nr = pt[p].nr, po = pt[p].po,
				 cells = pt[p].cells;
			cl_int na = pt[p].na;
			err = ARG(k, 0, pt[p].m);
			err |= ARG(k, 1, pt[p].slice);
			err |= ARG(k, 2, na);
			err |= ARG(k, 3, c->grun);
			err |= ARG(k, 4, r0);
			err |= ARG(k, 5, nr);
			err |= ARG(k, 6, c->gval);
			err |= ARG(k, 7, po);
			err |= ARG(k, 8, cells);
			size_t ls = 256, gs = round_up(pt[p].cells, ls);
			if (err == CL_SUCCESS)
				err = enq_nd(e, k, 1, NULL, &gs, &ls);
		}
		if (!write && err == CL_SUCCESS)
			err = buf_read(e, c->gval, 0, nval * sizeof(cl_uint), c->xval);
		for (int p = 0; !write && err == CL_SUCCESS && p < np; p++) /* unpack */
#pragma omp parallel for num_threads(c->L.threads) schedule(static)
			for (size_t r = pt[p].r0; r < pt[p].r0 + pt[p].nr; r++) {
				const cl_long *q = c->xrun + 3 * r;
				for (int a = 0; a < pt[p].na; a++)
					memcpy((cl_uint *)pt[p].hp[a] + q[0],
					       c->xval + pt[p].po + a * pt[p].cells + q[2],
					       (size_t)q[1] * sizeof(cl_uint));
			}
		if (write && err == CL_SUCCESS)
			err = clFinish(e->q);
		c->fv_bytes += (double)nval * sizeof(cl_uint) +
			       (double)nrun * 3 * sizeof(cl_long);
	}
	for (int p = 0; !write && err == CL_SUCCESS && p < np; p++)
		for (int j = 0; pt[p].fresh && j < H; j++) {
			const uint8_t *m = pt[p].mask + (size_t)j * ns;
			if (!row_any(m, ns))
				continue;
			for (int s = 0; s < ns; s++)
				if (m[s])
					pt[p].fresh[(size_t)j * ns + s] =
						(uint8_t)(j > 0 && j < H - 1);
		}
	return err;
}

/* One read of fv_fetch: the segments of mask of time level k, what & 1
 * the distributions, what & 2 the depths, fresh. */
struct fv_req {
	const uint8_t *mask;
	int k, what;
	uint8_t *fresh;
};

/* The parts (fv_part) of request rq at the segments of mask. */
static int req_parts(struct cl_lbm *c, const struct fv_req *rq,
		     const uint8_t *mask, struct fv_part *pt)
{
	struct lbm *L = &c->L;
	int np = 0;
	if (rq->what & 1)
		pt[np++] = (struct fv_part){ .m = c->f[rq->k],
					     .hp = (void *const *)L->f[rq->k],
					     .na = LBM_Q, .slice = L->ncell,
					     .mask = mask, .fresh = rq->fresh };
	if (rq->what & 2)
		pt[np++] = (struct fv_part){ .m = c->h[rq->k],
					     .hp = (void *const *)&L->h[rq->k],
					     .na = 1, .slice = 0, .mask = mask,
					     .fresh = rq->fresh };
	return np;
}

/* The reads of nrq (<= 3) requests. Several processes (par.h): each
 * rank reads from its device the segments of the rows it owns (rown),
 * and every row with a selected segment that was not fresh goes to
 * every rank in one exchange (wb_par_sel_rows, whole rows of the
 * owner's host copy: its segments that were not selected may be stale
 * there, and they stay not fresh on every rank; those that are fresh
 * are the same on every rank); a fresh segment's ghost columns are read
 * again from the owner's device only - the ghost fills in between (the
 * step's, the macro's) write the values that the segment was read with -
 * so "fresh" is the same on every rank. */
static cl_int fv_fetch(struct cl_lbm *c, const struct fv_req *rq, int nrq)
{
	struct lbm *L = &c->L;
	struct wb_par *p = L->par;
	struct fv_part pt[6];
	int np = 0;
	if (!p) {
		for (int r = 0; r < nrq; r++)
			np += req_parts(c, &rq[r], rq[r].mask, pt + np);
		return fv_xfer(c, pt, np, 0);
	}
	const int H = L->H, ns = c->nsg;
	void *fld[3 * (LBM_Q + 1)];
	const uint8_t *sel[3 * (LBM_Q + 1)];
	int nf = 0;
	for (int r = 0; r < nrq; r++) {
		uint8_t *x = c->xsel[r], *o = c->sown[r];
		const uint8_t *m = rq[r].mask, *fr = rq[r].fresh;
		for (int R = 0; R < H; R++) {
			const size_t q = (size_t)R * ns;
			int any = 0;
			for (int s = 0; row_any(m + q, ns) && s < ns; s++)
				any |= m[q + s] && !(fr && fr[q + s]);
			x[R] = (uint8_t)any;
			if (c->rown[R])
				memcpy(o + q, m + q, (size_t)ns);
			else
				memset(o + q, 0, (size_t)ns);
		}
		for (int a = 0; (rq[r].what & 1) && a < LBM_Q; a++) {
			fld[nf] = L->f[rq[r].k][a];
			sel[nf++] = x;
		}
		if (rq[r].what & 2) {
			fld[nf] = L->h[rq[r].k];
			sel[nf++] = x;
		}
		np += req_parts(c, &rq[r], o, pt + np);
	}
	cl_int err = fv_xfer(c, pt, np, 0);
	if (err != CL_SUCCESS)
		return err;
	const double b0 = p->bytes;
	if (wb_par_sel_rows(p, fld, nf, L->W, sel))
		return CL_OUT_OF_HOST_MEMORY; /* p->failed says why */
	c->fv_xbytes += p->bytes - b0;
	for (int r = 0; r < nrq; r++)
		for (int R = 0; rq[r].fresh && R < H; R++)
			for (int s = 0; c->xsel[r][R] && s < ns; s++)
				if (rq[r].mask[(size_t)R * ns + s])
					rq[r].fresh[(size_t)R * ns + s] =
						(uint8_t)(R > 0 && R < H - 1);
	return CL_SUCCESS;
}

/* lbm_kernel_cols on the runs of FV segments (ssel) of row j. */
static void fv_kernel_segs(struct cl_lbm *c, int j)
{
	struct lbm *L = &c->L;
	const int ns = c->nsg;
	const uint8_t *m = c->ssel + (size_t)j * ns;
	for (int s = 0; s < ns;) {
		if (!m[s]) {
			s++;
			continue;
		}
		int t = s;
		while (t < ns && m[t])
			t++;
		lbm_kernel_cols(L, j, s * LBM_FV_SEG,
				t * LBM_FV_SEG < L->nx ? t * LBM_FV_SEG : L->nx);
		s = t;
	}
}

/* After the step kernel of lbm_enq_step, before the specials: the FV
 * update of lbm_step on the host, its segments written back. */
static cl_int cl_fv_step_(struct cl_lbm *c);

static cl_int cl_fv_step(struct cl_lbm *c)
{
	const double t0 = now_s();
	cl_int err = cl_fv_step_(c);
	c->fvt[5] += now_s() - t0;
	return err;
}

static cl_int cl_fv_step_(struct cl_lbm *c)
{
	struct lbm *L = &c->L;
	if (L->nfv == 0)
		return CL_SUCCESS;
	const int cur = c->cur;
	if (fv_segs_of_cells(c) == 0)
		return CL_SUCCESS;
	seg_dilate(c, c->ssel, CL_FV_REACH, 1, c->snear);
	const struct fv_req rq[3] = { { c->snear, cur, 1, c->frf },
				      { c->snear, cur, 2, c->frh },
				      { c->snear, !cur, 2, NULL } };
	cl_int err = fv_fetch(c, rq, 3);
	if (err != CL_SUCCESS)
		return err;
	/* the FV segments on the host: as lbm_step runs them (the FV cells'
	 * clamps not counted), then unmasked (every clamp the device
	 * counted); the same populations either way */
	const int nfv = L->nfv, cnx = L->cnx;
	double t0 = now_s();
	uint32_t *const cmap = L->cmap; /* the re-runs count into scratch */
	L->cmap = c->cm_a;
#pragma omp parallel for num_threads(L->threads) schedule(dynamic, 4)
	for (int j = 1; j <= L->ny; j++) {
		if (!c->rsel[j])
			continue;
		L->row_clamp[j] = 0;
		L->row_bad[j] = 0;
		memset(c->cm_a + (size_t)(j - 1) * cnx, 0, cnx * sizeof(uint32_t));
		fv_kernel_segs(c, j);
	}
	L->nfv = 0; /* lbm_kernel_cols: no FV mask */
	L->cmap = c->cm_b;
#pragma omp parallel for num_threads(L->threads) schedule(dynamic, 4)
	for (int j = 1; j <= L->ny; j++) {
		if (!c->rsel[j])
			continue;
		uint32_t *a = c->cm_a + (size_t)(j - 1) * cnx,
			 *b = c->cm_b + (size_t)(j - 1) * cnx,
			 *un = c->cm_un + (size_t)(j - 1) * cnx;
		memset(b, 0, cnx * sizeof(uint32_t));
		fv_kernel_segs(c, j);
		for (int q = 0; q < cnx; q++) /* unmasked >= masked */
			un[q] += b[q] - a[q];
	}
	L->nfv = nfv;
	L->cmap = cmap;
	c->fvt[1] += now_s() - t0;
	t0 = now_s();
	int64_t eadj = 0;
	lbm_fv_update(L, &eadj);
	c->fvt[2] += now_s() - t0;
	/* several processes: each rank ran the sub-steps of its band's FV
	   cells and the cells they read; the edge books of all */
	if (lbm_fv_books(L, &eadj))
		return CL_OUT_OF_HOST_MEMORY; /* par->failed says why */
	if (eadj > 0)
		c->fv_in += eadj;
	else
		c->fv_out -= eadj;
	/* several processes: each writes its own rows, whose FV cells'
	   results it computed */
	uint8_t *w = c->ssel;
	if (L->par) {
		const size_t ns = (size_t)c->nsg;
		w = c->sown[0];
		for (int R = 0; R < L->H; R++) {
			if (c->rown[R])
				memcpy(w + R * ns, c->ssel + R * ns, ns);
			else
				memset(w + R * ns, 0, ns);
		}
	}
	struct fv_part pt[2];
	const struct fv_req wr = { w, !cur, 3, NULL };
	const int np = req_parts(c, &wr, w, pt);
	return fv_xfer(c, pt, np, 1);
}

/* After a step: lbm_fv_mark on the segments that may hold a core cell. */
static cl_int cl_fv_mark_(struct cl_lbm *c);

static cl_int cl_fv_mark(struct cl_lbm *c)
{
	const double t0 = now_s();
	cl_int err = cl_fv_mark_(c);
	c->fvt[5] += now_s() - t0;
	return err;
}

static cl_int cl_fv_mark_(struct cl_lbm *c)
{
	struct cl_env *e = c->env;
	struct lbm *L = &c->L;
	const double un = L->unit, g = L->p.g, ev = L->p.e, hd = L->p.h_dry;
	const double off2 = L->fv_off * L->fv_off;
	/* lbm_fv_mark's candidate constants, thresholds halved (lbm.cl) */
	cl_float kf = (cl_float)(ev * ev / (un * g)), hdu = (cl_float)(hd / un);
	cl_float thin_u = (cl_float)(LBM_THIN * hd / un);
	cl_float t_off = (cl_float)(0.5 * 0.99 * off2);
	cl_float t_film = (cl_float)(0.5 * 0.99 * LBM_FV_FILM * LBM_FV_FILM);
	cl_float hdf = (cl_float)hd;
	cl_int all = off2 <= 0, W = L->W, nx = L->nx, ny = L->ny;
	cl_int ns = c->nsg, sg = LBM_FV_SEG;
	const size_t nsb = (size_t)L->H * c->nsg;
	/* the closures the next step pulls from (lbm_fv_mark fills them
	 * too: the edge cells' test reads them); the step refills the same */
	cl_int err = lbm_enq_ghosts(c);
	if (err != CL_SUCCESS)
		return err;
	cl_float t_on = (cl_float)(0.5 * 0.99 * L->fv_on * L->fv_on);
	cl_kernel k = c->k_fvrows;
	err = buf_zero(e, c->fvsegs, nsb);
	err |= ARG(k, 0, c->f[c->cur]);
	err |= ARG(k, 1, c->h[c->cur]);
	err |= ARG(k, 2, c->z);
	err |= ARG(k, 3, c->c);
	err |= ARG(k, 4, c->N);
	err |= ARG(k, 5, W);
	err |= ARG(k, 6, nx);
	err |= ARG(k, 7, ny);
	err |= ARG(k, 8, kf);
	err |= ARG(k, 9, hdu);
	err |= ARG(k, 10, thin_u);
	err |= ARG(k, 11, t_off);
	err |= ARG(k, 12, t_film);
	err |= ARG(k, 13, hdf);
	err |= ARG(k, 14, all);
	err |= ARG(k, 15, c->kp.Gai);
	err |= ARG(k, 16, c->kp.Gdi);
	err |= ARG(k, 17, c->fvsegs);
	err |= ARG(k, 18, c->gk);
	err |= ARG(k, 19, t_on);
	/* films that their surface's fall drives past LBM_FV_ON in a step
	 * (lbm_fv.c film_drives: a fall above K sqrt(h)), K halved */
	cl_float t_drive = (cl_float)(0.5 * L->fv_on * L->p.dx /
				      (sqrt(g) * L->p.dt));
	err |= ARG(k, 20, t_drive);
	err |= ARG(k, 21, ns);
	err |= ARG(k, 22, sg);
	if (err != CL_SUCCESS)
		return err;
	/* several processes: this band's rows (their data is this rank's,
	 * the halo rows' depths and the ghosts next to them fresh from the
	 * exchange); a segment's flag is set by its own cells and, next to
	 * an edge closure, by those it pulls from, so the rows of every
	 * rank's flags are ORed (wb_par_or_rows) */
	cl_int J0, J1;
	wb_par_band(L->par, ny, &J0, &J1);
	size_t gs[2] = { round_up((size_t)nx, c->lx), (size_t)(J1 - J0) },
	       ls[2] = { c->lx, 1 }, go[2] = { 0, (size_t)J0 };
	double t0 = now_s();
	err = enq_nd(e, k, 2, J0 ? go : NULL, gs, ls);
	if (err == CL_SUCCESS)
		err = buf_read(e, c->fvsegs, 0, nsb, c->ssel);
	c->fv_bytes += (double)nsb;
	c->fvt[3] += now_s() - t0;
	if (err != CL_SUCCESS)
		return err;
	if (L->par) {
		const double b0 = L->par->bytes;
		if (wb_par_or_rows_n(L->par, c->ssel, (size_t)ns))
			return CL_OUT_OF_HOST_MEMORY; /* par->failed says why */
		c->fv_xbytes += L->par->bytes - b0;
	}
	seg_dilate(c, c->ssel, 1, 1, c->snear);
	/* a new time level: nothing of it is on the host yet */
	memset(c->frf, 0, nsb);
	memset(c->frh, 0, nsb);
	const struct fv_req rq[2] = { { c->ssel, c->cur, 1, c->frf },
				      { c->snear, c->cur, 2, c->frh } };
	err = fv_fetch(c, rq, 2);
	if (err != CL_SUCCESS)
		return err;
	t0 = now_s();
	lbm_fv_mark_segs(L, c->ssel, c->mwork);
	c->fvt[4] += now_s() - t0;
	return CL_SUCCESS;
}

/* After lbm_macro's kernel into mh, mu[slot], mv[slot]: the FV cells'
 * own state (lbm_fv_state), as lbm_macro shows it. */
static cl_int cl_fv_macro(struct cl_lbm *c, int slot)
{
	struct cl_env *e = c->env;
	struct lbm *L = &c->L;
	const int nf = L->nfv;
	if (nf == 0 || fv_segs_of_cells(c) == 0)
		return CL_SUCCESS;
	seg_dilate(c, c->ssel, 1, 1, c->snear);
	/* lbm_fv_state reads the bed transfers at the depths they were
	 * computed at, h[!cur] after a step (lbm.h bed_lvl) */
	const struct fv_req rq[3] = { { c->ssel, c->cur, 1, c->frf },
				      { c->snear, c->cur, 2, c->frh },
				      { c->snear, !c->cur, 2, NULL } };
	cl_int err = fv_fetch(c, rq, L->bed_lvl ? 3 : 2);
	if (err != CL_SUCCESS)
		return err;
	if ((size_t)nf > c->fvcap) {
		buf_free(&c->fvidx);
		buf_free(&c->fvval);
		free(c->fvi);
		free(c->fvv);
		c->fvcap = 0;
		c->fvi = malloc((size_t)nf * sizeof(cl_int));
		c->fvv = malloc((size_t)nf * 3 * sizeof(cl_float));
		if (!c->fvi || !c->fvv)
			return CL_OUT_OF_HOST_MEMORY;
		if (!(c->fvidx = buf_new(e, (size_t)nf * sizeof(cl_int), &err)) ||
		    !(c->fvval = buf_new(e, (size_t)nf * 3 * sizeof(cl_float), &err)))
			return err;
		c->fvcap = (size_t)nf;
	}
	for (int k = 0; k < nf; k++) {
		const int n = L->fvl[k];
		float h, u, v;
		lbm_fv_state(L, n, &h, &u, &v);
		c->fvi[k] = (n % L->W - 1) + (n / L->W - 1) * L->nx;
		c->fvv[3 * k] = h;
		c->fvv[3 * k + 1] = u;
		c->fvv[3 * k + 2] = v;
	}
	c->fv_bytes += (double)nf * 4 * sizeof(cl_float);
	err = buf_write(e, c->fvidx, 0, (size_t)nf * sizeof(cl_int), c->fvi);
	if (err == CL_SUCCESS)
		err = buf_write(e, c->fvval, 0, (size_t)nf * 3 * sizeof(cl_float),
				c->fvv);
	cl_kernel k = c->k_fvput;
	cl_int n = nf;
	err |= ARG(k, 0, c->fvidx);
	err |= ARG(k, 1, c->fvval);
	err |= ARG(k, 2, n);
	err |= ARG(k, 3, c->mh);
	err |= ARG(k, 4, c->mu[slot]);
	err |= ARG(k, 5, c->mv[slot]);
	if (err == CL_SUCCESS)
		err = run1d(e, k, (size_t)nf);
	return err;
}

/* Several processes: every band's rows of the result to every rank. */
static int lbm_par_gather(struct wb_par *p, struct wb_state *out)
{
	return wb_par_rows(p, out->h, sizeof(float), out->nx, 0, 0) |
	       wb_par_rows(p, out->u, sizeof(float), out->nx, 0, 0) |
	       wb_par_rows(p, out->v, sizeof(float), out->nx, 0, 0) | p->failed;
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
	st = lbm_create_par(e, r, sim, o ? o->threads : 0, 0, o ? o->par : NULL,
			    &c, d);
	if (st != WB_OK)
		goto done;
	struct lbm *L = &c->L;
	cl_int err;
	if ((err = lbm_volume_dev(c, &rep->vol_initial)) != CL_SUCCESS) {
		st = cl_fail(d, err, "summing the initial volume");
		goto done;
	}
	/* as lbm_solve: with a convergence stop, the flow is sampled every
	 * 'every' steps, each window's mean is compared with the previous
	 * window's, and a steady bake returns the last window's mean */
	long fixed = o && o->steps > 0 ? o->steps : 0;
	long cap = fixed ? fixed : (sim->max_steps > 0 ? sim->max_steps : 100000);
	long window = sim->window > 0 ? sim->window : 200;
	double tol = sim->tolerance > 0 ? sim->tolerance : 1e-4;
	long every = 1;
	long most = window / LBM_SAMPLES;
	for (long s2 = most > LBM_SAMPLE_MIN ? most : LBM_SAMPLE_MIN; s2 > 1; s2--)
		if (window % s2 == 0) {
			every = s2;
			break;
		}
	long pevery = window < 100 ? window : 100, nsamp = 0, windows = 0;
	double res = INFINITY;
	int pslot = 0; /* mu/mv[pslot]: the previous window's mean */
	const size_t nn = (size_t)r->nx * r->ny;
	const cl_int nni = (cl_int)nn;
	if (!fixed) {
		if (!(c->sh = buf_new(e, nn * sizeof(float), &err)) ||
		    !(c->su = buf_new(e, nn * sizeof(float), &err)) ||
		    !(c->sv = buf_new(e, nn * sizeof(float), &err)) ||
		    !(c->mm = buf_new(e, nn * sizeof(float), &err)) ||
		    (err = buf_zero(e, c->sh, nn * sizeof(float))) != CL_SUCCESS ||
		    (err = buf_zero(e, c->su, nn * sizeof(float))) != CL_SUCCESS ||
		    (err = buf_zero(e, c->sv, nn * sizeof(float))) != CL_SUCCESS ||
		    (err = buf_zero(e, c->mu[0], nn * sizeof(float))) != CL_SUCCESS ||
		    (err = buf_zero(e, c->mv[0], nn * sizeof(float))) != CL_SUCCESS) {
			st = cl_fail(d, err, "allocating the window means");
			goto done;
		}
	}
	/* water stored and passed through at the start of the window */
	long long wm = 0, wio = 0;
	if (!fixed) {
		long long i0 = 0, o0 = 0;
		if ((err = lbm_mass_dev(c, &wm)) != CL_SUCCESS ||
		    (err = lbm_books(c, &i0, &o0)) != CL_SUCCESS) {
			st = cl_fail(d, err, "summing the initial volume");
			goto done;
		}
		wio = i0 + o0;
	}
	cl_kernel kacc = NULL, kmean = NULL;
	if (!fixed && (!(kacc = clCreateKernel(e->prog, "lbm_accum", &err)) ||
		       !(kmean = clCreateKernel(e->prog, "lbm_wmean", &err)))) {
		st = cl_fail(d, err, "lbm_accum / lbm_wmean");
		if (kacc)
			clReleaseKernel(kacc);
		goto done;
	}
	rep->setup_s = now_s() - t0;
	while (L->step < cap) {
		if (o && o->cancel && *o->cancel) {
			st = wb_fail(d, WB_ECANCEL, NULL,
				     "lbm (opencl): interrupted at step %ld",
				     L->step);
			break;
		}
		/* fixed runs: sync every 100 steps (divergence check) */
		long k = fixed ? 100 : every - L->step % every;
		if (cap - L->step < k)
			k = cap - L->step;
		const double q0 = now_s(), x0 = L->par ? L->par->xsecs : 0;
		st = cl_lbm_enqueue(c, k, d);
		const double q1 = now_s();
		rep->host_enqueue_s += q1 - q0 - (L->par ? L->par->xsecs - x0 : 0);
		if (st == WB_OK)
			st = cl_lbm_sync(c, d);
		rep->host_wait_s += now_s() - q1;
		if (st != WB_OK)
			break;
		err = CL_SUCCESS;
		int q = !pslot;
		if (!fixed && L->step % every == 0) {
			/* sample for the window mean (per cell: deterministic) */
			c->mcur = q;
			err = lbm_enq_sample(c, q, kacc);
			nsamp++;
		}
		if (err == CL_SUCCESS && !fixed && L->step % window == 0 && nsamp > 0) {
			cl_float w = 1.0f / (float)nsamp;
			err |= ARG(kmean, 0, c->sh);
			err |= ARG(kmean, 1, c->su);
			err |= ARG(kmean, 2, c->sv);
			err |= ARG(kmean, 3, c->mm);
			err |= ARG(kmean, 4, c->mu[q]);
			err |= ARG(kmean, 5, c->mv[q]);
			err |= ARG(kmean, 6, nni);
			err |= ARG(kmean, 7, w);
			err |= ARG(kmean, 8, c->kp.hthin);
			if (err == CL_SUCCESS)
				err = run1d(e, kmean, nn);
			nsamp = 0;
			if (err == CL_SUCCESS && windows++ > 0)
				err = lbm_resid_dev(c, c->mm, pslot, q, &res);
			pslot = q;
			/* as lbm_solve: the water stored changes by at most
			 * tol of what passed through the window */
			long long m1 = 0, i1 = 0, o1 = 0;
			if (err == CL_SUCCESS)
				err = lbm_mass_dev(c, &m1);
			if (err == CL_SUCCESS)
				err = lbm_books(c, &i1, &o1);
			int still = llabs(m1 - wm) <= tol * (double)(i1 + o1 - wio);
			wm = m1;
			wio = i1 + o1;
			if (err == CL_SUCCESS && res < tol && still &&
			    L->step >= L->ramp_steps + 2 * window) {
				rep->converged = 1;
				break;
			}
		}
		if (err != CL_SUCCESS) {
			st = cl_fail(d, err, "computing the window means");
			break;
		}
		if (o && o->progress && L->step % pevery == 0)
			o->progress(o->progress_user, L->step, cap,
				    isfinite(res) ? res : NAN);
	}
	if (kacc)
		clReleaseKernel(kacc);
	if (kmean)
		clReleaseKernel(kmean);
	if (st != WB_OK)
		goto done;
	size_t n = (size_t)r->nx * r->ny;
	out->nx = r->nx;
	out->ny = r->ny;
	out->dx = r->dx;
	out->h = malloc(n * sizeof(float));
	out->u = malloc(n * sizeof(float));
	out->v = malloc(n * sizeof(float));
	int fv_oom;
	out->fv = lbm_fv_mask(L, &fv_oom);
	if (!out->h || !out->u || !out->v || fv_oom) {
		st = wb_fail(d, WB_EIO, NULL, "lbm (opencl): out of memory");
		goto done;
	}
	if (windows > 0) {
		/* a steady bake returns the last window's time-averaged flow */
		size_t nb = n * sizeof(float);
		err = buf_read(e, c->mm, 0, nb, out->h);
		if (err == CL_SUCCESS)
			err = buf_read(e, c->mu[pslot], 0, nb, out->u);
		if (err == CL_SUCCESS)
			err = buf_read(e, c->mv[pslot], 0, nb, out->v);
		if (err != CL_SUCCESS) {
			st = cl_fail(d, err, "reading the mean fields");
			goto done;
		}
	} else {
		st = cl_lbm_macro(c, out->h, out->u, out->v, d);
		if (st != WB_OK)
			goto done;
	}
	if (L->par && lbm_par_gather(L->par, out)) {
		st = wb_fail(d, WB_EIO, NULL,
			     "lbm (opencl): exchange between processes failed");
		goto done;
	}
	if (!fixed && !rep->converged && windows >= 2) {
		/* not steady: where the last window still changed (lbm_solve;
		   the window before's means are in the other slot) */
		size_t nb = n * sizeof(float);
		float *pu = malloc(nb), *pv = malloc(nb);
		if (!pu || !pv)
			st = wb_fail(d, WB_EIO, NULL, "lbm (opencl): out of memory");
		if (st == WB_OK &&
		    ((err = buf_read(e, c->mu[!pslot], 0, nb, pu)) != CL_SUCCESS ||
		     (err = buf_read(e, c->mv[!pslot], 0, nb, pv)) != CL_SUCCESS))
			st = cl_fail(d, err, "reading the mean fields");
		/* several processes: each rank's band rows, as out's */
		if (L->par && (wb_par_rows(L->par, pu, sizeof(float), r->nx, 0, 0) |
			       wb_par_rows(L->par, pv, sizeof(float), r->nx, 0, 0) |
			       L->par->failed))
			st = wb_fail(d, WB_EIO, NULL,
				     "lbm (opencl): exchange between processes failed");
		if (st == WB_OK &&
		    wb_unsteady_where(r->nx, r->ny, out->h, out->u, out->v, pu,
				      pv, c->kp.hthin, rep))
			st = wb_fail(d, WB_EIO, NULL, "lbm (opencl): out of memory");
		free(pu);
		free(pv);
		if (st != WB_OK)
			goto done;
	}
	long long vin = 0, vout = 0;
	if ((err = lbm_volume_dev(c, &rep->vol_final)) != CL_SUCCESS ||
	    (err = lbm_books(c, &vin, &vout)) != CL_SUCCESS ||
	    (err = lbm_where_books(c)) != CL_SUCCESS) {
		st = cl_fail(d, err, "reading the bookkeeping");
		goto done;
	}
	double dx2 = L->p.dx * L->p.dx;
	rep->steps = L->step;
	rep->residual = isfinite(res) ? res : NAN;
	rep->sim_time = L->time; /* summed as lbm_solve sums it */
	rep->dt = L->p.dt;
	rep->lattice_speed = L->p.e;
	rep->tau = L->p.tau;
	/* what lbm_solve reports of its parameters, so that the manifest is
	 * the CPU bake's */
	rep->h_deep = L->p.h_deep;
	rep->h_flood = L->p.h_flood;
	rep->viscosity = L->p.nu;
	rep->viscosity_requested = L->p.nu_req;
	rep->rescales = L->rescales;
	{
		static const char *why[] = { "depth", "inflow velocity", "given",
					     "re-chosen during the run",
					     "slope flow" };
		rep->lattice_speed_reason = why[L->p.e_why];
	}
	rep->slope_speed = L->p.u_slope;
	rep->vol_in = (double)vin * L->unit * dx2;
	rep->vol_out = (double)vout * L->unit * dx2;
	double scale = MAXD(MAXD(rep->vol_initial, rep->vol_final),
			    MAXD(rep->vol_in, rep->vol_out));
	rep->balance_error =
		scale > 0 ? fabs(rep->vol_initial + rep->vol_in - rep->vol_out -
				 rep->vol_final) / scale : 0;
	rep->clamped = lbm_clamp_where(L->cmap, L->nx, L->ny, rep);
	rep->bytes_per_cell = cl_lbm_bytes_per_cell(c);
	if (L->fv_cells > 0) /* lbm_solve's note, word for word */
		wb_diag_add(d, WB_SEV_NOTE, NULL, NULL, 0, 0,
			    "lbm: %ld cell-steps (%.3g %% of the wet and dry cell-steps) were advanced by the finite-volume update of the hybrid (supercritical flow, spilling fronts)",
			    L->fv_cells,
			    100.0 * (double)L->fv_cells /
				    ((double)L->step * L->nx * L->ny));
	lbm_fv_report(L, rep, d);
	if (L->hybrid && L->step > 0 && !L->par)
		wb_diag_add(d, WB_SEV_NOTE, NULL, NULL, 0, 0,
			    "lbm (opencl): the hybrid's FV update and marking ran on the host: %.4g MB moved between host and device, %.4g kB per step (the lattice is %.4g kB); host time: transfers %.3g s, re-runs of the FV segments %.3g s, FV update %.3g s, segment flags %.3g s, marking %.3g s; %.3g s in all",
			    c->fv_bytes / 1e6, c->fv_bytes / 1e3 / (double)L->step,
			    (double)L->ncell * (LBM_Q * 4 + 4) / 1e3, c->fvt[0],
			    c->fvt[1], c->fvt[2], c->fvt[3], c->fvt[4], c->fvt[5]);
	else if (L->hybrid && L->step > 0) /* this rank's figures */
		wb_diag_add(d, WB_SEV_NOTE, NULL, NULL, 0, 0,
			    "lbm (opencl): the hybrid's FV update and marking ran on the host of every rank: rank %d moved %.4g MB between host and device, %.4g kB per step, and received %.4g kB per step of the other ranks' rows for it (the lattice is %.4g kB)",
			    L->par->rank, c->fv_bytes / 1e6,
			    c->fv_bytes / 1e3 / (double)L->step,
			    c->fv_xbytes / 1e3 / (double)L->step,
			    (double)L->ncell * (LBM_Q * 4 + 4) / 1e3);
	if (rep->balance_error > 1e-3)
		st = wb_fail(d, WB_ESIM, NULL,
			     "lbm (opencl): mass balance does not close after %ld steps: initial %g + in %g - out %g != final %g m^3",
			     L->step, rep->vol_initial, rep->vol_in, rep->vol_out,
			     rep->vol_final);
done:
	if (st != WB_OK && st != WB_ESIM)
		wb_state_free(out);
	rep->seconds = now_s() - t0;
	if (c) { /* NULL when the set-up failed */
		int on;
		rep->cells_stepped = cl_lbm_cells(c, &on);
	}
	rep->dev_kernel_s = cl_env_profile(e, "lbm", d);
	cl_lbm_free(c);
	cl_env_free(e);
	return st;
}

/* ---- SWE ---------------------------------------------------------------- */

/* Layouts must match src/cl/swe.cl. */
struct swe_fp_h {
	cl_float gk, eps, umax, fric, fall;
};
struct swe_edges_h {
	cl_int gmode[4];
	cl_float ga[4];
	cl_int bkind[4];
	cl_float bvel[4], bdis[4];
	cl_int per_we, per_ns;
	cl_float tsgn[4];
};
struct foam_par_h {
	cl_float eps, alpha, decay, dt, idx, kta, kst, ta0, ta1, st0, st1, k;
};

enum { SWE_KBUF = 22 };

struct cl_swe {
	struct cl_env *env;
	struct swe_ctx s;     /* host context: set-up, lists, falls, particles */
	int ok_s;
	cl_mem h, h1, H, u, v, u1, v1, ut, vt, us, vs, bb, fu, fv, foam, foam1;
	cl_mem mu_c, mu_k, mu_t, mv_c, mv_k, mv_t; /* faces, weights, targets */
	float *wmod[2];       /* this step's modifier weights 1 - expf(-k dt) */
	cl_mem src_c, src_v, fix_c, fix_v, sink_c;
	cl_mem a_bin, a_bout, a_sin, a_sout, a_fin, a_fout, a_kout, bc_cl,
	       clamp_acc, stats, flags, rnum, rden;
	cl_kernel k_mod, k_height, k_book, k_src, k_fixed, k_sink, k_gwe, k_gns,
		  k_fg, k_mcb, k_faces, k_bc, k_fgh, k_fgen, k_fadv, k_resid,
		  k_wdrag, k_macc;
	cl_mem msh, msu, msv; /* window sums of the steady test (cl_swe_solve) */
	struct swe_edges_h E;
	size_t lx, ngroups;
	/* the cells the host's waterfall and particle code touches this step:
	 * 16 x 16 tiles of the padded grid marked around the candidates' cells
	 * and within a step's reach of every particle */
	int ntx, nty;
	uint8_t *tmark;
	cl_int *cells;
	float *vals;
	long ncells, capcells;
	cl_mem dcells, dvals;
	cl_kernel k_gather, k_scatter;
	long long transferred; /* bytes moved for the particles (diagnostics) */
	/* block-sparse stepping (s.sp.on; swe.cl's swe_blk_* kernels): block
	   masks and lists live on the device; per step the host reads back
	   the list lengths and the sleeping blocks' largest depth (20 bytes) */
	int sp;               /* 1: sparse step */
	int nbx, nby;
	long nblk, nedge;
	cl_mem b_wet, b_always, b_act, b_pact, b_touch, b_film, b_actl,
	       b_halol, b_leavel, b_edgel, b_cnt, b_fmax, b_force, b_sampl;
	cl_kernel k_bscan, k_bmark, k_bact, k_blists, k_bsleep, k_bsamp,
		  k_bmean, k_mrows;
	int sp_first;         /* no pass yet: scan every block */
	int sp_ready;         /* this step's lists were built by the last step */
	cl_int cnt_h[4];      /* read back: active, halo, leaving, samples */
	cl_uint fmax_h;       /* read back: films of the sleeping blocks */
	cl_uint fmax_cur;     /* ... of this step's sleeping blocks */
	long n_act, n_halo;   /* this step's lists */
	long long act_steps;  /* sum of n_act over the steps (statistics) */
	uint8_t *fmask;       /* host: blocks forced active (waterfalls) */
	cl_int *flist;
	uint8_t *amask;       /* host: this step's active blocks before the
				 forcing (waterfalls: read back) */
	int *tlist;           /* the marked tiles (waterfalls) */
	long ntl;
	/* window means on the device (cl_swe_solve) */
	cl_mem mh, mu, mv, pu, pv, rn, rd, rh;
	double t_init, t_upload; /* set-up seconds: swe_init, the rest */
	/* several processes (par.h; NULL: one): the row passes run over this
	 * band's rows, and the rows they wrote go to the other ranks through
	 * xrow (the host's rows of one field, W x max(ny + 2, 8)) */
	struct wb_par *par;
	float *xrow;
};

int cl_swe_bytes_per_cell(const struct cl_swe *c)
{
	/* height: read h, u, v, write h1, fu, fv; faces: read u, v, h1, H, bb,
	 * fu, fv, write u1, v1 (+ MacCormack: forward pass reads u, v, writes
	 * ut, vt, the correction reads ut, vt); foam: generation reads h, H,
	 * u, v, foam, writes foam1, advection reads h, u, v, foam1, writes foam */
	return 4 * (6 + 9 + (c->s.sim.maccormack ? 6 : 0) +
		    (c->s.foam_on ? 11 : 0));
}

int cl_swe_set_sparse(struct cl_swe *c, int on)
{
	if (!on) {
		c->sp = 0;
	} else if (!c->sp) {
		/* from any state: the first pass scans every block and gives
		 * the blocks outside the active set what the dense step
		 * would (h1 = h, closed faces) */
		size_t wg = 0;
		clGetKernelWorkGroupInfo(c->k_faces, c->env->dev,
					 CL_KERNEL_WORK_GROUP_SIZE, sizeof(wg), &wg,
					 NULL);
		c->sp = wg >= 128;
		c->sp_first = 1;
		c->sp_ready = 0;
		c->n_act = 0;
	}
	return c->sp;
}

void cl_swe_setup_seconds(const struct cl_swe *c, double *init,
			  double *upload)
{
	*init = c->t_init;
	*upload = c->t_upload;
}

void cl_swe_blocks(const struct cl_swe *c, long *nblk, long long *act_steps)
{
	*nblk = c->nblk;
	*act_steps = c->sp ? c->act_steps : (long long)c->nblk * c->s.step;
}

enum wb_status cl_swe_fields(struct cl_swe *c, float *h, float *u, float *v,
			     float *foam, double *t, double *dt,
			     struct wb_diags *d)
{
	const size_t fb = (size_t)c->s.ncell * sizeof(float);
	cl_int err = buf_read(c->env, c->h, 0, fb, h);
	if (err == CL_SUCCESS)
		err = buf_read(c->env, c->u, 0, fb, u);
	if (err == CL_SUCCESS)
		err = buf_read(c->env, c->v, 0, fb, v);
	if (err == CL_SUCCESS && foam && c->s.foam_on)
		err = buf_read(c->env, c->foam, 0, fb, foam);
	if (err != CL_SUCCESS)
		return cl_fail(d, err, "reading the SWE fields");
	if (t)
		*t = c->s.t;
	if (dt)
		*dt = c->s.dt;
	return WB_OK;
}

long long cl_swe_bytes_moved(const struct cl_swe *c)
{
	return c->transferred;
}

long cl_swe_particles(const struct cl_swe *c)
{
	return c->s.P.n;
}

void cl_swe_free(struct cl_swe *c)
{
	if (!c)
		return;
	cl_mem *m[] = { &c->h, &c->h1, &c->H, &c->u, &c->v, &c->u1, &c->v1,
			&c->ut, &c->vt, &c->us, &c->vs, &c->bb, &c->fu, &c->fv,
			&c->foam, &c->foam1, &c->mu_c, &c->mu_k, &c->mu_t,
			&c->mv_c, &c->mv_k, &c->mv_t, &c->src_c, &c->src_v,
			&c->fix_c, &c->fix_v, &c->sink_c, &c->a_bin, &c->a_bout,
			&c->a_sin, &c->a_sout, &c->a_fin, &c->a_fout, &c->a_kout,
			&c->bc_cl, &c->clamp_acc, &c->stats, &c->flags, &c->rnum,
			&c->rden, &c->msh, &c->msu, &c->msv };
	for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++)
		buf_free(m[k]);
	cl_kernel ks[] = { c->k_mod, c->k_height, c->k_book, c->k_src,
			   c->k_fixed, c->k_sink, c->k_gwe, c->k_gns, c->k_fg,
			   c->k_mcb, c->k_faces, c->k_bc, c->k_fgh, c->k_fgen,
			   c->k_fadv, c->k_resid, c->k_wdrag, c->k_macc };
	for (size_t k = 0; k < sizeof(ks) / sizeof(ks[0]); k++)
		if (ks[k])
			clReleaseKernel(ks[k]);
	if (c->ok_s)
		swe_release(&c->s);
	free(c->wmod[0]);
	free(c->xrow);
	free(c->wmod[1]);
	free(c->tmark);
	free(c->cells);
	free(c->vals);
	buf_free(&c->dcells);
	buf_free(&c->dvals);
	if (c->k_gather)
		clReleaseKernel(c->k_gather);
	if (c->k_scatter)
		clReleaseKernel(c->k_scatter);
	cl_mem *bmm[] = { &c->b_wet, &c->b_always, &c->b_act, &c->b_pact,
			  &c->b_touch, &c->b_film, &c->b_actl, &c->b_halol,
			  &c->b_leavel, &c->b_edgel, &c->b_cnt, &c->b_fmax,
			  &c->b_force, &c->b_sampl, &c->mh, &c->mu, &c->mv,
			  &c->pu, &c->pv, &c->rn, &c->rd, &c->rh };
	for (size_t k = 0; k < sizeof(bmm) / sizeof(bmm[0]); k++)
		buf_free(bmm[k]);
	cl_kernel bks[] = { c->k_bscan, c->k_bmark, c->k_bact, c->k_blists,
			    c->k_bsleep, c->k_bsamp, c->k_bmean, c->k_mrows };
	for (size_t k = 0; k < sizeof(bks) / sizeof(bks[0]); k++)
		if (bks[k])
			clReleaseKernel(bks[k]);
	free(c->fmask);
	free(c->flist);
	free(c->amask);
	free(c->tlist);
	free(c);
}

/* A list of padded cell indices (long on the host) as int on the device. */
static cl_mem int_list(struct cl_env *e, const long *v, long n, cl_int *err)
{
	cl_int *t = malloc((size_t)(n > 0 ? n : 1) * sizeof(cl_int));
	if (!t) {
		*err = CL_OUT_OF_HOST_MEMORY;
		return NULL;
	}
	for (long k = 0; k < n; k++)
		t[k] = (cl_int)v[k];
	cl_mem m = buf_new(e, (size_t)n * sizeof(cl_int), err);
	if (m)
		*err = buf_write(e, m, 0, (size_t)n * sizeof(cl_int), t);
	free(t);
	return m;
}

static cl_mem float_list(struct cl_env *e, const float *v, long n, cl_int *err)
{
	cl_mem m = buf_new(e, (size_t)n * sizeof(float), err);
	if (m)
		*err = buf_write(e, m, 0, (size_t)n * sizeof(float), v);
	return m;
}

static void swe_edge_params(struct cl_swe *c)
{
	const struct wb_edge *E = c->s.r->edges;
	struct swe_edges_h *P = &c->E;
	memset(P, 0, sizeof(*P));
	for (int k = 0; k < 4; k++) {
		const struct wb_edge *e = &E[k];
		/* ghost_depth of swe.c */
		switch (e->kind) {
		case WB_EDGE_INFLOW:
			if (e->depth > 0) {
				P->gmode[k] = 1;
				P->ga[k] = (float)e->depth;
			} else if (e->has_level) {
				P->gmode[k] = 2;
				P->ga[k] = (float)e->level;
			} else if (e->discharge > 0) {
				P->gmode[k] = 3;
				P->ga[k] = (float)cbrt(e->discharge * e->discharge / c->s.g);
			}
			break;
		case WB_EDGE_LEVEL:
			P->gmode[k] = 2;
			P->ga[k] = (float)e->level;
			break;
		default:
			break;
		}
		/* bc_face of swe.c */
		switch (e->kind) {
		case WB_EDGE_WALL: P->bkind[k] = 0; break;
		case WB_EDGE_OPEN: P->bkind[k] = 1; break;
		case WB_EDGE_INFLOW: P->bkind[k] = 2; break;
		default: P->bkind[k] = 3; break;
		}
		P->bvel[k] = e->velocity > 0 ? (float)e->velocity : 0.0f;
		P->bdis[k] = (float)e->discharge;
	}
	P->per_we = E[WB_WEST].kind == WB_EDGE_PERIODIC;
	P->per_ns = E[WB_NORTH].kind == WB_EDGE_PERIODIC;
	for (int k = 0; k < 4; k++)
		P->tsgn[k] = c->s.tsgn[k];
}

/* ---- SWE block-sparse stepping ------------------------------------------
 * The rule is swe.c's (docs/scale.md): 32 x 32 blocks; wet = a cell deeper
 * than the dry depth or a face with a bit set; active = a wet block in the
 * 3 x 3 neighbourhood; halo = an active block in it. The height step and
 * the MacCormack forward estimates run on the halo blocks, the velocity
 * step and foam on the active ones; a block leaving the active set gets
 * what the dense step writes there (h1 = h, closed faces) and its largest
 * depth (film) is kept for the step's maximum depth. Differences from the
 * CPU's bookkeeping, none of which changes a byte: blocks that hold
 * sources, fixed levels or modifiers count as wet (their neighbours are
 * stepped too), the halo blocks are stepped whole (not only the strips an
 * active face reads), and with waterfalls every block the host's particle
 * code can touch this step (swe_cells' tiles) counts as wet, so a deposit
 * never lands in a sleeping block. The pass that builds the next step's
 * lists runs at the end of a step, before its one blocking read-back,
 * except with waterfalls (the tiles are known only at the start of the
 * step: one more read-back there). */

static enum wb_status swe_sparse_create(struct cl_swe *c, struct wb_diags *d)
{
	struct cl_env *e = c->env;
	const struct swe_ctx *s = &c->s;
	cl_int err = CL_SUCCESS;
	c->nbx = (s->nx + 31) / 32;
	c->nby = (s->ny + 31) / 32;
	c->nblk = (long)c->nbx * c->nby;
	c->sp_first = 1;
	const size_t nb = (size_t)c->nblk;
	const char *kn[] = { "swe_blk_scan", "swe_blk_mark", "swe_blk_act",
			     "swe_blk_lists", "swe_blk_sleep", "swe_blk_samples",
			     "swe_mean_blk", "swe_means_rows" };
	cl_kernel *kp[] = { &c->k_bscan, &c->k_bmark, &c->k_bact, &c->k_blists,
			    &c->k_bsleep, &c->k_bsamp, &c->k_bmean, &c->k_mrows };
	for (int k = 0; k < 8; k++)
		if (!(*kp[k] = clCreateKernel(e->prog, kn[k], &err)))
			return cl_fail(d, err, kn[k]);
	uint8_t *alw = calloc(nb, 1);
	cl_int *edge = malloc(nb * sizeof(cl_int));
	if (!alw || !edge) {
		free(alw);
		free(edge);
		return wb_fail(d, WB_EIO, NULL, "opencl: out of memory");
	}
	const struct swe_cell_list *L[] = { &s->src, &s->fixed, &s->mod_u,
					    &s->mod_v };
	for (int l = 0; l < 4; l++)
		for (long m = 0; m < L[l]->n; m++) {
			long cc = L[l]->c[m];
			int i = (int)(cc % s->W) - 1, j = (int)(cc / s->W) - 1;
			i = i < 0 ? 0 : i >= s->nx ? s->nx - 1 : i;
			j = j < 0 ? 0 : j >= s->ny ? s->ny - 1 : j;
			alw[(j / 32) * (long)c->nbx + i / 32] = 1;
		}
	long ne = 0;
	for (int bj = 0; bj < c->nby; bj++)
		for (int bi = 0; bi < c->nbx; bi++)
			if (bi == 0 || bj == 0 || bi == c->nbx - 1 ||
			    bj == c->nby - 1)
				edge[ne++] = bi | (bj << 16);
	c->nedge = ne;
	if (!(c->b_wet = buf_new(e, round_up(nb, 4), &err)) ||
	    !(c->b_always = buf_new(e, round_up(nb, 4), &err)) ||
	    !(c->b_act = buf_new(e, round_up(nb, 4), &err)) ||
	    !(c->b_pact = buf_new(e, round_up(nb, 4), &err)) ||
	    !(c->b_touch = buf_new(e, round_up(nb, 4), &err)) ||
	    !(c->b_film = buf_new(e, nb * sizeof(cl_uint), &err)) ||
	    !(c->b_actl = buf_new(e, nb * sizeof(cl_int), &err)) ||
	    !(c->b_halol = buf_new(e, nb * sizeof(cl_int), &err)) ||
	    !(c->b_leavel = buf_new(e, nb * sizeof(cl_int), &err)) ||
	    !(c->b_sampl = buf_new(e, nb * sizeof(cl_int), &err)) ||
	    !(c->b_force = buf_new(e, nb * sizeof(cl_int), &err)) ||
	    !(c->b_edgel = buf_new(e, (size_t)ne * sizeof(cl_int), &err)) ||
	    !(c->b_cnt = buf_new(e, 4 * sizeof(cl_int), &err)) ||
	    !(c->b_fmax = buf_new(e, sizeof(cl_uint), &err)))
		goto out;
	if ((err = buf_write(e, c->b_always, 0, nb, alw)) != CL_SUCCESS ||
	    (err = buf_write(e, c->b_edgel, 0, (size_t)ne * sizeof(cl_int),
			     edge)) != CL_SUCCESS ||
	    (err = buf_zero(e, c->b_wet, round_up(nb, 4))) != CL_SUCCESS ||
	    (err = buf_zero(e, c->b_act, round_up(nb, 4))) != CL_SUCCESS ||
	    (err = buf_zero(e, c->b_touch, round_up(nb, 4))) != CL_SUCCESS ||
	    (err = buf_zero(e, c->b_film, nb * sizeof(cl_uint))) != CL_SUCCESS)
		goto out;
	if (s->n_falls > 0) {
		c->fmask = calloc(nb, 1);
		c->flist = malloc(nb * sizeof(cl_int));
		c->amask = calloc(round_up(nb, 4), 1);
		if (!c->fmask || !c->flist || !c->amask)
			err = CL_OUT_OF_HOST_MEMORY;
	}
	/* the sparse launches use work-groups of 128 items (32 x 4) */
	size_t wg = 0;
	clGetKernelWorkGroupInfo(c->k_faces, e->dev, CL_KERNEL_WORK_GROUP_SIZE,
				 sizeof(wg), &wg, NULL);
	c->sp = s->sp.on && wg >= 128;
out:
	free(alw);
	free(edge);
	if (err != CL_SUCCESS)
		return cl_fail(d, err, "setting up the SWE block lists");
	return WB_OK;
}

/* Work-groups of 128 items, one per block (the swe_blk_* box kernels). */
static cl_int run_groups(struct cl_env *e, cl_kernel k, size_t ngroups)
{
	if (ngroups == 0)
		return CL_SUCCESS;
	size_t g = ngroups * 128, l = 128;
	return enq_nd(e, k, 1, NULL, &g, &l);
}

/* A per-cell 2D kernel over n listed blocks: work-groups (32, 4). */
static cl_int run_blocks(struct cl_env *e, cl_kernel k, long n)
{
	if (n <= 0)
		return CL_SUCCESS;
	size_t gs[2] = { 32 * (size_t)n, 32 }, ls[2] = { 32, 4 };
	return enq_nd(e, k, 2, NULL, gs, ls);
}

/* The activity pass, first half: wet blocks (every block on the first
 * pass, else the last step's active blocks and the edge blocks: nothing
 * else can have changed) and the active set (b_act; the last one becomes
 * b_pact). Second half: swe_sparse_lists. */
static cl_int swe_sparse_scan(struct cl_swe *c)
{
	struct cl_env *e = c->env;
	const struct swe_ctx *s = &c->s;
	const cl_int W = s->W, nx = s->nx, ny = s->ny, nbx = c->nbx, nby = c->nby;
	const cl_float eps = (float)fmax(s->sim.dry_depth, 1e-9);
	const size_t nb = (size_t)c->nblk;
	cl_int err = buf_zero(e, c->b_cnt, 4 * sizeof(cl_int));
	err |= buf_zero(e, c->b_fmax, sizeof(cl_uint));
	cl_kernel k = c->k_bscan;
	cl_int all = c->sp_first;
	err |= ARG(k, 0, c->h);
	err |= ARG(k, 1, c->u);
	err |= ARG(k, 2, c->v);
	err |= ARG(k, 3, W);
	err |= ARG(k, 4, nx);
	err |= ARG(k, 5, ny);
	err |= ARG(k, 6, nbx);
	err |= ARG(k, 7, eps);
	err |= ARG(k, 8, c->b_actl);
	err |= ARG(k, 9, all);
	err |= ARG(k, 10, c->b_wet);
	if (err == CL_SUCCESS)
		err = run_groups(e, k, all ? nb : (size_t)c->n_act);
	if (!all && err == CL_SUCCESS) {
		err = ARG(k, 8, c->b_edgel);
		if (err == CL_SUCCESS)
			err = run_groups(e, k, (size_t)c->nedge);
	}
	SWAP_MEM(c->b_act, c->b_pact);
	if (all && err == CL_SUCCESS) {
		/* as if every block left the active set: h1 = h, zeros, films */
		const cl_uint ones = 0x01010101u;
		err = clEnqueueFillBuffer(e->q, c->b_pact, &ones, sizeof(ones), 0,
					  round_up(nb, 4), 0, NULL, NULL);
	}
	k = c->k_bact;
	err |= ARG(k, 0, c->b_wet);
	err |= ARG(k, 1, c->b_always);
	err |= ARG(k, 2, c->b_act);
	err |= ARG(k, 3, nbx);
	err |= ARG(k, 4, nby);
	if (err == CL_SUCCESS)
		err = run1d(e, k, nb);
	return err;
}

/* The second half of the pass: nforce blocks of c->flist forced wet (and
 * the active set computed again), the lists, the sleeping transitions,
 * the read-back of cnt_h / fmax_h (blocking when 'wait'). */
static cl_int swe_sparse_lists(struct cl_swe *c, long nforce, int wait)
{
	struct cl_env *e = c->env;
	const struct swe_ctx *s = &c->s;
	const cl_int W = s->W, nx = s->nx, ny = s->ny, nbx = c->nbx, nby = c->nby;
	const size_t nb = (size_t)c->nblk;
	const int all = c->sp_first;
	cl_int err = CL_SUCCESS;
	cl_kernel k;
	if (nforce > 0) {
		cl_int n = (cl_int)nforce;
		err = clEnqueueWriteBuffer(e->q, c->b_force, CL_TRUE, 0,
					   (size_t)n * sizeof(cl_int), c->flist,
					   0, NULL, NULL);
		k = c->k_bmark;
		err |= ARG(k, 0, c->b_wet);
		err |= ARG(k, 1, c->b_force);
		err |= ARG(k, 2, n);
		if (err == CL_SUCCESS)
			err = run1d(e, k, (size_t)n);
		k = c->k_bact;
		err |= ARG(k, 0, c->b_wet);
		err |= ARG(k, 1, c->b_always);
		err |= ARG(k, 2, c->b_act);
		err |= ARG(k, 3, nbx);
		err |= ARG(k, 4, nby);
		if (err == CL_SUCCESS)
			err = run1d(e, k, nb);
	}
	k = c->k_blists;
	err |= ARG(k, 0, c->b_act);
	err |= ARG(k, 1, c->b_pact);
	err |= ARG(k, 2, c->b_wet);
	err |= ARG(k, 3, c->b_touch);
	err |= ARG(k, 4, c->b_film);
	err |= ARG(k, 5, nbx);
	err |= ARG(k, 6, nby);
	err |= ARG(k, 7, c->b_actl);
	err |= ARG(k, 8, c->b_halol);
	err |= ARG(k, 9, c->b_leavel);
	err |= ARG(k, 10, c->b_cnt);
	err |= ARG(k, 11, c->b_fmax);
	if (err == CL_SUCCESS)
		err = run1d(e, k, nb);
	k = c->k_bsleep;
	err |= ARG(k, 0, c->h);
	err |= ARG(k, 1, c->h1);
	err |= ARG(k, 2, c->u1);
	err |= ARG(k, 3, c->v1);
	err |= ARG(k, 4, W);
	err |= ARG(k, 5, nx);
	err |= ARG(k, 6, ny);
	err |= ARG(k, 7, nbx);
	err |= ARG(k, 8, c->b_leavel);
	err |= ARG(k, 9, c->b_cnt);
	err |= ARG(k, 10, c->b_film);
	err |= ARG(k, 11, c->b_fmax);
	/* the blocks leaving are among the last step's active ones */
	if (err == CL_SUCCESS)
		err = run_groups(e, k, all ? nb : (size_t)c->n_act);
	c->sp_first = 0;
	if (err == CL_SUCCESS)
		err = clEnqueueReadBuffer(e->q, c->b_cnt, CL_FALSE, 0,
					  sizeof(c->cnt_h), c->cnt_h, 0, NULL, NULL);
	if (err == CL_SUCCESS)
		err = clEnqueueReadBuffer(e->q, c->b_fmax, wait ? CL_TRUE : CL_FALSE,
					  0, sizeof(c->fmax_h), &c->fmax_h, 0,
					  NULL, NULL);
	return err;
}

/* The blocks the host's waterfall and particle code touches this step
 * (swe_cells' marked tiles of the padded grid) into c->flist; returns
 * their number. */
static long swe_force_list(struct cl_swe *c)
{
	const struct swe_ctx *s = &c->s;
	long n = 0;
	for (long t = 0; t < c->ntl; t++) {
		{
			int ti = c->tlist[t] % c->ntx, tj = c->tlist[t] / c->ntx;
			/* interior columns 16 ti - 1 .. 16 ti + 14, clipped */
			int i0 = 16 * ti - 1, i1 = 16 * ti + 14;
			int j0 = 16 * tj - 1, j1 = 16 * tj + 14;
			i0 = i0 < 0 ? 0 : i0;
			j0 = j0 < 0 ? 0 : j0;
			i1 = i1 >= s->nx ? s->nx - 1 : i1;
			j1 = j1 >= s->ny ? s->ny - 1 : j1;
			if (i0 > i1 || j0 > j1)
				continue;
			for (int bj = j0 / 32; bj <= j1 / 32; bj++)
				for (int bi = i0 / 32; bi <= i1 / 32; bi++) {
					long q = bi + (long)bj * c->nbx;
					if (!c->fmask[q]) {
						c->fmask[q] = 1;
						c->flist[n++] = (cl_int)q;
					}
				}
		}
	}
	for (long q = 0; q < n; q++)
		c->fmask[c->flist[q]] = 0;
	return n;
}

enum wb_status cl_swe_create(struct cl_env *e, const struct wb_raster *r,
			     const struct wb_sim *sim, int threads,
			     struct cl_swe **out, struct wb_diags *d)
{
	*out = NULL;
	/* one buffer per field; at most 16 fields (with MacCormack and
	 * foam), the window means (three), masks and lists (~1 B) */
	enum wb_status fit = cl_fits(e, "SWE fields", r->nx, r->ny, 4.0,
				     (16 + 3) * 4.0 + 1, d);
	if (fit != WB_OK)
		return fit;
	struct cl_swe *c = calloc(1, sizeof(*c));
	if (!c)
		return wb_fail(d, WB_EIO, NULL, "opencl: out of memory");
	c->env = e;
	double t0 = now_s();
	enum wb_status st = swe_init(&c->s, r, sim,
				     swe_threads_for(r, wb_threads(threads)), d);
	if (st != WB_OK) {
		free(c);
		return st;
	}
	c->t_init = now_s() - t0;
	t0 = now_s();
	c->ok_s = 1;
	struct swe_ctx *s = &c->s;
	cl_int err = CL_SUCCESS;
	const char *kn[] = { "swe_modify", "swe_height", "swe_book", "swe_src",
			     "swe_fixed", "swe_sink", "swe_ghost_we",
			     "swe_ghost_ns", "swe_face_ghosts", "swe_mc_bound",
			     "swe_faces", "swe_bc", "foam_ghosts", "foam_gen",
			     "foam_adv", "swe_resid_rows", "swe_wall_drag",
			     "swe_mean_acc" };
	cl_kernel *kp[] = { &c->k_mod, &c->k_height, &c->k_book, &c->k_src,
			    &c->k_fixed, &c->k_sink, &c->k_gwe, &c->k_gns,
			    &c->k_fg, &c->k_mcb, &c->k_faces, &c->k_bc,
			    &c->k_fgh, &c->k_fgen, &c->k_fadv, &c->k_resid,
			    &c->k_wdrag, &c->k_macc };
	for (int k = 0; k < 18; k++)
		if (!(*kp[k] = clCreateKernel(e->prog, kn[k], &err))) {
			st = cl_fail(d, err, kn[k]);
			goto fail;
		}
	c->lx = pick_lx(e, c->k_faces);
	c->ngroups = round_up((size_t)s->nx, c->lx) / c->lx * (size_t)s->ny;
	{
		/* a block-sparse launch has 8 work-groups per listed block */
		size_t nbg = (size_t)((s->nx + 31) / 32) * ((s->ny + 31) / 32) * 8;
		c->ngroups = MAXD(c->ngroups, nbg);
	}
	const size_t fb = (size_t)s->ncell * sizeof(float);
	const size_t rs = e->realsz;
	float *fl[] = { s->h, s->h1, s->H, s->u, s->v, s->u1, s->v1, s->ut, s->vt,
			s->usnap, s->vsnap, s->bb, s->fu, s->fv, s->foam,
			s->foam1 };
	cl_mem *bm[] = { &c->h, &c->h1, &c->H, &c->u, &c->v, &c->u1, &c->v1,
			 &c->ut, &c->vt, &c->us, &c->vs, &c->bb, &c->fu, &c->fv,
			 &c->foam, &c->foam1 };
	/* Upload only what swe_init leaves non-zero: h, H, u, v (inflow
	 * faces) and the blocker bottoms where there are blockers; u1 and v1
	 * are copies of u and v, every other field starts at 0 (swe_init's
	 * falloc), bb without blockers at +INF. Filled on the device, they
	 * cost no transfer (docs/opencl.md, "Set-up"). */
	enum { UP, ZERO, CPU_, CPV_, INF_ };
	int how[16] = { UP, ZERO, UP, UP, UP, CPU_, CPV_, ZERO, ZERO, ZERO,
			ZERO, s->has_blk ? UP : INF_, ZERO, ZERO, ZERO, ZERO };
	for (int k = 0; k < 16; k++) {
		if (!fl[k])
			continue; /* MacCormack or foam off */
		if (!(*bm[k] = buf_new(e, fb, &err))) {
			st = cl_fail(d, err, "allocating device memory for the SWE fields");
			goto fail;
		}
		const float inf = INFINITY;
		switch (how[k]) {
		case UP: err = buf_write(e, *bm[k], 0, fb, fl[k]); break;
		case ZERO: err = buf_zero(e, *bm[k], fb); break;
		case INF_:
			cl_uint ib;
			memcpy(&ib, &inf, sizeof(ib));
			err = buf_fill32(e, *bm[k], fb, ib);
			break;
		default:
			err = buf_copy32(e, how[k] == CPU_ ? c->u : c->v, *bm[k],
					 fb);
			break;
		}
		if (err != CL_SUCCESS) {
			st = cl_fail(d, err, "uploading the SWE fields");
			goto fail;
		}
	}
	long nmu = s->mod_u.n, nmv = s->mod_v.n;
	c->wmod[0] = malloc((size_t)(nmu > 0 ? nmu : 1) * sizeof(float));
	c->wmod[1] = malloc((size_t)(nmv > 0 ? nmv : 1) * sizeof(float));
	if (!c->wmod[0] || !c->wmod[1]) {
		st = wb_fail(d, WB_EIO, NULL, "opencl: out of memory");
		goto fail;
	}
	size_t nbk = (size_t)(s->nx + s->ny);
	if (!(c->mu_c = int_list(e, s->mod_u.c, nmu, &err)) ||
	    !(c->mu_k = float_list(e, s->mod_u.val, nmu, &err)) ||
	    !(c->mu_t = float_list(e, s->mod_tu, nmu, &err)) ||
	    !(c->mv_c = int_list(e, s->mod_v.c, nmv, &err)) ||
	    !(c->mv_k = float_list(e, s->mod_v.val, nmv, &err)) ||
	    !(c->mv_t = float_list(e, s->mod_tv, nmv, &err)) ||
	    !(c->src_c = int_list(e, s->src.c, s->src.n, &err)) ||
	    !(c->src_v = float_list(e, s->src.val, s->src.n, &err)) ||
	    !(c->fix_c = int_list(e, s->fixed.c, s->fixed.n, &err)) ||
	    !(c->fix_v = float_list(e, s->fixed.val, s->fixed.n, &err)) ||
	    !(c->sink_c = int_list(e, s->sink.c, s->sink.n, &err)) ||
	    !(c->a_bin = buf_new(e, nbk * rs, &err)) ||
	    !(c->a_bout = buf_new(e, nbk * rs, &err)) ||
	    !(c->a_sin = buf_new(e, (size_t)s->src.n * rs, &err)) ||
	    !(c->a_sout = buf_new(e, (size_t)s->src.n * rs, &err)) ||
	    !(c->a_fin = buf_new(e, (size_t)s->fixed.n * rs, &err)) ||
	    !(c->a_fout = buf_new(e, (size_t)s->fixed.n * rs, &err)) ||
	    !(c->a_kout = buf_new(e, (size_t)s->sink.n * rs, &err)) ||
	    !(c->bc_cl = buf_new(e, nbk * sizeof(cl_ulong), &err)) ||
	    !(c->clamp_acc = buf_new(e, c->ngroups * sizeof(cl_ulong), &err)) ||
	    !(c->stats = buf_new(e, 2 * sizeof(cl_uint), &err)) ||
	    !(c->flags = buf_new(e, 3 * sizeof(cl_int), &err)) ||
	    !(c->rnum = buf_new(e, (size_t)(s->ny + 1) * rs, &err)) ||
	    !(c->rden = buf_new(e, (size_t)(s->ny + 1) * rs, &err))) {
		st = cl_fail(d, err, "allocating the SWE lists");
		goto fail;
	}
	err = buf_zero(e, c->a_bin, nbk * rs);
	err |= buf_zero(e, c->a_bout, nbk * rs);
	err |= buf_zero(e, c->a_sin, (size_t)s->src.n * rs);
	err |= buf_zero(e, c->a_sout, (size_t)s->src.n * rs);
	err |= buf_zero(e, c->a_fin, (size_t)s->fixed.n * rs);
	err |= buf_zero(e, c->a_fout, (size_t)s->fixed.n * rs);
	err |= buf_zero(e, c->a_kout, (size_t)s->sink.n * rs);
	err |= buf_zero(e, c->bc_cl, nbk * sizeof(cl_ulong));
	err |= buf_zero(e, c->clamp_acc, c->ngroups * sizeof(cl_ulong));
	if (err != CL_SUCCESS) {
		st = cl_fail(d, err, "clearing the SWE bookkeeping");
		goto fail;
	}
	swe_edge_params(c);
	st = swe_sparse_create(c, d);
	if (st != WB_OK)
		goto fail;
	if (s->n_falls > 0) {
		c->ntx = (s->W + 15) / 16;
		c->nty = (s->ny + 2 + 15) / 16;
		c->tmark = calloc((size_t)c->ntx * c->nty, 1);
		c->tlist = malloc((size_t)c->ntx * c->nty * sizeof(int));
		if (!c->tmark || !c->tlist) {
			st = wb_fail(d, WB_EIO, NULL, "opencl: out of memory");
			goto fail;
		}
		if (!(c->k_gather = clCreateKernel(e->prog, "wb_gather", &err)) ||
		    !(c->k_scatter = clCreateKernel(e->prog, "wb_scatter", &err))) {
			st = cl_fail(d, err, "wb_gather / wb_scatter");
			goto fail;
		}
	}
	if ((err = clFinish(e->q)) != CL_SUCCESS) {
		st = cl_fail(d, err, "uploading the SWE fields");
		goto fail;
	}
	/* The host keeps only what it still reads: h, u, v, H and foam (the
	 * export, the volume, the waterfall and particle code), h1 with
	 * waterfalls; the device holds the rest. 36 of swe_init's 67 bytes
	 * per cell go (swe_release takes the NULLs). */
	{
		float **drop[] = { &s->u1, &s->v1, &s->usnap, &s->vsnap, &s->bb,
				   &s->fu, &s->fv, &s->ut, &s->vt, &s->foam1,
				   s->n_falls > 0 ? NULL : &s->h1 };
		for (size_t q = 0; q < sizeof(drop) / sizeof(drop[0]); q++)
			if (drop[q])
				swe_field_drop(s, drop[q]);
	}
	c->t_upload = now_s() - t0;
	*out = c;
	return WB_OK;
fail:
	cl_swe_free(c);
	return st;
}

/* Mark the tiles covering padded cells [i0, i1] x [j0, j1]. */
static void mark_box(struct cl_swe *c, int i0, int i1, int j0, int j1)
{
	const struct swe_ctx *s = &c->s;
	i0 = i0 < 0 ? 0 : i0;
	j0 = j0 < 0 ? 0 : j0;
	i1 = i1 > s->W - 1 ? s->W - 1 : i1;
	j1 = j1 > s->ny + 1 ? s->ny + 1 : j1;
	for (int tj = j0 / 16; tj <= j1 / 16; tj++)
		for (int ti = i0 / 16; ti <= i1 / 16; ti++) {
			size_t t = ti + (size_t)tj * c->ntx;
			if (!c->tmark[t]) {
				c->tmark[t] = 1;
				c->tlist[c->ntl++] = (int)t;
			}
		}
}

/* The cell list of this step (see struct cl_swe): every cell the host's
 * swe_falls_activate / _emit and swe_particles_step can read or write,
 * with margins: R = a step's reach of the fastest particle (or of a new
 * one, |u| <= alpha dx/dt) plus 2 cells (deposits write the east and
 * south faces too). Periodic edges with particles in flight: everything. */
static enum wb_status swe_cells(struct cl_swe *c, struct wb_diags *d)
{
	struct swe_ctx *s = &c->s;
	const struct swe_particles *p = &s->P;
	size_t nt = (size_t)c->ntx * c->nty;
	for (long t = 0; t < c->ntl; t++)
		c->tmark[c->tlist[t]] = 0;
	c->ntl = 0;
	double vmax = SWE_VEL_ALPHA * s->dx / s->dt;
	long live = 0;
	for (long m = 0; m < p->n; m++) {
		if (p->hit[m] != -1)
			continue;
		live++;
		double sp = sqrt(p->vx[m] * p->vx[m] + p->vy[m] * p->vy[m] +
				 p->vz[m] * p->vz[m]);
		vmax = sp > vmax ? sp : vmax;
	}
	int R = (int)ceil((vmax + s->g * s->dt) * s->dt / s->dx) + 2;
	if (live && (c->E.per_we || c->E.per_ns)) {
		memset(c->tmark, 1, nt);
		for (size_t t = 0; t < nt; t++)
			c->tlist[t] = (int)t;
		c->ntl = (long)nt;
	} else {
		for (long n = 0; n < s->n_falls; n++) {
			const struct swe_fall *f = &s->falls[n];
			if (c->sp) {
				/* a candidate whose upper cell lies outside the
				 * active blocks is dry (depth <= eps, the face
				 * closed): it emits nothing this step, and the
				 * host need not see it. Its mirror depth may be
				 * stale: make it dry, as on the device. */
				int ui = (int)(f->up % s->W) - 1, uj = (int)(f->up / s->W) - 1;
				ui = ui < 0 ? 0 : ui >= s->nx ? s->nx - 1 : ui;
				uj = uj < 0 ? 0 : uj >= s->ny ? s->ny - 1 : uj;
				if (!c->amask[ui / 32 + (long)(uj / 32) * c->nbx]) {
					s->h[f->up] = 0.0f;
					continue;
				}
			}
			long q2[2] = { f->up, f->dn };
			for (int q = 0; q < 2; q++) {
				int pi = (int)(q2[q] % s->W), pj = (int)(q2[q] / s->W);
				mark_box(c, pi - R, pi + R, pj - R, pj + R);
			}
		}
		for (long m = 0; m < p->n; m++) {
			if (p->hit[m] != -1)
				continue;
			int i = (int)(p->x[m] / s->dx), j = (int)(p->y[m] / s->dx);
			i = i < 0 ? 0 : i >= s->nx ? s->nx - 1 : i;
			j = j < 0 ? 0 : j >= s->ny ? s->ny - 1 : j;
			mark_box(c, i + 1 - R, i + 1 + R, j + 1 - R, j + 1 + R);
		}
	}
	long n = c->ntl * 256;
	if (n > c->capcells) {
		free(c->cells);
		free(c->vals);
		c->cells = malloc((size_t)n * sizeof(cl_int));
		c->vals = malloc(3 * (size_t)n * sizeof(float));
		buf_free(&c->dcells);
		buf_free(&c->dvals);
		cl_int err = CL_SUCCESS;
		if (!c->cells || !c->vals) {
			c->capcells = 0;
			return wb_fail(d, WB_EIO, NULL, "opencl: out of memory");
		}
		if (!(c->dcells = buf_new(c->env, (size_t)n * sizeof(cl_int), &err)) ||
		    !(c->dvals = buf_new(c->env, 3 * (size_t)n * sizeof(float), &err))) {
			c->capcells = 0;
			return cl_fail(d, err, "allocating the particle cell list");
		}
		c->capcells = n;
	}
	n = 0;
	for (long t = 0; t < c->ntl; t++) {
		int ti = c->tlist[t] % c->ntx, tj = c->tlist[t] / c->ntx;
		for (int j = tj * 16; j < tj * 16 + 16 && j < s->ny + 2; j++)
			for (int i = ti * 16; i < ti * 16 + 16 && i < s->W; i++)
				c->cells[n++] = i + j * s->W;
	}
	c->ncells = n;
	/* not waited for: c->cells stays until the next step's swe_cells,
	 * and blocking reads come between */
	cl_int err = n ? clEnqueueWriteBuffer(c->env->q, c->dcells, CL_FALSE, 0,
					      (size_t)n * sizeof(cl_int), c->cells,
					      0, NULL, NULL) : CL_SUCCESS;
	c->transferred += (long long)n * (long long)sizeof(cl_int);
	if (err != CL_SUCCESS)
		return cl_fail(d, err, "uploading the particle cell list");
	return WB_OK;
}

/* Copy the listed cells of nf fields m[] device -> host mirrors (write =
 * 0: one blocking read for all of them) or host mirrors -> device (write =
 * 1: one write, not waited for; c->vals is not touched again before a
 * later blocking command has completed it). */
static cl_int cells_io(struct cl_swe *c, int nf, const cl_mem *m,
		       float *const *host, int write)
{
	struct cl_env *e = c->env;
	cl_int n = (cl_int)c->ncells;
	if (n == 0)
		return CL_SUCCESS;
	size_t len = (size_t)n * sizeof(float);
	c->transferred += (long long)len * nf;
	cl_kernel k = write ? c->k_scatter : c->k_gather;
	cl_int err = CL_SUCCESS;
	if (write) {
		for (int f = 0; f < nf; f++)
			for (cl_int q = 0; q < n; q++)
				c->vals[(size_t)f * n + q] = host[f][c->cells[q]];
		err = clEnqueueWriteBuffer(e->q, c->dvals, CL_FALSE, 0, len * nf,
					   c->vals, 0, NULL, NULL);
	}
	for (int f = 0; f < nf && err == CL_SUCCESS; f++) {
		cl_int off = f * n;
		err |= ARG(k, 0, m[f]);
		err |= ARG(k, 1, c->dcells);
		err |= ARG(k, 2, n);
		err |= ARG(k, 3, c->dvals);
		err |= ARG(k, 4, off);
		if (err == CL_SUCCESS)
			err = run1d(e, k, (size_t)n);
	}
	if (err == CL_SUCCESS && !write) {
		err = buf_read(e, c->dvals, 0, len * nf, c->vals);
		for (int f = 0; f < nf && err == CL_SUCCESS; f++)
			for (cl_int q = 0; q < n; q++)
				host[f][c->cells[q]] = c->vals[(size_t)f * n + q];
	}
	return err;
}

/* next_dt of swe.c */
static void swe_next_dt(struct swe_ctx *s, float umax, float hmax)
{
	double dx = s->dx;
	for (long n = 0; n < s->mod_u.n; n++)
		umax = MAXD(umax, fabsf(s->mod_tu[n]));
	for (long n = 0; n < s->mod_v.n; n++)
		umax = MAXD(umax, fabsf(s->mod_tv[n]));
	double dta = umax > 0 ? SWE_CFL_ADV * dx / umax : INFINITY;
	double hw = hmax > 1e-3 ? hmax : 1e-3;
	double dtw = SWE_CFL_WAVE * dx / sqrt(s->g * hw);
	s->dt = s->sim.dt > 0 ? fmin(s->sim.dt, dta) : fmin(dta, dtw);
}

static float bits_f(cl_uint u)
{
	float x;
	memcpy(&x, &u, sizeof(x));
	return x;
}

/* A row pass over every row, or this band's rows under several
 * processes (a global work offset: the kernels take j from
 * get_global_id(1)). */
static cl_int run2d(struct cl_swe *c, cl_kernel k)
{
	int J0, J1;
	wb_par_band(c->par, c->s.ny, &J0, &J1);
	size_t gs[2] = { round_up((size_t)c->s.nx, c->lx), (size_t)(J1 - J0) };
	size_t go[2] = { 0, (size_t)J0 };
	size_t ls[2] = { c->lx, 1 };
	return enq_nd(c->env, k, 2, go, gs, ls);
}

/* Several processes (par.h), after a row pass: the interior rows of
 * field m that this band computed go to every rank, and the other bands'
 * rows come back onto this device, so that every device holds the field
 * one process would (whole padded rows: what the pass did not write
 * there is the same on every rank). The time goes to par->xsecs. */
static enum wb_status swe_par_rows(struct cl_swe *c, cl_mem m,
				   struct wb_diags *d)
{
	struct wb_par *p = c->par;
	const struct swe_ctx *s = &c->s;
	const size_t W = (size_t)s->W, rb = W * sizeof(float);
	int J0, J1;
	wb_par_band(p, s->ny, &J0, &J1);
	double t0 = now_s();
	/* padded row j + 1 is row j */
	cl_int err = buf_read(c->env, m, (size_t)(J0 + 1) * rb,
			      (size_t)(J1 - J0) * rb, c->xrow + (J0 + 1) * W);
	if (err != CL_SUCCESS)
		return cl_fail(d, err, "reading the band's rows for the exchange");
	if (wb_par_rows(p, c->xrow, sizeof(float), (long)W, 1, 0))
		return wb_fail(d, WB_EIO, NULL,
			       "swe (opencl): step %ld: exchange between processes failed",
			       s->step + 1);
	err = buf_write(c->env, m, rb, (size_t)J0 * rb, c->xrow + W);
	if (err == CL_SUCCESS && J1 < s->ny)
		err = buf_write(c->env, m, (size_t)(J1 + 1) * rb,
				(size_t)(s->ny - J1) * rb, c->xrow + (J1 + 1) * W);
	p->xsecs += now_s() - t0;
	if (err != CL_SUCCESS)
		return cl_fail(d, err, "writing the other bands' rows");
	return WB_OK;
}

/* Several processes, at the end of a step: every band's verdict (the
 * first row with a non-finite depth, x- and y-velocity) and maxima (the
 * largest |u| and depth as float bits), in one exchange; the smallest
 * rows and the largest maxima to every rank. -1 when it failed. */
static int swe_par_verdict(struct wb_par *p, cl_int fl[3], cl_uint stt[2])
{
	cl_uint *all = calloc((size_t)p->size * 5, sizeof(*all));
	if (!all) {
		p->failed = 1;
		return -1;
	}
	cl_uint *mine = all + (size_t)p->rank * 5;
	for (int q = 0; q < 3; q++)
		mine[q] = (cl_uint)fl[q]; /* rows, or INT_MAX: not negative */
	mine[3] = stt[0];
	mine[4] = stt[1];
	for (int r = 0; r <= p->size; r++)
		p->off[r] = 5L * r;
	int e = p->allgather(p->user, all, sizeof(*all), p->off);
	for (int r = 0; r < p->size && !e; r++)
		for (int q = 0; q < 5; q++) {
			cl_uint x = all[(size_t)r * 5 + q];
			if (q < 3)
				fl[q] = (cl_int)x < fl[q] ? (cl_int)x : fl[q];
			else
				stt[q - 3] = x > stt[q - 3] ? x : stt[q - 3];
		}
	free(all);
	p->failed |= e != 0;
	return e ? -1 : 0;
}

/* Several processes, after a row pass whose outputs only the next row
 * passes read, within hw rows: the band's first (last) hw rows of the nf
 * fields m[] to the band above (below), theirs into this band's halo, in
 * one exchange. The rows further out stay stale and are never read. */
static enum wb_status swe_par_halo(struct cl_swe *c, const cl_mem *m, int nf,
				   int hw, struct wb_diags *d)
{
	struct wb_par *p = c->par;
	const struct swe_ctx *s = &c->s;
	const size_t W = (size_t)s->W, blk = (size_t)hw * W * sizeof(float),
		     all = blk * (size_t)nf;
	int J0, J1;
	wb_par_band(p, s->ny, &J0, &J1);
	double t0 = now_s();
	/* xrow holds W x max(ny + 2, 8) floats: 4 nf hw rows (nf hw <= 2) */
	char *to_up = (char *)c->xrow, *to_dn = to_up + all,
	     *from_up = to_dn + all, *from_dn = from_up + all;
	cl_int err = CL_SUCCESS;
	for (int q = 0; q < nf && err == CL_SUCCESS; q++) {
		err = buf_read(c->env, m[q], (size_t)(J0 + 1) * W * sizeof(float),
			       blk, to_up + q * blk);
		if (err == CL_SUCCESS)
			err = buf_read(c->env, m[q],
				       (size_t)(J1 + 1 - hw) * W * sizeof(float),
				       blk, to_dn + q * blk);
	}
	if (err != CL_SUCCESS)
		return cl_fail(d, err, "reading the band's edge rows for the exchange");
	if (p->halo(p->user, to_up, to_dn, from_up, from_dn, all)) {
		p->failed = 1;
		return wb_fail(d, WB_EIO, NULL,
			       "swe (opencl): step %ld: exchange between processes failed",
			       s->step + 1);
	}
	for (int q = 0; q < nf && err == CL_SUCCESS; q++) {
		if (p->rank > 0)
			err = buf_write(c->env, m[q],
					(size_t)(J0 + 1 - hw) * W * sizeof(float),
					blk, from_up + q * blk);
		if (err == CL_SUCCESS && p->rank + 1 < p->size)
			err = buf_write(c->env, m[q],
					(size_t)(J1 + 1) * W * sizeof(float), blk,
					from_dn + q * blk);
	}
	p->xsecs += now_s() - t0;
	if (err != CL_SUCCESS)
		return cl_fail(d, err, "writing the neighbours' rows");
	return WB_OK;
}

/* diverged() of swe.c, from the device's flags */
static enum wb_status swe_diverged(struct cl_swe *c, struct wb_diags *d,
				   const char *what, cl_mem m, int jrow)
{
	struct swe_ctx *s = &c->s;
	float *row = malloc((size_t)s->W * sizeof(float));
	int bi = 0;
	if (row && buf_read(c->env, m, (size_t)(jrow + 1) * s->W * sizeof(float),
			    (size_t)s->W * sizeof(float), row) == CL_SUCCESS) {
		for (int i = 0; i <= s->nx; i++)
			if (!isfinite(row[i + 1])) {
				bi = i < s->nx ? i : s->nx - 1;
				break;
			}
	}
	free(row);
	double x = s->r->origin[0] + (bi + 0.5) * s->dx;
	double y = s->r->origin[1] + (jrow + 0.5) * s->dx;
	s->bad_cell = bi + (long)jrow * s->nx;
	return wb_fail(d, WB_ESIM, NULL,
		       "swe (opencl): diverged at step %ld (t = %.6g s, dt = %.3g s): non-finite %s at cell (%d, %d), world (%.2f, %.2f) m",
		       s->step, s->t, s->dt, what, bi, jrow, x, y);
}

/* One step of swe_step on the device. */
static enum wb_status swe_step_dev(struct cl_swe *c, struct wb_diags *d)
{
	struct cl_env *e = c->env;
	struct swe_ctx *s = &c->s;
	const cl_int W = s->W, nx = s->nx, ny = s->ny;
	const float k = (float)(s->dt / s->dx);
	const double dt = s->dt;
	const float hmax = (float)(SWE_OVERSHOOT_BETA * s->dx * s->dx /
				   (s->g * dt * dt));
	const float dtf = (float)s->dt;
	const double area = s->dx * s->dx;
	cl_int err = CL_SUCCESS;
	s->hmax_step = hmax;
	/* reset the step's flags and maxima */
	cl_int fl0[3] = { INT_MAX, INT_MAX, INT_MAX };
	cl_uint st0[2] = { 0, 0 };
	err |= clEnqueueWriteBuffer(e->q, c->flags, CL_FALSE, 0, sizeof(fl0), fl0, 0, NULL, NULL);
	err |= clEnqueueWriteBuffer(e->q, c->stats, CL_FALSE, 0, sizeof(st0), st0, 0, NULL, NULL);
	/* modifiers */
	cl_mem lists[2][4] = { { c->u, c->mu_c, c->mu_k, c->mu_t },
			       { c->v, c->mv_c, c->mv_k, c->mv_t } };
	long nl[2] = { s->mod_u.n, s->mod_v.n };
	const float *rate[2] = { s->mod_u.val, s->mod_v.val };
	for (int q = 0; q < 2 && err == CL_SUCCESS; q++) {
		if (!nl[q])
			continue;
		/* the weights are libm's expf, as apply_modifiers computes them
		 * (a device exp may round differently); the previous step's
		 * blocking read guarantees the last upload has completed */
		for (long k2 = 0; k2 < nl[q]; k2++)
			c->wmod[q][k2] = 1.0f - expf(-rate[q][k2] * dtf);
		err = clEnqueueWriteBuffer(e->q, lists[q][2], CL_FALSE, 0,
					   (size_t)nl[q] * sizeof(float), c->wmod[q],
					   0, NULL, NULL);
		cl_int n = (cl_int)nl[q];
		cl_kernel kk = c->k_mod;
		err |= ARG(kk, 0, lists[q][0]);
		err |= ARG(kk, 1, lists[q][1]);
		err |= ARG(kk, 2, lists[q][2]);
		err |= ARG(kk, 3, lists[q][3]);
		err |= ARG(kk, 4, n);
		if (err == CL_SUCCESS)
			err = run1d(e, kk, (size_t)n);
	}
	if (err != CL_SUCCESS)
		return cl_fail(d, err, "SWE modifiers");
	/* side-wall friction of no-slip walls (wall_drag of swe.c) */
	if (s->sim.manning > 0) {
		const float cw = (float)(s->g * s->sim.manning *
					 s->sim.manning * s->dt / s->dx);
		cl_float cws[4];
		int any = 0;
		for (int q = 0; q < 4; q++) {
			cws[q] = s->tsgn[q] < 0.0f && cw > 0.0f ? cw : 0.0f;
			any |= cws[q] > 0.0f;
		}
		const cl_float eps = (float)fmax(s->sim.dry_depth, 1e-9);
		cl_kernel kw = c->k_wdrag;
		if (any) {
			err |= ARG(kw, 0, c->u);
			err |= ARG(kw, 1, c->v);
			err |= ARG(kw, 2, c->h);
			err |= ARG(kw, 3, W);
			err |= ARG(kw, 4, nx);
			err |= ARG(kw, 5, ny);
			for (int q = 0; q < 4; q++)
				err |= ARG(kw, 6 + q, cws[q]);
			err |= ARG(kw, 10, eps);
			if (err == CL_SUCCESS)
				err = run1d(e, kw, (size_t)(nx + ny));
		}
		if (err != CL_SUCCESS)
			return cl_fail(d, err, "SWE wall friction");
	}
	/* waterfalls: the host needs h, u, v around the candidates and the
	 * particles (the same cell list serves the whole step) */
	const int falls = s->n_falls > 0;
	const cl_int sp = c->sp;
	if (falls && sp) {
		/* the active blocks before the forcing: which waterfall
		 * candidates can emit (swe_cells) */
		err = swe_sparse_scan(c);
		if (err == CL_SUCCESS)
			err = buf_read(e, c->b_act, 0, (size_t)c->nblk, c->amask);
		if (err != CL_SUCCESS)
			return cl_fail(d, err, "SWE block lists");
	}
	if (falls) {
		enum wb_status fst = swe_cells(c, d);
		if (fst != WB_OK)
			return fst;
		const cl_mem m3[3] = { c->h, c->u, c->v };
		float *const h3[3] = { s->h, s->u, s->v };
		err = cells_io(c, 3, m3, h3, 0);
		if (err != CL_SUCCESS)
			return cl_fail(d, err, "reading the waterfall cells");
		swe_falls_activate(s);
	}
	/* the block lists of this step (built at the end of the last one,
	 * except on the first step and with waterfalls) */
	if (sp) {
		if (falls)
			err = swe_sparse_lists(c, swe_force_list(c), 1);
		else if (!c->sp_ready) {
			err = swe_sparse_scan(c);
			if (err == CL_SUCCESS)
				err = swe_sparse_lists(c, 0, 1);
		}
		if (err != CL_SUCCESS)
			return cl_fail(d, err, "SWE block lists");
		c->sp_ready = 0;
		c->n_act = c->cnt_h[0];
		c->n_halo = c->cnt_h[1];
		c->fmax_cur = c->fmax_h;
		c->act_steps += c->n_act;
	}
	/* 1. height integration and the boundary bookkeeping */
	cl_kernel kk = c->k_height;
	err |= ARG(kk, 0, c->h);
	err |= ARG(kk, 1, c->u);
	err |= ARG(kk, 2, c->v);
	err |= ARG(kk, 3, c->h1);
	err |= ARG(kk, 4, c->fu);
	err |= ARG(kk, 5, c->fv);
	err |= ARG(kk, 6, W);
	err |= ARG(kk, 7, nx);
	err |= ARG(kk, 8, ny);
	err |= ARG(kk, 9, k);
	err |= ARG(kk, 10, hmax);
	err |= ARG(kk, 11, c->flags);
	err |= ARG(kk, 12, sp);
	err |= ARG(kk, 13, c->b_halol);
	if (err == CL_SUCCESS)
		err = sp ? run_blocks(e, kk, c->n_halo) : run2d(c, kk);
	kk = c->k_book;
	err |= ARG(kk, 0, c->h);
	err |= ARG(kk, 1, c->u);
	err |= ARG(kk, 2, c->v);
	err |= ARG(kk, 3, W);
	err |= ARG(kk, 4, nx);
	err |= ARG(kk, 5, ny);
	err |= ARG(kk, 6, hmax);
	err |= set_real(e, kk, 7, s->dt * s->dx);
	err |= ARG(kk, 8, c->E.per_we);
	err |= ARG(kk, 9, c->E.per_ns);
	err |= ARG(kk, 10, c->a_bin);
	err |= ARG(kk, 11, c->a_bout);
	if (err == CL_SUCCESS)
		err = run1d(e, kk, (size_t)(nx + ny));
	if (err != CL_SUCCESS)
		return cl_fail(d, err, "SWE height integration");
	if (c->par) {
		/* the band's h1 to every rank (the edges, waterfalls and
		 * particles read it anywhere); its fluxes to the neighbours
		 * (the faces read them one row away; the south faces of fv,
		 * row ny, only the last band) */
		enum wb_status xs = swe_par_rows(c, c->h1, d);
		const cl_mem f2[2] = { c->fu, c->fv };
		if (xs == WB_OK)
			xs = swe_par_halo(c, f2, 2, 1, d);
		if (xs != WB_OK)
			return xs;
	}
	if (falls) {
		float *const h1[1] = { s->h1 };
		err = cells_io(c, 1, &c->h1, h1, 0);
		if (err == CL_SUCCESS) {
			swe_falls_emit(s);
			err = cells_io(c, 1, &c->h1, h1, 1);
		}
		if (err != CL_SUCCESS)
			return cl_fail(d, err, "moving the waterfall cells");
	}
	/* sources, fixed levels, sinks */
	if (s->src.n) {
		cl_int n = (cl_int)s->src.n;
		kk = c->k_src;
		err |= ARG(kk, 0, c->h1);
		err |= ARG(kk, 1, c->src_c);
		err |= ARG(kk, 2, c->src_v);
		err |= ARG(kk, 3, n);
		err |= ARG(kk, 4, dtf);
		err |= set_real(e, kk, 5, area);
		err |= ARG(kk, 6, c->a_sin);
		err |= ARG(kk, 7, c->a_sout);
		if (err == CL_SUCCESS)
			err = run1d(e, kk, (size_t)n);
	}
	if (s->fixed.n) {
		cl_int n = (cl_int)s->fixed.n;
		kk = c->k_fixed;
		err |= ARG(kk, 0, c->h1);
		err |= ARG(kk, 1, c->H);
		err |= ARG(kk, 2, c->fix_c);
		err |= ARG(kk, 3, c->fix_v);
		err |= ARG(kk, 4, n);
		err |= set_real(e, kk, 5, area);
		err |= ARG(kk, 6, c->a_fin);
		err |= ARG(kk, 7, c->a_fout);
		if (err == CL_SUCCESS)
			err = run1d(e, kk, (size_t)n);
	}
	if (s->sink.n) {
		cl_int n = (cl_int)s->sink.n;
		kk = c->k_sink;
		err |= ARG(kk, 0, c->h1);
		err |= ARG(kk, 1, c->sink_c);
		err |= ARG(kk, 2, n);
		err |= set_real(e, kk, 3, area);
		err |= ARG(kk, 4, c->a_kout);
		if (err == CL_SUCCESS)
			err = run1d(e, kk, (size_t)n);
	}
	if (err != CL_SUCCESS)
		return cl_fail(d, err, "SWE sources");
	/* particles stay on the host: they touch only the listed cells */
	if (falls) {
		const cl_mem m3[3] = { c->h1, c->u, c->v };
		float *const h3[3] = { s->h1, s->u, s->v };
		err = cells_io(c, 3, m3, h3, 0);
		if (err == CL_SUCCESS) {
			swe_particles_step(s);
			err = cells_io(c, 3, m3, h3, 1);
		}
		if (err != CL_SUCCESS)
			return cl_fail(d, err, "moving the particle cells");
	}
	/* ghosts of h1, ghost faces of u, v */
	kk = c->k_gwe;
	err |= ARG(kk, 0, c->h1);
	err |= ARG(kk, 1, c->H);
	err |= ARG(kk, 2, W);
	err |= ARG(kk, 3, nx);
	err |= ARG(kk, 4, ny);
	err |= ARG(kk, 5, c->E);
	if (err == CL_SUCCESS)
		err = run1d(e, kk, (size_t)ny);
	kk = c->k_gns;
	err |= ARG(kk, 0, c->h1);
	err |= ARG(kk, 1, c->H);
	err |= ARG(kk, 2, W);
	err |= ARG(kk, 3, nx);
	err |= ARG(kk, 4, ny);
	err |= ARG(kk, 5, c->E);
	if (err == CL_SUCCESS)
		err = run1d(e, kk, (size_t)nx + 2);
	kk = c->k_fg;
	err |= ARG(kk, 0, c->u);
	err |= ARG(kk, 1, c->v);
	err |= ARG(kk, 2, W);
	err |= ARG(kk, 3, nx);
	err |= ARG(kk, 4, ny);
	err |= ARG(kk, 5, c->E);
	if (err == CL_SUCCESS)
		err = run1d(e, kk, (size_t)(nx + ny + 2));
	if (err != CL_SUCCESS)
		return cl_fail(d, err, "SWE ghost cells");
	/* 2 + 3: advection, pressure, friction, clamp, walls */
	struct swe_fp_h fp;
	fp.gk = (float)(s->g * dt / s->dx);
	fp.eps = (float)fmax(s->sim.dry_depth, 1e-9);
	fp.umax = (float)(SWE_VEL_ALPHA * s->dx / dt);
	fp.fric = (float)(s->g * s->sim.manning * s->sim.manning * dt);
	fp.fall = (float)(SWE_FALL_DROP * s->dx);
	const int mc = s->sim.maccormack != 0;
	cl_mem ut = mc ? c->ut : c->u, vt = mc ? c->vt : c->v;
	if (mc) {
		kk = c->k_mcb;
		err |= ARG(kk, 0, c->u);
		err |= ARG(kk, 1, c->v);
		err |= ARG(kk, 2, c->ut);
		err |= ARG(kk, 3, c->vt);
		err |= ARG(kk, 4, W);
		err |= ARG(kk, 5, nx);
		err |= ARG(kk, 6, ny);
		if (err == CL_SUCCESS)
			err = run1d(e, kk, (size_t)(nx + ny));
	}
	for (int pass = mc ? 0 : 1; pass < 2 && err == CL_SUCCESS; pass++) {
		cl_int mode = pass == 0 ? 1 : (mc ? 2 : 0);
		kk = c->k_faces;
		err |= ARG(kk, 0, c->u);
		err |= ARG(kk, 1, c->v);
		err |= ARG(kk, 2, ut);
		err |= ARG(kk, 3, vt);
		err |= ARG(kk, 4, c->fu);
		err |= ARG(kk, 5, c->fv);
		err |= ARG(kk, 6, c->h1);
		err |= ARG(kk, 7, c->H);
		err |= ARG(kk, 8, c->bb);
		err |= ARG(kk, 9, c->u1);
		err |= ARG(kk, 10, c->v1);
		err |= ARG(kk, 11, W);
		err |= ARG(kk, 12, nx);
		err |= ARG(kk, 13, ny);
		err |= ARG(kk, 14, k);
		err |= ARG(kk, 15, fp);
		err |= ARG(kk, 16, mode);
		err |= ARG(kk, 17, c->clamp_acc);
		err |= ARG(kk, 18, c->stats);
		err |= ARG(kk, 19, c->flags);
		err |= ARG(kk, 20, sp);
		/* forward estimates on the halo, new faces on the active blocks */
		cl_mem bl = mode == 1 ? c->b_halol : c->b_actl;
		err |= ARG(kk, 21, bl);
		if (err == CL_SUCCESS)
			err = !sp ? run2d(c, kk) :
			      run_blocks(e, kk, mode == 1 ? c->n_halo : c->n_act);
		if (err == CL_SUCCESS && c->par) {
			/* the band's new faces to every rank; its estimates
			 * to the neighbours (the corrector reads them one
			 * row away) */
			const cl_mem t2[2] = { c->ut, c->vt };
			enum wb_status xs = mode == 1 ? swe_par_halo(c, t2, 2, 1, d) :
					    swe_par_rows(c, c->u1, d);
			if (xs == WB_OK && mode != 1)
				xs = swe_par_rows(c, c->v1, d);
			if (xs != WB_OK)
				return xs;
		}
		if (err == CL_SUCCESS && mode == 1) {
			kk = c->k_fg;
			err |= ARG(kk, 0, c->ut);
			err |= ARG(kk, 1, c->vt);
			err |= ARG(kk, 2, W);
			err |= ARG(kk, 3, nx);
			err |= ARG(kk, 4, ny);
			err |= ARG(kk, 5, c->E);
			if (err == CL_SUCCESS)
				err = run1d(e, kk, (size_t)(nx + ny + 2));
		}
	}
	kk = c->k_bc;
	err |= ARG(kk, 0, c->u);
	err |= ARG(kk, 1, c->v);
	err |= ARG(kk, 2, c->u1);
	err |= ARG(kk, 3, c->v1);
	err |= ARG(kk, 4, c->h1);
	err |= ARG(kk, 5, c->H);
	err |= ARG(kk, 6, c->bb);
	err |= ARG(kk, 7, W);
	err |= ARG(kk, 8, nx);
	err |= ARG(kk, 9, ny);
	err |= ARG(kk, 10, fp);
	err |= ARG(kk, 11, c->E);
	err |= ARG(kk, 12, c->bc_cl);
	err |= ARG(kk, 13, c->stats);
	if (err == CL_SUCCESS)
		err = run1d(e, kk, (size_t)(nx + ny));
	if (err != CL_SUCCESS)
		return cl_fail(d, err, "SWE velocity update");
	/* the step's verdict and maxima (the next dt depends on them): read
	 * after foam and the next step's activity pass, in one wait */
	cl_int fl[3];
	cl_uint stt[2];
	err = clEnqueueReadBuffer(e->q, c->flags, CL_FALSE, 0, sizeof(fl), fl, 0, NULL, NULL);
	if (err == CL_SUCCESS)
		err = clEnqueueReadBuffer(e->q, c->stats, CL_FALSE, 0, sizeof(stt),
					  stt, 0, NULL, NULL);
	if (err != CL_SUCCESS)
		return cl_fail(d, err, "running the SWE kernels");
	SWAP_MEM(c->u, c->u1);
	SWAP_MEM(c->v, c->v1);
	SWAP_MEM(c->h, c->h1);
	if (s->foam_on) {
		struct foam_par_h fpar;
		const struct wb_sim *sm = &s->sim;
		double al = sm->foam_diffusion * s->dt / (s->dx * s->dx);
		fpar.eps = (float)fmax(sm->dry_depth, 1e-9);
		fpar.alpha = (float)(al < 0.2 ? al : 0.2);
		fpar.decay = (float)(1.0 / (1.0 + sm->foam_dissipation * s->dt));
		fpar.dt = (float)s->dt;
		fpar.idx = (float)(1.0 / s->dx);
		fpar.kta = (float)sm->foam_trapped;
		fpar.kst = (float)sm->foam_steep;
		fpar.ta0 = (float)sm->foam_trapped_min;
		fpar.ta1 = (float)sm->foam_trapped_max;
		fpar.st0 = (float)sm->foam_steep_min;
		fpar.st1 = (float)sm->foam_steep_max;
		fpar.k = (float)(s->dt / s->dx);
		kk = c->k_fgh;
		err |= ARG(kk, 0, c->foam);
		err |= ARG(kk, 1, W);
		err |= ARG(kk, 2, nx);
		err |= ARG(kk, 3, ny);
		if (err == CL_SUCCESS)
			err = run1d(e, kk, (size_t)(nx + ny));
		kk = c->k_fgen;
		err |= ARG(kk, 0, c->h);
		err |= ARG(kk, 1, c->H);
		err |= ARG(kk, 2, c->u);
		err |= ARG(kk, 3, c->v);
		err |= ARG(kk, 4, c->foam);
		err |= ARG(kk, 5, c->foam1);
		err |= ARG(kk, 6, W);
		err |= ARG(kk, 7, nx);
		err |= ARG(kk, 8, ny);
		err |= ARG(kk, 9, fpar);
		err |= ARG(kk, 10, sp);
		err |= ARG(kk, 11, c->b_actl);
		if (err == CL_SUCCESS)
			err = sp ? run_blocks(e, kk, c->n_act) : run2d(c, kk);
		if (err == CL_SUCCESS && c->par) {
			/* foam_adv departs at most |v| dt/dx <= 1/2 of a
			 * row (the velocity clamp; an inflow edge face,
			 * not clamped, points the departure off the grid,
			 * where it is clamped to the edge row): one row
			 * away; two sent */
			enum wb_status xs = swe_par_halo(c, &c->foam1, 1, 2, d);
			if (xs != WB_OK)
				return xs;
		}
		kk = c->k_fadv;
		err |= ARG(kk, 0, c->h);
		err |= ARG(kk, 1, c->u);
		err |= ARG(kk, 2, c->v);
		err |= ARG(kk, 3, c->foam1);
		err |= ARG(kk, 4, c->foam);
		err |= ARG(kk, 5, W);
		err |= ARG(kk, 6, nx);
		err |= ARG(kk, 7, ny);
		err |= ARG(kk, 8, fpar);
		err |= ARG(kk, 9, sp);
		err |= ARG(kk, 10, c->b_actl);
		if (err == CL_SUCCESS)
			err = sp ? run_blocks(e, kk, c->n_act) : run2d(c, kk);
		if (err == CL_SUCCESS && c->par) {
			/* the next foam_gen reads foam one row away; the
			 * rest of it only the export, which gathers it
			 * (swe_download) */
			enum wb_status xs = swe_par_halo(c, &c->foam, 1, 1, d);
			if (xs != WB_OK)
				return xs;
		}
		if (err != CL_SUCCESS)
			return cl_fail(d, err, "SWE foam");
	}
	if (sp && !falls) {
		err = swe_sparse_scan(c);
		if (err == CL_SUCCESS)
			err = swe_sparse_lists(c, 0, 0);
		c->sp_ready = err == CL_SUCCESS;
	}
	if (err == CL_SUCCESS)
		err = clFinish(e->q);
	if (err != CL_SUCCESS)
		return cl_fail(d, err, "running the SWE kernels");
	if (c->par) {
		/* the bands' verdicts and maxima */
		if (swe_par_verdict(c->par, fl, stt))
			return wb_fail(d, WB_EIO, NULL,
				       "swe (opencl): step %ld: exchange between processes failed",
				       s->step + 1);
	}
	/* (the fields of the step are swapped in: h1 -> h, u1 -> u, v1 -> v) */
	if (fl[0] != INT_MAX)
		return swe_diverged(c, d, "depth", c->h, fl[0]);
	if (fl[1] != INT_MAX || fl[2] != INT_MAX) {
		if (fl[1] <= fl[2])
			return swe_diverged(c, d, "x-velocity", c->u, fl[1]);
		return swe_diverged(c, d, "y-velocity", c->v, fl[2]);
	}
	/* the sleeping blocks' films count in the largest depth */
	if (sp && c->fmax_cur > stt[1])
		stt[1] = c->fmax_cur;
	s->t += dt;
	s->t_cur += dt;
	s->step++;
	swe_next_dt(s, bits_f(stt[0]), bits_f(stt[1]));
	return WB_OK;
}

enum wb_status cl_swe_run(struct cl_swe *c, long n, struct wb_diags *d)
{
	for (long k = 0; k < n; k++) {
		enum wb_status st = swe_step_dev(c, d);
		if (st != WB_OK)
			return st;
	}
	return WB_OK;
}

/* swe_residual on the device; snapshot = copy of u, v. */
static cl_int swe_resid_dev(struct cl_swe *c, double *res)
{
	struct cl_env *e = c->env;
	const struct swe_ctx *s = &c->s;
	cl_int W = s->W, nx = s->nx, ny = s->ny;
	cl_kernel k = c->k_resid;
	cl_int err = ARG(k, 0, c->u);
	err |= ARG(k, 1, c->v);
	err |= ARG(k, 2, c->us);
	err |= ARG(k, 3, c->vs);
	err |= ARG(k, 4, W);
	err |= ARG(k, 5, nx);
	err |= ARG(k, 6, ny);
	err |= ARG(k, 7, c->rnum);
	err |= ARG(k, 8, c->rden);
	if (err == CL_SUCCESS)
		err = run1d(e, k, (size_t)ny + 1);
	double *a = malloc((size_t)(ny + 1) * sizeof(double));
	double *b = malloc((size_t)(ny + 1) * sizeof(double));
	if (!a || !b)
		err = CL_OUT_OF_HOST_MEMORY;
	if (err == CL_SUCCESS)
		err = read_reals(e, c->rnum, (size_t)ny + 1, a);
	if (err == CL_SUCCESS)
		err = read_reals(e, c->rden, (size_t)ny + 1, b);
	double sa = 0, sb = 0;
	for (int j = 0; err == CL_SUCCESS && j <= ny; j++) {
		sa += a[j];
		sb += b[j];
	}
	free(a);
	free(b);
	size_t fb = (size_t)s->ncell * sizeof(float);
	if (err == CL_SUCCESS)
		err = buf_copy32(e, c->u, c->us, fb);
	if (err == CL_SUCCESS)
		err = buf_copy32(e, c->v, c->vs, fb);
	if (res)
		*res = sb <= 0.0 ? (sa > 0.0 ? 1.0 : 0.0) : sqrt(sa / sb);
	return err;
}

/* Device bookkeeping, summed in a fixed order. */
static cl_int swe_books(struct cl_swe *c, double *in, double *out, long *clamped)
{
	struct cl_env *e = c->env;
	const struct swe_ctx *s = &c->s;
	size_t nbk = (size_t)(s->nx + s->ny);
	size_t nmax = MAXD(MAXD(nbk, c->ngroups),
			   MAXD(MAXD((size_t)s->src.n, (size_t)s->fixed.n),
				(size_t)s->sink.n)) + 1;
	double *t = malloc(nmax * sizeof(double));
	cl_ulong *u = malloc(nmax * sizeof(cl_ulong));
	cl_int err = (!t || !u) ? CL_OUT_OF_HOST_MEMORY : CL_SUCCESS;
	double si = 0, so = 0;
	unsigned long long cl = 0;
	struct { cl_mem m; size_t n; double *acc; } R[] = {
		{ c->a_bin, nbk, &si }, { c->a_bout, nbk, &so },
		{ c->a_sin, (size_t)s->src.n, &si }, { c->a_sout, (size_t)s->src.n, &so },
		{ c->a_fin, (size_t)s->fixed.n, &si }, { c->a_fout, (size_t)s->fixed.n, &so },
		{ c->a_kout, (size_t)s->sink.n, &so } };
	for (size_t q = 0; err == CL_SUCCESS && q < sizeof(R) / sizeof(R[0]); q++) {
		err = read_reals(e, R[q].m, R[q].n, t);
		for (size_t k = 0; err == CL_SUCCESS && k < R[q].n; k++)
			*R[q].acc += t[k];
	}
	if (err == CL_SUCCESS)
		err = buf_read(e, c->bc_cl, 0, nbk * sizeof(cl_ulong), u);
	for (size_t k = 0; err == CL_SUCCESS && k < nbk; k++)
		cl += u[k];
	if (err == CL_SUCCESS)
		err = buf_read(e, c->clamp_acc, 0, c->ngroups * sizeof(cl_ulong), u);
	unsigned long long cg = 0; /* the row passes': this band's */
	for (size_t k = 0; err == CL_SUCCESS && k < c->ngroups; k++)
		cg += u[k];
	if (c->par) /* integers: exact in any order */
		cg = (unsigned long long)wb_par_sum(c->par, (long long)cg);
	cl += cg;
	free(t);
	free(u);
	*in = si;
	*out = so;
	*clamped = (long)cl;
	return err;
}

/* Bring the fields the export reads back to the host context. */
static cl_int swe_download(struct cl_swe *c)
{
	struct swe_ctx *s = &c->s;
	size_t fb = (size_t)s->ncell * sizeof(float);
	cl_int err = buf_read(c->env, c->h, 0, fb, s->h);
	if (err == CL_SUCCESS)
		err = buf_read(c->env, c->u, 0, fb, s->u);
	if (err == CL_SUCCESS)
		err = buf_read(c->env, c->v, 0, fb, s->v);
	if (err == CL_SUCCESS && s->foam_on)
		err = buf_read(c->env, c->foam, 0, fb, s->foam);
	return err;
}

/* ---- window means on the device (swe_means_* of swe.c) -------------------
 * The sums, the means and the relative change stay on the device; per
 * window the host reads three row sums per row (added in row order, as
 * swe_means_close does) and the means only once, at the end. With the
 * block-sparse step a sample adds only the blocks whose sums can change
 * (swe_blk_samples). */
struct swe_means_dev {
	long every, nsamp, windows;
};

/* swe.c's swe_sample_every: the sampling interval of a window */
static long swe_sample_every_dev(long window)
{
	for (long e = window / SWE_SAMPLES; e > 1; e--)
		if (window % e == 0)
			return e;
	return 1;
}

static cl_int swe_means_alloc(struct cl_swe *c)
{
	struct cl_env *e = c->env;
	const struct swe_ctx *s = &c->s;
	const size_t fb = (size_t)s->ncell * sizeof(float);
	const size_t nb = (size_t)s->nx * s->ny * sizeof(float);
	const size_t rb = (size_t)s->ny * e->realsz;
	cl_int err = CL_SUCCESS;
	cl_mem *m[] = { &c->msh, &c->msu, &c->msv, &c->mh, &c->mu, &c->mv,
			&c->pu, &c->pv, &c->rn, &c->rd, &c->rh };
	size_t sz[] = { fb, fb, fb, nb, nb, nb, nb, nb, rb, rb, rb };
	for (int q = 0; q < 11 && err == CL_SUCCESS; q++)
		if ((*m[q] = buf_new(e, sz[q], &err)) != NULL)
			err = buf_zero(e, *m[q], sz[q]);
	return err;
}

static cl_int swe_means_sample_dev(struct cl_swe *c)
{
	struct cl_env *e = c->env;
	const struct swe_ctx *s = &c->s;
	cl_int err = CL_SUCCESS;
	if (!c->sp) {
		cl_int n = (cl_int)s->ncell;
		cl_kernel kk = c->k_macc;
		err |= ARG(kk, 0, c->h);
		err |= ARG(kk, 1, c->u);
		err |= ARG(kk, 2, c->v);
		err |= ARG(kk, 3, c->msh);
		err |= ARG(kk, 4, c->msu);
		err |= ARG(kk, 5, c->msv);
		err |= ARG(kk, 6, n);
		if (err == CL_SUCCESS)
			err = run1d(e, kk, (size_t)n);
		return err;
	}
	const cl_int W = s->W, nx = s->nx, ny = s->ny, nbx = c->nbx, nby = c->nby;
	const cl_int zero = 0;
	cl_int n = 0;
	err = clEnqueueFillBuffer(e->q, c->b_cnt, &zero, sizeof(zero),
				  3 * sizeof(cl_int), sizeof(cl_int), 0, NULL, NULL);
	cl_kernel k = c->k_bsamp;
	err |= ARG(k, 0, c->b_touch);
	err |= ARG(k, 1, c->b_film);
	err |= ARG(k, 2, nbx);
	err |= ARG(k, 3, nby);
	err |= ARG(k, 4, c->b_sampl);
	err |= ARG(k, 5, c->b_cnt);
	if (err == CL_SUCCESS)
		err = run1d(e, k, (size_t)c->nblk);
	if (err == CL_SUCCESS)
		err = buf_read(e, c->b_cnt, 3 * sizeof(cl_int), sizeof(n), &n);
	k = c->k_bmean;
	err |= ARG(k, 0, c->h);
	err |= ARG(k, 1, c->u);
	err |= ARG(k, 2, c->v);
	err |= ARG(k, 3, c->msh);
	err |= ARG(k, 4, c->msu);
	err |= ARG(k, 5, c->msv);
	err |= ARG(k, 6, W);
	err |= ARG(k, 7, nx);
	err |= ARG(k, 8, ny);
	err |= ARG(k, 9, c->b_sampl);
	if (err == CL_SUCCESS)
		err = run_groups(e, k, (size_t)n);
	return err;
}

/* swe_means_close on the device; *res as it returns. */
static cl_int swe_means_close_dev(struct cl_swe *c, struct swe_means_dev *M,
				  double *res)
{
	struct cl_env *e = c->env;
	const struct swe_ctx *s = &c->s;
	const cl_int W = s->W, nx = s->nx, ny = s->ny;
	const cl_float w = 1.0f / (float)M->nsamp;
	const cl_float thin = (float)(SWE_THIN * fmax(s->sim.dry_depth, 1e-9));
	SWAP_MEM(c->pu, c->mu);
	SWAP_MEM(c->pv, c->mv);
	cl_kernel k = c->k_mrows;
	cl_int err = CL_SUCCESS;
	err |= ARG(k, 0, c->msh);
	err |= ARG(k, 1, c->msu);
	err |= ARG(k, 2, c->msv);
	err |= ARG(k, 3, c->mh);
	err |= ARG(k, 4, c->mu);
	err |= ARG(k, 5, c->mv);
	err |= ARG(k, 6, c->pu);
	err |= ARG(k, 7, c->pv);
	err |= ARG(k, 8, W);
	err |= ARG(k, 9, nx);
	err |= ARG(k, 10, ny);
	err |= ARG(k, 11, w);
	err |= ARG(k, 12, thin);
	err |= ARG(k, 13, c->rn);
	err |= ARG(k, 14, c->rd);
	err |= ARG(k, 15, c->rh);
	if (err == CL_SUCCESS)
		err = run1d(e, k, (size_t)ny);
	double *t = malloc(3 * (size_t)ny * sizeof(double));
	if (!t)
		err = CL_OUT_OF_HOST_MEMORY;
	if (err == CL_SUCCESS)
		err = read_reals(e, c->rn, (size_t)ny, t);
	if (err == CL_SUCCESS)
		err = read_reals(e, c->rd, (size_t)ny, t + ny);
	if (err == CL_SUCCESS)
		err = read_reals(e, c->rh, (size_t)ny, t + 2 * (size_t)ny);
	double num = 0.0, den = 0.0, hs = 0.0;
	for (int j = 0; err == CL_SUCCESS && j < ny; j++) {
		num += t[j];
		den += t[ny + j];
		hs += t[2 * ny + j];
	}
	free(t);
	const size_t fb = (size_t)s->ncell * sizeof(float);
	if (err == CL_SUCCESS)
		err = buf_zero(e, c->msh, fb);
	if (err == CL_SUCCESS)
		err = buf_zero(e, c->msu, fb);
	if (err == CL_SUCCESS)
		err = buf_zero(e, c->msv, fb);
	/* the next window's sample set starts from the active blocks */
	if (err == CL_SUCCESS && c->sp)
		err = clEnqueueCopyBuffer(e->q, c->b_act, c->b_touch, 0, 0,
					  round_up((size_t)c->nblk, 4), 0, NULL,
					  NULL);
	M->nsamp = 0;
	if (M->windows++ == 0) {
		*res = INFINITY;
	} else {
		den = fmax(den, SWE_RES_FLOOR * SWE_RES_FLOOR * hs);
		*res = den > 0.0 ? sqrt(num / den) : 0.0;
	}
	return err;
}

enum wb_status cl_swe_solve(const struct wb_raster *r, const struct wb_sim *sim,
			    const struct wb_solve_opts *o, struct wb_state *out,
			    struct wb_solve_report *rep, struct wb_diags *d)
{
	double t0 = now_s();
	memset(out, 0, sizeof(*out));
	memset(rep, 0, sizeof(*rep));
	struct cl_env *e = NULL;
	struct cl_swe *c = NULL;
	struct swe_means_dev M;
	memset(&M, 0, sizeof(M));
	enum wb_status st = solve_env(o ? o->cl_device : 0, &e, d);
	if (st != WB_OK)
		return st;
	st = cl_swe_create(e, r, sim, o ? o->threads : 0, &c, d);
	if (st != WB_OK)
		goto done;
	struct swe_ctx *s = &c->s;
	if (o && o->par && o->par->size > 1 && o->par->ny == s->ny) {
		/* several processes (docs/mpi.md): the dense step over this
		 * band (the block-sparse one gives the same bytes) */
		c->par = o->par;
		cl_swe_set_sparse(c, 0);
		/* whole rows, or 4 x 2 rows of swe_par_halo */
		size_t nxr = MAXD((size_t)s->ncell, 8 * (size_t)s->W);
		if (!(c->xrow = malloc(nxr * sizeof(float)))) {
			st = wb_fail(d, WB_EIO, NULL, "opencl: out of memory");
			goto done;
		}
	}
	/* as swe_solve */
	long max = o && o->steps > 0 ? o->steps :
		   sim->max_steps > 0 ? sim->max_steps : 100000;
	long window = sim->window > 0 ? sim->window : 200;
	double tol = sim->tolerance > 0 ? sim->tolerance : 1e-4;
	long every = window < 100 ? window : 100;
	double res = NAN; /* until the first window measures it */
	int conv = 0;
	/* as swe_solve: a run to convergence compares window means (summed
	   on the device, closed on the host by swe_means_close), a run of
	   fixed length reports the change since the last snapshot */
	const int means = !o || o->steps <= 0;
	cl_int err = CL_SUCCESS;
	if (means) {
		M.every = swe_sample_every_dev(window);
		err = swe_means_alloc(c);
	} else {
		err = swe_resid_dev(c, NULL); /* snapshot the start */
	}
	if (err != CL_SUCCESS) {
		st = cl_fail(d, err, "SWE snapshot");
		goto done;
	}
	rep->setup_s = now_s() - t0;
	while (s->step < max) {
		if (o && o->cancel && *o->cancel) {
			st = wb_fail(d, WB_ECANCEL, NULL,
				     "swe (opencl): interrupted at step %ld",
				     s->step);
			goto done;
		}
		st = swe_step_dev(c, d);
		if (st != WB_OK)
			goto done;
		if (means && s->step % M.every == 0) {
			err = swe_means_sample_dev(c);
			M.nsamp++;
		}
		if (means && s->step % window == 0 && err == CL_SUCCESS &&
		    M.nsamp > 0)
			err = swe_means_close_dev(c, &M, &res); /* clears the sums */
		if (err != CL_SUCCESS) {
			st = cl_fail(d, err, "SWE window means");
			goto done;
		}
		if (s->step % window == 0) {
			if (!means && (err = swe_resid_dev(c, &res)) != CL_SUCCESS) {
				st = cl_fail(d, err, "SWE residual");
				goto done;
			}
			for (long n = 0; n < s->n_falls; n++) {
				s->falls[n].emit_last = s->falls[n].emit_cur;
				s->falls[n].emit_cur = 0.0;
			}
			s->t_last = s->t_cur;
			s->t_cur = 0.0;
			if (means && res < tol && s->step >= 2 * window) {
				conv = 1;
				if (o && o->progress)
					o->progress(o->progress_user, s->step, max,
						    res);
				break;
			}
		}
		if (o && o->progress && (s->step % every == 0 || s->step == max))
			o->progress(o->progress_user, s->step, max,
				    isfinite(res) ? res : NAN);
	}
	double din = 0, dout = 0;
	long clamped = 0;
	if ((err = swe_download(c)) != CL_SUCCESS ||
	    (err = swe_books(c, &din, &dout, &clamped)) != CL_SUCCESS) {
		st = cl_fail(d, err, "reading the SWE fields");
		goto done;
	}
	/* several processes: foam went to the neighbours only (the halo);
	 * its interior rows from their owners, for swe_export */
	if (c->par && s->foam_on &&
	    wb_par_rows(c->par, s->foam, sizeof(float), s->W, 1, 0)) {
		st = wb_fail(d, WB_EIO, NULL,
			     "swe (opencl): gathering the foam between processes failed");
		goto done;
	}
	double vf = swe_grid_volume(s);
	double vp = swe_particles_volume(&s->P);
	rep->steps = s->step;
	rep->converged = conv;
	rep->residual = isfinite(res) ? res : NAN;
	rep->sim_time = s->t;
	rep->dt = s->step > 0 ? s->t / (double)s->step : s->dt;
	rep->vol_initial = s->vol_initial;
	rep->vol_final = vf;
	rep->vol_in = s->vol_in + din;
	rep->vol_out = s->vol_out + dout;
	rep->vol_particles = vp;
	double ref = fmax(fmax(rep->vol_initial + rep->vol_in, vf + vp), 1e-30);
	rep->balance_error = fabs(rep->vol_initial + rep->vol_in - rep->vol_out -
				  vf - vp) / ref;
	rep->clamped = s->clamped + clamped;
	rep->bytes_per_cell = cl_swe_bytes_per_cell(c);
	if (rep->balance_error > 1e-4) {
		st = wb_fail(d, WB_ESIM, NULL,
			     "swe (opencl): water not conserved after %ld steps (t = %.6g s): relative balance error %.3g",
			     s->step, s->t, rep->balance_error);
		goto done;
	}
	st = swe_export(s, out, d);
	if (st == WB_OK && means && M.windows > 0) {
		/* as swe_solve: the last window's mean depth and flow */
		size_t n = (size_t)s->nx * s->ny * sizeof(float);
		err = buf_read(e, c->mh, 0, n, out->h);
		if (err == CL_SUCCESS)
			err = buf_read(e, c->mu, 0, n, out->u);
		if (err == CL_SUCCESS)
			err = buf_read(e, c->mv, 0, n, out->v);
		if (err != CL_SUCCESS)
			st = cl_fail(d, err, "reading the SWE window means");
	}
	if (st == WB_OK && means && !conv && M.windows >= 2) {
		/* not steady: where the last window still changed (swe_solve) */
		size_t n = (size_t)s->nx * s->ny;
		float *pu = malloc(n * sizeof(float)), *pv = malloc(n * sizeof(float));
		if (!pu || !pv)
			st = wb_fail(d, WB_EIO, NULL, "swe (opencl): out of memory");
		if (st == WB_OK &&
		    ((err = buf_read(e, c->pu, 0, n * sizeof(float), pu)) != CL_SUCCESS ||
		     (err = buf_read(e, c->pv, 0, n * sizeof(float), pv)) != CL_SUCCESS))
			st = cl_fail(d, err, "reading the SWE window means");
		if (st == WB_OK &&
		    wb_unsteady_where(s->nx, s->ny, out->h, out->u, out->v, pu, pv,
				      (float)(SWE_THIN * fmax(s->sim.dry_depth, 1e-9)),
				      rep))
			st = wb_fail(d, WB_EIO, NULL, "swe (opencl): out of memory");
		free(pu);
		free(pv);
	}
done:
	rep->seconds = now_s() - t0;
	if (c && st != WB_OK && rep->steps == 0) {
		rep->steps = c->s.step;
		rep->sim_time = c->s.t;
	}
	rep->dev_kernel_s = cl_env_profile(e, "swe", d);
	cl_swe_free(c);
	cl_env_free(e);
	return st;
}

#else
/* ISO C forbids an empty translation unit. */
typedef int wb_cl_unused;
#endif /* WB_OPENCL */
