/*
 * mpi_bake.h - one bake over several processes with Open MPI (make MPI=1; the
 * build defines WB_MPI and compiles with mpicc). The library side of
 * bin-mpi/wbake: start-up, the consistency check between the ranks, the
 * row split and the struct wb_par (par.h) whose exchange is an
 * MPI_Allgatherv. Never prints, never exits, never aborts: bake/wbake.c
 * does (docs/mpi.md says what each rank needs and how failures end).
 */
#ifndef WB_MPI_BAKE_H
#define WB_MPI_BAKE_H

#include "par.h"
#include "wbake.h"

#define WB_MPI_HOST 64

struct wb_mpi {
	int rank, size;
	char host[WB_MPI_HOST];   /* this rank's host name */
	struct wb_par par;        /* par.row0 / par.off: owned here */
	int threads;              /* cores of this rank's share of its host */
	int local_rank, local_size; /* this rank among those of its host */
	int *cnt;                 /* 2 * size: MPI_Allgatherv counts, offsets */
};

/* MPI_Init (with threads: funneled), rank, size, host name. 0 on success. */
int wb_mpi_init(int *argc, char ***argv, struct wb_mpi *m);
/* The identity of a rank's bake, compared across ranks at start. */
struct wb_mpi_id {
	unsigned char binary[32]; /* SHA-256 of the executable */
	unsigned char scene[32];  /* of the scene file */
	unsigned char terrain[32];/* of the heightmap (wb_heightmap.sha256) */
	unsigned char args[32];   /* of the command line */
};
/* Fill id: binary from /proc/self/exe, scene from its file, args from
 * argv (without argv[0] and --threads N, which may differ per rank);
 * terrain is the caller's (NULL: zeros). Status of the read otherwise. */
enum wb_status wb_mpi_identify(struct wb_mpi_id *id, const char *scene_path,
			       const unsigned char *terrain_sha256, int argc,
			       char **argv, struct wb_diags *d);
/* Collective: every rank passes its status so far and its identity. The
 * result is the same on every rank: WB_OK when all are OK and equal;
 * else the worst status of a failed rank, or WB_EINPUT for a rank whose
 * identity differs from rank 0's, with d naming the first such rank and
 * its host. */
enum wb_status wb_mpi_check(struct wb_mpi *m, enum wb_status mine,
			    const struct wb_mpi_id *id, struct wb_diags *d);
/* Cut ny rows over the ranks by work (per row, NULL: equal) and make
 * m->par usable (wb_solve_opts.par). WB_EIO out of memory. */
enum wb_status wb_mpi_split(struct wb_mpi *m, int ny, const double *work,
			    struct wb_diags *d);
/* Collective: the largest value of v over the ranks (timings). */
double wb_mpi_max(struct wb_mpi *m, double v);
/* This process's resident memory (MiB) from /proc/self/status: key
 * "VmRSS:" (now) or "VmHWM:" (peak); -1 where unknown. */
double wb_mpi_vm(const char *key);
/* Collective: every rank's two values (all: 2 size doubles, rank r's at
 * 2 r and 2 r + 1). 0 on success. */
int wb_mpi_gather2(struct wb_mpi *m, double a, double b, double *all);
/* Frees the split; MPI_Finalize. */
void wb_mpi_finalize(struct wb_mpi *m);
/* Ends every rank of the job with exit status code (MPI_Abort): for a
 * failure of this rank that the others cannot see. Does not return. */
void wb_mpi_abort(struct wb_mpi *m, int code) __attribute__((noreturn));

#endif
