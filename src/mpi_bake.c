/*
 * mpi_bake.c - the Open MPI side of par.h (see mpi_bake.h). Compiled to nothing
 * unless WB_MPI (make MPI=1).
 *
 * The exchange is MPI_Allgatherv in place over MPI_COMM_WORLD with a
 * contiguous type of the element size: rank r contributes its elements
 * [off[r], off[r + 1]), every rank receives all. Errors return (the
 * communicator's error handler is MPI_ERRORS_RETURN), so that the solver
 * can stop with a message; a rank that dies is seen by mpirun, which ends
 * the others.
 */
#ifdef WB_MPI
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_bake.h"
#include "util.h"

static int gather(void *user, void *buf, size_t elsize, const long *off)
{
	struct wb_mpi *m = user;
	int n = m->size;
	int *cnt = m->cnt, *dsp = m->cnt + n;
	for (int r = 0; r < n; r++) {
		long c = off[r + 1] - off[r];
		if (off[r] > 0x7fffffffL || c > 0x7fffffffL || c < 0)
			return -1; /* beyond MPI's int counts */
		cnt[r] = (int)c;
		dsp[r] = (int)off[r];
	}
	double t0 = MPI_Wtime();
	MPI_Datatype t;
	if (MPI_Type_contiguous((int)elsize, MPI_BYTE, &t) != MPI_SUCCESS)
		return -1;
	MPI_Type_commit(&t);
	int rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, cnt,
				dsp, t, MPI_COMM_WORLD);
	MPI_Type_free(&t);
	long all = off[n] - off[0], own = off[m->rank + 1] - off[m->rank];
	m->par.bytes += (double)(all - own) * (double)elsize;
	m->par.calls++;
	m->par.secs += MPI_Wtime() - t0;
	return rc == MPI_SUCCESS ? 0 : -1;
}

static int halo(void *user, const void *to_up, const void *to_dn,
		void *from_up, void *from_dn, size_t bytes)
{
	struct wb_mpi *m = user;
	const int r = m->rank, n = m->size;
	if (bytes > 0x7fffffffUL)
		return -1;
	double t0 = MPI_Wtime();
	const int cnt = (int)bytes;
	int up = r > 0 ? r - 1 : MPI_PROC_NULL;
	int dn = r + 1 < n ? r + 1 : MPI_PROC_NULL;
	/* both neighbours at once: the first rows up while the rows below
	   come from below, the last rows down while those above come from
	   above (MPI_PROC_NULL: nothing sent or received) */
	MPI_Request rq[4];
	int rc = MPI_Irecv(from_dn, cnt, MPI_BYTE, dn, 1, MPI_COMM_WORLD, &rq[0]);
	if (rc == MPI_SUCCESS)
		rc = MPI_Irecv(from_up, cnt, MPI_BYTE, up, 2, MPI_COMM_WORLD, &rq[1]);
	if (rc == MPI_SUCCESS)
		rc = MPI_Isend(to_up, cnt, MPI_BYTE, up, 1, MPI_COMM_WORLD, &rq[2]);
	if (rc == MPI_SUCCESS)
		rc = MPI_Isend(to_dn, cnt, MPI_BYTE, dn, 2, MPI_COMM_WORLD, &rq[3]);
	if (rc == MPI_SUCCESS)
		rc = MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
	m->par.bytes += (double)cnt * ((up != MPI_PROC_NULL) +
				       (dn != MPI_PROC_NULL));
	m->par.hbytes += (double)cnt * ((up != MPI_PROC_NULL) +
					(dn != MPI_PROC_NULL));
	m->par.calls++;
	m->par.secs += MPI_Wtime() - t0;
	return rc == MPI_SUCCESS ? 0 : -1;
}

/* par.h halov: each message its own size, received into cap bytes (the
 * count from the status). */
