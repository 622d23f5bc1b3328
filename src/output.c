/*
 * output.c - the output directory replaced as a set (wb_outdir_*), the
 * judgement of a solver report (wb_output_assess) and wb_output_write():
 * from a solved state to OUTDIR/<name>.wtp and OUTDIR/manifest.json
 * (output.h).
 *
 * Writing: LOD0 maps (maps.c) -> pyramid and pages (pages.c) -> pack
 * (pack_write, pack.c) -> SHA-256 of the pack as written -> optional
 * previews of the finest LOD no larger than 2048 pixels on a side
 * (preview/) and per-page PNGs (pages/) -> manifest (manifest.c), all into
 * the staging directory, which then replaces OUTDIR whole. Nothing here
 * depends on the thread count except speed.
 *
 * The swap is renameat2(RENAME_EXCHANGE) through syscall(2) (so no glibc
 * wrapper is needed); on a file system that refuses it (EINVAL, ENOSYS,
 * ENOTSUP) two renames do the job: OUTDIR to .N.wbake-old.*, staging to
 * OUTDIR. Between those two renames OUTDIR is missing for an instant; a
 * bake killed right there leaves the complete old output under the -old
 * name, and the next bake puts it back before anything else.
 */
#define _GNU_SOURCE /* flock, syscall, renameat2's flags */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "maps.h"
#include "output.h"
#include "pack.h"
#include "preview.h"
#include "util.h"
#include "warm.h"

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static enum wb_status join(char *dst, size_t n, const char *dir,
			   const char *name, struct wb_diags *d)
{
	char *p = wb_path_join(dir, name);
	if (!p)
		return wb_fail(d, WB_EIO, dir, "out of memory");
	size_t len = strlen(p);
	if (len >= n) {
		free(p);
		return wb_fail(d, WB_EIO, dir, "output path too long");
	}
	memcpy(dst, p, len + 1);
	free(p);
	return WB_OK;
}

/* ---- the output directory, replaced as a set --------------------------- */

#define TREE_MAX_DEPTH 32

static char *str_cat3(const char *a, const char *b, const char *c)
{
	size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
	char *p = malloc(la + lb + lc + 1);
	if (!p)
		return NULL;
	memcpy(p, a, la);
	memcpy(p + la, b, lb);
	memcpy(p + la + lb, c, lc + 1);
	return p;
}

/* The process umask, read without changing it (umask(2) would, and other
 * threads may create files meanwhile); 022 when /proc is not there. */
static mode_t current_umask(void)
{
	mode_t m = 022;
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	if (!f)
		return m;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "Umask:", 6)) {
			m = (mode_t)strtoul(line + 6, NULL, 8) & 0777;
			break;
		}
	fclose(f);
	return m;
}

/* Remove dfd/name and everything below it without following a symlink:
 * links are unlinked, never entered. 0, or -1 with errno. */
static int rm_tree_at(int dfd, const char *name, int depth)
{
	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	if (depth > TREE_MAX_DEPTH) {
		errno = ELOOP;
		return -1;
	}
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			O_CLOEXEC);
	if (fd < 0)
		return -1;
	DIR *dir = fdopendir(fd);
	if (!dir) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	int rc = 0, e = 0;
	struct dirent *ent;
	/* entries are removed while listing: read again until a pass finds
	 * nothing, since POSIX leaves readdir after an unlink unspecified */
	for (int removed = 1; removed && !rc;) {
		removed = 0;
		rewinddir(dir);
		while ((ent = readdir(dir))) {
			if (!strcmp(ent->d_name, ".") ||
			    !strcmp(ent->d_name, ".."))
				continue;
			if (rm_tree_at(dirfd(dir), ent->d_name, depth + 1)) {
				rc = -1;
				e = errno;
				break;
			}
			removed = 1;
		}
	}
	closedir(dir);
	if (rc) {
		errno = e;
		return -1;
	}
	return unlinkat(dfd, name, AT_REMOVEDIR);
}

/* fsync every directory of the tree dfd/name (files were fsync'ed when
 * written: wb_atomic_commit), then the tree's root. */
static int fsync_dirs_at(int dfd, const char *name, int depth)
{
	if (depth > TREE_MAX_DEPTH) {
		errno = ELOOP;
		return -1;
	}
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			O_CLOEXEC);
	if (fd < 0)
		return -1;
	int dup_fd = dup(fd);
	DIR *dir = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!dir) {
		int e = errno;
		if (dup_fd >= 0)
			close(dup_fd);
		close(fd);
		errno = e;
		return -1;
	}
	int rc = 0;
	struct dirent *ent;
	while (!rc && (ent = readdir(dir))) {
		struct stat st;
		if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, ".."))
			continue;
		if (fstatat(fd, ent->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(st.st_mode))
			rc = fsync_dirs_at(fd, ent->d_name, depth + 1);
	}
	int e = errno;
	closedir(dir);
	if (!rc && fsync(fd) != 0) {
		rc = -1;
		e = errno;
	}
	close(fd);
	errno = e;
	return rc;
}

static int starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static int has_suffix(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);
	return ls > lx && !strcmp(s + ls - lx, suffix);
}

/* Take the lock P/.N.wbake-lock: opened without following a symlink, a
 * regular file of ours with one link (so no one else's file is ever
 * truncated through a planted hard link), flock'ed without waiting. The
 * file is removed when the bake ends, so after locking, the name must
 * still be this file (else a bake that just finished removed it: retry). */
