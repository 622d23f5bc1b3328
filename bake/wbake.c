/*
 * wbake.c - the wbake command: scene in, tile pack out.
 *
 *   wbake SCENE.json -o OUTDIR [options]
 *
 * A thin main over the library: it parses options, runs the pipeline
 * (scene -> heightmap -> raster -> solver -> maps/pages/pack), prints what the
 * library reports, shows progress, and maps statuses to exit codes
 * (0 ok, 1 usage, 2 invalid scene or input, 3 simulation failed, 4 I/O,
 * 130/143 stopped by SIGINT/SIGTERM).
 *
 * Output: OUTDIR is claimed (checked, locked, staging directory made) right
 * after the scene loads, before the solve, and replaced as a whole at the
 * end (output.h): whatever stops the bake - an error, a signal, a kill -
 * leaves the previous output as it was.
 *
 * Signals: SIGINT and SIGTERM set a flag (the handler does nothing else);
 * the solver polls it through wb_solve_opts.cancel and stops within a few
 * steps, the output stage checks it before OUTDIR is replaced. A second
 * signal of the same kind kills at once (SA_RESETHAND), which is safe too.
 * SIGXFSZ is ignored so that a file size limit shows as EFBIG ("File too
 * large") on the write that hits it, reported with the file's name.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef WB_OPENCL
#include "cl.h"
#endif
#include "bake.h"
#ifdef WB_MPI
#include "mpi_bake.h"
#endif
#include "output.h"
#include "report.h"
#include "strutil.h"
#include "util.h"
#include "warm.h"
#include "wbake.h"

static const char usage_text[] =
	"usage: wbake SCENE.json -o OUTDIR [options]\n"
	"\n"
	"Bakes the scene's water into OUTDIR/<name>.wtp and OUTDIR/manifest.json.\n"
	"\n"
	"options:\n"
	"  -o, --out DIR        output directory (required unless --check)\n"
	"  --check              validate the scene and its inputs, simulate nothing\n"
	"  --solver lbm|swe     override the scene's solver\n"
	"  --device cpu|opencl  where the solver runs (opencl needs make OPENCL=1)\n"
	"  --cl-device N        OpenCL device index (see --list-devices)\n"
	"  --list-devices       list OpenCL devices and exit\n"
	"  --threads N          worker threads (default: all cores)\n"
	"  --steps N            run exactly N solver steps (no convergence stop)\n"
	"  --dump-fields        also write OUTDIR/fields/*.pfm at solver resolution\n"
	"  --from EARLIER_OUT   start from the state an earlier bake of the same\n"
	"                       terrain saved (EARLIER_OUT/state.wbs, docs/state.md)\n"
	"  --preview            also write OUTDIR/preview/*.png pictures\n"
	"  --pages png          also write every page as PNG under OUTDIR/pages/\n"
	"  --report             also write OUTDIR/report.html (with the previews)\n"
	"  --require-steady     exit 3 when the bake does not reach a steady state\n"
	"  --quiet              no progress output\n"
	"  --json               print a JSON summary on stdout\n"
	"  -h, --help           show this help\n"
	"  --version            print the version\n"
	"\n"
	"OUTDIR is replaced as a whole when the bake succeeds; until then, and\n"
	"after any failure or interruption, it keeps the previous output.\n"
	"\n"
	"exit codes: 0 ok, 1 usage, 2 invalid scene or input file,\n"
	"            3 simulation failed (or not steady with --require-steady),\n"
	"            4 I/O error, 130 interrupted (SIGINT), 143 terminated (SIGTERM)\n";

struct opts {
	const char *scene;
	const char *out;
	const char *from; /* --from: an earlier bake's OUTDIR */
	int check, dump, preview, pages_png, quiet, json, report, require_steady;
	int solver;  /* -1 = scene's */
	int opencl, cl_device, cl_device_set, list_devices;
	int threads;
	long steps;
	int mute; /* MPI: a rank other than 0 (its messages only on failure) */
};

static int usage_error(const char *fmt, const char *arg)
	__attribute__((format(printf, 1, 0)));
static int usage_error(const char *fmt, const char *arg)
{
	/* arg comes from the command line: shown with its control
	   characters escaped, like every untrusted string */
	char esc[256];
	wb_str_escape(esc, sizeof(esc), arg);
	fprintf(stderr, "wbake: ");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	fprintf(stderr, fmt, esc);
#pragma GCC diagnostic pop
	fprintf(stderr, "\nTry 'wbake --help'.\n");
	return WB_EUSAGE;
}

/* An option that takes a value, given a second time: a usage error, not
 * the last one silently (a script that passes --steps twice means one of
 * them). Flags given twice are harmless and accepted. */
