/*
 * fileio.c - file-system services of util.h: directories, atomic output,
 * whole-file reads, path joining, thread count.
 *
 * Atomic output: a file is written to "<path>.tmp.<pid>" in the same
 * directory (so the final rename(2) stays within one file system and is
 * atomic), created exclusively (O_EXCL | O_NOFOLLOW: a file or symlink
 * planted at that name is never opened; the next name adds a counter),
 * flushed and fsync'ed, then renamed over the destination. A
 * reader, or a crash at any point, therefore sees either the old file or
 * the complete new one, never a half-written file. Abort removes the
 * temporary and leaves the destination untouched.
 *
 * Input files (scene, heightmap, packs, PFM) are read only when they are
 * regular files: a FIFO, device or directory is refused at once (opened
 * O_NONBLOCK so that a FIFO without a writer cannot block the open), and a
 * read never takes more than the size fstat gave, nor more than the
 * caller's cap, so /dev/zero or a growing file cannot grow memory.
 *
 * Errors name the file and give strerror(errno); the library never prints.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "util.h"

static char *str_dup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = malloc(n);
	if (p)
		memcpy(p, s, n);
	return p;
}

const char *wb_file_kind(unsigned int m)
{
	if (S_ISREG(m))
		return "a regular file";
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISFIFO(m))
		return "a FIFO (named pipe)";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISSOCK(m))
		return "a socket";
	return "not a regular file";
}

/* wb_fail for mkdir of p[0..n) that failed with errno e: a component in
 * the way is named with what it is. */
static enum wb_status mkdir_fail(struct wb_diags *d, const char *dir,
				 char *p, size_t n, int e, int whole)
{
	struct stat st;
	char c = p[n];
	p[n] = 0;
	int in_way = e == ENOTDIR && stat(p, &st) == 0 && !S_ISDIR(st.st_mode);
	enum wb_status r = in_way
		? wb_fail(d, WB_EIO, dir, "cannot create directory: '%s' is %s, not a directory",
			  p, wb_file_kind(st.st_mode))
		: whole ? wb_fail(d, WB_EIO, dir, "cannot create directory: %s", strerror(e))
		: wb_fail(d, WB_EIO, dir, "cannot create directory '%s': %s", p, strerror(e));
	p[n] = c;
	return r;
}

