/*
 * test_output.c - the output directory replaced as a set (output.h:
 * wb_outdir_open/commit/abort), exclusive temporaries (wb_atomic_open) and
 * the judgement of a solver report (wb_output_assess).
 *
 * Each test works in its own directory under tests/tmp/ made with mkdtemp.
 * What is checked: after a commit OUTDIR holds exactly the new files (old
 * ones gone, mode kept) and nothing is left beside it; before a commit and
 * after an abort OUTDIR is byte-for-byte the old one; a second claim is
 * refused naming the holder's pid; leftovers of killed bakes are removed
 * (a cut fallback swap is put back); symlinks planted at predictable names
 * are never followed; foreign files are refused; the assessment's
 * thresholds and messages.
 */
#define _GNU_SOURCE /* mkdtemp, symlink under -std=c11 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output.h"
#include "util.h"
#include "wbake.h"

/* ---- helpers ----------------------------------------------------------- */

static char base[256];

static int setup(void **state)
{
	(void)state;
	mkdir("tests", 0777);
	mkdir("tests/tmp", 0777);
	snprintf(base, sizeof base, "tests/tmp/test_output.XXXXXX");
	return mkdtemp(base) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[400];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
	return system(cmd) == 0 ? 0 : -1;
}

static void pathf(char *buf, size_t n, const char *fmt, const char *name)
	__attribute__((format(printf, 3, 0)));
static void pathf(char *buf, size_t n, const char *fmt, const char *name)
{
	char rel[512];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(rel, sizeof rel, fmt, name);
#pragma GCC diagnostic pop
	snprintf(buf, n, "%s/%s", base, rel);
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* whole file as a string ("" when missing) into buf */
static const char *get(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "rb");
	buf[0] = 0;
	if (!f)
		return buf;
	size_t k = fread(buf, 1, n - 1, f);
	buf[k] = 0;
	fclose(f);
	return buf;
}

static int exists(const char *p)
{
	struct stat st;
	return lstat(p, &st) == 0;
}

/* entries of base whose names start with prefix */
static int count_prefix(const char *prefix)
{
	DIR *d = opendir(base);
	assert_non_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += !strncmp(e->d_name, prefix, strlen(prefix));
	closedir(d);
	return n;
}

static int has_diag(const struct wb_diags *d, const char *text)
{
	char buf[2048];
	for (int i = 0; i < d->n; i++) {
		wb_diag_format(&d->v[i], buf, sizeof buf);
		if (strstr(buf, text))
			return 1;
	}
	return 0;
}

static void write_into(const struct wb_outdir *od, const char *name,
		       const char *text)
{
	char p[1024];
	snprintf(p, sizeof p, "%s/%s", od->staging, name);
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(wb_write_file_atomic(p, text, strlen(text), &d), WB_OK);
	wb_diags_release(&d);
}

/* ---- tests ------------------------------------------------------------- */

static void test_new_then_replace(void **state)
{
	(void)state;
	struct wb_diags d;
	struct wb_outdir od;
	char out[600], f[700], buf[256];
	wb_diags_init(&d);
	pathf(out, sizeof out, "%s", "new/o");  /* parent created too */

	assert_int_equal(wb_outdir_open(&od, out, &d), WB_OK);
	assert_true(exists(od.staging));
	assert_false(exists(out));
	write_into(&od, "manifest.json", "first");
	write_into(&od, "a.wtp", "pack A");
	assert_int_equal(wb_outdir_commit(&od, &d), WB_OK);
	snprintf(f, sizeof f, "%s/manifest.json", out);
	assert_string_equal(get(f, buf, sizeof buf), "first");
	assert_int_equal(count_prefix("new"), 1);
	char sub[600];
	pathf(sub, sizeof sub, "%s", "new");
	DIR *dd = opendir(sub);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(dd)))
		n += e->d_name[0] != '.' || strlen(e->d_name) > 2;
	closedir(dd);
	assert_int_equal(n, 1); /* only o: no lock, no staging */

	/* replace: the old files go, the new ones come, the mode stays */
	assert_int_equal(chmod(out, 0750), 0);
	assert_int_equal(wb_outdir_open(&od, out, &d), WB_OK);
	write_into(&od, "manifest.json", "second");
	write_into(&od, "b.wtp", "pack B");
	/* until the commit OUTDIR is the old output */
	assert_string_equal(get(f, buf, sizeof buf), "first");
	snprintf(f, sizeof f, "%s/a.wtp", out);
	assert_true(exists(f));
	assert_int_equal(wb_outdir_commit(&od, &d), WB_OK);
	assert_false(exists(f));
	snprintf(f, sizeof f, "%s/b.wtp", out);
	assert_string_equal(get(f, buf, sizeof buf), "pack B");
	struct stat st;
	assert_int_equal(stat(out, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0750);
	dd = opendir(sub);
	n = 0;
	while ((e = readdir(dd)))
		n += e->d_name[0] != '.' || strlen(e->d_name) > 2;
	closedir(dd);
	assert_int_equal(n, 1);
	assert_int_equal(d.errors, 0);
	wb_diags_release(&d);
}