static int given_twice(const char *opt, const char *first, const char *second)
{
	char e1[128], e2[128];
	wb_str_escape(e1, sizeof(e1), first);
	wb_str_escape(e2, sizeof(e2), second);
	fprintf(stderr, "wbake: option '%s' given twice ('%s', then '%s'); give it once\n"
		"Try 'wbake --help'.\n", opt, e1, e2);
	return WB_EUSAGE;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	/* the value each option taking one was given, to refuse a second */
	enum { V_OUT, V_SOLVER, V_DEVICE, V_CL_DEVICE, V_THREADS, V_STEPS,
	       V_FROM, V_PAGES, V_COUNT };
	const char *seen[V_COUNT] = { 0 };
	memset(o, 0, sizeof(*o));
	o->solver = -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		long v;
#define NEED_VAL(id) do { \
		if (!val) \
			return usage_error("option '%s' needs a value", a); \
		if (seen[id]) \
			return given_twice(a, seen[id], val); \
		seen[id] = val; \
		i++; \
	} while (0)
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage_text, stdout);
			exit(0);
		} else if (!strcmp(a, "--version")) {
			printf("wbake %s\n", WB_VERSION_STRING);
			exit(0);
		} else if (!strcmp(a, "-o") || !strcmp(a, "--out")) {
			NEED_VAL(V_OUT);
			if (!*val)
				return usage_error("%s", "-o needs a directory name, found ''");
			o->out = val;
		} else if (!strcmp(a, "--check")) {
			o->check = 1;
		} else if (!strcmp(a, "--solver")) {
			NEED_VAL(V_SOLVER);
			if (!strcmp(val, "lbm"))
				o->solver = WB_SOLVER_LBM;
			else if (!strcmp(val, "swe"))
				o->solver = WB_SOLVER_SWE;
			else
				return usage_error("--solver expects 'lbm' or 'swe', found '%s'", val);
		} else if (!strcmp(a, "--device")) {
			NEED_VAL(V_DEVICE);
			if (!strcmp(val, "cpu"))
				o->opencl = 0;
			else if (!strcmp(val, "opencl"))
				o->opencl = 1;
			else
				return usage_error("--device expects 'cpu' or 'opencl', found '%s'", val);
		} else if (!strcmp(a, "--cl-device")) {
			NEED_VAL(V_CL_DEVICE);
			if (wb_parse_long(val, 0, 1000, &v))
				return usage_error("--cl-device expects a device index from 0 to 1000, found '%s'", val);
			o->cl_device = (int)v;
			o->cl_device_set = 1;
		} else if (!strcmp(a, "--list-devices")) {
			o->list_devices = 1;
		} else if (!strcmp(a, "--threads")) {
			NEED_VAL(V_THREADS);
			if (wb_parse_long(val, 1, 4096, &v))
				return usage_error("--threads expects a number from 1 to 4096, found '%s'", val);
			o->threads = (int)v;
		} else if (!strcmp(a, "--steps")) {
			NEED_VAL(V_STEPS);
			if (wb_parse_long(val, 1, 1000000000L, &v))
				return usage_error("--steps expects a number of steps from 1 to 1000000000, found '%s'", val);
			o->steps = v;
		} else if (!strcmp(a, "--from")) {
			NEED_VAL(V_FROM);
			if (!*val)
				return usage_error("%s", "--from needs the directory of an earlier bake, found ''");
			o->from = val;
		} else if (!strcmp(a, "--dump-fields")) {
			o->dump = 1;
		} else if (!strcmp(a, "--preview")) {
			o->preview = 1;
		} else if (!strcmp(a, "--report")) {
			o->report = 1;
		} else if (!strcmp(a, "--pages")) {
			NEED_VAL(V_PAGES);
			if (strcmp(val, "png"))
				return usage_error("--pages expects 'png', found '%s'", val);
			o->pages_png = 1;
		} else if (!strcmp(a, "--require-steady")) {
			o->require_steady = 1;
		} else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
			o->quiet = 1;
		} else if (!strcmp(a, "--json")) {
			o->json = 1;
		} else if (a[0] == '-' && a[1]) {
			return usage_error("unknown option '%s'", a);
		} else if (!o->scene) {
			o->scene = a;
		} else {
			return usage_error("unexpected argument '%s' (one scene per run)", a);
		}
#undef NEED_VAL
	}
	if (o->list_devices)
		return 0;
	if (!o->scene)
		return usage_error("%s", "missing SCENE.json");
	if (!*o->scene)
		return usage_error("%s", "SCENE.json needs a file name, found ''");
	if (!o->out && (!o->check || o->dump))
		return usage_error("%s", "missing -o OUTDIR");
	if (o->require_steady && o->steps > 0)
		return usage_error("%s", "--require-steady and --steps exclude each other (a run of fixed length never stops on a steady state)");
	return 0;
}

/* Print d->v[from..]; notes only when not quiet. At most SHOWN errors and
 * SHOWN warnings each time; the rest (with those the library only counted,
 * announced with the first batch) are summed up in one line. */
#define SHOWN 20
static void print_diags(const struct wb_diags *d, int from, int quiet)
{
	char buf[2048];
	int ne = 0, nw = 0, more = from == 0 ? d->dropped : 0;
	for (int i = from; i < d->n; i++) {
		if (quiet && d->v[i].sev == WB_SEV_NOTE)
			continue;
		if ((d->v[i].sev == WB_SEV_ERROR && ++ne > SHOWN) ||
		    (d->v[i].sev == WB_SEV_WARNING && ++nw > SHOWN)) {
			more++;
			continue;
		}
		wb_diag_format(&d->v[i], buf, sizeof(buf));
		fprintf(stderr, "%s\n", buf);
	}
	if (more)
		fprintf(stderr, "wbake: ... and %d more problem%s not shown "
			"(at most %d errors and %d warnings are listed)\n",
			more, more == 1 ? "" : "s", SHOWN, SHOWN);
}

