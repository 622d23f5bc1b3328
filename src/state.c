/*
 * state.c - struct wb_state (include/wbake.h): the solvers' output, shared
 * by the LBM-SWE (lbm.c) and SWE (swe.c) solvers.
 */
#include <stdlib.h>
#include <string.h>

#include "wbake.h"

void wb_state_free(struct wb_state *s)
{
	if (!s)
		return;
	free(s->h);
	free(s->u);
	free(s->v);
	free(s->foam);
	free(s->fv);
	free(s->falls);
	memset(s, 0, sizeof(*s));
}