static int halov(void *user, const void *to_up, size_t n_up,
		 const void *to_dn, size_t n_dn, void *from_up, void *from_dn,
		 size_t cap, size_t *got)
{
	struct wb_mpi *m = user;
	const int r = m->rank, n = m->size;
	got[0] = got[1] = 0;
	if (cap > 0x7fffffffUL || n_up > cap || n_dn > cap)
		return -1;
	double t0 = MPI_Wtime();
	int up = r > 0 ? r - 1 : MPI_PROC_NULL;
	int dn = r + 1 < n ? r + 1 : MPI_PROC_NULL;
	MPI_Request rq[4];
	MPI_Status st[4];
	int rc = MPI_Irecv(from_dn, (int)cap, MPI_BYTE, dn, 3, MPI_COMM_WORLD,
			   &rq[0]);
	if (rc == MPI_SUCCESS)
		rc = MPI_Irecv(from_up, (int)cap, MPI_BYTE, up, 4, MPI_COMM_WORLD,
			       &rq[1]);
	if (rc == MPI_SUCCESS)
		rc = MPI_Isend(to_up, (int)n_up, MPI_BYTE, up, 3, MPI_COMM_WORLD,
			       &rq[2]);
	if (rc == MPI_SUCCESS)
		rc = MPI_Isend(to_dn, (int)n_dn, MPI_BYTE, dn, 4, MPI_COMM_WORLD,
			       &rq[3]);
	if (rc == MPI_SUCCESS)
		rc = MPI_Waitall(4, rq, st);
	int c;
	if (rc == MPI_SUCCESS && dn != MPI_PROC_NULL) {
		rc = MPI_Get_count(&st[0], MPI_BYTE, &c);
		got[1] = rc == MPI_SUCCESS && c > 0 ? (size_t)c : 0;
	}
	if (rc == MPI_SUCCESS && up != MPI_PROC_NULL) {
		rc = MPI_Get_count(&st[1], MPI_BYTE, &c);
		got[0] = rc == MPI_SUCCESS && c > 0 ? (size_t)c : 0;
	}
	m->par.bytes += (double)(got[0] + got[1]);
	m->par.hbytes += (double)(got[0] + got[1]);
	m->par.calls++;
	m->par.secs += MPI_Wtime() - t0;
	return rc == MPI_SUCCESS ? 0 : -1;
}

int wb_mpi_init(int *argc, char ***argv, struct wb_mpi *m)
{
	memset(m, 0, sizeof(*m));
	int prov;
	if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &prov) != MPI_SUCCESS)
		return -1;
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_rank(MPI_COMM_WORLD, &m->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &m->size);
	if (gethostname(m->host, sizeof(m->host) - 1))
		strcpy(m->host, "?");
	m->host[sizeof(m->host) - 1] = 0;
	m->par.rank = m->rank;
	m->par.size = m->size;
	m->par.allgather = gather;
	m->par.halo = halo;
	m->par.halov = halov;
	m->par.user = m;
	/* the ranks on this host share its cores */
	MPI_Comm node;
	int local = 1;
	if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
				MPI_INFO_NULL, &node) == MPI_SUCCESS) {
		MPI_Comm_size(node, &local);
		MPI_Comm_rank(node, &m->local_rank);
		MPI_Comm_free(&node);
	}
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	m->threads = cores > local ? (int)(cores / local) : 1;
	m->local_size = local;
	return 0;
}

enum wb_status wb_mpi_identify(struct wb_mpi_id *id, const char *scene_path,
			       const unsigned char *terrain_sha256, int argc,
			       char **argv, struct wb_diags *d)
{
	memset(id, 0, sizeof(*id));
	unsigned char *text = NULL;
	size_t len = 0;
	enum wb_status st = wb_read_file("/proc/self/exe", &text, &len, d);
	if (st)
		return st;
	wb_sha256(text, len, id->binary);
	free(text);
	st = wb_read_file(scene_path, &text, &len, d);
	if (st)
		return st;
	wb_sha256(text, len, id->scene);
	free(text);
	if (terrain_sha256)
		memcpy(id->terrain, terrain_sha256, 32);
	size_t n = 0;
	for (int i = 0; i < argc; i++)
		n += strlen(argv[i]) + 1;
	char *a = malloc(n + 1), *p = a;
	if (!a)
		return wb_fail(d, WB_EIO, NULL, "out of memory");
	for (int i = 1; i < argc; i++) { /* argv[0]: the path may differ */
		if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
			i++; /* per rank: does not change the bytes */
			continue;
		}
		size_t l = strlen(argv[i]);
		memcpy(p, argv[i], l + 1);
		p += l + 1;
	}
	wb_sha256(a, (size_t)(p - a), id->args);
	free(a);
	return WB_OK;
}

