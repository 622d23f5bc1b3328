/*
 * test_report.c - report.html (src/report.c) and the residual history of
 * wb_bake_solve (src/bake.c): scene strings escaped, equal bytes for equal
 * input, every section from its inputs (residual points, mass balance,
 * adjustments, waterfalls), and a real bake of samples/river (SWE, short)
 * whose report names the pack's hash and its page counts per LOD as the
 * pack file has them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bake.h"
#include "output.h"
#include "report.h"
#include "util.h"
#include "wtp.h"

static long count(const char *hay, const char *needle)
{
	long n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* A scene by hand: the fields the report reads. */
static void scene_min(struct wb_scene *sc, char *name)
{
	memset(sc, 0, sizeof *sc);
	sc->name = name;
	sc->file = "/some/where/scene.json";
	sc->terrain.heightmap = "/some/where/terrain.png";
	sc->terrain.height_scale = 100;
	sc->sim.solver = WB_SOLVER_SWE;
	sc->sim.tolerance = 0.01;
	sc->sim.window = 100;
	sc->output.lods = 2;
	sc->output.distance_max = 16;
}

static char *html_of(const struct report_in *in)
{
	struct wb_diags d;
	wb_diags_init(&d);
	char *h = NULL;
	assert_int_equal(report_html(in, &h, &d), WB_OK);
	assert_non_null(h);
	wb_diags_release(&d);
	return h;
}

