/*
 * bench_opencl.c - speed of the OpenCL back end (OPENCL=1 builds only).
 *
 *   build/rel-cl/tests/bench_opencl [--size N] [--steps S] [--device K]
 *                                    [--lx L] [--opts "compiler options"]
 *
 * Picks the first GPU (or --device K, an index of wbake --list-devices),
 * names it on stderr, and prints
 *   bench ocl_copy_gbs <v> GB/s               float4 copy kernel, read+write
 *   bench lbm_ocl_mlups <v> MLUPS             LBM-SWE steps on N x N
 *   bench lbm_ocl_bytes_per_cell <v> B        device memory traffic per cell
 *   bench lbm_ocl_gbs <v> GB/s                MLUPS x bytes per cell
 *   bench lbm_ocl_roofline_frac <v> ratio     lbm_ocl_gbs / ocl_copy_gbs
 *   bench swe_ocl_mcells <v> Mcells/s         SWE steps (foam on) on N x N
 *   bench swe_ocl_bytes_per_cell <v> B        device memory traffic per cell
 *   bench swe_ocl_roofline_frac <v> ratio     its bandwidth / ocl_copy_gbs
 *   bench swe_ocl_falls_mcells <v> Mcells/s   the same with a 6 m cliff
 *                                             across N/16 cells: waterfall
 *                                             particles on the host
 *   bench swe_ocl_falls_kb_per_step <v> KiB   rows moved for them per step
 * The scene is generated: a 1 % slope with a meandering channel and dry
 * banks, inflow by discharge on the west edge, open east edge, walls north
 * and south, so the timed steps include the boundary kernels and a mix of
 * wet, dry and clamped cells (SWE: the same scene, foam on, no cliff, so
 * every step stays on the device). Defaults: N = 8192, S = 300 on a GPU
 * (SWE S / 3: its adaptive time step reads two maxima back every step);
 * N = 256, S = 40 otherwise (PoCL on a CPU, quick). The SWE figures are
 * the dense kernels' (cl_swe_set_sparse 0); the block-sparse step is
 * measured by bench_opencl_world.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cl.h"
#include "solve.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void print_diags(const struct wb_diags *d)
{
	char buf[8192];
	for (int k = 0; k < d->n; k++) {
		wb_diag_format(&d->v[k], buf, sizeof(buf));
		fprintf(stderr, "bench_opencl: %s\n", buf);
	}
}

static int scene(struct wb_raster *r, int n)
{
	memset(r, 0, sizeof(*r));
	size_t nn = (size_t)n * n;
	r->nx = r->ny = n;
	r->dx = 1.0;
	r->z = malloc(nn * sizeof(float));
	r->h0 = malloc(nn * sizeof(float));
	if (!r->z || !r->h0)
		return -1;
	for (int j = 0; j < n; j++) {
		double yc = 0.5 * n + 0.15 * n * sin(6.2831853 * 3.0 * j / n);
		for (int i = 0; i < n; i++) {
			size_t k = i + (size_t)j * n;
			double x = i + 0.5, dy = fabs(j + 0.5 - yc) / n;
			double z = 20.0 + 0.001 * (n - x) +
				   (dy > 0.2 ? 4.0 * (dy - 0.2) : 0.0);
			r->z[k] = (float)z;
			double surf = 21.0 + 0.001 * (n - x);
			r->h0[k] = (float)(surf > z ? surf - z : 0.0);
		}
	}
	for (int e = 0; e < 4; e++)
		r->edges[e].kind = WB_EDGE_WALL;
	r->edges[WB_WEST].kind = WB_EDGE_INFLOW;
	r->edges[WB_WEST].discharge = 0.5;
	r->edges[WB_EAST].kind = WB_EDGE_OPEN;
	return 0;
}

int main(int argc, char **argv)
{
	int n = 0, dev = -2, lx = 0;
	const char *opts = NULL;
	long steps = 0;
	for (int k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--size") && k + 1 < argc)
			n = atoi(argv[++k]);
		else if (!strcmp(argv[k], "--steps") && k + 1 < argc)
			steps = atol(argv[++k]);
		else if (!strcmp(argv[k], "--device") && k + 1 < argc)
			dev = atoi(argv[++k]);
		else if (!strcmp(argv[k], "--lx") && k + 1 < argc)
			lx = atoi(argv[++k]);
		else if (!strcmp(argv[k], "--opts") && k + 1 < argc)
			opts = argv[++k];
		else {
			fprintf(stderr, "usage: %s [--size N] [--steps S] [--device K] [--lx L] [--opts O]\n",
				argv[0]);
			return 1;
		}
	}
	if (dev == -2)
		dev = cl_default_device();
	if (dev < 0) {
		fprintf(stderr, "bench_opencl: no OpenCL device\n");
		return 1;
	}
	struct wb_diags d;
	wb_diags_init(&d);
	struct cl_env *e = NULL;
	if (cl_env_open_opts(dev, opts, &e, &d) != WB_OK) {
		print_diags(&d);
		return 1;
	}
	int gpu = cl_env_is_gpu(e);
	if (opts && *cl_env_build_log(e))
		fprintf(stderr, "bench_opencl: compiler log:\n%s\n", cl_env_build_log(e));
	if (lx > 0)
		cl_env_set_lx(e, (size_t)lx);
	if (n <= 0)
		n = gpu ? 8192 : 256;
	if (steps <= 0)
		steps = gpu ? 300 : 40;
	fprintf(stderr, "bench_opencl: device %d: %s (%s), %dx%d cells, %ld steps\n",
		dev, cl_env_name(e), gpu ? "GPU" : "not a GPU", n, n, steps);

	double copy = 0;
	size_t cbytes = gpu ? ((size_t)2 << 30) : ((size_t)64 << 20);
	if (cl_copy_bandwidth(e, cbytes, gpu ? 20 : 5, &copy, &d) != WB_OK) {
		print_diags(&d);
		cl_env_free(e);
		return 1;
	}
	printf("bench ocl_copy_gbs %.1f GB/s\n", copy);
	fflush(stdout);

	struct wb_raster r;
	struct wb_sim sim;
	memset(&sim, 0, sizeof(sim));
	sim.solver = WB_SOLVER_LBM;
	sim.manning = 0.03;
	sim.viscosity = 1e-3;
	sim.dry_depth = 1e-3;
	int rc = 1;
	struct cl_lbm *c = NULL;
	if (scene(&r, n)) {
		fprintf(stderr, "bench_opencl: out of memory\n");
		goto out;
	}
	double t0 = now_s();
	if (cl_lbm_create(e, &r, &sim, 0, 0, &c, &d) != WB_OK) {
		print_diags(&d);
		goto out;
	}
	double tset = now_s() - t0;
	long warm = steps / 10 + 1;
	if (cl_lbm_enqueue(c, warm, &d) != WB_OK || cl_lbm_sync(c, &d) != WB_OK) {
		print_diags(&d);
		goto out;
	}
	t0 = now_s();
	if (cl_lbm_enqueue(c, steps, &d) != WB_OK || cl_lbm_sync(c, &d) != WB_OK) {
		print_diags(&d);
		goto out;
	}
	double t = now_s() - t0;
	double mlups = (double)n * n * (double)steps / t * 1e-6;
	int bpc = cl_lbm_bytes_per_cell(c);
	double gbs = mlups * 1e6 * bpc * 1e-9;
	fprintf(stderr, "bench_opencl: lbm set-up and upload %.2f s, %ld steps in %.3f s\n",
		tset, steps, t);
	printf("bench lbm_ocl_mlups %.0f MLUPS\n", mlups);
	printf("bench lbm_ocl_bytes_per_cell %d B\n", bpc);
	printf("bench lbm_ocl_gbs %.1f GB/s\n", gbs);
	printf("bench lbm_ocl_roofline_frac %.3f ratio\n", copy > 0 ? gbs / copy : 0);
	fflush(stdout);
	cl_lbm_free(c);
	c = NULL;

	struct cl_swe *w = NULL;
	sim.solver = WB_SOLVER_SWE;
	sim.foam_trapped = 1;
	sim.foam_steep = 1;
	sim.foam_trapped_min = 0.05;
	sim.foam_trapped_max = 1;
	sim.foam_steep_min = 0.02;
	sim.foam_steep_max = 0.5;
	sim.foam_diffusion = 0.1;
	sim.foam_dissipation = 0.05;
	long ssteps = steps / 3 + 1;
	t0 = now_s();
	if (cl_swe_create(e, &r, &sim, 0, &w, &d) != WB_OK) {
		print_diags(&d);
		goto out;
	}
	tset = now_s() - t0;
	/* the dense kernels (the block-sparse step: bench_opencl_world) */
	cl_swe_set_sparse(w, 0);
	if (cl_swe_run(w, ssteps / 10 + 1, &d) != WB_OK) {
		print_diags(&d);
		cl_swe_free(w);
		goto out;
	}
	t0 = now_s();
	if (cl_swe_run(w, ssteps, &d) != WB_OK) {
		print_diags(&d);
		cl_swe_free(w);
		goto out;
	}
	t = now_s() - t0;
	double mc = (double)n * n * (double)ssteps / t * 1e-6;
	int sbpc = cl_swe_bytes_per_cell(w);
	double sgbs = mc * 1e6 * sbpc * 1e-9;
	cl_swe_free(w);
	fprintf(stderr, "bench_opencl: swe set-up and upload %.2f s, %ld steps in %.3f s\n",
		tset, ssteps, t);
	printf("bench swe_ocl_mcells %.0f Mcells/s\n", mc);
	printf("bench swe_ocl_bytes_per_cell %d B\n", sbpc);
	printf("bench swe_ocl_roofline_frac %.3f ratio\n", copy > 0 ? sgbs / copy : 0);
	fflush(stdout);

	/* a waterfall: the middle sixteenth of the channel drops 6 m at x = N/2 */
	for (int j = n / 2 - n / 32; j < n / 2 + n / 32; j++)
		for (int i = n / 2; i < n; i++)
			r.z[i + (size_t)j * n] -= 6.0f;
	w = NULL;
	if (cl_swe_create(e, &r, &sim, 0, &w, &d) != WB_OK ||
	    cl_swe_set_sparse(w, 0) ||
	    cl_swe_run(w, ssteps / 10 + 1, &d) != WB_OK) {
		print_diags(&d);
		cl_swe_free(w);
		goto out;
	}
	long long moved0 = cl_swe_bytes_moved(w);
	t0 = now_s();
	if (cl_swe_run(w, ssteps, &d) != WB_OK) {
		print_diags(&d);
		cl_swe_free(w);
		goto out;
	}
	t = now_s() - t0;
	double fmc = (double)n * n * (double)ssteps / t * 1e-6;
	double kb = (double)(cl_swe_bytes_moved(w) - moved0) / ssteps / 1024.0;
	fprintf(stderr, "bench_opencl: swe with a cliff: %ld steps in %.3f s, %ld particles in flight\n",
		ssteps, t, cl_swe_particles(w));
	cl_swe_free(w);
	printf("bench swe_ocl_falls_mcells %.0f Mcells/s\n", fmc);
	printf("bench swe_ocl_falls_kb_per_step %.0f KiB\n", kb);
	rc = 0;
out:
	cl_lbm_free(c);
	wb_raster_free(&r);
	cl_env_free(e);
	wb_diags_release(&d);
	return rc;
}