/* print_diags, except on the ranks of an MPI bake other than 0 (they
 * print all of theirs at the end when they fail). */
static void show_diags(const struct opts *o, const struct wb_diags *d,
		       int from)
{
	if (!o->mute)
		print_diags(d, from, o->quiet);
}

/* ---- progress ---------------------------------------------------------- */

struct progress {
	int tty;
	double start, last;
	const char *what;
	int shown;
	/* the first and the latest call: the stepping rate without the
	   set-up (bin-mpi/wbake reports it) */
	long s0, s1;
	double t0, t1;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The residual, or "-" until a convergence check has measured it (NAN). */
static void fmt_residual(char *buf, size_t n, double r, const char *fmt)
	__attribute__((format(printf, 4, 0)));
static void fmt_residual(char *buf, size_t n, double r, const char *fmt)
{
	if (!isfinite(r)) {
		snprintf(buf, n, "-");
		return;
	}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(buf, n, fmt, r);
#pragma GCC diagnostic pop
}

static void on_progress(void *user, long step, long max_steps, double residual)
{
	struct progress *p = user;
	double t = now_s();
	if (!p->s0)
		p->s0 = step, p->t0 = t;
	p->s1 = step;
	p->t1 = t;
	if (p->tty) {
		if (t - p->last < 0.1 && step < max_steps)
			return;
		int width = 30, fill = max_steps > 0 ? (int)(width * (double)step / max_steps) : 0;
		char bar[64];
		for (int i = 0; i < width; i++)
			bar[i] = i < fill ? '#' : '.';
		bar[width] = 0;
		char res[32];
		fmt_residual(res, sizeof res, residual, "%.2e");
		fprintf(stderr, "\r%s [%s] step %ld/%ld  residual %s  %.0fs ", p->what,
			bar, step, max_steps, res, t - p->start);
		p->shown = 1;
	} else {
		if (t - p->last < 5.0)
			return;
		char res[32];
		fmt_residual(res, sizeof res, residual, "%.3e");
		fprintf(stderr, "%s: step %ld/%ld, residual %s, %.0fs\n", p->what,
			step, max_steps, res, t - p->start);
	}
	p->last = t;
}

/* ---- field dumps ------------------------------------------------------- */

static enum wb_status dump_field(const char *outdir, const char *name,
				 const float *data, int nx, int ny,
				 struct wb_diags *d)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/fields/%s.pfm", outdir, name);
	return wb_pfm_write(path, data, nx, ny, 1, d);
}

static enum wb_status dump_inputs(const char *outdir, const struct wb_raster *r,
				  struct wb_diags *d)
{
	char dir[4096];
	size_t n = (size_t)r->nx * r->ny;
	snprintf(dir, sizeof(dir), "%s/fields", outdir);
	enum wb_status st = wb_mkdirs(dir, d);
	if (st)
		return st;
	float *tmp = malloc(n * sizeof(float));
	if (!tmp)
		return wb_fail(d, WB_EIO, NULL, "out of memory");
	st = dump_field(outdir, "terrain", r->z, r->nx, r->ny, d);
	if (!st)
		st = dump_field(outdir, "initial_depth", r->h0, r->nx, r->ny, d);
	if (!st)
		st = dump_field(outdir, "source", r->src, r->nx, r->ny, d);
	for (size_t k = 0; k < n; k++)
		tmp[k] = (r->flags[k] & WB_CELL_BLOCKER) ? 1.0f : 0.0f;
	if (!st)
		st = dump_field(outdir, "blocker", tmp, r->nx, r->ny, d);
	for (size_t k = 0; k < n; k++)
		tmp[k] = (r->flags[k] & WB_CELL_BLOCKER) ? r->block_bot[k] : 0.0f;
	if (!st)
		st = dump_field(outdir, "blocker_bottom", tmp, r->nx, r->ny, d);
	for (size_t k = 0; k < n; k++)
		tmp[k] = (float)r->body[k];
	if (!st)
		st = dump_field(outdir, "body", tmp, r->nx, r->ny, d);
	for (size_t k = 0; k < n; k++)
		tmp[k] = (r->flags[k] & WB_CELL_FIXED) ? r->fixed_level[k] : 0.0f;
	if (!st)
		st = dump_field(outdir, "fixed_level", tmp, r->nx, r->ny, d);
	if (!st)
		st = dump_field(outdir, "modifier_rate", r->mod_k, r->nx, r->ny, d);
	free(tmp);
	return st;
}