static enum wb_status take_lock(struct wb_outdir *od, struct wb_diags *d)
{
	char *lpath = wb_path_join(od->parent, od->lockname);
	enum wb_status s = WB_OK;
	if (!lpath)
		return wb_fail(d, WB_EIO, od->outdir, "out of memory");
	for (int tries = 0; tries < 16; tries++) {
		int fd = openat(od->parent_fd, od->lockname,
				O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (fd < 0) {
			int e = errno;
			s = wb_fail(d, WB_EIO, od->outdir,
				    "cannot open the lock file '%s': %s%s", lpath,
				    strerror(e), e == ELOOP ?
				    " (it is a symbolic link; wbake does not follow it)" : "");
			goto out;
		}
		struct stat st, st2;
		if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
		    st.st_uid != geteuid() || st.st_nlink != 1) {
			close(fd);
			s = wb_fail(d, WB_EIO, od->outdir,
				    "'%s' is not a lock file of this user's wbake "
				    "(not a regular file with one link owned by "
				    "you); remove it if no bake is running", lpath);
			goto out;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
			int e = errno;
			char buf[32] = "";
			ssize_t n = e == EWOULDBLOCK ? pread(fd, buf, sizeof buf - 1, 0) : -1;
			close(fd);
			if (e != EWOULDBLOCK) {
				s = wb_fail(d, WB_EIO, od->outdir,
					    "cannot lock '%s': %s", lpath,
					    strerror(e));
				goto out;
			}
			long pid = n > 0 ? strtol(buf, NULL, 10) : 0;
			if (pid > 0)
				s = wb_fail(d, WB_EIO, od->outdir,
					    "another wbake (pid %ld) is writing this output directory (lock '%s'); wait for it to finish or stop it",
					    pid, lpath);
			else
				s = wb_fail(d, WB_EIO, od->outdir,
					    "another wbake (pid unknown) is writing this output directory (lock '%s'); wait for it to finish or stop it",
					    lpath);
			goto out;
		}
		if (fstatat(od->parent_fd, od->lockname, &st2,
			    AT_SYMLINK_NOFOLLOW) != 0 || st2.st_ino != st.st_ino ||
		    st2.st_dev != st.st_dev) {
			close(fd);
			continue;
		}
		char pid[32];
		int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
		if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
			int e = errno;
			unlinkat(od->parent_fd, od->lockname, 0);
			close(fd);
			s = wb_fail(d, WB_EIO, od->outdir, "cannot write the lock file '%s': %s",
				    lpath, strerror(e));
			goto out;
		}
		od->lock_fd = fd;
		goto out;
	}
	s = wb_fail(d, WB_EIO, od->outdir,
		    "cannot take the lock '%s': it keeps being replaced", lpath);
out:
	free(lpath);
	return s;
}

/* Holding the lock: no other bake writes this OUTDIR, so every staging
 * directory left beside it belongs to a bake that is gone. An -old tree
 * goes back to OUTDIR's name when OUTDIR is missing (a fallback swap was
 * cut between its two renames). Only directories of ours are touched. */
static void clean_leftovers(struct wb_outdir *od, struct wb_diags *d)
{
	char *ptmp = str_cat3(".", od->name, ".wbake-tmp.");
	char *pold = str_cat3(".", od->name, ".wbake-old.");
	int fd = openat(od->parent_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	char **names = NULL;
	size_t n = 0, cap = 0;
	if (!ptmp || !pold || !dir) {
		if (fd >= 0 && !dir)
			close(fd);
		goto out;
	}
	struct dirent *ent;
	while ((ent = readdir(dir))) {
		struct stat st;
		if (!starts_with(ent->d_name, ptmp) &&
		    !starts_with(ent->d_name, pold))
			continue;
		if (fstatat(od->parent_fd, ent->d_name, &st,
			    AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
		    st.st_uid != geteuid())
			continue;
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 8;
			char **nn = realloc(names, nc * sizeof *nn);
			if (!nn)
				break;
			names = nn;
			cap = nc;
		}
		if (!(names[n] = malloc(strlen(ent->d_name) + 1)))
			break;
		strcpy(names[n++], ent->d_name);
	}
	for (size_t k = 0; k < n; k++) {
		struct stat st;
		if (starts_with(names[k], pold) &&
		    fstatat(od->parent_fd, od->name, &st, AT_SYMLINK_NOFOLLOW) != 0 &&
		    errno == ENOENT &&
		    renameat(od->parent_fd, names[k], od->parent_fd, od->name) == 0) {
			wb_diag_add(d, WB_SEV_WARNING, od->outdir, NULL, 0, 0,
				    "restored the previous output from '%s', left by a bake stopped while it replaced the directory",
				    names[k]);
			continue;
		}
		if (rm_tree_at(od->parent_fd, names[k], 0) != 0) {
			int e = errno;
			wb_diag_add(d, WB_SEV_WARNING, od->outdir, NULL, 0, 0,
				    "cannot remove '%s/%s', left by an earlier bake: %s",
				    od->parent, names[k], strerror(e));
		}
	}
out:
	if (dir)
		closedir(dir);
	for (size_t k = 0; k < n; k++)
		free(names[k]);
	free(names);
	free(ptmp);
	free(pold);
}

/* What an earlier wbake may have left in OUTDIR; anything else is the
 * user's, and replacing the directory would delete it. */
static int owned_entry(int dfd, const char *name)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return 1; /* gone meanwhile */
	if (strstr(name, ".tmp."))
		return 1; /* temporaries of wbake before 0.2 */
	if (S_ISREG(st.st_mode))
		return !strcmp(name, "manifest.json") || has_suffix(name, ".wtp") ||
		       !strcmp(name, "report.html") || !strcmp(name, WB_STATE_FILE);
	if (S_ISDIR(st.st_mode))
		return !strcmp(name, "preview") || !strcmp(name, "fields") ||
		       !strcmp(name, "pages");
	return 0;
}

