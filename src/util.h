/*
 * util.h - small shared services: atomic file output, directories, PFM,
 * SHA-256, thread count. Implemented in fileio.c, pfm.c, sha256.c.
 */
#ifndef WB_UTIL_H
#define WB_UTIL_H

#include <stddef.h>
#include <stdio.h>

#include "wbake.h"

/* Give the diagnostics from index 'from' on that name no file 'file'
 * (diag.c): a stage that knows only its data (the pack writer) reports
 * through a caller that knows which input it came from. */
void wb_diags_set_file(struct wb_diags *d, int from, const char *file);

/* Create 'dir' and its parents (mode 0777 & ~umask). WB_EIO names it; a
 * component that exists and is not a directory is named with its kind. */
enum wb_status wb_mkdirs(const char *dir, struct wb_diags *d);

/* What a file of st_mode m is, for messages: "a regular file", "a
 * directory", "a FIFO (named pipe)", "a character device", ... */
const char *wb_file_kind(unsigned int m);

/* Atomic output: wb_atomic_open() opens "<path>.tmp.<pid>" for writing;
 * wb_atomic_commit() flushes, fsyncs, closes and renames it over 'path';
 * wb_atomic_abort() closes and removes the temporary. Until commit, an
 * existing file at 'path' is untouched. Only a regular file (or a link to
 * one) is ever replaced: an empty path, or one that names a directory,
 * device, FIFO or socket, fails at open (WB_EIO) and is left as it is. */
struct wb_atomic {
	FILE *f;
	char *path;
	char *tmp;
};
enum wb_status wb_atomic_open(struct wb_atomic *a, const char *path,
			      struct wb_diags *d);
enum wb_status wb_atomic_commit(struct wb_atomic *a, struct wb_diags *d);
void wb_atomic_abort(struct wb_atomic *a);
/* Write a whole buffer atomically. */
enum wb_status wb_write_file_atomic(const char *path, const void *data,
				    size_t len, struct wb_diags *d);

/* Input files. Only regular files are read: a FIFO, device, socket or
 * directory is WB_EINPUT ("cannot read: expected a regular file, found a
 * FIFO (named pipe)"), found without blocking. Reads are bounded by the
 * size fstat reported and by 'max'; a file that grows while it is read is
 * an error. Out of memory is WB_EIO.
 *
 * wb_input_open() opens 'path' (O_CLOEXEC) and gives its size; the caller
 * closes *fd. wb_input_read() reads the whole of it into a malloc'd buffer
 * (caller frees) with a NUL appended (not counted in *len); a file larger
 * than 'max' is WB_EINPUT "too large: N bytes, more than the M-byte limit
 * for <what>" and nothing is read. */
enum wb_status wb_input_open(const char *path, int *fd, size_t *size,
			     struct wb_diags *d);
enum wb_status wb_input_read(int fd, const char *path, size_t size,
			     size_t max, const char *what,
			     unsigned char **data, size_t *len,
			     struct wb_diags *d);
/* Both in one call. */
enum wb_status wb_read_file_max(const char *path, size_t max,
				const char *what, unsigned char **data,
				size_t *len, struct wb_diags *d);
/* Same with no cap beyond the file's own size. WB_EINPUT when missing,
 * unreadable or not a regular file (the error names the file). */
enum wb_status wb_read_file(const char *path, unsigned char **data,
			    size_t *len, struct wb_diags *d);

/* Join a directory and a file name into a malloc'd string ("dir/name");
 * 'name' is returned copied as is when absolute or when dir is NULL/"". */
char *wb_path_join(const char *dir, const char *name);

/* PFM (Netpbm float): 'Pf' one channel, 'PF' three; rows written bottom to
 * top as the format wants (grid row ny-1 first), scale -1 (little-endian).
 * 'channels' is 1 or 3; data is row-major nx*ny*channels, grid row 0 first.
 * Written atomically. */
enum wb_status wb_pfm_write(const char *path, const float *data, int nx,
			    int ny, int channels, struct wb_diags *d);
/* Read a PFM written by anyone (either endianness) into grid order (row 0 =
 * top). *data malloc'd, caller frees. */
enum wb_status wb_pfm_read(const char *path, float **data, int *nx, int *ny,
			   int *channels, struct wb_diags *d);

/* SHA-256 of a buffer. */
void wb_sha256(const void *data, size_t len, unsigned char out[32]);

/* The digest of pieces (docs/state.md, "Digest of pieces"): data cut into
 * pieces of WB_SHA_PIECE bytes (the last one shorter; none for len 0), each
 * hashed with SHA-256 (in parallel, on 'threads' threads, wb_threads),
 * then SHA-256 of the pieces' 32-byte digests concatenated in order. The
 * result depends on the bytes alone, not on the thread count. When get
 * is not NULL, the bytes [off, off + n) of a piece are what get(data, off,
 * n, buf) writes into buf (data in another form, converted piece by
 * piece). Returns 0, or -1 when out of memory (out then unset). */
#define WB_SHA_PIECE ((size_t)1 << 24)
int wb_sha256_pieces(const void *data, size_t len, int threads,
		     void (*get)(const void *data, size_t off, size_t n,
				 unsigned char *buf),
		     unsigned char out[32]);
/* Lower-case hex of n bytes into out (2n+1 chars). */
void wb_hex(const unsigned char *in, size_t n, char *out);

/* Threads to use: n > 0 as is, else omp_get_num_procs(). */
int wb_threads(int n);

#endif