static enum wb_status dump_state(const char *outdir, const struct wb_raster *r,
				 const struct wb_state *s, struct wb_diags *d)
{
	size_t n = (size_t)s->nx * s->ny;
	float *surf = malloc(n * sizeof(float));
	if (!surf)
		return wb_fail(d, WB_EIO, NULL, "out of memory");
	for (size_t k = 0; k < n; k++)
		surf[k] = r->z[k] + s->h[k];
	enum wb_status st = dump_field(outdir, "depth", s->h, s->nx, s->ny, d);
	if (!st)
		st = dump_field(outdir, "surface", surf, s->nx, s->ny, d);
	if (!st)
		st = dump_field(outdir, "u", s->u, s->nx, s->ny, d);
	if (!st)
		st = dump_field(outdir, "v", s->v, s->nx, s->ny, d);
	if (!st && s->foam)
		st = dump_field(outdir, "foam", s->foam, s->nx, s->ny, d);
	free(surf);
	return st;
}

/* ---- JSON summary ------------------------------------------------------ */

static void json_str(const char *s)
{
	putchar('"');
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

/* A number, or null when not finite (JSON has no NaN). */
static void json_num(const char *fmt, double v)
	__attribute__((format(printf, 1, 0)));
static void json_num(const char *fmt, double v)
{
	if (!isfinite(v)) {
		fputs("null", stdout);
		return;
	}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	printf(fmt, v);
#pragma GCC diagnostic pop
}

static void print_json(const struct opts *o, const struct wb_scene *sc,
		       const struct wb_raster *r, enum wb_status st,
		       const struct wb_diags *d, const struct wb_solve_report *rep,
		       const struct wb_assess *as,
		       const struct wb_output_summary *sum, int solved,
		       const double *tm, double total)
{
	static const char *const stops[] = { "steady", "max_steps", "steps" };
	char buf[2048];
	printf("{\n  \"status\": %d,\n  \"scene\": ", (int)st);
	json_str(o->scene);
	printf(",\n  \"name\": ");
	json_str(sc && sc->name ? sc->name : "");
	if (r && r->nx)
		printf(",\n  \"grid\": {\"nx\": %d, \"ny\": %d, \"dx\": %.9g}",
		       r->nx, r->ny, r->dx);
	if (solved) {
		printf(",\n  \"solver\": {\"steps\": %ld, \"converged\": %s, "
		       "\"stop\": \"%s\", \"steady\": %s, \"residual\": ",
		       rep->steps, rep->converged ? "true" : "false",
		       stops[as->stop], as->steady ? "true" : "false");
		json_num("%.6g", rep->residual);
		printf(", \"tolerance\": %.6g, \"sim_time\": %.6g, \"dt\": %.6g, "
		       "\"clamped\": %ld, \"clamped_share\": %.6g, "
		       "\"volume_initial\": %.9g, "
		       "\"volume_final\": %.9g, \"volume_in\": %.9g, "
		       "\"volume_out\": %.9g, \"filling\": %s, "
		       "\"balance_error\": %.3g, \"seconds\": %.3f}",
		       as->tolerance, rep->sim_time, rep->dt, rep->clamped,
		       as->clamped_share, rep->vol_initial, rep->vol_final,
		       rep->vol_in, rep->vol_out, as->filling ? "true" : "false",
		       rep->balance_error, rep->seconds);
	}
	if (sum && sum->pack_path[0]) {
		printf(",\n  \"pack\": ");
		json_str(sum->pack_path);
		printf(",\n  \"manifest\": ");
		json_str(sum->manifest_path);
		printf(",\n  \"pages\": {\"data\": %ld, \"flat\": %ld, \"empty\": %ld}",
		       sum->pages_data, sum->pages_flat, sum->pages_empty);
		printf(",\n  \"pack_bytes\": %lld", sum->pack_bytes);
	}
	/* wall seconds by stage (never in the manifest: it must not
	 * depend on the machine) */
	printf(",\n  \"timings\": {\"total_s\": %.3f, \"load_s\": %.3f",
	       total, tm[0]);
	if (solved)
		printf(", \"before_solver_s\": %.3f, \"solver_s\": %.3f, "
		       "\"solver_setup_s\": %.3f",
		       tm[1] > rep->seconds ? tm[1] - rep->seconds : 0,
		       rep->seconds, rep->setup_s);
	printf(", \"outputs_s\": %.3f, \"state_s\": %.3f}", tm[2], tm[3]);
	printf(",\n  \"diagnostics\": [");
	for (int i = 0; i < d->n; i++) {
		wb_diag_format(&d->v[i], buf, sizeof(buf));
		printf("%s\n    ", i ? "," : "");
		json_str(buf);
	}
	printf("%s]\n}\n", d->n ? "\n  " : "");
}

/* ---- main -------------------------------------------------------------- */

/* The signal that asked us to stop (0: none). The handler only stores it;
 * the solver polls it through wb_solve_opts.cancel. */
#ifdef WB_MPI
static void put_fig(double v, int whole)
{
	if (whole)
		fprintf(stderr, "%.0f", v);
	else
		fprintf(stderr, "%.4g", v);
}

/* One 'mpi: WHAT: a/b a/b ...' line on stderr, a pair a/b per rank (whole
 * numbers or 4 digits; b left out where it is NaN); every rank calls it:
 * the figures are gathered from all. */
static void mpi_by_rank(struct wb_mpi *m, double a, double b, int quiet,
			const char *what, int whole)
{
	double *all = calloc(2 * (size_t)m->size, sizeof(double));
	if (all && !wb_mpi_gather2(m, a, b, all) && !quiet) {
		fprintf(stderr, "mpi: %s:", what);
		for (int q = 0; q < m->size; q++) {
			fputc(' ', stderr);
			put_fig(all[2 * q], whole);
			if (!isnan(all[2 * q + 1])) {
				fputc('/', stderr);
				put_fig(all[2 * q + 1], whole);
			}
		}
		fputc('\n', stderr);
	}
	free(all);
}
#endif

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

static void install_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESETHAND; /* a second ^C kills at once */
	/* a SIGINT the shell ignores for a background job stays ignored */
	struct sigaction old;
	if (sigaction(SIGINT, NULL, &old) != 0 || old.sa_handler != SIG_IGN)
		sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGXFSZ, SIG_IGN);
}