static enum wb_status check_existing(struct wb_outdir *od, struct wb_diags *d)
{
	int fd = openat(od->parent_fd, od->name, O_RDONLY | O_DIRECTORY |
			O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		return wb_fail(d, WB_EIO, od->outdir, "cannot open: %s",
			       strerror(e));
	}
	/* the old tree is deleted after the swap: that needs write access */
	if (faccessat(od->parent_fd, od->name, W_OK | X_OK, AT_EACCESS) != 0) {
		int e = errno;
		close(fd);
		return wb_fail(d, WB_EIO, od->outdir,
			       "cannot replace the output directory: %s",
			       strerror(e));
	}
	DIR *dir = fdopendir(fd);
	if (!dir) {
		int e = errno;
		close(fd);
		return wb_fail(d, WB_EIO, od->outdir, "cannot read: %s",
			       strerror(e));
	}
	enum wb_status s = WB_OK;
	struct dirent *ent;
	while ((ent = readdir(dir))) {
		const char *nm = ent->d_name;
		if (!strcmp(nm, ".") || !strcmp(nm, ".."))
			continue;
		if (!owned_entry(dirfd(dir), nm)) {
			s = wb_fail(d, WB_EIO, od->outdir,
				    "the output directory holds '%s', which wbake did not write; wbake replaces the whole directory, so give -o a new or empty directory or an earlier output of wbake",
				    nm);
			break;
		}
		struct stat st;
		if (fstatat(dirfd(dir), nm, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(st.st_mode) &&
		    faccessat(dirfd(dir), nm, W_OK | X_OK, AT_EACCESS) != 0) {
			int e = errno;
			s = wb_fail(d, WB_EIO, od->outdir,
				    "cannot replace the output directory: '%s' inside it: %s",
				    nm, strerror(e));
			break;
		}
	}
	closedir(dir);
	return s;
}

static void outdir_release(struct wb_outdir *od)
{
	if (od->lock_fd >= 0) {
		/* still holding the lock: removing the name is safe */
		unlinkat(od->parent_fd, od->lockname, 0);
		close(od->lock_fd);
	}
	if (od->parent_fd >= 0)
		close(od->parent_fd);
	free(od->outdir);
	free(od->parent);
	free(od->name);
	free(od->staging);
	free(od->lockname);
	memset(od, 0, sizeof *od);
	od->parent_fd = od->lock_fd = -1;
}

enum wb_status wb_outdir_open(struct wb_outdir *od, const char *outdir,
			      struct wb_diags *d)
{
	memset(od, 0, sizeof *od);
	od->parent_fd = od->lock_fd = -1;
	if (!outdir || !*outdir)
		return wb_fail(d, WB_EUSAGE, NULL,
			       "no output directory: -o needs a directory name");
	enum wb_status s = WB_OK;
	char *p = malloc(strlen(outdir) + 1), *full = NULL;
	od->outdir = malloc(strlen(outdir) + 1);
	if (!p || !od->outdir) {
		s = wb_fail(d, WB_EIO, outdir, "out of memory");
		goto fail;
	}
	strcpy(p, outdir);
	strcpy(od->outdir, outdir);
	size_t n = strlen(p);
	while (n > 1 && p[n - 1] == '/')
		p[--n] = 0;