/* mkdir one component; an existing directory is fine. */
static int mkdir_one(const char *p)
{
	if (mkdir(p, 0777) == 0)
		return 0;
	int e = errno;
	struct stat st;
	if (e == EEXIST && stat(p, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	if (e == EEXIST)
		e = ENOTDIR;
	errno = e;
	return -1;
}

enum wb_status wb_mkdirs(const char *dir, struct wb_diags *d)
{
	if (!dir || !*dir)
		return WB_OK;
	char *p = str_dup(dir);
	if (!p)
		return wb_fail(d, WB_EIO, dir, "out of memory");
	size_t n = strlen(p);
	while (n > 1 && p[n - 1] == '/')
		p[--n] = 0;
	/* Create each prefix ending before a '/', then the whole path. */
	for (size_t i = 1; i < n; i++) {
		if (p[i] != '/' || p[i - 1] == '/')
			continue;
		p[i] = 0;
		int rc = mkdir_one(p);
		int e = errno;
		p[i] = '/';
		if (rc < 0) {
			enum wb_status st = mkdir_fail(d, dir, p, i, e, 0);
			free(p);
			return st;
		}
	}
	if (mkdir_one(p) < 0) {
		enum wb_status st = mkdir_fail(d, dir, p, n, errno, 1);
		free(p);
		return st;
	}
	free(p);
	return WB_OK;
}

enum wb_status wb_atomic_open(struct wb_atomic *a, const char *path,
			      struct wb_diags *d)
{
	memset(a, 0, sizeof(*a));
	/* Only a regular file is replaced. The rename at commit would put
	 * the file in place of a device, FIFO or socket node itself (as root:
	 * "-o /dev/null" made /dev/null a PNG), and cannot replace a
	 * directory. A symbolic link is replaced when it leads to a regular
	 * file or nowhere. */
	struct stat sb;
	if (!*path)
		return wb_fail(d, WB_EIO, NULL, "cannot write: empty file name");
	if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
		return wb_fail(d, WB_EIO, path,
			       "cannot write: '%s' is %s, not a regular file (left as it is)",
			       path, wb_file_kind(sb.st_mode));
	size_t n = strlen(path) + 48;
	a->path = str_dup(path);
	a->tmp = malloc(n);
	if (!a->path || !a->tmp) {
		free(a->path);
		free(a->tmp);
		memset(a, 0, sizeof(*a));
		return wb_fail(d, WB_EIO, path, "out of memory");
	}
	/* Created exclusively and never through a symlink: a name someone
	 * planted (a link to a file of theirs, or anything else) is skipped,
	 * never opened; the next try adds a counter. */
	int fd = -1, e = 0;
	for (unsigned k = 0; k < 100 && fd < 0; k++) {
		if (k == 0)
			snprintf(a->tmp, n, "%s.tmp.%ld", path, (long)getpid());
		else
			snprintf(a->tmp, n, "%s.tmp.%ld.%u", path,
				 (long)getpid(), k);
		fd = open(a->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			  O_CLOEXEC, 0666);
		e = errno;
		if (fd < 0 && e != EEXIST)
			break;
	}
	if (fd >= 0) {
		a->f = fdopen(fd, "wb");
		e = errno;
		if (!a->f) {
			close(fd);
			remove(a->tmp);
		}
	}
	if (!a->f) {
		enum wb_status st = wb_fail(d, WB_EIO, path,
			"cannot create temporary file '%s': %s", a->tmp,
			strerror(e));
		free(a->path);
		free(a->tmp);
		memset(a, 0, sizeof(*a));
		return st;
	}
	return WB_OK;
}

static void atomic_release(struct wb_atomic *a)
{
	free(a->path);
	free(a->tmp);
	memset(a, 0, sizeof(*a));
}

enum wb_status wb_atomic_commit(struct wb_atomic *a, struct wb_diags *d)
{
	if (!a->f) {
		enum wb_status st = wb_fail(d, WB_EIO, a->path,
			"internal error: commit of a file not open");
		if (a->tmp)
			remove(a->tmp);
		atomic_release(a);
		return st;
	}
	int e = 0;
	if (ferror(a->f))
		e = EIO;
	if (!e && fflush(a->f) != 0)
		e = errno;
	if (!e && fsync(fileno(a->f)) != 0)
		e = errno;
	if (fclose(a->f) != 0 && !e)
		e = errno;
	a->f = NULL;
	if (!e && rename(a->tmp, a->path) != 0)
		e = errno;
	if (e) {
		enum wb_status st = wb_fail(d, WB_EIO, a->path,
					    "cannot write: %s", strerror(e));
		remove(a->tmp);
		atomic_release(a);
		return st;
	}
	atomic_release(a);
	return WB_OK;
}

void wb_atomic_abort(struct wb_atomic *a)
{
	if (!a)
		return;
	if (a->f)
		fclose(a->f);
	if (a->tmp)
		remove(a->tmp);
	atomic_release(a);
}

enum wb_status wb_write_file_atomic(const char *path, const void *data,
				    size_t len, struct wb_diags *d)
{
	struct wb_atomic a;
	enum wb_status st = wb_atomic_open(&a, path, d);
	if (st != WB_OK)
		return st;
	if (len > 0 && fwrite(data, 1, len, a.f) != len) {
		int e = errno;
		wb_atomic_abort(&a);
		return wb_fail(d, WB_EIO, path, "cannot write: %s",
			       strerror(e ? e : EIO));
	}
	return wb_atomic_commit(&a, d);
}

enum wb_status wb_input_open(const char *path, int *fd, size_t *size,
			     struct wb_diags *d)
{
	*fd = -1;
	*size = 0;
	/* O_NONBLOCK: opening a FIFO must not wait for a writer; it is
	 * refused just below, and regular files ignore the flag. */
	int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (f < 0) {
		int e = errno;
		return wb_fail(d, WB_EINPUT, path, "cannot open: %s",
			       strerror(e));
	}
	struct stat st;
	if (fstat(f, &st) != 0) {
		int e = errno;
		close(f);
		return wb_fail(d, WB_EINPUT, path, "cannot read: %s",
			       strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(f);
		return wb_fail(d, WB_EINPUT, path,
			       "cannot read: expected a regular file, found %s",
			       wb_file_kind(st.st_mode));
	}
	int fl = fcntl(f, F_GETFL);
	if (fl >= 0)
		fcntl(f, F_SETFL, fl & ~O_NONBLOCK);
	*fd = f;
	*size = st.st_size > 0 ? (size_t)st.st_size : 0;
	if (st.st_size > 0 && (unsigned long long)st.st_size >= SIZE_MAX / 2)
		*size = SIZE_MAX / 2;
	return WB_OK;
}

enum wb_status wb_input_read(int fd, const char *path, size_t size,
			     size_t max, const char *what,
			     unsigned char **data, size_t *len,
			     struct wb_diags *d)
{
	*data = NULL;
	*len = 0;
	if (size > max)
		return wb_fail(d, WB_EINPUT, path,
			       "too large: %zu bytes, more than the %zu-byte "
			       "limit for %s", size, max, what);
	unsigned char *buf = malloc(size + 1);
	if (!buf)
		return wb_fail(d, WB_EIO, path,
			       "out of memory reading %zu bytes", size);
	/* Read what fstat promised; a file that shrank gives less, one that
	 * grows while we read is an error rather than an unbounded read. */
	size_t n = 0;
	for (;;) {
		unsigned char extra;
		int over = n == size;
		ssize_t got = over ? read(fd, &extra, 1) :
				     read(fd, buf + n, size - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			int e = errno;
			free(buf);
			return wb_fail(d, WB_EINPUT, path, "cannot read: %s",
				       strerror(e));
		}
		if (got == 0)
			break;
		if (over) {
			free(buf);
			return wb_fail(d, WB_EINPUT, path,
				       "cannot read: the file grew while it "
				       "was read (more than %zu bytes)", size);
		}
		n += (size_t)got;
	}
	buf[n] = 0;
	*data = buf;
	*len = n;
	return WB_OK;
}

enum wb_status wb_read_file_max(const char *path, size_t max,
				const char *what, unsigned char **data,
				size_t *len, struct wb_diags *d)
{
	int fd;
	size_t size;
	*data = NULL;
	*len = 0;
	enum wb_status st = wb_input_open(path, &fd, &size, d);
	if (st != WB_OK)
		return st;
	st = wb_input_read(fd, path, size, max, what, data, len, d);
	close(fd);
	return st;
}

enum wb_status wb_read_file(const char *path, unsigned char **data,
			    size_t *len, struct wb_diags *d)
{
	return wb_read_file_max(path, SIZE_MAX / 2, "a file", data, len, d);
}

char *wb_path_join(const char *dir, const char *name)
{
	if (!name)
		return NULL;
	if (!dir || !*dir || name[0] == '/')
		return str_dup(name);
	size_t dl = strlen(dir), nl = strlen(name);
	int slash = dir[dl - 1] != '/';
	char *p = malloc(dl + (size_t)slash + nl + 1);
	if (!p)
		return NULL;
	memcpy(p, dir, dl);
	if (slash)
		p[dl] = '/';
	memcpy(p + dl + slash, name, nl + 1);
	return p;
}

int wb_threads(int n)
{
	if (n > 0)
		return n;
#ifdef _OPENMP
	int p = omp_get_num_procs();
	return p > 0 ? p : 1;
#else
	return 1;
#endif
}