static void test_escape(void **state)
{
	(void)state;
	char *e = report_escape("a<b>&\"c'");
	assert_string_equal(e, "a&lt;b&gt;&amp;&quot;c&#39;");
	free(e);
	char name[] = "<script>alert('x')</script>&co";
	struct wb_scene sc;
	scene_min(&sc, name);
	struct wb_source src = { 0 };
	src.kind = WB_SRC_SPRING;
	src.name = "<img src=x onerror=1>";
	src.material = -1;
	sc.sources = &src;
	sc.n_sources = 1;
	struct report_in in = { 0 };
	in.sc = &sc;
	char *h = html_of(&in);
	assert_null(strstr(h, "<script"));
	assert_null(strstr(h, "<img src=x"));
	assert_non_null(strstr(h, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;co"));
	assert_non_null(strstr(h, "&lt;img src=x onerror=1&gt;"));
	/* base names only: no directory of the baking machine */
	assert_null(strstr(h, "/some/where"));
	assert_non_null(strstr(h, "terrain.png"));
	free(h);
}

static void test_sections(void **state)
{
	(void)state;
	char name[] = "unit";
	struct wb_scene sc;
	scene_min(&sc, name);
	struct wb_solve_report rep = { 0 };
	rep.steps = 700;
	rep.converged = 1;
	rep.residual = 0.004;
	rep.dt = 0.05;
	rep.vol_initial = 10;
	rep.vol_in = 1200;
	rep.vol_out = 209.5;
	rep.vol_final = 1000.25;
	rep.vol_particles = 0.25;
	rep.clamped = 17;
	struct wb_waterfall falls[2] = { { 12.5, 40.25, 3, 0.75, 4.5 },
					 { 80, 90, 1.5, 0.125, 2 } };
	struct wb_state st = { 0 };
	st.falls = falls;
	st.n_falls = 2;
	long steps[4] = { 200, 300, 400, 700 };
	double vals[4] = { 0.5, 0.1, 0.02, 0.004 };
	struct wb_diags dg;
	wb_diags_init(&dg);
	wb_diag_add(&dg, WB_SEV_NOTE, NULL, "simulation.dt", 0, 0,
		    "dt lowered to 0.05 s for stability");
	wb_diag_add(&dg, WB_SEV_WARNING, NULL, NULL, 0, 0, "depth > 5 m & rising");
	wb_diag_add(&dg, WB_SEV_ERROR, NULL, NULL, 0, 0, "not an adjustment");
	struct report_in in = { 0 };
	in.sc = &sc;
	in.st = &st;
	in.rep = &rep;
	in.res_step = steps;
	in.res_value = vals;
	in.n_res = 4;
	in.diags = &dg;
	char *h = html_of(&in);
	/* residual: one point per window, a tolerance line, 4 rows */
	assert_int_equal(count(h, "<circle"), 4);
	assert_non_null(strstr(h, "tolerance 0.01"));
	assert_non_null(strstr(h, "<title>step 700: 0.004</title>"));
	/* the plot spans the decades of the values: 1e-3 .. 1e0 */
	assert_non_null(strstr(h, ">1e-3<"));
	assert_non_null(strstr(h, ">1e0<"));
	assert_null(strstr(h, ">1e-4<"));
	/* mass balance: the numbers and the gap (10 + 1200 - 209.5 -
	   1000.25 - 0.25 = 0) */
	assert_non_null(strstr(h, "1200 m\xc2\xb3"));
	assert_non_null(strstr(h, "209.5 m\xc2\xb3"));
	assert_non_null(strstr(h, "<td>0 m\xc2\xb3</td>"));
	/* adjustments: notes and warnings, escaped, errors not; clamps */
	assert_non_null(strstr(h, "dt lowered to 0.05 s for stability"));
	assert_non_null(strstr(h, "depth &gt; 5 m &amp; rising"));
	assert_null(strstr(h, "not an adjustment"));
	assert_non_null(strstr(h, "17 cell-steps were clamped"));
	/* waterfalls */
	assert_non_null(strstr(h, "2 waterfalls"));
	assert_non_null(strstr(h, "<td>12.50</td><td>40.25</td>"));
	/* no preview files, no pack: said so */
	assert_non_null(strstr(h, "No previews were written."));
	assert_null(strstr(h, "id=\"pack\""));
	/* equal input, equal bytes */
	char *h2 = html_of(&in);
	assert_string_equal(h, h2);
	free(h2);
	/* fixed --steps: no windows, said so */
	in.n_res = 0;
	in.steps_forced = 50;
	h2 = html_of(&in);
	assert_int_equal(count(h2, "<circle"), 0);
	assert_non_null(strstr(h2, "fixed step count (--steps)"));
	free(h2);
	free(h);
	wb_diags_release(&dg);
}

static void remove_tree(const char *dir)
{
	char cmd[1200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* samples/river with the SWE solver for 600 steps, windows of 100 */
static void bake_river(struct wb_bake *b, const char *out, int threads,
		       struct wb_output_summary *sum, char **html)
{
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(wb_bake_load(b, "samples/river/scene.json", &d), WB_OK);
	b->sc.sim.solver = WB_SOLVER_SWE;
	b->sc.sim.window = 100;
	b->sc.sim.max_steps = 600;
	b->sc.sim.tolerance = 1e-9; /* run all 600 */
	struct wb_solve_opts so = { 0 };
	so.threads = threads;
	assert_int_equal(wb_bake_solve(b, &so, &d), WB_OK);
	struct wb_output_opts oo = { 0 };
	oo.outdir = out;
	oo.threads = threads;
	oo.preview = 1;
	oo.solver_name = "swe";
	assert_int_equal(wb_output_write(&b->sc, &b->r, &b->st, &b->rep, &oo, sum, &d),
			 WB_OK);
	struct report_in in = { 0 };
	in.sc = &b->sc;
	in.r = &b->r;
	in.st = &b->st;
	in.rep = &b->rep;
	in.res_step = b->hist.step;
	in.res_value = b->hist.value;
	in.n_res = b->hist.n;
	in.diags = &d;
	in.outdir = out;
	in.pack_path = sum->pack_path;
	assert_int_equal(report_write(&in, &d), WB_OK);
	char path[1024];
	snprintf(path, sizeof path, "%s/report.html", out);
	size_t n;
	assert_int_equal(wb_read_file(path, (unsigned char **)html, &n, &d), WB_OK);
	wb_diags_release(&d);
}

static void test_bake_report(void **state)
{
	(void)state;
	char base[] = "tests/tmp/reportXXXXXX";
	mkdir("tests", 0777);
	mkdir("tests/tmp", 0777);
	assert_non_null(mkdtemp(base));
	char o1[600], o2[600];
	snprintf(o1, sizeof o1, "%s/a", base);
	snprintf(o2, sizeof o2, "%s/b", base);
	struct wb_bake b1, b2;
	struct wb_output_summary s1, s2;
	char *h1, *h2;
	bake_river(&b1, o1, 2, &s1, &h1);
	bake_river(&b2, o2, 1, &s2, &h2);

	/* the residual history: one point per window after the first
	   (the first has nothing to compare with), in step order */
	assert_true(b1.hist.n >= 4 && b1.hist.n <= 6);
	for (int k = 0; k < b1.hist.n; k++) {
		assert_int_equal(b1.hist.step[k] % 100, 0);
		assert_true(k == 0 || b1.hist.step[k] > b1.hist.step[k - 1]);
		assert_true(b1.hist.value[k] > 0 && b1.hist.value[k] < 10);
	}
	assert_int_equal(b1.hist.step[b1.hist.n - 1], 600);
	assert_int_equal(count(h1, "<circle"), b1.hist.n);

	/* equal bakes (other thread count), equal report */
	assert_string_equal(h1, h2);

	/* the pack section agrees with the pack file */
	size_t n;
	unsigned char *pack, hash[32];
	char hex[65];
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(wb_read_file(s1.pack_path, &pack, &n, &d), WB_OK);
	wb_sha256(pack, n, hash);
	wb_hex(hash, 32, hex);
	assert_non_null(strstr(h1, hex));
	char line[256];
	snprintf(line, sizeof line, "%zu bytes", n);
	assert_non_null(strstr(h1, line));
	wtp_pack p;
	assert_int_equal(wtp_open(&p, pack, n, 0, NULL), WTP_OK);
	assert_int_equal(p.n_lods, 3);
	for (uint32_t k = 0; k < p.n_lods; k++) {
		wtp_lod L;
		assert_int_equal(wtp_lod_get(&p, k, &L), WTP_OK);
		snprintf(line, sizeof line,
			 "<tr><td>%u</td><td>%u x %u</td><td>%g</td><td>%u x %u</td><td>%u</td><td>%u</td><td>%u</td></tr>",
			 k, L.nx, L.ny, L.dx, L.px, L.py, L.n_data, L.n_flat,
			 L.px * L.py - L.n_data - L.n_flat);
		assert_non_null(strstr(h1, line));
	}
	free(pack);
	/* previews linked, each file present, with its size */
	const char *names[] = { "depth", "height", "flow", "material", "distance", "foam" };
	for (int k = 0; k < 6; k++) {
		char f[800];
		snprintf(f, sizeof f, "<img src=\"preview/%s.png\" width=", names[k]);
		assert_int_equal(count(h1, f), 2); /* thumbnail and full size */
		snprintf(f, sizeof f, "%s/preview/%s.png", o1, names[k]);
		assert_int_equal(access(f, R_OK), 0);
	}
	/* scene strings from the sample */
	assert_non_null(strstr(h1, "head spring"));
	assert_non_null(strstr(h1, "bridge deck"));
	assert_null(strstr(h1, base)); /* no output path */
	wb_diags_release(&d);
	free(h1);
	free(h2);
	wb_bake_release(&b1);
	wb_bake_release(&b2);
	remove_tree(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_sections),
		cmocka_unit_test(test_bake_report),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