/* Exit code (128 + the signal) and message for a bake stopped by a
 * signal; OUTDIR was not replaced. */
static int stopped(const struct opts *o, int existed)
{
	int sig = stop_signal;
	const char *name = sig == SIGINT ? "SIGINT" : "SIGTERM";
	if (o->mute) /* an MPI rank other than 0: OUTDIR is rank 0's */
		fprintf(stderr, "wbake: stopped by %s\n", name);
	else if (!o->out || (o->check && !o->dump))
		fprintf(stderr, "wbake: stopped by %s; nothing was written\n",
			name);
	else if (existed)
		fprintf(stderr, "wbake: stopped by %s; %s keeps its previous contents\n",
			name, o->out);
	else
		fprintf(stderr, "wbake: stopped by %s; %s was not created\n",
			name, o->out);
	return 128 + sig;
}

int main(int argc, char **argv)
{
	struct opts o;
	int rc = parse_args(argc, argv, &o);
	if (rc)
		return rc;
	install_signals();
#ifdef WB_MPI
	/* bin-mpi/wbake: one bake over the ranks of mpirun (docs/mpi.md) */
	struct wb_mpi mpi;
	int started = 0; /* the ranks passed the start check together */
	if (wb_mpi_init(&argc, &argv, &mpi)) {
		fprintf(stderr, "wbake: MPI could not start\n");
		return WB_EIO;
	}
	int writer = mpi.rank == 0;
	if (!writer) { /* rank 0 speaks and writes for all */
		o.mute = o.quiet = 1;
		o.json = 0;
	}
#else
	const int writer = 1;
#endif

	if (o.list_devices || o.opencl) {
#ifndef WB_OPENCL
		fprintf(stderr, "wbake: %s needs OpenCL, but this wbake was built without it; rebuild with 'make OPENCL=1'\n",
			o.list_devices ? "--list-devices" : "--device opencl");
		return WB_EUSAGE;
#else
		if (o.list_devices) {
			struct wb_diags dd;
			wb_diags_init(&dd);
			char *list = NULL;
			enum wb_status s = wb_cl_list_devices(&list, &dd);
			print_diags(&dd, 0, 0);
			if (list)
				fputs(list, stdout);
			free(list);
			wb_diags_release(&dd);
			return s;
		}
#endif
	}

	struct wb_diags d;
	struct wb_bake b;
	struct wb_output_summary sum;
	struct wb_outdir od;
	struct wb_assess as;
	int exit_code = -1, claimed = 0, existed = 0;
	memset(&sum, 0, sizeof(sum));
	memset(&od, 0, sizeof(od));
	memset(&as, 0, sizeof(as));
	wb_diags_init(&d);

	/* the stages' wall seconds (--json "timings", the "time:" line):
	 * load, bake solve (first guess, coarse levels, solver), outputs,
	 * state file */
	double tm[4] = { 0 }, tz = now_s();
	enum wb_status st = wb_bake_load(&b, o.scene, &d);
	tm[0] = now_s() - tz;
	const struct wb_scene *sc = &b.sc;
	const struct wb_raster *r = &b.r;
	if (!st && o.solver >= 0)
		b.sc.sim.solver = (enum wb_solver_kind)o.solver;
	/* claim OUTDIR now, so that a bad one fails before the solve */
	if (!st && (!o.check || o.dump) && writer) {
		st = wb_outdir_open(&od, o.out, &d);
		claimed = st == WB_OK;
		existed = od.existed;
	}
	if (!st && o.dump && writer)
		st = dump_inputs(od.staging, r, &d);
	if (!st && o.from)
		st = wb_bake_warm(&b, o.from, o.threads, &d);
#ifdef WB_MPI
	if (mpi.size > 1) {
		/* every rank: the same build, scene, terrain and options, and
		 * all started; the same verdict everywhere */
		struct wb_mpi_id id;
		enum wb_status mine = st;
		if (!mine)
			mine = wb_mpi_identify(&id, o.scene, b.hm.sha256, argc,
					       argv, &d);
		if (!mine && writer && b.r.ny < 2 * mpi.size)
			mine = wb_fail(&d, WB_EINPUT, NULL,
				       "%d MPI ranks for a grid of %d rows: each rank needs two rows at least",
				       mpi.size, b.r.ny);
		st = wb_mpi_check(&mpi, mine, mine ? NULL : &id, &d);
		started = st == WB_OK;
		if (mine != WB_OK)
			o.mute = 0; /* this rank's own reasons */
	}
#endif
	show_diags(&o, &d, 0);
	if (st)
		goto done;
	if (stop_signal) {
		exit_code = stopped(&o, existed);
		goto done;
	}

	/* the scene path comes from the command line: escaped for the
	 * terminal like every other untrusted string (the name is checked) */
	char scene_esc[1024];
	wb_str_escape(scene_esc, sizeof scene_esc, o.scene);
	if (o.check) {
		if (!o.quiet)
			fprintf(stderr,
				"%s: ok: scene '%s', %dx%d cells at %g m, %d sources, %d blockers, %d modifiers, %d materials, inflow %.3g m^3/s, %d warning%s\n",
				scene_esc, sc->name, r->nx, r->ny, r->dx, sc->n_sources,
				sc->n_blockers, sc->n_modifiers, sc->n_materials,
				r->total_inflow, d.warnings, d.warnings == 1 ? "" : "s");
		if (o.dump) {
			int first = d.n;
			st = wb_outdir_commit(&od, &d);
			show_diags(&o, &d, first);
		}
		goto done;
	}

	struct progress pr = { isatty(2), now_s(), 0,
			       sc->sim.solver == WB_SOLVER_SWE ? "swe" : "lbm", 0,
			       0, 0, 0, 0 };
	pr.last = pr.start;
	struct wb_solve_opts so = { 0 };
	so.threads = o.threads;
	so.steps = o.steps;
	so.progress = o.quiet ? NULL : on_progress;
	so.progress_user = &pr;
	so.opencl = o.opencl;
	so.cl_device = o.cl_device;
	so.cancel = &stop_signal;
#ifdef WB_MPI
	if (mpi.size > 1) {
		/* equal rows; wb_bake_solve splits them again by the start's
		 * water where the solver steps only its active blocks
		 * (docs/mpi.md "How the work is split") */
		st = wb_mpi_split(&mpi, r->ny, NULL, &d);
		if (st)
			goto done;
		so.par = &mpi.par;
		if (!o.threads)
			so.threads = mpi.threads;
#ifdef WB_OPENCL
		/* --device opencl: the node-local rank picks its device,
		   unless --cl-device names one for all */
		if (o.opencl && !o.cl_device_set) {
			int ndev = cl_device_count();
			so.cl_device = ndev > 0 ? mpi.local_rank % ndev : 0;
		}
#endif
	}
#endif
	if (!o.quiet)
		fprintf(stderr, "%s: baking '%s' (%dx%d cells at %g m) with %s on %s\n",
			scene_esc, sc->name, r->nx, r->ny, r->dx, pr.what,
			o.opencl ? "OpenCL" : wb_threads(o.threads) == 1 ? "1 thread" :
			"all threads");
	int first = d.n;
#ifdef WB_MPI
	const double rss_solve = wb_mpi_vm("VmRSS:");
#endif
	double tq = now_s();
	st = wb_bake_solve(&b, &so, &d);
	tm[1] = now_s() - tq;
#ifdef WB_MPI
	if (mpi.size > 1 && st == WB_OK && !stop_signal)
		/* the bands (docs/mpi.md "How the work is split") */
		mpi_by_rank(&mpi, mpi.par.row0[mpi.rank + 1] - mpi.par.row0[mpi.rank],
			    100.0 * mpi.par.share, o.quiet,
			    "rows by rank / their % of the expected work", 1);
	if (mpi.size > 1 && st == WB_OK && !stop_signal && !o.quiet &&
	    mpi.rank == 0 && mpi.par.rebalances > 0)
		fprintf(stderr, "mpi: the bands were cut again %d times as the water spread (the rows above are the last cut)\n",
			mpi.par.rebalances);
	if (mpi.size > 1 && st == WB_OK && !stop_signal &&
	    sc->sim.solver != WB_SOLVER_SWE)
		/* how the split held up as the water spread */
		mpi_by_rank(&mpi, (double)b.rep.cells_stepped / 1e6, NAN, o.quiet,
			    "million cell-steps stepped by rank", 0);
	if (st == WB_OK && !stop_signal) {
		/* resident memory per rank (docs/mpi.md "Memory") */
		mpi_by_rank(&mpi, rss_solve, wb_mpi_vm("VmHWM:"), o.quiet,
			    "resident MiB per rank, before the solve / peak", 1);
	}
	if (mpi.size > 1 && !o.quiet)
		fprintf(stderr, "mpi: %d ranks, rank 0 on %s computed rows %d..%d of %d; it received %.4g MB per step in %.3g exchanges, which took %.1f %% of the solve (waiting for the other ranks included)\n",
			mpi.size, mpi.host, mpi.par.row0[0], mpi.par.row0[1] - 1,
			r->ny, mpi.par.bytes / 1e6 / (b.rep.steps > 0 ? (double)b.rep.steps : 1.0),
			(double)mpi.par.calls / (b.rep.steps > 0 ? (double)b.rep.steps : 1.0),
			b.rep.seconds > 0 ? 100.0 * mpi.par.secs / b.rep.seconds : 0.0);
	if (!o.quiet && pr.s1 > pr.s0) /* scaling figures (docs/mpi.md) */
		fprintf(stderr, "mpi: %d rank%s: steps %ld..%ld took %.4g ms per step; exchanges %.4g ms and %.4g MB per step (rank 0)\n",
			mpi.size, mpi.size == 1 ? "" : "s", pr.s0, pr.s1,
			1e3 * (pr.t1 - pr.t0) / (double)(pr.s1 - pr.s0),
			1e3 * mpi.par.secs / (b.rep.steps > 0 ? (double)b.rep.steps : 1.0),
			mpi.par.bytes / 1e6 / (b.rep.steps > 0 ? (double)b.rep.steps : 1.0));
	if (mpi.size > 1 && st == WB_OK && !stop_signal) {
		/* every rank's exchange (docs/mpi.md "Measured on a GPU
		 * host"): an inner band has two neighbours, rank 0 one */
		const double ns = b.rep.steps > 0 ? (double)b.rep.steps : 1.0;
		mpi_by_rank(&mpi, mpi.par.bytes / 1e6 / ns,
			    o.opencl ? 1e3 * mpi.par.xsecs / ns : NAN, o.quiet,
			    o.opencl ? "per step, by rank: MB received / ms of the halo exchange (device copies included)" :
				       "per step, by rank: MB received", 0);
		/* of them the halo rows' (the rest: rows, rings, books,
		 * the result gathered at the end) */
		mpi_by_rank(&mpi, mpi.par.hbytes / 1e6 / ns, NAN, o.quiet,
			    "per step, by rank: MB of halo rows received", 0);
		/* where each rank's step went (docs/mpi.md): waiting for its
		 * device, and with WB_CL_PROFILE=1 the device's kernels */
		if (o.opencl && sc->sim.solver != WB_SOLVER_SWE)
			mpi_by_rank(&mpi, 1e3 * b.rep.host_wait_s / ns,
				    b.rep.dev_kernel_s > 0 ? 1e3 * b.rep.dev_kernel_s / ns : NAN,
				    o.quiet,
				    "per step, by rank: ms the host waited for its device / ms of kernels (WB_CL_PROFILE=1)", 0);
	}
	if (!writer && st == WB_OK && !stop_signal)
		goto done; /* rank 0 writes */
#endif
	if (pr.shown)
		fputc('\n', stderr);
	if (!o.quiet && st == WB_OK && b.rep.host_enqueue_s + b.rep.host_wait_s > 0)
		/* where a device bake's step is bound (docs/opencl.md) */
		fprintf(stderr, "opencl: of the solve's %.3g s the host spent %.3g s enqueueing the steps and %.3g s waiting for the device\n",
			b.rep.seconds, b.rep.host_enqueue_s, b.rep.host_wait_s);
	show_diags(&o, &d, first);
	if (st == WB_ECANCEL || stop_signal) {
		exit_code = stopped(&o, existed);
		goto done;
	}
	if (st)
		goto done;
	const struct wb_solve_report *rep = &b.rep;
	for (int l = 0; !o.quiet && l < rep->n_levels; l++) {
		/* coarse-to-fine: what each coarse grid did (src/coarse.h) */
		const struct wb_level_report *lr = &rep->level[l];
		char lres[32];
		fmt_residual(lres, sizeof lres, lr->residual, "%.3g");
		fprintf(stderr, "%s: coarse level %dx (%dx%d cells at %g m): %s after %ld steps (%.1f s), residual %s\n",
			pr.what, lr->factor, lr->nx, lr->ny, lr->dx,
			lr->converged ? "steady" : "stopped", lr->steps,
			lr->seconds, lres);
	}
	first = d.n;
	wb_output_assess(sc, r, rep, &b.st, o.steps, &as, &d);
	if (!o.quiet) {
		char res[32];
		fmt_residual(res, sizeof res, rep->residual, "%.3g");
		fprintf(stderr,
			"%s: %s after %ld steps (%.3g s simulated, %.1f s): residual %s (tolerance %.3g), "
			"volume %.6g m^3 (in %.6g, out %.6g), balance error %.2g, "
			"clamped %.3g %% of cell-steps\n",
			pr.what, as.stop == WB_STOP_STEADY ? "steady" :
			as.stop == WB_STOP_STEPS ? "stopped (--steps)" :
			"stopped at max_steps, not steady", rep->steps,
			rep->sim_time, rep->seconds, res, as.tolerance,
			rep->vol_final, rep->vol_in, rep->vol_out,
			rep->balance_error, 100.0 * as.clamped_share);
	}
	if (!o.quiet && rep->lattice_speed_reason)
		fprintf(stderr,
			"%s: lattice speed %.4g m/s (%s; for water %.3g m deep, flood bound %.3g m, flow down the slopes %.3g m/s, re-chosen %ld times), tau %.4f, viscosity %g m^2/s (asked %g)\n",
			pr.what, rep->lattice_speed, rep->lattice_speed_reason,
			rep->h_deep, rep->h_flood, rep->slope_speed,
			rep->rescales, rep->tau,
			rep->viscosity, rep->viscosity_requested);
	show_diags(&o, &d, first);
	if (o.require_steady && (!as.steady || as.filling)) {
		fprintf(stderr, "wbake: --require-steady: the bake is %s\n",
			!as.steady ? "not steady" : "not steady (the water is still rising)");
		st = WB_ESIM;
		goto done;
	}

	first = d.n;
	if (o.dump)
		st = dump_state(od.staging, r, &b.st, &d);
	if (!st && o.dump && b.guess_h) {
		st = dump_field(od.staging, "first_guess_depth", b.guess_h, r->nx, r->ny, &d);
		if (!st)
			st = dump_field(od.staging, "first_guess_u", b.guess_u, r->nx, r->ny, &d);
		if (!st)
			st = dump_field(od.staging, "first_guess_v", b.guess_v, r->nx, r->ny, &d);
	}
	if (!st) {
		struct wb_output_opts oo = { 0 };
		oo.outdir = o.out;
		oo.claim = &od;
		oo.threads = o.threads;
		oo.pages_png = o.pages_png;
		oo.preview = o.preview || o.report;
		oo.solver_name = sc->sim.solver == WB_SOLVER_SWE ? "swe" : "lbm";
		oo.heightmap_sha256 = b.hm.sha256;
		oo.fixed_steps = o.steps;
		oo.cancel = &stop_signal;
		tq = now_s();
		st = wb_output_write(sc, r, &b.st, rep, &oo, &sum, &d);
		tm[2] = now_s() - tq;
	}
	if (st == WB_ECANCEL || (!st && stop_signal)) {
		show_diags(&o, &d, first);
		exit_code = stopped(&o, existed);
		goto done;
	}
	if (!st) {
		/* the state a later bake can start from (--from) */
		char *sp = wb_path_join(od.staging, WB_STATE_FILE);
		double ts = now_s();
		st = sp ? wb_state_save(sp, r, sc->sim.solver, &b.st,
					b.guess_h, rep, o.threads, &d) :
			  wb_fail(&d, WB_EIO, NULL, "out of memory");
		tm[3] = now_s() - ts;
		free(sp);
	}
	if (!st && o.report) {
		/* The report goes into the staging directory with the rest of
		 * the set, and reads the pack written there. */
		const char *slash = strrchr(sum.pack_path, '/');
		char *stage_pack = wb_path_join(od.staging,
						slash ? slash + 1 : sum.pack_path);
		struct report_in ri = { 0 };
		ri.sc = sc;
		ri.r = r;
		ri.st = &b.st;
		ri.rep = rep;
		ri.solver = sc->sim.solver == WB_SOLVER_SWE ? "swe" : "lbm";
		ri.device = o.opencl ? "opencl" : "cpu";
		ri.steps_forced = o.steps;
		ri.res_step = b.hist.step;
		ri.res_value = b.hist.value;
		ri.n_res = b.hist.n;
		ri.diags = &d;
		ri.outdir = od.staging;
		ri.pack_path = stage_pack;
		st = stage_pack ? report_write(&ri, &d)
				: wb_fail(&d, WB_EIO, o.out, "out of memory");
		free(stage_pack);
	}
	if (!st)
		st = wb_outdir_commit(&od, &d);
	show_diags(&o, &d, first);
	if (!st && !o.quiet)
		fprintf(stderr, "wrote %s (%lld bytes; pages: %ld data, %ld flat, %ld empty) and %s\n",
			sum.pack_path, sum.pack_bytes, sum.pages_data,
			sum.pages_flat, sum.pages_empty, sum.manifest_path);
	if (!st && !o.quiet && b.solved)
		fprintf(stderr, "time: %.3g s in all: load %.3g s, first guess and coarse levels %.3g s, solver %.3g s (its set-up %.3g s), outputs %.3g s, state file %.3g s\n",
			now_s() - tz, tm[0], tm[1] > b.rep.seconds ? tm[1] - b.rep.seconds : 0.0,
			b.rep.seconds, b.rep.setup_s, tm[2], tm[3]);
	if (!st && o.report && !o.quiet)
		fprintf(stderr, "report: %s/report.html\n", o.out);

done:
	if (claimed && st && exit_code < 0)
		fprintf(stderr, existed ? "wbake: %s keeps its previous contents\n" :
			"wbake: %s was not created\n", o.out);
	wb_outdir_abort(&od); /* after a commit: nothing to do */
	if (o.json)
		print_json(&o, &b.sc, &b.r,
			   exit_code >= 0 ? (enum wb_status)exit_code : st, &d,
			   &b.rep, &as, &sum, b.solved, tm, now_s() - tz);
	int rc_end = exit_code >= 0 ? exit_code : (int)st;
#ifdef WB_MPI
	if (mpi.size > 1 && rc_end && started) {
		/* failed after the ranks started together: the others may
		 * wait on this rank; end them all */
		if (!writer)
			print_diags(&d, 0, 0);
		fprintf(stderr, "wbake: rank %d of %d (host %s) failed (exit %d); ending the bake on every rank\n",
			mpi.rank, mpi.size, mpi.host, rc_end);
		fflush(stderr);
		wb_mpi_abort(&mpi, rc_end);
	}
	wb_mpi_finalize(&mpi);
#endif
	wb_bake_release(&b);
	wb_diags_release(&d);
	return rc_end;
}
