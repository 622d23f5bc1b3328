/*
 * test_io.c - unit tests of util.h (atomic output, directories, file reads,
 * path joining, PFM, SHA-256) and of the heightmap loader (heightmap.c).
 *
 * Test files are generated at run time under tests/tmp/test_io/ (PNGs are
 * written with libpng here, raw files byte by byte). SHA-256 is checked
 * against the FIPS 180-2 appendix B vectors; heightmap scaling against the
 * formula z = v/maxval*scale + offset evaluated in double (tolerance: half
 * a float ulp of the result, i.e. 1e-6 relative).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <png.h>
#include <zlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"
#include "wbake.h"

#define TMP "tests/tmp/test_io"

/* ---- helpers ----------------------------------------------------------- */

static char *tpath(const char *name)
{
	char *p = wb_path_join(TMP, name);
	assert_non_null(p);
	return p;
}

static int file_exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

static void write_bytes(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	if (n)
		assert_int_equal(fwrite(data, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

static unsigned char *slurp(const char *path, size_t *n)
{
	struct wb_diags d;
	wb_diags_init(&d);
	unsigned char *b;
	assert_int_equal(wb_read_file(path, &b, n, &d), WB_OK);
	wb_diags_release(&d);
	return b;
}

/* Write a PNG with libpng: 'px' holds w*h*channels samples (uint16 values,
 * stored big-endian for 16-bit as PNG wants). */
static void write_png(const char *path, int w, int h, int depth, int ctype,
		      int interlace, const uint16_t *px)
{
	int ch = ctype == PNG_COLOR_TYPE_RGB ? 3 :
		 ctype == PNG_COLOR_TYPE_GRAY_ALPHA ? 2 :
		 ctype == PNG_COLOR_TYPE_RGB_ALPHA ? 4 : 1;
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL,
						  NULL, NULL);
	png_infop info = png_create_info_struct(png);
	assert_non_null(png);
	assert_non_null(info);
	if (setjmp(png_jmpbuf(png)))
		fail_msg("libpng failed writing %s", path);
	png_init_io(png, f);
	png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, ctype,
		     interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	size_t bps = (size_t)depth / 8;
	size_t rowbytes = (size_t)w * (size_t)ch * bps;
	unsigned char *img = malloc(rowbytes * (size_t)h);
	png_bytep *rows = malloc((size_t)h * sizeof(*rows));
	assert_non_null(img);
	assert_non_null(rows);
	for (size_t k = 0; k < (size_t)w * (size_t)h * (size_t)ch; k++) {
		if (bps == 2) {
			img[2 * k] = (unsigned char)(px[k] >> 8);
			img[2 * k + 1] = (unsigned char)px[k];
		} else {
			img[k] = (unsigned char)px[k];
		}
	}
	for (int y = 0; y < h; y++)
		rows[y] = img + (size_t)y * rowbytes;
	png_set_rows(png, info, rows);
	png_write_png(png, info, PNG_TRANSFORM_IDENTITY, NULL);
	png_destroy_write_struct(&png, &info);
	free(rows);
	free(img);
	assert_int_equal(fclose(f), 0);
}

static struct wb_terrain_desc desc(const char *path, enum wb_hm_format fmt,
				   int w, int h)
{
	struct wb_terrain_desc t;
	memset(&t, 0, sizeof(t));
	t.heightmap = (char *)path;
	t.format = fmt;
	t.width = w;
	t.height = h;
	t.dx = 1;
	t.height_scale = 100;
	t.height_offset = -5;
	return t;
}

/* Load expecting failure 'want'; check that the first error names the file
 * and contains 'sub'. */
static void expect_hm_error(const struct wb_terrain_desc *t,
			    enum wb_status want, const char *sub)
{
	struct wb_diags d;
	struct wb_heightmap hm;
	wb_diags_init(&d);
	enum wb_status st = wb_heightmap_load(t, &hm, &d);
	assert_int_equal(st, want);
	assert_null(hm.z);
	assert_true(d.errors >= 1);
	assert_non_null(d.v[0].file);
	assert_string_equal(d.v[0].file, t->heightmap);
	char buf[1024];
	wb_diag_format(&d.v[0], buf, sizeof(buf));
	if (!strstr(buf, sub))
		fail_msg("message '%s' lacks '%s'", buf, sub);
	assert_non_null(strstr(buf, t->heightmap));
	wb_diags_release(&d);
	wb_heightmap_free(&hm);
}

static int setup_tmp(void **state)
{
	(void)state;
	struct wb_diags d;
	wb_diags_init(&d);
	enum wb_status st = wb_mkdirs(TMP, &d);
	wb_diags_release(&d);
	return st == WB_OK ? 0 : -1;
}

/* ---- SHA-256 ----------------------------------------------------------- */

static void check_sha(const void *m, size_t n, const char *want)
{
	unsigned char out[32];
	char hex[65];
	wb_sha256(m, n, out);
	wb_hex(out, 32, hex);
	assert_string_equal(hex, want);
}

static void test_sha256_vectors(void **state)
{
	(void)state;
	check_sha("abc", 3,
		  "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	const char *m448 =
		"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	check_sha(m448, strlen(m448),
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	check_sha("", 0,
		  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	char *a = malloc(1000000);
	assert_non_null(a);
	memset(a, 'a', 1000000);
	check_sha(a, 1000000,
		  "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(a);
}

/* Padding boundaries: 55 bytes fit one final block, 56..63 need two. The
 * hash of a prefix must differ from its neighbours, and hashing must not
 * read past len (checked under ASan with an exact-size buffer). */
static void test_sha256_boundaries(void **state)
{
	(void)state;
	unsigned char prev[32], out[32];
	memset(prev, 0, sizeof(prev));
	for (size_t n = 50; n <= 130; n++) {
		unsigned char *b = malloc(n);
		assert_non_null(b);
		memset(b, 'x', n);
		wb_sha256(b, n, out);
		free(b);
		assert_memory_not_equal(out, prev, 32);
		memcpy(prev, out, 32);
	}
	char hex[9];
	const unsigned char in[4] = { 0x00, 0x0f, 0xa0, 0xff };
	wb_hex(in, 4, hex);
	assert_string_equal(hex, "000fa0ff");
}

/* ---- paths, directories, files ----------------------------------------- */

static void test_path_join(void **state)
{
	(void)state;
	struct { const char *dir, *name, *want; } cases[] = {
		{ "a/b", "c.png", "a/b/c.png" },
		{ "a/b/", "c.png", "a/b/c.png" },
		{ "a", "/abs/c.png", "/abs/c.png" },
		{ "", "c.png", "c.png" },
		{ NULL, "c.png", "c.png" },
		{ "/", "c", "/c" },
		{ ".", "x/y", "./x/y" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *p = wb_path_join(cases[i].dir, cases[i].name);
		assert_non_null(p);
		assert_string_equal(p, cases[i].want);
		free(p);
	}
}

static void test_mkdirs(void **state)
{
	(void)state;
	struct wb_diags d;
	wb_diags_init(&d);
	char *deep = tpath("mk/a/b/c/");
	assert_int_equal(wb_mkdirs(deep, &d), WB_OK);
	struct stat st;
	assert_int_equal(stat(TMP "/mk/a/b/c", &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	/* Existing directories are fine. */
	assert_int_equal(wb_mkdirs(deep, &d), WB_OK);
	assert_int_equal(d.errors, 0);
	/* A file in the way is an error naming the directory. */
	char *file = tpath("mk/plain");
	write_bytes(file, "x", 1);
	char *under = tpath("mk/plain/sub");
	assert_int_equal(wb_mkdirs(under, &d), WB_EIO);
	assert_int_equal(d.errors, 1);
	assert_string_equal(d.v[0].file, under);
	assert_non_null(strstr(d.v[0].msg, "is a regular file, not a directory"));
	free(deep);
	free(file);
	free(under);
	wb_diags_release(&d);
}

static void test_atomic_abort_keeps_old(void **state)
{
	(void)state;
	struct wb_diags d;
	wb_diags_init(&d);
	char *p = tpath("atomic.txt");
	assert_int_equal(wb_write_file_atomic(p, "old", 3, &d), WB_OK);

	struct wb_atomic a;
	assert_int_equal(wb_atomic_open(&a, p, &d), WB_OK);
	char tmp[512];
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", p, (long)getpid());
	assert_string_equal(a.tmp, tmp);
	assert_true(file_exists(tmp));
	fputs("new and longer", a.f);
	fflush(a.f);
	/* Until commit, the old file is intact. */
	size_t n;
	unsigned char *b = slurp(p, &n);
	assert_int_equal(n, 3);
	assert_memory_equal(b, "old", 3);
	free(b);
	wb_atomic_abort(&a);
	assert_false(file_exists(tmp));
	b = slurp(p, &n);
	assert_int_equal(n, 3);
	assert_memory_equal(b, "old", 3);
	assert_int_equal(b[n], 0); /* NUL appended, not counted */
	free(b);
	wb_atomic_abort(NULL);

	/* Commit replaces it and leaves no temporary. */
	assert_int_equal(wb_atomic_open(&a, p, &d), WB_OK);
	fputs("new", a.f);
	assert_int_equal(wb_atomic_commit(&a, &d), WB_OK);
	assert_null(a.f);
	assert_false(file_exists(tmp));
	b = slurp(p, &n);
	assert_int_equal(n, 3);
	assert_memory_equal(b, "new", 3);
	free(b);
	assert_int_equal(d.errors, 0);
	free(p);
	wb_diags_release(&d);
}

static void test_write_errors(void **state)
{
	(void)state;
	struct wb_diags d;
	wb_diags_init(&d);
	char *p = tpath("no/such/dir/out.bin");
	assert_int_equal(wb_write_file_atomic(p, "x", 1, &d), WB_EIO);
	assert_int_equal(d.errors, 1);
	assert_string_equal(d.v[0].file, p);
	assert_non_null(strstr(d.v[0].msg, "No such file or directory"));
	assert_false(file_exists(p));
	free(p);
	wb_diags_release(&d);
}

/* Only a regular file is replaced: renaming over a FIFO (or, as root, a
 * device: "mkterrain river /dev/null" made /dev/null a PNG) replaced the
 * node itself. A FIFO, a directory and a link to a FIFO are refused at
 * open, left as they are, and no temporary is created beside them. */
static void test_atomic_not_regular(void **state)
{
	(void)state;
	struct wb_diags d;
	wb_diags_init(&d);
	char *fifo = tpath("atomic.fifo"), *dir = tpath("atomic.dir"),
	     *link = tpath("atomic.link");
	unlink(fifo);
	unlink(link);
	rmdir(dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(symlink("atomic.fifo", link), 0);
	const char *paths[] = { fifo, dir, link };
	const char *kinds[] = { "a FIFO (named pipe)", "a directory",
				"a FIFO (named pipe)" };
	for (int k = 0; k < 3; k++) {
		struct wb_atomic a;
		char want[600], tmp[600];
		snprintf(want, sizeof(want),
			 "cannot write: '%s' is %s, not a regular file (left as it is)",
			 paths[k], kinds[k]);
		assert_int_equal(wb_atomic_open(&a, paths[k], &d), WB_EIO);
		assert_null(a.f);
		assert_string_equal(d.v[d.n - 1].msg, want);
		assert_int_equal(wb_write_file_atomic(paths[k], "x", 1, &d),
				 WB_EIO);
		snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", paths[k],
			 (long)getpid());
		assert_false(file_exists(tmp));
	}
	struct stat st;
	assert_int_equal(stat(fifo, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(stat(dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	/* a link to a regular file is replaced, as before */
	char *reg = tpath("atomic.reg"), *rlink = tpath("atomic.rlink");
	unlink(rlink);
	write_bytes(reg, "old", 3);
	assert_int_equal(symlink("atomic.reg", rlink), 0);
	assert_int_equal(wb_write_file_atomic(rlink, "new", 3, &d), WB_OK);
	/* an empty name is refused, not turned into a temporary in "." */
	assert_int_equal(wb_write_file_atomic("", "x", 1, &d), WB_EIO);
	assert_string_equal(d.v[d.n - 1].msg, "cannot write: empty file name");
	unlink(fifo);
	unlink(link);
	unlink(rlink);
	unlink(reg);
	rmdir(dir);
	free(fifo);
	free(dir);
	free(link);
	free(reg);
	free(rlink);
	wb_diags_release(&d);
}

static void test_read_file(void **state)
{
	(void)state;
	struct wb_diags d;
	wb_diags_init(&d);
	unsigned char *b = (unsigned char *)"sentinel";
	size_t n = 7;
	char *p = tpath("missing.bin");
	assert_int_equal(wb_read_file(p, &b, &n, &d), WB_EINPUT);
	assert_null(b);
	assert_int_equal(n, 0);
	assert_string_equal(d.v[0].file, p);
	assert_non_null(strstr(d.v[0].msg, "No such file"));
	free(p);
	/* A directory is unreadable, not a crash. */
	assert_int_equal(wb_read_file(TMP, &b, &n, &d), WB_EINPUT);
	assert_int_equal(d.errors, 2);
	/* Binary content with NULs and a size larger than one read chunk. */
	size_t big = 100000;
	unsigned char *src = malloc(big);
	assert_non_null(src);
	for (size_t i = 0; i < big; i++)
		src[i] = (unsigned char)(i * 7u);
	p = tpath("big.bin");
	write_bytes(p, src, big);
	assert_int_equal(wb_read_file(p, &b, &n, &d), WB_OK);
	assert_int_equal(n, big);
	assert_memory_equal(b, src, big);
	assert_int_equal(b[big], 0);
	free(b);
	free(src);
	free(p);
	wb_diags_release(&d);
}

static void test_threads(void **state)
{
	(void)state;
	assert_int_equal(wb_threads(3), 3);
	assert_true(wb_threads(0) >= 1);
	assert_true(wb_threads(-1) >= 1);
}

/* ---- PFM --------------------------------------------------------------- */

static void test_pfm_roundtrip_orientation(void **state)
{
	(void)state;
	struct wb_diags d;
	wb_diags_init(&d);
	const int nx = 5, ny = 3;
	for (int ch = 1; ch <= 3; ch += 2) {
		float *g = malloc(sizeof(float) * (size_t)(nx * ny * ch));
		assert_non_null(g);
		for (int k = 0; k < nx * ny * ch; k++)
			g[k] = (float)k * 0.25f - 1.5f;
		char *p = tpath(ch == 1 ? "one.pfm" : "three.pfm");
		assert_int_equal(wb_pfm_write(p, g, nx, ny, ch, &d), WB_OK);
		/* The header, then grid row ny-1 first, little-endian. */
		size_t n;
		unsigned char *b = slurp(p, &n);
		char hdr[32];
		int hl = snprintf(hdr, sizeof(hdr), "%s\n%d %d\n-1.0\n",
				  ch == 1 ? "Pf" : "PF", nx, ny);
		assert_int_equal(n, (size_t)hl + 4u * (size_t)(nx * ny * ch));
		assert_memory_equal(b, hdr, (size_t)hl);
		for (int k = 0; k < nx * ch; k++) {
			const unsigned char *q = b + hl + 4 * k;
			uint32_t u = (uint32_t)q[0] | (uint32_t)q[1] << 8 |
				     (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
			float v;
			memcpy(&v, &u, 4);
			assert_true(v == g[(ny - 1) * nx * ch + k]);
		}
		free(b);
		float *r;
		int rx, ry, rc;
		assert_int_equal(wb_pfm_read(p, &r, &rx, &ry, &rc, &d), WB_OK);
		assert_int_equal(rx, nx);
		assert_int_equal(ry, ny);
		assert_int_equal(rc, ch);
		assert_memory_equal(r, g, sizeof(float) * (size_t)(nx * ny * ch));
		free(r);
		free(g);
		free(p);
	}
	assert_int_equal(d.errors, 0);
	wb_diags_release(&d);
}

/* A big-endian PFM written by another tool (positive scale, extra
 * whitespace in the header) reads into grid order too. */
static void test_pfm_read_big_endian(void **state)
{
	(void)state;
	const char hdr[] = "Pf\n2  2\n1.0\n";
	unsigned char buf[sizeof(hdr) - 1 + 16];
	memcpy(buf, hdr, sizeof(hdr) - 1);
	const float file_order[4] = { 1, 2, 3, 4 }; /* bottom row first */
	for (int k = 0; k < 4; k++) {
		uint32_t u;
		memcpy(&u, &file_order[k], 4);
		unsigned char *q = buf + sizeof(hdr) - 1 + 4 * k;
		q[0] = (unsigned char)(u >> 24);
		q[1] = (unsigned char)(u >> 16);
		q[2] = (unsigned char)(u >> 8);
		q[3] = (unsigned char)u;
	}
	char *p = tpath("be.pfm");
	write_bytes(p, buf, sizeof(buf));
	struct wb_diags d;
	wb_diags_init(&d);
	float *r;
	int nx, ny, ch;
	assert_int_equal(wb_pfm_read(p, &r, &nx, &ny, &ch, &d), WB_OK);
	assert_int_equal(nx, 2);
	assert_int_equal(ny, 2);
	assert_int_equal(ch, 1);
	const float want[4] = { 3, 4, 1, 2 }; /* grid row 0 = top */
	assert_memory_equal(r, want, sizeof(want));
	free(r);
	free(p);
	wb_diags_release(&d);
}

static void test_pfm_errors(void **state)
{
	(void)state;
	struct { const char *bytes; size_t n; const char *sub; } cases[] = {
		{ "P5\n2 2\n255\n", 11, "not a PFM" },
		{ "Pf\n0 2\n-1.0\n", 12, "width and height" },
		{ "Pf\n2 x\n-1.0\n", 12, "width and height" },
		{ "Pf\n2 2\nzz\n", 10, "scale" },
		{ "Pf\n2 2\n-1.0\n\0\0\0\0", 16, "truncated PFM" },
		{ "", 0, "not a PFM" },
	};
	char *p = tpath("bad.pfm");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		write_bytes(p, cases[i].bytes, cases[i].n);
		struct wb_diags d;
		wb_diags_init(&d);
		float *r = (float *)1;
		int nx, ny, ch;
		assert_int_equal(wb_pfm_read(p, &r, &nx, &ny, &ch, &d),
				 WB_EINPUT);
		assert_null(r);
		assert_string_equal(d.v[0].file, p);
		if (!strstr(d.v[0].msg, cases[i].sub))
			fail_msg("case %zu: '%s' lacks '%s'", i, d.v[0].msg,
				 cases[i].sub);
		wb_diags_release(&d);
	}
	/* Bad arguments to the writer, and an unwritable place. */
	struct wb_diags d;
	wb_diags_init(&d);
	float v = 0;
	assert_int_equal(wb_pfm_write(p, &v, 1, 1, 2, &d), WB_EIO);
	assert_int_equal(wb_pfm_write(TMP "/none/x.pfm", &v, 1, 1, 1, &d),
			 WB_EIO);
	assert_int_equal(d.errors, 2);
	wb_diags_release(&d);
	free(p);
}

/* ---- heightmap --------------------------------------------------------- */

static void load_ok(const struct wb_terrain_desc *t, struct wb_heightmap *hm)
{
	struct wb_diags d;
	wb_diags_init(&d);
	enum wb_status st = wb_heightmap_load(t, hm, &d);
	if (st != WB_OK) {
		char buf[1024];
		wb_diag_format(&d.v[0], buf, sizeof(buf));
		fail_msg("load failed: %s", buf);
	}
	assert_int_equal(d.n, 0);
	wb_diags_release(&d);
	/* The hash is of the file bytes. */
	size_t n;
	unsigned char *b = slurp(t->heightmap, &n);
	unsigned char sha[32];
	wb_sha256(b, n, sha);
	assert_memory_equal(sha, hm->sha256, 32);
	free(b);
}

static void check_scaled(const struct wb_heightmap *hm, const uint16_t *px,
			 double maxval, const struct wb_terrain_desc *t)
{
	for (int k = 0; k < hm->nx * hm->ny; k++) {
		double want = px[k] / maxval * t->height_scale +
			      t->height_offset;
		assert_float_equal(hm->z[k], want, 1e-6 * fabs(want) + 1e-9);
	}
}

static void test_hm_png(void **state)
{
	(void)state;
	/* Asymmetric sizes and a gradient along x and y, so a transposed or
	 * flipped image fails. Each depth, plain and interlaced. */
	const int w = 13, h = 7;
	uint16_t px[13 * 7];
	for (int depth = 8; depth <= 16; depth += 8) {
		for (int il = 0; il <= 1; il++) {
			int maxv = depth == 16 ? 65535 : 255;
			for (int y = 0; y < h; y++)
				for (int x = 0; x < w; x++)
					px[x + y * w] = (uint16_t)(
						(x * 977 + y * 5003) % (maxv + 1));
			px[0] = 0;
			px[w * h - 1] = (uint16_t)maxv;
			char name[64];
			snprintf(name, sizeof(name), "g%d%s.png", depth,
				 il ? "i" : "");
			char *p = tpath(name);
			write_png(p, w, h, depth, PNG_COLOR_TYPE_GRAY, il, px);
			struct wb_terrain_desc t = desc(p, WB_HM_PNG, 0, 0);
			struct wb_heightmap hm;
			load_ok(&t, &hm);
			assert_int_equal(hm.nx, w);
			assert_int_equal(hm.ny, h);
			check_scaled(&hm, px, maxv, &t);
			/* End points: offset and offset + scale exactly. */
			assert_true(hm.z[0] == -5.0f);
			assert_true(hm.z[w * h - 1] == 95.0f);
			wb_heightmap_free(&hm);
			/* Matching sizes in the description are fine. */
			t.width = w;
			t.height = h;
			load_ok(&t, &hm);
			wb_heightmap_free(&hm);
			free(p);
		}
	}
	wb_heightmap_free(NULL);
}

static void test_hm_raw(void **state)
{
	(void)state;
	const int w = 6, h = 4;
	unsigned char b16[6 * 4 * 2], b32[6 * 4 * 4];
	uint16_t px[6 * 4];
	float fv[6 * 4];
	for (int k = 0; k < w * h; k++) {
		px[k] = (uint16_t)(k * 2731 + 17);
		b16[2 * k] = (unsigned char)px[k];
		b16[2 * k + 1] = (unsigned char)(px[k] >> 8);
		fv[k] = (float)k * 0.375f - 2.0f;
		uint32_t u;
		memcpy(&u, &fv[k], 4);
		for (int i = 0; i < 4; i++)
			b32[4 * k + i] = (unsigned char)(u >> (8 * i));
	}
	char *p16 = tpath("h.r16"), *p32 = tpath("h.r32f");
	write_bytes(p16, b16, sizeof(b16));
	write_bytes(p32, b32, sizeof(b32));
	struct wb_terrain_desc t = desc(p16, WB_HM_R16, w, h);
	struct wb_heightmap hm;
	load_ok(&t, &hm);
	assert_int_equal(hm.nx, w);
	assert_int_equal(hm.ny, h);
	check_scaled(&hm, px, 65535.0, &t);
	wb_heightmap_free(&hm);
	t = desc(p32, WB_HM_R32F, w, h);
	load_ok(&t, &hm);
	for (int k = 0; k < w * h; k++) {
		double want = fv[k] * 100.0 - 5.0;
		assert_float_equal(hm.z[k], want, 1e-6 * fabs(want) + 1e-9);
	}
	wb_heightmap_free(&hm);
	/* r32f NaN and infinity are named with their pixel. */
	float nan = NAN;
	uint32_t u;
	memcpy(&u, &nan, 4);
	int k = 2 + 3 * w; /* pixel (2, 3) */
	for (int i = 0; i < 4; i++)
		b32[4 * k + i] = (unsigned char)(u >> (8 * i));
	write_bytes(p32, b32, sizeof(b32));
	expect_hm_error(&t, WB_EINPUT, "pixel (2, 3) is NaN");
	float inf = -INFINITY;
	memcpy(&u, &inf, 4);
	for (int i = 0; i < 4; i++)
		b32[4 * k + i] = (unsigned char)(u >> (8 * i));
	write_bytes(p32, b32, sizeof(b32));
	expect_hm_error(&t, WB_EINPUT, "pixel (2, 3) is infinite");
	/* Finite values that overflow float after scaling. */
	float big = 3.0e38f;
	memcpy(&u, &big, 4);
	for (int i = 0; i < 4; i++)
		b32[4 * k + i] = (unsigned char)(u >> (8 * i));
	write_bytes(p32, b32, sizeof(b32));
	expect_hm_error(&t, WB_EINPUT, "pixel (2, 3) scales");
	/* Raw size mismatch, with the exact expectation. */
	write_bytes(p16, b16, 10);
	t = desc(p16, WB_HM_R16, w, h);
	expect_hm_error(&t, WB_EINPUT, "expected 48 bytes for 6x4 r16, found 10");
	char *big16 = tpath("big.r16");
	unsigned char *zeros = calloc(1000, 1);
	assert_non_null(zeros);
	write_bytes(big16, zeros, 1000);
	free(zeros);
	t = desc(big16, WB_HM_R16, 256, 256);
	expect_hm_error(&t, WB_EINPUT,
			"expected 131072 bytes for 256x256 r16, found 1000");
	/* Missing or absurd dimensions. */
	t = desc(p16, WB_HM_R16, 0, 4);
	expect_hm_error(&t, WB_EINPUT, "needs the terrain width and height");
	t = desc(p16, WB_HM_R32F, 40000, 4);
	expect_hm_error(&t, WB_EINPUT, "too large");
	t = desc(p16, WB_HM_R32F, 30000, 30000);
	expect_hm_error(&t, WB_EINPUT, "too large");
	free(big16);
	free(p16);
	free(p32);
}

static void test_hm_errors(void **state)
{
	(void)state;
	const int w = 9, h = 8;
	uint16_t px[9 * 8 * 4];
	for (int k = 0; k < w * h * 4; k++)
		px[k] = (uint16_t)(k * 31 % 256);
	char *ok = tpath("ok.png");
	write_png(ok, w, h, 16, PNG_COLOR_TYPE_GRAY, 0, px);

	/* Missing file. */
	char *miss = tpath("nope.png");
	struct wb_terrain_desc t = desc(miss, WB_HM_PNG, 0, 0);
	expect_hm_error(&t, WB_EINPUT, "No such file");
	/* Unreadable: a directory. */
	t = desc(TMP, WB_HM_PNG, 0, 0);
	expect_hm_error(&t, WB_EINPUT, "cannot read");
	/* Not a PNG. */
	char *txt = tpath("text.png");
	write_bytes(txt, "hello, this is not a png file", 29);
	t = desc(txt, WB_HM_PNG, 0, 0);
	expect_hm_error(&t, WB_EINPUT, "not a PNG file");
	write_bytes(txt, "\x89PN", 3);
	expect_hm_error(&t, WB_EINPUT, "not a PNG file");
	/* Truncated at several points: in IHDR, in IDAT, before IEND. */
	size_t n;
	unsigned char *b = slurp(ok, &n);
	char *cut = tpath("cut.png");
	size_t cuts[] = { 12, 30, n / 2, n - 6 };
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		write_bytes(cut, b, cuts[i]);
		t = desc(cut, WB_HM_PNG, 0, 0);
		expect_hm_error(&t, WB_EINPUT, "truncated PNG");
	}
	/* A flipped bit in the image data: corrupt (CRC), not a crash. */
	b[n / 2] ^= 0x10;
	write_bytes(cut, b, n);
	expect_hm_error(&t, WB_EINPUT, "corrupt PNG");
	free(b);
	/* Wrong colour types and bit depth. */
	char *col = tpath("colour.png");
	t = desc(col, WB_HM_PNG, 0, 0);
	write_png(col, w, h, 8, PNG_COLOR_TYPE_RGB, 0, px);
	expect_hm_error(&t, WB_EINPUT, "8-bit RGB (colour type 2)");
	write_png(col, w, h, 16, PNG_COLOR_TYPE_GRAY_ALPHA, 0, px);
	expect_hm_error(&t, WB_EINPUT, "16-bit greyscale+alpha (colour type 4)");
	write_png(col, w, h, 8, PNG_COLOR_TYPE_RGB_ALPHA, 0, px);
	expect_hm_error(&t, WB_EINPUT, "expected 8- or 16-bit greyscale");
	/* Size differing from the description. */
	t = desc(ok, WB_HM_PNG, 10, 8);
	expect_hm_error(&t, WB_EINPUT, "PNG is 9x8 but the terrain says 10x8");
	t = desc(ok, WB_HM_PNG, 0, 7);
	expect_hm_error(&t, WB_EINPUT, "PNG is 9x8 but the terrain says 0x7");
	/* Oversized dimensions (a header claiming 40000 columns). */
	uint16_t one = 7;
	char *wide = tpath("wide.png");
	write_png(wide, 1, 1, 8, PNG_COLOR_TYPE_GRAY, 0, &one);
	b = slurp(wide, &n);
	/* IHDR width at bytes 16..19; recompute the chunk CRC (12..28). */
	b[16] = 0; b[17] = 0; b[18] = 0x9c; b[19] = 0x40;
	uLong crc = crc32(0, b + 12, 17);
	b[29] = (unsigned char)(crc >> 24); b[30] = (unsigned char)(crc >> 16);
	b[31] = (unsigned char)(crc >> 8); b[32] = (unsigned char)crc;
	write_bytes(wide, b, n);
	free(b);
	t = desc(wide, WB_HM_PNG, 0, 0);
	expect_hm_error(&t, WB_EINPUT, "40000x1 PNG is too large");
	/* No file name at all. */
	struct wb_diags d;
	struct wb_heightmap hm;
	wb_diags_init(&d);
	t = desc(NULL, WB_HM_PNG, 0, 0);
	assert_int_equal(wb_heightmap_load(&t, &hm, &d), WB_EINPUT);
	assert_null(hm.z);
	wb_diags_release(&d);
	free(ok);
	free(miss);
	free(txt);
	free(cut);
	free(col);
	free(wide);
}

/* Decoding from memory gives the same result as loading the file. */
static void test_hm_decode_memory(void **state)
{
	(void)state;
	uint16_t px[4 * 3];
	for (int k = 0; k < 12; k++)
		px[k] = (uint16_t)(k * 5000);
	char *p = tpath("mem.png");
	write_png(p, 4, 3, 16, PNG_COLOR_TYPE_GRAY, 0, px);
	size_t n;
	unsigned char *b = slurp(p, &n);
	struct wb_terrain_desc t = desc(p, WB_HM_PNG, 0, 0);
	struct wb_heightmap a, c;
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(wb_heightmap_decode(b, n, &t, &a, &d), WB_OK);
	load_ok(&t, &c);
	assert_int_equal(a.nx, c.nx);
	assert_int_equal(a.ny, c.ny);
	assert_memory_equal(a.z, c.z, sizeof(float) * 12);
	assert_memory_equal(a.sha256, c.sha256, 32);
	wb_heightmap_free(&a);
	wb_heightmap_free(&c);
	/* Non-finite scale is rejected up front. */
	t.height_scale = NAN;
	assert_int_equal(wb_heightmap_decode(b, n, &t, &a, &d), WB_EINPUT);
	assert_null(a.z);
	free(b);
	free(p);
	wb_diags_release(&d);
}

/* The committed sample terrains (samples/NAME/terrain.png, made by mkterrain)
 * load and keep the properties the sample scenes rely on. */
static float hz(const struct wb_heightmap *hm, int x, int y)
{
	return hm->z[x + y * hm->nx];
}

static int load_sample(const char *name, struct wb_heightmap *hm)
{
	char path[128];
	snprintf(path, sizeof(path), "samples/%s/terrain.png", name);
	struct wb_terrain_desc t = desc(path, WB_HM_PNG, 256, 256);
	t.height_offset = 0;
	if (!file_exists(path))
		return 0;
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(wb_heightmap_load(&t, hm, &d), WB_OK);
	wb_diags_release(&d);
	assert_int_equal(hm->nx, 256);
	assert_int_equal(hm->ny, 256);
	return 1;
}

static void test_samples(void **state)
{
	(void)state;
	struct wb_heightmap hm;
	if (load_sample("river", &hm)) {
		/* Spring ~30 m, exit bed ~17.7 m, lake bed below the sill. */
		assert_float_equal(hz(&hm, 128, 20), 30, 1);
		assert_float_equal(hz(&hm, 128, 255), 17.7, 0.5);
		assert_true(hz(&hm, 128, 110) < hz(&hm, 128, 140) - 2);
		/* Straight lower course: bed never rises downstream. */
		for (int y = 162; y < 255; y++)
			assert_true(hz(&hm, 128, y + 1) <= hz(&hm, 128, y));
		/* The waterfall: ~8 m between rows 169 and 170. */
		assert_float_equal(hz(&hm, 128, 169) - hz(&hm, 128, 170), 8,
				   0.5);
		/* Valley walls well above the bed at the bridge. */
		assert_true(hz(&hm, 98, 215) > hz(&hm, 128, 215) + 20);
		assert_true(hz(&hm, 158, 215) > hz(&hm, 128, 215) + 20);
		wb_heightmap_free(&hm);
	}
	if (load_sample("coast", &hm)) {
		assert_true(hz(&hm, 0, 255) < 15);   /* sea floor, SW */
		assert_true(hz(&hm, 255, 0) > 45);   /* land, NE */
		assert_true(hz(&hm, 50, 80) < 20);   /* harbour basin */
		wb_heightmap_free(&hm);
	}
	if (load_sample("lake", &hm)) {
		assert_true(hz(&hm, 128, 128) < 15);  /* bottom */
		assert_true(hz(&hm, 154, 112) > 30);  /* island */
		for (int k = 0; k < 256; k++) {       /* closed rim */
			assert_true(hz(&hm, k, 0) > 40);
			assert_true(hz(&hm, k, 255) > 40);
			assert_true(hz(&hm, 0, k) > 40);
			assert_true(hz(&hm, 255, k) > 40);
		}
		wb_heightmap_free(&hm);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256_vectors),
		cmocka_unit_test(test_sha256_boundaries),
		cmocka_unit_test(test_path_join),
		cmocka_unit_test(test_mkdirs),
		cmocka_unit_test(test_atomic_abort_keeps_old),
		cmocka_unit_test(test_write_errors),
		cmocka_unit_test(test_atomic_not_regular),
		cmocka_unit_test(test_read_file),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_pfm_roundtrip_orientation),
		cmocka_unit_test(test_pfm_read_big_endian),
		cmocka_unit_test(test_pfm_errors),
		cmocka_unit_test(test_hm_png),
		cmocka_unit_test(test_hm_raw),
		cmocka_unit_test(test_hm_errors),
		cmocka_unit_test(test_hm_decode_memory),
		cmocka_unit_test(test_samples),
	};
	return cmocka_run_group_tests(tests, setup_tmp, NULL);
}