/* without RENAME_EXCHANGE: two renames, same result, nothing left */
static void test_fallback_swap(void **state)
{
	(void)state;
	struct wb_diags d;
	struct wb_outdir od;
	char out[600], f[700], buf[256];
	wb_diags_init(&d);
	pathf(out, sizeof out, "%s", "fb");
	assert_int_equal(mkdir(out, 0777), 0);
	snprintf(f, sizeof f, "%s/old.wtp", out);
	put(f, "old");
	assert_int_equal(wb_outdir_open(&od, out, &d), WB_OK);
	od.no_exchange = 1;
	write_into(&od, "new.wtp", "new");
	assert_int_equal(wb_outdir_commit(&od, &d), WB_OK);
	assert_false(exists(f));
	snprintf(f, sizeof f, "%s/new.wtp", out);
	assert_string_equal(get(f, buf, sizeof buf), "new");
	assert_int_equal(count_prefix(".fb.wbake-"), 0);
	assert_int_equal(d.n, 0);
	wb_diags_release(&d);
}

/* OUTDIR given as a symlink to a directory: the directory is replaced, the
 * link stays a link to it */
static void test_symlinked_outdir(void **state)
{
	(void)state;
	struct wb_diags d;
	struct wb_outdir od;
	char real[600], ln[600], f[700], buf[256];
	wb_diags_init(&d);
	pathf(real, sizeof real, "%s", "real");
	pathf(ln, sizeof ln, "%s", "ln");
	assert_int_equal(mkdir(real, 0777), 0);
	snprintf(f, sizeof f, "%s/manifest.json", real);
	put(f, "old");
	assert_int_equal(symlink("real", ln), 0);
	assert_int_equal(wb_outdir_open(&od, ln, &d), WB_OK);
	write_into(&od, "manifest.json", "new");
	assert_int_equal(wb_outdir_commit(&od, &d), WB_OK);
	struct stat st;
	assert_int_equal(lstat(ln, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_string_equal(get(f, buf, sizeof buf), "new");
	snprintf(f, sizeof f, "%s/manifest.json", ln);
	assert_string_equal(get(f, buf, sizeof buf), "new");
	assert_int_equal(count_prefix(".real.wbake-"), 0);
	wb_diags_release(&d);
}

static void test_abort_keeps_old(void **state)
{
	(void)state;
	struct wb_diags d;
	struct wb_outdir od;
	char out[600], f[700], buf[256];
	wb_diags_init(&d);
	pathf(out, sizeof out, "%s", "ab");
	assert_int_equal(mkdir(out, 0777), 0);
	snprintf(f, sizeof f, "%s/manifest.json", out);
	put(f, "old");
	assert_int_equal(wb_outdir_open(&od, out, &d), WB_OK);
	write_into(&od, "manifest.json", "new");
	wb_outdir_abort(&od);
	wb_outdir_abort(&od); /* twice is fine */
	assert_string_equal(get(f, buf, sizeof buf), "old");
	assert_int_equal(count_prefix(".ab.wbake-"), 0);
	/* a zeroed claim aborts and a commit of it fails, without harm */
	struct wb_outdir z;
	memset(&z, 0, sizeof z);
	wb_outdir_abort(&z);
	wb_outdir_abort(NULL);
	assert_int_equal(wb_outdir_commit(&z, &d), WB_EIO);
	assert_string_equal(get(f, buf, sizeof buf), "old");
	wb_diags_release(&d);
}

static void test_lock_names_pid(void **state)
{
	(void)state;
	struct wb_diags d;
	struct wb_outdir a, b;
	char out[600], want[128];
	wb_diags_init(&d);
	pathf(out, sizeof out, "%s", "lk");
	assert_int_equal(wb_outdir_open(&a, out, &d), WB_OK);
	assert_int_equal(wb_outdir_open(&b, out, &d), WB_EIO);
	snprintf(want, sizeof want, "another wbake (pid %ld) is writing this output directory",
		 (long)getpid());
	assert_true(has_diag(&d, want));
	assert_null(b.staging); /* nothing held */
	wb_outdir_abort(&a);
	assert_int_equal(wb_outdir_open(&b, out, &d), WB_OK);
	wb_outdir_abort(&b);
	assert_int_equal(count_prefix(".lk.wbake-"), 0);
	wb_diags_release(&d);
}

static void test_leftovers(void **state)
{
	(void)state;
	struct wb_diags d;
	struct wb_outdir od;
	char out[600], p[700], victim[600], buf[256];
	wb_diags_init(&d);
	pathf(out, sizeof out, "%s", "lo");
	pathf(victim, sizeof victim, "%s", "victim");
	put(victim, "keep");
	char abs_victim[PATH_MAX];
	assert_non_null(realpath(victim, abs_victim));

	/* a staging tree of a killed bake, with a link to a file outside */
	pathf(p, sizeof p, "%s", ".lo.wbake-tmp.Q1w2E3");
	assert_int_equal(mkdir(p, 0700), 0);
	pathf(p, sizeof p, "%s", ".lo.wbake-tmp.Q1w2E3/preview");
	assert_int_equal(mkdir(p, 0777), 0);
	pathf(p, sizeof p, "%s", ".lo.wbake-tmp.Q1w2E3/preview/x.png");
	put(p, "x");
	pathf(p, sizeof p, "%s", ".lo.wbake-tmp.Q1w2E3/link");
	assert_int_equal(symlink(abs_victim, p), 0);
	/* a fallback swap cut between its renames: OUTDIR missing */
	pathf(p, sizeof p, "%s", ".lo.wbake-old.R4t5Y6");
	assert_int_equal(mkdir(p, 0755), 0);
	pathf(p, sizeof p, "%s", ".lo.wbake-old.R4t5Y6/manifest.json");
	put(p, "previous");
	/* a symlink at a staging name is not ours to enter */
	pathf(p, sizeof p, "%s", ".lo.wbake-tmp.ZZZZZZ");
	char abs_base[PATH_MAX];
	assert_non_null(realpath(base, abs_base));
	assert_int_equal(symlink(abs_base, p), 0);

	assert_int_equal(wb_outdir_open(&od, out, &d), WB_OK);
	assert_true(has_diag(&d, "restored the previous output from '.lo.wbake-old.R4t5Y6'"));
	snprintf(p, sizeof p, "%s/manifest.json", out);
	assert_string_equal(get(p, buf, sizeof buf), "previous");
	assert_string_equal(get(victim, buf, sizeof buf), "keep");
	pathf(p, sizeof p, "%s", ".lo.wbake-tmp.Q1w2E3");
	assert_false(exists(p));
	pathf(p, sizeof p, "%s", ".lo.wbake-tmp.ZZZZZZ");
	assert_true(exists(p)); /* left alone */
	assert_true(exists(victim));
	assert_true(od.existed);
	wb_outdir_abort(&od);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(count_prefix(".lo.wbake-"), 0);
	wb_diags_release(&d);
}

static void test_refusals(void **state)
{
	(void)state;
	struct wb_diags d;
	struct wb_outdir od;
	char out[600], p[700], victim[600], buf[256];
	wb_diags_init(&d);

	assert_int_equal(wb_outdir_open(&od, "", &d), WB_EUSAGE);
	assert_int_equal(wb_outdir_open(&od, NULL, &d), WB_EUSAGE);

	/* a file where the directory should be */
	pathf(out, sizeof out, "%s", "afile");
	put(out, "data");
	assert_int_equal(wb_outdir_open(&od, out, &d), WB_EIO);
	assert_true(has_diag(&d, "is a regular file, not a directory"));
	assert_string_equal(get(out, buf, sizeof buf), "data");

	/* a directory with a file wbake did not write */
	pathf(out, sizeof out, "%s", "mine");
	assert_int_equal(mkdir(out, 0777), 0);
	snprintf(p, sizeof p, "%s/notes.txt", out);
	put(p, "mine");
	assert_int_equal(wb_outdir_open(&od, out, &d), WB_EIO);
	assert_true(has_diag(&d, "holds 'notes.txt', which wbake did not write"));
	assert_int_equal(count_prefix(".mine.wbake-"), 0);
	/* a directory named like a pack is not a pack */
	assert_int_equal(unlink(p), 0);
	snprintf(p, sizeof p, "%s/x.wtp", out);
	assert_int_equal(mkdir(p, 0777), 0);
	assert_int_equal(wb_outdir_open(&od, out, &d), WB_EIO);
	assert_true(has_diag(&d, "holds 'x.wtp'"));
	assert_int_equal(rmdir(p), 0);
	/* what wbake writes is fine */
	snprintf(p, sizeof p, "%s/preview", out);
	assert_int_equal(mkdir(p, 0777), 0);
	snprintf(p, sizeof p, "%s/river.wtp", out);
	put(p, "pack");
	assert_int_equal(wb_outdir_open(&od, out, &d), WB_OK);
	wb_outdir_abort(&od);

	/* a symlink planted at the lock's name: refused, target unchanged */
	pathf(victim, sizeof victim, "%s", "victim2");
	put(victim, "keep");
	char abs_victim[PATH_MAX];
	assert_non_null(realpath(victim, abs_victim));
	pathf(p, sizeof p, "%s", ".mine.wbake-lock");
	assert_int_equal(symlink(abs_victim, p), 0);
	assert_int_equal(wb_outdir_open(&od, out, &d), WB_EIO);
	assert_true(has_diag(&d, "wbake does not follow it"));
	assert_string_equal(get(victim, buf, sizeof buf), "keep");
	assert_int_equal(unlink(p), 0);
	/* a hard link to someone's file at the lock's name: not truncated */
	assert_int_equal(link(victim, p), 0);
	assert_int_equal(wb_outdir_open(&od, out, &d), WB_EIO);
	assert_true(has_diag(&d, "is not a lock file"));
	assert_string_equal(get(victim, buf, sizeof buf), "keep");
	assert_int_equal(unlink(p), 0);
	wb_diags_release(&d);
}

static void test_atomic_never_follows(void **state)
{
	(void)state;
	struct wb_diags d;
	char dst[600], tmp[700], victim[600], buf[256];
	wb_diags_init(&d);
	pathf(dst, sizeof dst, "%s", "file.bin");
	pathf(victim, sizeof victim, "%s", "victim3");
	put(victim, "keep");
	char abs_victim[PATH_MAX];
	assert_non_null(realpath(victim, abs_victim));
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", dst, (long)getpid());
	assert_int_equal(symlink(abs_victim, tmp), 0);
	assert_int_equal(wb_write_file_atomic(dst, "new", 3, &d), WB_OK);
	assert_string_equal(get(dst, buf, sizeof buf), "new");
	assert_string_equal(get(victim, buf, sizeof buf), "keep");
	struct stat st;
	assert_int_equal(lstat(tmp, &st), 0);
	assert_true(S_ISLNK(st.st_mode)); /* the planted link is untouched */
	char tmp1[720];
	snprintf(tmp1, sizeof tmp1, "%s.1", tmp);
	assert_false(exists(tmp1)); /* the one used instead is gone */
	wb_diags_release(&d);
}

static void scene_of(struct wb_scene *sc, struct wb_raster *r)
{
	memset(sc, 0, sizeof *sc);
	memset(r, 0, sizeof *r);
	sc->file = (char *)"s.json";
	sc->sim.tolerance = 2e-3;
	r->nx = 10;
	r->ny = 20;
	r->dx = 2;
}

static void test_assess(void **state)
{
	(void)state;
	struct wb_scene sc;
	struct wb_raster r;
	struct wb_solve_report rep;
	struct wb_assess a;
	struct wb_diags d;
	scene_of(&sc, &r);
	memset(&rep, 0, sizeof rep);

	/* steady, nothing flowing: no message */
	wb_diags_init(&d);
	rep.steps = 1000;
	rep.converged = 1;
	rep.residual = 1e-4;
	rep.vol_initial = rep.vol_final = 50;
	wb_output_assess(&sc, &r, &rep, NULL, 0, &a, &d);
	assert_int_equal(a.stop, WB_STOP_STEADY);
	assert_true(a.steady && !a.filling);
	assert_true(a.tolerance == 2e-3);
	assert_int_equal(d.n, 0);

	/* the step cap, inflow staying on the grid: two warnings */
	rep.converged = 0;
	rep.residual = 0.87;
	rep.vol_in = 800;
	rep.vol_out = 7.9; /* under 1 % of the inflow */
	rep.vol_final = rep.vol_initial + 792.1;
	rep.clamped = 400; /* of 10 x 20 x 1000 cell-steps: 0.2 % */
	wb_output_assess(&sc, &r, &rep, NULL, 0, &a, &d);
	assert_int_equal(a.stop, WB_STOP_MAX_STEPS);
	assert_true(!a.steady && a.filling);
	assert_true(fabs(a.storage_m3 - 792.1) < 1e-9);
	assert_true(fabs(a.mean_rise_m - 792.1 / 800.0) < 1e-12); /* area 800 m^2 */
	assert_true(fabs(a.clamped_share - 0.002) < 1e-15);
	assert_int_equal(d.warnings, 2);
	assert_true(has_diag(&d, "s.json: warning: simulation.max_steps: not steady after 1000 steps: residual 0.87, tolerance 0.002"));
	assert_true(has_diag(&d, "the water has no way out and is still rising: 800 m^3 came in, 7.9 m^3 left"));
	assert_true(has_diag(&d, "clamped 400 cell-steps, 0.2 % of all cell-steps (10 x 20 cells x 1000 steps)"));
	wb_diags_release(&d);

	/* 2 % leaves: not filling; an outlet changes the advice */
	wb_diags_init(&d);
	rep.vol_out = 16;
	wb_output_assess(&sc, &r, &rep, NULL, 0, &a, &d);
	assert_false(a.filling);
	rep.vol_out = 7.9;
	sc.edges[WB_SOUTH].kind = WB_EDGE_OPEN;
	wb_output_assess(&sc, &r, &rep, NULL, 0, &a, &d);
	assert_true(a.filling);
	assert_true(has_diag(&d, "it has not reached an outlet yet"));
	wb_diags_release(&d);

	/* --steps: no step-cap warning, filling only a note, residual not
	 * measured reads so */
	wb_diags_init(&d);
	rep.residual = NAN;
	rep.clamped = 0;
	wb_output_assess(&sc, &r, &rep, NULL, 500, &a, &d);
	assert_int_equal(a.stop, WB_STOP_STEPS);
	assert_true(isnan(a.residual));
	assert_int_equal(d.warnings, 0);
	assert_int_equal(d.n, 1);
	assert_int_equal(d.v[0].sev, WB_SEV_NOTE);
	wb_output_assess(&sc, &r, &rep, NULL, 0, &a, &d);
	assert_true(has_diag(&d, "residual not measured, tolerance 0.002"));
	/* default tolerance when the scene leaves it unset */
	sc.sim.tolerance = 0;
	wb_output_assess(&sc, &r, NULL, NULL, 0, &a, NULL);
	assert_true(a.tolerance == 1e-4 && isnan(a.residual));
	wb_diags_release(&d);
}


/* Where the limiter holds the flow: wet cells at Froude >= 0.99 give the
 * box and the fastest cell; films (under ten dry depths) do not count. */
static void test_clamp_where(void **state)
{
	(void)state;
	struct wb_scene sc;
	struct wb_raster r;
	struct wb_solve_report rep;
	struct wb_assess a;
	struct wb_diags d;
	scene_of(&sc, &r);
	sc.sim.dry_depth = 1e-3;
	float h[200], u[200], v[200];
	struct wb_state st = { 10, 20, 2.0, h, u, v, NULL, NULL, 0, NULL };
	for (int k = 0; k < 200; k++) {
		h[k] = 1;
		u[k] = 0.5f; /* Froude 0.16 */
		v[k] = 0;
	}
	float c = (float)sqrt(WB_GRAVITY); /* Froude 1 at 1 m */
	for (int j = 7; j <= 8; j++)
		for (int i = 3; i <= 5; i++)
			u[i + 10 * j] = c;
	v[4 + 10 * 8] = 0.6f * c; /* Froude 1.17: the fastest */
	h[0] = 0.005f;           /* a film at Froude 14: not counted */
	u[0] = 3;
	memset(&rep, 0, sizeof rep);
	rep.steps = 1000;
	rep.converged = 1;
	rep.residual = 1e-4;
	rep.clamped = 5000; /* 2.5 % of 10 x 20 x 1000 */
	wb_diags_init(&d);
	wb_output_assess(&sc, &r, &rep, &st, 0, &a, &d);
	assert_int_equal(a.limit_cells, 6);
	assert_true(a.limit_box[0] == 6 && a.limit_box[1] == 12);  /* x: cells 3..5 of 2 m */
	assert_true(a.limit_box[2] == 14 && a.limit_box[3] == 18); /* y: cells 7..8 */
	assert_true(a.limit_x == 9 && a.limit_y == 17);
	assert_true(fabs(a.limit_fr - hypot(1, 0.6)) < 1e-6);
	assert_int_equal(d.warnings, 1);
	assert_true(has_diag(&d, "at the end it holds 6 cells at Froude 1, within x 6..12 m, y 14..18 m (the fastest at x 9 m, y 17 m)"));
	wb_diags_release(&d);

	/* the LBM hybrid: cells that the finite-volume update holds at the
	 * end (wb_state fv) are no limiter's; with row 8's three FV, row 7's
	 * three remain */
	unsigned char fv[200] = { 0 };
	for (int i = 3; i <= 5; i++)
		fv[i + 10 * 8] = 1;
	st.fv = fv;
	memset(&a, 0, sizeof a);
	wb_diags_init(&d);
	wb_output_assess(&sc, &r, &rep, &st, 0, &a, &d);
	assert_int_equal(a.limit_cells, 3);
	assert_true(a.limit_box[2] == 14 && a.limit_box[3] == 16); /* y: cell 7 */
	assert_true(fabs(a.limit_fr - 1) < 1e-6);
	wb_diags_release(&d);
	st.fv = NULL;

	/* the same clamps with every cell below the limit at the end */
	for (int k = 0; k < 200; k++)
		u[k] = v[k] = 0;
	memset(&a, 0, sizeof a);
	wb_diags_init(&d);
	wb_output_assess(&sc, &r, &rep, &st, 0, &a, &d);
	assert_int_equal(a.limit_cells, 0);
	assert_int_equal(d.warnings, 0);
	assert_true(has_diag(&d, "no cell flows at its limit (Froude 1): the clamps were transient"));
	wb_diags_release(&d);

	/* the SWE: its clamp bounds face velocities; the Froude-1 cells
	 * (supercritical flow, which it resolves) are not a limit, and it
	 * is not told to use itself */
	for (int j = 7; j <= 8; j++)
		for (int i = 3; i <= 5; i++)
			u[i + 10 * j] = c;
	sc.sim.solver = WB_SOLVER_SWE;
	memset(&a, 0, sizeof a);
	wb_diags_init(&d);
	wb_output_assess(&sc, &r, &rep, &st, 0, &a, &d);
	assert_int_equal(a.limit_cells, 0);
	assert_int_equal(d.warnings, 1);
	assert_true(has_diag(&d, "the SWE's velocity clamp (|u| <= alpha dx / dt at a face) changed 5000 face-steps, 2.5 % of all cell-steps (10 x 20 cells x 1000 steps)"));
	assert_false(has_diag(&d, "--solver swe"));
	assert_false(has_diag(&d, "Froude"));
	wb_diags_release(&d);
}

/* The LBM's shallow water on steep cells: a 15 cm stream at 0.67 m/s on a
 * 2 % slope of 30 m cells (the bed falls 0.6 m a cell, four times the
 * depth) is steep everywhere but the last column (nothing lower beside
 * it): a warning naming the share and the box. Deep water (1 m), the
 * hybrid's FV cells, still water, a cliff (a fall above 2 dx) and the
 * SWE are not counted. */
static void test_steep_where(void **state)
{
	(void)state;
	struct wb_scene sc;
	struct wb_raster r;
	struct wb_solve_report rep;
	struct wb_assess a;
	struct wb_diags d;
	scene_of(&sc, &r);
	sc.sim.dry_depth = 1e-3;
	sc.output.min_depth = 0.03;
	r.dx = 30;
	float z[200], h[200], u[200], v[200];
	r.z = z;
	struct wb_state st = { 10, 20, 30.0, h, u, v, NULL, NULL, 0, NULL };
	for (int j = 0; j < 20; j++)
		for (int i = 0; i < 10; i++) {
			int k = i + 10 * j;
			z[k] = 100 - 0.6f * i;
			h[k] = 0.15f;
			u[k] = 0.67f;
			v[k] = 0;
		}
	memset(&rep, 0, sizeof rep);
	rep.steps = 1000;
	rep.converged = 1;
	rep.residual = 1e-4;
	wb_diags_init(&d);
	wb_output_assess(&sc, &r, &rep, &st, 0, &a, &d);
	assert_int_equal(a.water_cells, 200);
	assert_int_equal(a.steep_cells, 180);
	assert_true(a.steep_box[0] == 0 && a.steep_box[1] == 270);
	assert_true(a.steep_box[2] == 0 && a.steep_box[3] == 600);
	assert_int_equal(d.warnings, 1);
	assert_true(has_diag(&d, "180 of the 200 cells of moving water (90 %) flow over a bed that falls more than their depth over one cell, within x 0..270 m, y 0..600 m"));
	assert_true(has_diag(&d, "--solver swe"));
	wb_diags_release(&d);

	/* 1 m deep: the bed's fall is below the depth; still water, and a
	 * 5 % share, are no warning */
	for (int k = 0; k < 200; k++)
		h[k] = 1;
	for (int k = 0; k < 10; k++)
		h[k] = 0.15f; /* row 0: 9 steep cells of 200, 4.5 % */
	wb_diags_init(&d);
	wb_output_assess(&sc, &r, &rep, &st, 0, &a, &d);
	assert_int_equal(a.steep_cells, 9);
	assert_int_equal(d.warnings, 0);
	wb_diags_release(&d);
	for (int k = 0; k < 200; k++) {
		h[k] = 0.15f;
		u[k] = 0.01f;
	}
	wb_diags_init(&d);
	wb_output_assess(&sc, &r, &rep, &st, 0, &a, &d);
	assert_int_equal(a.water_cells, 0);
	assert_int_equal(a.steep_cells, 0);
	assert_int_equal(d.warnings, 0);
	wb_diags_release(&d);

	/* FV cells (the hybrid) are not counted; nor is a cliff */
	for (int k = 0; k < 200; k++)
		u[k] = 0.67f;
	unsigned char fv[200];
	memset(fv, 1, sizeof fv);
	st.fv = fv;
	wb_diags_init(&d);
	wb_output_assess(&sc, &r, &rep, &st, 0, &a, &d);
	assert_int_equal(a.water_cells, 200);
	assert_int_equal(a.steep_cells, 0);
	assert_int_equal(d.warnings, 0);
	wb_diags_release(&d);
	st.fv = NULL;
	for (int j = 0; j < 20; j++)
		for (int i = 0; i < 10; i++)
			z[i + 10 * j] = 1000 - 61.0f * i;
	wb_diags_init(&d);
	wb_output_assess(&sc, &r, &rep, &st, 0, &a, &d);
	assert_int_equal(a.steep_cells, 0);
	wb_diags_release(&d);

	/* the SWE drives it by the slope */
	for (int j = 0; j < 20; j++)
		for (int i = 0; i < 10; i++)
			z[i + 10 * j] = 100 - 0.6f * i;
	sc.sim.solver = WB_SOLVER_SWE;
	wb_diags_init(&d);
	wb_output_assess(&sc, &r, &rep, &st, 0, &a, &d);
	assert_int_equal(a.steep_cells, 0);
	assert_int_equal(a.water_cells, 0);
	assert_int_equal(d.warnings, 0);
	wb_diags_release(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_then_replace),
		cmocka_unit_test(test_fallback_swap),
		cmocka_unit_test(test_symlinked_outdir),
		cmocka_unit_test(test_abort_keeps_old),
		cmocka_unit_test(test_lock_names_pid),
		cmocka_unit_test(test_leftovers),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_atomic_never_follows),
		cmocka_unit_test(test_assess),
		cmocka_unit_test(test_clamp_where),
		cmocka_unit_test(test_steep_where),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