	/* resolve: an existing OUTDIR (or a symlink to one) by realpath, a
	 * new one by its parent's, created when missing */
	struct stat st;
	if (stat(p, &st) == 0) {
		if (!S_ISDIR(st.st_mode)) {
			s = wb_fail(d, WB_EIO, outdir,
				    "cannot create directory: '%s' is %s, not a directory",
				    outdir, wb_file_kind(st.st_mode));
			goto fail;
		}
		full = realpath(p, NULL);
	} else if (errno == ENOENT || errno == ENOTDIR) {
		/* ENOTDIR: a file on the way, which wb_mkdirs names */
		char *slash = strrchr(p, '/');
		const char *base = slash ? slash + 1 : p;
		if (!strcmp(base, ".") || !strcmp(base, "..")) {
			s = wb_fail(d, WB_EIO, outdir, "cannot create directory: %s",
				    strerror(ENOENT));
			goto fail;
		}
		char *dir = slash ? malloc((size_t)(slash - p) + 2) : NULL;
		if (slash && !dir) {
			s = wb_fail(d, WB_EIO, outdir, "out of memory");
			goto fail;
		}
		if (dir) {
			size_t dl = slash == p ? 1 : (size_t)(slash - p);
			memcpy(dir, p, dl);
			dir[dl] = 0;
			s = wb_mkdirs(dir, d);
		}
		char *rp = s == WB_OK ? realpath(dir ? dir : ".", NULL) : NULL;
		int e = errno;
		free(dir);
		if (s != WB_OK)
			goto fail;
		if (!rp) {
			s = wb_fail(d, WB_EIO, outdir,
				    "cannot resolve the parent directory: %s",
				    strerror(e));
			goto fail;
		}
		full = str_cat3(rp, strcmp(rp, "/") ? "/" : "", base);
		free(rp);
	} else {
		int e = errno;
		s = wb_fail(d, WB_EIO, outdir, "cannot use as output directory: %s",
			    strerror(e));
		goto fail;
	}
	if (!full) {
		int e = errno;
		s = wb_fail(d, WB_EIO, outdir, "cannot resolve: %s", strerror(e));
		goto fail;
	}
	char *last = strrchr(full, '/');
	if (!last || !last[1]) {
		s = wb_fail(d, WB_EIO, outdir,
			    "cannot replace the root directory; name a directory below it");
		goto fail;
	}
	od->name = malloc(strlen(last + 1) + 1);
	od->parent = malloc((size_t)(last - full) + 2);
	if (!od->name || !od->parent) {
		s = wb_fail(d, WB_EIO, outdir, "out of memory");
		goto fail;
	}
	strcpy(od->name, last + 1);
	size_t pl = last == full ? 1 : (size_t)(last - full);
	memcpy(od->parent, full, pl);
	od->parent[pl] = 0;
	od->lockname = str_cat3(".", od->name, ".wbake-lock");
	if (!od->lockname) {
		s = wb_fail(d, WB_EIO, outdir, "out of memory");
		goto fail;
	}
	od->parent_fd = open(od->parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (od->parent_fd < 0) {
		int e = errno;
		s = wb_fail(d, WB_EIO, outdir, "cannot open the parent directory '%s': %s",
			    od->parent, strerror(e));
		goto fail;
	}
	s = take_lock(od, d);
	if (s != WB_OK)
		goto fail;
	clean_leftovers(od, d);

	if (fstatat(od->parent_fd, od->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		struct stat pst;
		if (fstat(od->parent_fd, &pst) == 0 && pst.st_dev != st.st_dev) {
			s = wb_fail(d, WB_EIO, outdir,
				    "is a mount point, and wbake replaces the whole output directory: give -o a directory inside it");
			goto fail;
		}
		od->existed = 1;
		od->mode = st.st_mode & 07777;
		s = check_existing(od, d);
		if (s != WB_OK)
			goto fail;
	} else if (errno == ENOENT) {
		od->mode = 0777 & ~current_umask();
	} else {
		int e = errno;
		s = wb_fail(d, WB_EIO, outdir, "cannot use as output directory: %s",
			    strerror(e));
		goto fail;
	}

	char *tmpl = str_cat3(od->parent, strcmp(od->parent, "/") ? "/." : ".",
			      od->name);
	od->staging = tmpl ? str_cat3(tmpl, ".wbake-tmp.", "XXXXXX") : NULL;
	free(tmpl);
	if (!od->staging) {
		s = wb_fail(d, WB_EIO, outdir, "out of memory");
		goto fail;
	}
	if (!mkdtemp(od->staging)) {
		int e = errno;
		s = wb_fail(d, WB_EIO, outdir,
			    "cannot create a staging directory in '%s': %s",
			    od->parent, strerror(e));
		goto fail;
	}
	od->held = 1;
	free(p);
	free(full);
	return WB_OK;
fail:
	free(p);
	free(full);
	outdir_release(od);
	return s;
}

void wb_outdir_abort(struct wb_outdir *od)
{
	if (!od)
		return;
	if (od->held && od->staging) {
		const char *base = strrchr(od->staging, '/');
		rm_tree_at(od->parent_fd, base ? base + 1 : od->staging, 0);
	}
	if (od->outdir)
		outdir_release(od);
}

enum wb_status wb_outdir_commit(struct wb_outdir *od, struct wb_diags *d)
{
	if (!od || !od->held)
		return wb_fail(d, WB_EIO, od ? od->outdir : NULL,
			       "internal error: commit of an output directory not claimed");
	const char *stage = strrchr(od->staging, '/') + 1;
	const int pfd = od->parent_fd;
	enum wb_status s = WB_OK;
	char *oldname = NULL;
	if (fsync_dirs_at(pfd, stage, 0) != 0 ||
	    fchmodat(pfd, stage, od->mode, 0) != 0) {
		int e = errno;
		s = wb_fail(d, WB_EIO, od->outdir, "cannot write: %s",
			    strerror(e));
		goto fail;
	}
	struct stat st;
	int exists = fstatat(pfd, od->name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	const char *gone = stage; /* where the old tree ends up */
	if (!exists) {
		if (renameat(pfd, stage, pfd, od->name) != 0) {
			int e = errno;
			s = wb_fail(d, WB_EIO, od->outdir,
				    "cannot move the new output into place: %s",
				    strerror(e));
			goto fail;
		}
		gone = NULL;
	} else {
		long rc = -1;
		errno = ENOSYS;
#ifdef SYS_renameat2
		if (!od->no_exchange)
			rc = syscall(SYS_renameat2, pfd, stage, pfd, od->name,
				     (unsigned)RENAME_EXCHANGE);
#endif
		int e = errno;
		if (rc != 0 && (e == EINVAL || e == ENOSYS || e == ENOTSUP)) {
			/* no atomic exchange here: two renames */
			oldname = str_cat3(".", od->name, ".wbake-old.");
			char *on = oldname ? str_cat3(oldname, stage + strlen(stage) - 6, "") : NULL;
			free(oldname);
			oldname = on;
			if (!oldname) {
				s = wb_fail(d, WB_EIO, od->outdir, "out of memory");
				goto fail;
			}
			if (renameat(pfd, od->name, pfd, oldname) != 0) {
				e = errno;
				s = wb_fail(d, WB_EIO, od->outdir,
					    "cannot move the old output aside: %s",
					    strerror(e));
				goto fail;
			}
			if (renameat(pfd, stage, pfd, od->name) != 0) {
				e = errno;
				renameat(pfd, oldname, pfd, od->name);
				s = wb_fail(d, WB_EIO, od->outdir,
					    "cannot move the new output into place: %s",
					    strerror(e));
				goto fail;
			}
			gone = oldname;
		} else if (rc != 0) {
			s = wb_fail(d, WB_EIO, od->outdir,
				    "cannot swap the new output into place: %s",
				    strerror(e));
			goto fail;
		}
	}
	od->held = 0; /* the staging name no longer holds the new output */
	if (fsync(pfd) != 0) {
		int e = errno;
		wb_diag_add(d, WB_SEV_WARNING, od->outdir, NULL, 0, 0,
			    "cannot sync the parent directory: %s", strerror(e));
	}
	if (gone && rm_tree_at(pfd, gone, 0) != 0) {
		int e = errno;
		wb_diag_add(d, WB_SEV_WARNING, od->outdir, NULL, 0, 0,
			    "the new output is in place, but the old one could not be removed from '%s/%s': %s (the next bake retries)",
			    od->parent, gone, strerror(e));
	}
	free(oldname);
	outdir_release(od);
	return WB_OK;
fail:
	free(oldname);
	wb_outdir_abort(od);
	return s;
}

/* Previews of LOD0 over the terrain (preview.c pools large maps itself,
 * keeping thin water visible). */
static enum wb_status write_previews(const struct wb_maps *lod0,
				     const struct wb_scene *sc,
				     const struct wb_raster *r,
				     const char *outdir, struct wb_diags *d)
{
	struct preview_in pi = { 0 };
	pi.m = lod0;
	pi.terrain = r->nx == lod0->nx && r->ny == lod0->ny ? r->z : NULL;
	pi.scene = sc->name;
	pi.materials = sc->materials;
	pi.n_materials = sc->n_materials;
	pi.distance_max = sc->output.distance_max;
	char *dir = wb_path_join(outdir, "preview");
	enum wb_status s = dir ? preview_write(&pi, dir, d)
			       : wb_fail(d, WB_EIO, outdir, "out of memory");
	free(dir);
	return s;
}

/* ---- how the bake ended ------------------------------------------------ */

/* Where the limiter holds the flow at the end: wet cells (deeper than ten
 * dry depths: films do not count) flowing at Froude >= 0.99, the LBM's
 * Froude limit being 1. Serial, in cell order: deterministic. */
/* The box of the cells a scan picked (cell indices), in metres: x0, x1,
 * y0, y1 as the manifest's *_box_m (clamp_where, steep_where). */
struct cell_box {
	int x0, y0, x1, y1;
};

static void box_start(struct cell_box *b)
{
	b->x0 = b->y0 = INT_MAX;
	b->x1 = b->y1 = -1;
}

static void box_add(struct cell_box *b, int i, int j)
{
	b->x0 = i < b->x0 ? i : b->x0;
	b->x1 = i > b->x1 ? i : b->x1;
	b->y0 = j < b->y0 ? j : b->y0;
	b->y1 = j > b->y1 ? j : b->y1;
}

static void box_metres(const struct cell_box *b, double dx, double *m)
{
	m[0] = b->x0 * dx;
	m[1] = (b->x1 + 1) * dx;
	m[2] = b->y0 * dx;
	m[3] = (b->y1 + 1) * dx;
}

static void clamp_where(const struct wb_scene *sc, const struct wb_state *st,
			struct wb_assess *a)
{
	double hmin = 10 * (sc->sim.dry_depth > 0 ? sc->sim.dry_depth : 1e-3);
	struct cell_box b;
	box_start(&b);
	for (int j = 0; j < st->ny; j++)
		for (int i = 0; i < st->nx; i++) {
			size_t k = (size_t)j * st->nx + i;
			double h = st->h[k];
			if (!(h > hmin) || (st->fv && st->fv[k]))
				continue; /* an FV cell: no limiter holds it */
			double fr = hypot(st->u[k], st->v[k]) / sqrt(WB_GRAVITY * h);
			if (!(fr >= 0.99))
				continue;
			a->limit_cells++;
			if (fr > a->limit_fr) {
				a->limit_fr = fr;
				a->limit_x = (i + 0.5) * st->dx;
				a->limit_y = (j + 0.5) * st->dx;
			}
			box_add(&b, i, j);
		}
	if (a->limit_cells)
		box_metres(&b, st->dx, a->limit_box);
}

/* The LBM's moving water on cells whose bed falls to a wet 4-neighbour by
 * more than the water's depth (and by at most WB_CLIFF_DX dx), outside
 * the hybrid's FV cells (their reconstruction is linear through the
 * cells, exact on a uniform slope): there the LBM's bed transfer
 * saturates at the depth (src/lbm.h lbm_bi), and shallow flow runs
 * too slow and stands too deep. */
static void steep_where(const struct wb_scene *sc, const struct wb_raster *r,
			const struct wb_state *st, struct wb_assess *a)
{
	const double hw = sc->output.min_depth > 0 ? sc->output.min_depth :
			  sc->sim.dry_depth;
	const double hd = sc->sim.dry_depth > 0 ? sc->sim.dry_depth : 1e-3;
	const double cliff = WB_CLIFF_DX * st->dx;
	const int nx = st->nx, ny = st->ny;
	struct cell_box b;
	box_start(&b);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = (size_t)j * nx + i;
			double h = st->h[k];
			if (!(h >= hw) || !(hypot(st->u[k], st->v[k]) >= 0.05))
				continue;
			a->water_cells++;
			if (st->fv && st->fv[k])
				continue;
			double drop = 0;
			static const int di[4] = { 1, -1, 0, 0 },
					 dj[4] = { 0, 0, 1, -1 };
			for (int q = 0; q < 4; q++) {
				int ii = i + di[q], jj = j + dj[q];
				if (ii < 0 || jj < 0 || ii >= nx || jj >= ny)
					continue;
				size_t m = (size_t)jj * nx + ii;
				double dz = (double)r->z[k] - r->z[m];
				if (st->h[m] > hd && dz <= cliff && dz > drop)
					drop = dz;
			}
			if (!(drop > h))
				continue;
			a->steep_cells++;
			box_add(&b, i, j);
		}
	if (a->steep_cells)
		box_metres(&b, st->dx, a->steep_box);
}

void wb_output_assess(const struct wb_scene *sc, const struct wb_raster *r,
		      const struct wb_solve_report *rep,
		      const struct wb_state *st, long fixed_steps,
		      struct wb_assess *a, struct wb_diags *d)
{
	memset(a, 0, sizeof *a);
	a->tolerance = sc->sim.tolerance > 0 ? sc->sim.tolerance : 1e-4;
	a->residual = rep ? rep->residual : NAN;
	if (!rep)
		return;
	a->stop = rep->converged ? WB_STOP_STEADY
		: fixed_steps > 0 ? WB_STOP_STEPS : WB_STOP_MAX_STEPS;
	a->steady = a->stop == WB_STOP_STEADY;
	a->storage_m3 = rep->vol_final - rep->vol_initial;
	double area = (double)r->nx * r->ny * r->dx * r->dx;
	a->mean_rise_m = area > 0 ? a->storage_m3 / area : 0;
	/* a basin that fills: water comes in, (almost) none leaves, and it
	 * stays on the grid (by the mass balance the stored water rises by
	 * about the inflow) */
	a->filling = rep->vol_in > 0 && rep->vol_out <= 0.01 * rep->vol_in &&
		     a->storage_m3 > 0.5 * rep->vol_in;
	double cs = (double)r->nx * r->ny * (double)rep->steps;
	a->clamped_share = cs > 0 ? (double)rep->clamped / cs : 0;
	/* the Froude limit is the LBM's; the SWE's clamp is a bound on the
	   face velocity (swe.c clamp_face), which supercritical flow does
	   not reach */
	const int swe = sc->sim.solver == WB_SOLVER_SWE;
	if (rep->clamped > 0 && st && st->h && st->u && st->v && !swe)
		clamp_where(sc, st, a);
	if (!swe && st && st->h && st->u && st->v && r && r->z &&
	    st->nx == r->nx && st->ny == r->ny)
		steep_where(sc, r, st, a);
	if (!d)
		return;
	if (a->water_cells > 0 &&
	    (double)a->steep_cells > WB_STEEP_SHARE * (double)a->water_cells)
		wb_diag_add(d, WB_SEV_WARNING, sc->file, NULL, 0, 0,
			    "%ld of the %ld cells of moving water (%.3g %%) flow over a bed that falls more than their depth over one cell, within x %.6g..%.6g m, y %.6g..%.6g m: the LBM drives such water by its depth, not by the slope, so it stands too deep and runs too slow there (a 15 cm stream on a 2 %% slope at 30 m cells: 30 %% too deep); the SWE solver (--solver swe) resolves it, or use smaller cells",
			    a->steep_cells, a->water_cells,
			    100.0 * a->steep_cells / a->water_cells,
			    a->steep_box[0], a->steep_box[1], a->steep_box[2],
			    a->steep_box[3]);
	const char *file = sc->file;
	char res[48];
	if (isfinite(a->residual))
		snprintf(res, sizeof res, "%.3g", a->residual);
	else
		snprintf(res, sizeof res, "not measured");
	char moving[320] = "";
	if (rep->unsteady_tile > 0) {
		const double dx = r->dx;
		const int *b = rep->unsteady_box, *m = rep->unsteady_most;
		snprintf(moving, sizeof moving,
			 "; %.3g %% of the last window's change of the mean flow (depth-weighted, as the residual) is within x %.6g..%.6g m, y %.6g..%.6g m, %.3g %% in x %.6g..%.6g m, y %.6g..%.6g m",
			 100.0 * rep->unsteady_box_share, b[0] * dx, b[1] * dx,
			 b[2] * dx, b[3] * dx, 100.0 * rep->unsteady_most_share,
			 m[0] * dx, m[1] * dx, m[2] * dx, m[3] * dx);
	}
	if (a->stop == WB_STOP_MAX_STEPS)
		wb_diag_add(d, WB_SEV_WARNING, file, "simulation.max_steps", 0, 0,
			    "not steady after %ld steps: residual %s, tolerance %.3g%s; raise simulation.max_steps or the tolerance, or look for water that cannot settle",
			    rep->steps, res, a->tolerance, moving);
	if (a->filling) {
		int outlets = 0;
		for (int k = 0; k < 4; k++)
			outlets += sc->edges[k].kind == WB_EDGE_OPEN ||
				   sc->edges[k].kind == WB_EDGE_LEVEL;
		for (int k = 0; k < sc->n_sources; k++)
			outlets += sc->sources[k].kind == WB_SRC_SINK ||
				   sc->sources[k].kind == WB_SRC_OCEAN;
		wb_diag_add(d, fixed_steps > 0 ? WB_SEV_NOTE : WB_SEV_WARNING,
			    file, NULL, 0, 0,
			    "%s: %.6g m^3 came in, %.6g m^3 left, and the water stored rose by %.6g m^3 (%.3g m over the whole map); %s",
			    outlets ? "the water is still rising" :
			    "the water has no way out and is still rising",
			    rep->vol_in, rep->vol_out, a->storage_m3,
			    a->mean_rise_m, outlets ?
			    "it has not reached an outlet yet: run longer, or check that the open edges, level edges or sinks can drain it" :
			    "the scene has no open edge, level edge, ocean or sink: add one, or lower the inflow");
	}
	/* where, over the run (LBM: rep->clamp_*) */
	char where[256] = "";
	if (rep->clamped > 0 && rep->clamp_blocks > 0) {
		const double dx = r->dx;
		snprintf(where, sizeof where,
			 " in %ld blocks of %d x %d cells within x %.6g..%.6g m, y %.6g..%.6g m, the most (%ld) in x %.6g..%.6g m, y %.6g..%.6g m",
			 rep->clamp_blocks, WB_CLAMP_BLOCK, WB_CLAMP_BLOCK,
			 rep->clamp_box[0] * dx, rep->clamp_box[1] * dx,
			 rep->clamp_box[2] * dx, rep->clamp_box[3] * dx,
			 rep->clamp_most_n, rep->clamp_most[0] * dx,
			 rep->clamp_most[1] * dx, rep->clamp_most[2] * dx,
			 rep->clamp_most[3] * dx);
	}
	if (rep->clamped > 0 && swe)
		wb_diag_add(d, WB_SEV_WARNING, file, NULL, 0, 0,
			    "the SWE's velocity clamp (|u| <= alpha dx / dt at a face) changed %ld face-steps, %.3g %% of all cell-steps (%d x %d cells x %ld steps): there the flow was held below the speed the step computed",
			    rep->clamped, 100.0 * a->clamped_share, r->nx, r->ny,
			    rep->steps);
	else if (rep->clamped > 0 && !(st && st->h && st->u && st->v))
		wb_diag_add(d, WB_SEV_NOTE, file, NULL, 0, 0,
			    "the stability limiter clamped %ld cell-steps, %.3g %% of all cell-steps (%d x %d cells x %ld steps)%s",
			    rep->clamped, 100.0 * a->clamped_share, r->nx, r->ny,
			    rep->steps, where);
	else if (rep->clamped > 0 && a->limit_cells == 0)
		wb_diag_add(d, WB_SEV_NOTE, file, NULL, 0, 0,
			    "the stability limiter clamped %ld cell-steps, %.3g %% of all cell-steps (%d x %d cells x %ld steps)%s; at the end no cell flows at its limit (Froude 1): the clamps were transient",
			    rep->clamped, 100.0 * a->clamped_share, r->nx, r->ny,
			    rep->steps, where);
	else if (rep->clamped > 0)
		/* the limiter changed the physics of the result: a warning */
		wb_diag_add(d, WB_SEV_WARNING, file, NULL, 0, 0,
			    "the stability limiter clamped %ld cell-steps, %.3g %% of all cell-steps (%d x %d cells x %ld steps)%s; at the end it holds %ld cells at Froude 1, within x %.6g..%.6g m, y %.6g..%.6g m (the fastest at x %.6g m, y %.6g m): supercritical flow there is not resolved; the SWE solver (--solver swe) resolves it",
			    rep->clamped, 100.0 * a->clamped_share, r->nx, r->ny,
			    rep->steps, where, a->limit_cells, a->limit_box[0],
			    a->limit_box[1], a->limit_box[2], a->limit_box[3],
			    a->limit_x, a->limit_y);
}

static int cancelled(const struct wb_output_opts *o)
{
	return o->cancel && *o->cancel;
}

enum wb_status wb_output_write(const struct wb_scene *sc,
			       const struct wb_raster *r,
			       const struct wb_state *st,
			       const struct wb_solve_report *rep,
			       const struct wb_output_opts *o,
			       struct wb_output_summary *sum,
			       struct wb_diags *d)
{
	struct wb_output_summary dummy;
	if (!sum)
		sum = &dummy;
	memset(sum, 0, sizeof *sum);
	if (!o || !o->outdir || !*o->outdir)
		return wb_fail(d, WB_EUSAGE, NULL, "no output directory");
	if (!sc->name || !*sc->name || strchr(sc->name, '/'))
		return wb_fail(d, WB_EINPUT, sc->file,
			       "scene name '%s' cannot name a file",
			       sc->name ? sc->name : "");
	int threads = wb_threads(o->threads);
	struct wb_maps m = { 0 };
	struct wb_pageset ps = { 0 };
	struct wb_outdir own;
	struct wb_outdir *od = o->claim;
	unsigned char *packbuf = NULL;
	char *json = NULL;
	char packname[1024], packpath[4096], manpath[4096];
	enum wb_status s;

	memset(&own, 0, sizeof own);
	snprintf(packname, sizeof packname, "%s.wtp", sc->name);
	s = join(sum->pack_path, sizeof sum->pack_path, o->outdir, packname, d);
	if (s == WB_OK)
		s = join(sum->manifest_path, sizeof sum->manifest_path,
			 o->outdir, "manifest.json", d);
	if (s == WB_OK && !od) {
		s = wb_outdir_open(&own, o->outdir, d);
		od = &own;
	}
	if (s != WB_OK)
		goto out;
	const char *dir = od->staging;
	s = join(packpath, sizeof packpath, dir, packname, d);
	if (s == WB_OK)
		s = join(manpath, sizeof manpath, dir, "manifest.json", d);
	if (s == WB_OK)
		s = maps_build(sc, r, st, threads, &m, d);
	if (s != WB_OK)
		goto out;

	size_t n = (size_t)m.nx * m.ny;
	long wet = 0;
	for (size_t k = 0; k < n; k++)
		wet += m.height[k] != WB_DRY_HEIGHT;
	sum->water_km2 = (double)wet * m.dx * m.dx / 1e6;

	unsigned layers = sc->output.layers;
	s = pages_build(&m, sc->output.lods, layers, sc->output.distance_max,
			r->origin, threads, &ps, d);
	if (s == WB_OK && cancelled(o))
		s = wb_fail(d, WB_ECANCEL, o->outdir,
			    "interrupted while building the pages; the output directory is unchanged");
	if (s != WB_OK)
		goto out;
	ps.bc_layers = sc->output.bc_layers & ps.layers;

	struct wb_pack_meta meta = { 0 };
	meta.scene_name = sc->name;
	meta.tool_version = WB_VERSION_STRING;
	meta.solver = o->solver_name ? o->solver_name
		    : sc->sim.solver == WB_SOLVER_SWE ? "swe" : "lbm";
	meta.materials = sc->materials;
	meta.n_materials = sc->n_materials;
	memcpy(meta.scene_sha256, sc->scene_sha256, 32);
	if (o->heightmap_sha256)
		memcpy(meta.heightmap_sha256, o->heightmap_sha256, 32);
	struct wb_pack_stats stats = { 0 };
	int from = d->n;
	s = pack_write(packpath, &ps, &meta, &stats, d);
	if (s == WB_EINPUT) /* what the scene baked cannot be stored */
		wb_diags_set_file(d, from, sc->file);
	if (s != WB_OK)
		goto out;

	/* hash what is on disk, not what we meant to write */
	size_t plen = 0;
	s = wb_read_file(packpath, &packbuf, &plen, d);
	if (s != WB_OK) {
		s = WB_EIO;
		goto out;
	}
	struct wb_manifest_in mi = { 0 };
	wb_sha256(packbuf, plen, mi.pack_sha256);
	free(packbuf);
	packbuf = NULL;

	if (o->preview) {
		s = write_previews(&m, sc, r, dir, d);
		if (s != WB_OK)
			goto out;
	}
	if (o->pages_png) {
		char *pd = wb_path_join(dir, "pages");
		s = pd ? preview_pages(&ps, pd, d)
		       : wb_fail(d, WB_EIO, o->outdir, "out of memory");
		free(pd);
		if (s != WB_OK)
			goto out;
	}

	struct wb_assess as;
	wb_output_assess(sc, r, rep, st, o->fixed_steps, &as, NULL);
	mi.sc = sc;
	mi.r = r;
	mi.st = st;
	mi.rep = rep;
	mi.assess = rep ? &as : NULL;
	mi.solver = meta.solver;
	mi.ps = &ps;
	mi.pack = &stats;
	mi.pack_name = packname;
	mi.heightmap_sha256 = o->heightmap_sha256;
	mi.water_km2 = sum->water_km2;
	stats.file_bytes = stats.file_bytes ? stats.file_bytes
					    : (long long)plen;
	json = manifest_json(&mi);
	if (!json) {
		s = wb_fail(d, WB_EIO, sum->manifest_path,
			    "manifest: out of memory");
		goto out;
	}
	s = wb_write_file_atomic(manpath, json, strlen(json), d);
	if (s != WB_OK)
		goto out;

	if (od == &own) {
		if (cancelled(o)) {
			s = wb_fail(d, WB_ECANCEL, o->outdir,
				    "interrupted before the output was replaced; the output directory is unchanged");
			goto out;
		}
		s = wb_outdir_commit(&own, d);
		if (s != WB_OK)
			goto out;
	}

	for (int k = 0; k < ps.n_lods; k++)
		for (long i = 0; i < (long)ps.lods[k].px * ps.lods[k].py; i++)
			switch (ps.lods[k].pages[i].state) {
			case WB_PAGE_DATA: sum->pages_data++; break;
			case WB_PAGE_FLAT: sum->pages_flat++; break;
			case WB_PAGE_EMPTY: sum->pages_empty++; break;
			}
	sum->pack_bytes = (long long)plen;
out:
	wb_outdir_abort(&own); /* no-op after a commit */
	free(json);
	free(packbuf);
	wb_pageset_free(&ps);
	maps_free(&m);
	return s;
}