struct rank_info {
	int status;
	struct wb_mpi_id id;
	char host[WB_MPI_HOST];
};

enum wb_status wb_mpi_check(struct wb_mpi *m, enum wb_status mine,
			    const struct wb_mpi_id *id, struct wb_diags *d)
{
	struct rank_info me, *all = calloc((size_t)m->size, sizeof(*all));
	memset(&me, 0, sizeof(me));
	me.status = mine;
	if (id)
		me.id = *id;
	memcpy(me.host, m->host, sizeof(me.host));
	/* every rank must take part even without memory for the answer */
	struct rank_info dummy;
	int rc = MPI_Allgather(&me, (int)sizeof(me), MPI_BYTE,
			       all ? (void *)all : (void *)&dummy,
			       all ? (int)sizeof(me) : 0, MPI_BYTE,
			       MPI_COMM_WORLD);
	if (!all || rc != MPI_SUCCESS) {
		free(all);
		return wb_fail(d, WB_EIO, NULL,
			       "rank %d of %d (host %s): start-up exchange between the ranks failed",
			       m->rank, m->size, m->host);
	}
	enum wb_status st = WB_OK;
	for (int r = 0; r < m->size && st == WB_OK; r++) {
		const struct rank_info *q = &all[r];
		if (q->status != WB_OK) {
			st = (enum wb_status)q->status;
			if (r != m->rank)
				wb_fail(d, st, NULL,
					"rank %d of %d (host %s) could not start the bake (status %d; its own messages say why)",
					r, m->size, q->host, q->status);
			continue;
		}
		const char *what =
			memcmp(q->id.binary, all[0].id.binary, 32) ? "its wbake binary" :
			memcmp(q->id.scene, all[0].id.scene, 32) ? "its scene file" :
			memcmp(q->id.terrain, all[0].id.terrain, 32) ? "its terrain (heightmap)" :
			memcmp(q->id.args, all[0].id.args, 32) ? "its command line" : NULL;
		if (what)
			st = wb_fail(d, WB_EINPUT, NULL,
				     "rank %d of %d (host %s): %s differs from rank 0's (host %s); every rank must run the same build on the same scene, terrain and options",
				     r, m->size, q->host, what, all[0].host);
	}
	free(all);
	return st;
}

enum wb_status wb_mpi_split(struct wb_mpi *m, int ny, const double *work,
			    struct wb_diags *d)
{
	free(m->par.row0);
	free(m->par.off);
	free(m->cnt);
	m->par.row0 = malloc(((size_t)m->size + 1) * sizeof(int));
	m->par.off = malloc(((size_t)m->size + 1) * sizeof(long));
	m->cnt = malloc(2 * (size_t)m->size * sizeof(int));
	if (!m->par.row0 || !m->par.off || !m->cnt)
		return wb_fail(d, WB_EIO, NULL, "out of memory");
	if (ny < 2 * m->size)
		return wb_fail(d, WB_EINPUT, NULL,
			       "%d ranks for a grid of %d rows: each rank needs two rows at least",
			       m->size, ny);
	wb_par_split(&m->par, ny, work);
	return WB_OK;
}

double wb_mpi_max(struct wb_mpi *m, double v)
{
	double out = v;
	MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	(void)m;
	return out;
}

double wb_mpi_vm(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	char line[256];
	double v = -1;
	size_t n = strlen(key);
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, key, n)) {
			v = strtod(line + n, NULL) / 1024.0; /* kB */
			break;
		}
	fclose(f);
	return v;
}

int wb_mpi_gather2(struct wb_mpi *m, double a, double b, double *all)
{
	double mine[2] = { a, b };
	(void)m;
	return MPI_Allgather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE,
			     MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
}

void wb_mpi_finalize(struct wb_mpi *m)
{
	free(m->par.row0);
	free(m->par.off);
	free(m->cnt);
	m->par.row0 = NULL;
	m->par.off = NULL;
	m->cnt = NULL;
	MPI_Finalize();
}

void wb_mpi_abort(struct wb_mpi *m, int code)
{
	(void)m;
	MPI_Abort(MPI_COMM_WORLD, code);
	_exit(code); /* MPI_Abort does not return; for the compiler */
}
#else
typedef int wb_mpi_not_built; /* make MPI=1 builds this file */
#endif
