/*
 * test_opencl_idx64.c - 64-bit offsets in the OpenCL kernels (issue 14:
 * grids above ~15000^2 cells on one device; src/cl/common.cl WB_SLICE,
 * src/cl.c cl_fits; docs/opencl.md "Grids above 2^31 offsets").
 *
 * A grid whose offsets pass 2^31 needs buffers of more than 8 GiB, which
 * PoCL cannot run in make test's time, so the index arithmetic is tested
 * itself:
 * - the device computes WB_SLICE (the offset a N + n of element n of
 *   slice a, with N the padded cell count) for N of the 16384^2 world and
 *   of the largest grid the host accepts, and the results equal the host's
 *   64-bit products, which are above 2^31 (2^32) where a 32-bit product
 *   would have wrapped;
 * - every kernel source that indexes buffers of N-cell slices (lbm.cl,
 *   par.cl) does it through WB_SLICE: no 'N' next to '*' or '+' outside
 *   comments;
 * - the grids the device cannot hold fail at once with the documented
 *   statuses: beyond 32-bit cell indices WB_EINPUT (exit 2), a buffer over
 *   CL_DEVICE_MAX_MEM_ALLOC_SIZE or the fields over the device's memory
 *   WB_EIO (exit 4), for both solvers, before any host work (the raster
 *   below has no arrays).
 * The kernels' bytes with the 64-bit offsets are the CPU's: test_opencl,
 * test_opencl_lbm_sparse and test_opencl_hybrid compare them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cl.h"

extern const char *const wb_cl_sources[];
extern const char *const wb_cl_names[];

static int dev_index(void)
{
	const char *s = getenv("WB_CL_DEVICE");
	if (s && *s)
		return atoi(s);
	int k = cl_default_device();
	return k < 0 ? 0 : k;
}

static void test_slice_probe(void **state)
{
	(void)state;
	struct wb_diags d;
	wb_diags_init(&d);
	struct cl_env *e = NULL;
	assert_int_equal(cl_env_open(dev_index(), &e, &d), WB_OK);
	/* padded cell counts: the 16384^2 world, the largest the host takes */
	const int Ns[] = { 16386 * 16386, 46339 * 46339, 2147483646 };
	for (int t = 0; t < 3; t++) {
		const int N = Ns[t];
		int a[12], n[12];
		int64_t out[12], want[12];
		for (int k = 0; k < 12; k++) {
			a[k] = k < 6 ? k : 8 - (k - 6) / 3;
			n[k] = k < 6 ? k : N - 1 - (k - 6) * 12345;
			want[k] = (int64_t)a[k] * N + n[k];
		}
		assert_int_equal(cl_slice_probe(e, a, n, N, 12, out, &d), WB_OK);
		int above = 0;
		for (int k = 0; k < 12; k++) {
			assert_true(out[k] == want[k]);
			above += want[k] > INT32_MAX;
		}
		/* the check means something: offsets above 2^31 were probed */
		assert_true(above >= 3);
	}
	cl_env_free(e);
	wb_diags_release(&d);
}

static const char *source_of(const char *name)
{
	for (int k = 0; wb_cl_names[k]; k++)
		if (!strcmp(wb_cl_names[k], name))
			return wb_cl_sources[k];
	return NULL;
}

/* Non-comment occurrences of the identifier N next to '*' or '+'. */
static int raw_slice_products(const char *src)
{
	int bad = 0, block = 0;
	for (const char *p = src; *p; p++) {
		if (block) {
			if (p[0] == '*' && p[1] == '/')
				block = 0, p++;
			continue;
		}
		if (p[0] == '/' && p[1] == '*') {
			block = 1, p++;
			continue;
		}
		if (p[0] == '/' && p[1] == '/') {
			while (*p && *p != '\n')
				p++;
			if (!*p)
				break;
			continue;
		}
		if (*p != 'N' || (p > src && (p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z') ||
					      (p[-1] >= 'A' && p[-1] <= 'Z') ||
					      (p[-1] >= '0' && p[-1] <= '9'))))
			continue;
		const char nx = p[1];
		if (nx == '_' || (nx >= 'a' && nx <= 'z') || (nx >= 'A' && nx <= 'Z') ||
		    (nx >= '0' && nx <= '9'))
			continue;
		const char *b = p - 1, *f = p + 1;
		while (b > src && (*b == ' ' || *b == '\t'))
			b--;
		while (*f == ' ' || *f == '\t')
			f++;
		if (*b == '*' || *b == '+' || *f == '*' || *f == '+')
			bad++;
	}
	return bad;
}

static void test_sources_use_slice(void **state)
{
	(void)state;
	const char *names[] = { "lbm.cl", "par.cl" };
	for (int k = 0; k < 2; k++) {
		const char *s = source_of(names[k]);
		assert_non_null(s);
		assert_non_null(strstr(s, "WB_SLICE("));
		assert_int_equal(raw_slice_products(s), 0);
	}
	/* the scan finds what it looks for */
	assert_int_equal(raw_slice_products("x = A[a * N + n]; /* a * N */"), 1);
	assert_int_equal(raw_slice_products("y = B[N + n] + A[WB_SLICE(a, N, n)];"), 1);
	assert_int_equal(raw_slice_products("int N, int NN; f(N, W);"), 0);
}

static void test_refusals(void **state)
{
	(void)state;
	struct wb_diags d;
	wb_diags_init(&d);
	struct cl_env *e = NULL;
	assert_int_equal(cl_env_open(dev_index(), &e, &d), WB_OK);
	struct wb_sim sim;
	memset(&sim, 0, sizeof(sim));
	sim.dry_depth = 1e-3;
	sim.max_steps = 10;
	sim.window = 10;
	struct wb_raster r;
	memset(&r, 0, sizeof(r)); /* no arrays: refused before reading them */
	r.dx = 1;
	/* cell indices: 50000^2 padded cells pass 2^31 */
	r.nx = r.ny = 50000;
	struct cl_lbm *l = NULL;
	struct cl_swe *s = NULL;
	sim.solver = WB_SOLVER_LBM;
	assert_int_equal(cl_lbm_create(e, &r, &sim, 1, 0, &l, &d), WB_EINPUT);
	assert_null(l);
	sim.solver = WB_SOLVER_SWE;
	assert_int_equal(cl_swe_create(e, &r, &sim, 1, &s, &d), WB_EINPUT);
	assert_null(s);
	/* 40000^2: 57.6 GB of distributions in one buffer, 123 GB of SWE
	 * fields: more than PoCL (and any GPU of today) holds */
	r.nx = r.ny = 40000;
	int before = d.n;
	sim.solver = WB_SOLVER_LBM;
	assert_int_equal(cl_lbm_create(e, &r, &sim, 1, 0, &l, &d), WB_EIO);
	assert_null(l);
	assert_true(d.n > before);
	assert_non_null(strstr(d.v[d.n - 1].msg, "40000x40000"));
	assert_non_null(strstr(d.v[d.n - 1].msg, "device"));
	sim.solver = WB_SOLVER_SWE;
	assert_int_equal(cl_swe_create(e, &r, &sim, 1, &s, &d), WB_EIO);
	assert_null(s);
	assert_non_null(strstr(d.v[d.n - 1].msg, "SWE fields"));
	cl_env_free(e);
	wb_diags_release(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slice_probe),
		cmocka_unit_test(test_sources_use_slice),
		cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
