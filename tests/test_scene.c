/*
 * test_scene.c - the scene parser (src/scene.c), its schema, and the
 * rasteriser (src/raster.c).
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

#include <cjson/cJSON.h>

#include "scene_keys.h"
#include "util.h"
#include "wbake.h"

static const char minimal[] =
	"{\n"
	"  \"name\": \"t\",\n"
	"  \"terrain\": {\"heightmap\": \"t.png\"}\n"
	"}\n";

static enum wb_status parse(const char *text, struct wb_scene *sc,
			    struct wb_diags *d)
{
	wb_diags_init(d);
	return wb_scene_parse(text, strlen(text), "s.json", "dir", sc, d);
}

/* Find the first diagnostic whose path (or message) contains 'needle'. */
static const struct wb_diag *find(const struct wb_diags *d, const char *needle)
{
	for (int i = 0; i < d->n; i++) {
		if (d->v[i].path && strstr(d->v[i].path, needle))
			return &d->v[i];
		if (d->v[i].msg && strstr(d->v[i].msg, needle))
			return &d->v[i];
	}
	return NULL;
}

static void test_minimal_defaults(void **state)
{
	struct wb_scene sc;
	struct wb_diags d;
	assert_int_equal(parse(minimal, &sc, &d), WB_OK);
	assert_string_equal(sc.name, "t");
	assert_string_equal(sc.terrain.heightmap, "dir/t.png");
	assert_int_equal(sc.terrain.format, WB_HM_PNG);
	assert_true(sc.terrain.dx == 1.0);
	assert_int_equal(sc.edges[WB_WEST].kind, WB_EDGE_WALL);
	assert_int_equal(sc.sim.solver, WB_SOLVER_LBM);
	assert_true(sc.sim.max_steps > 0 && sc.sim.tolerance > 0);
	assert_int_equal(sc.output.lods, 4);
	assert_true(sc.output.layers & (1u << WB_LAYER_HEIGHT));
	/* a scene without water warns */
	assert_int_equal(d.errors, 0);
	assert_non_null(find(&d, "no water"));
	wb_scene_free(&sc);
	wb_diags_release(&d);
}

static void test_syntax_error_line(void **state)
{
	const char *text = "{\n  \"name\": \"t\",\n  \"terrain\": {\"heightmap\" \"x\"}\n}\n";
	struct wb_scene sc;
	struct wb_diags d;
	assert_int_equal(parse(text, &sc, &d), WB_EINPUT);
	assert_int_equal(d.errors, 1);
	assert_int_equal(d.v[0].line, 3);
	assert_int_equal(d.v[0].col, 27); /* the unexpected "x" */
	assert_non_null(strstr(d.v[0].msg, "syntax error"));
	wb_scene_free(&sc);
	wb_diags_release(&d);

	assert_int_equal(parse("{\"name\": \"t\",\n", &sc, &d), WB_EINPUT);
	assert_non_null(strstr(d.v[0].msg, "end of file"));
	assert_int_equal(d.v[0].line, 2);
	wb_scene_free(&sc);
	wb_diags_release(&d);

	assert_int_equal(parse("{}\n{}", &sc, &d), WB_EINPUT);
	assert_int_equal(d.v[0].line, 2);
	assert_non_null(strstr(d.v[0].msg, "after the scene"));
	wb_scene_free(&sc);
	wb_diags_release(&d);
}

static void test_all_problems_reported(void **state)
{
	const char *text =
		"{\n"
		"  \"name\": \"t\",\n"
		"  \"terrain\": {\"heightmap\": \"t.png\", \"metres_per_pixel\": -1},\n"
		"  \"materials\": [{\"name\": \"river\", \"kind\": \"river\"}],\n"
		"  \"sources\": [\n"
		"    {\"type\": \"spring\", \"point\": [1, 2], \"discharge\": 1, \"material\": \"river\"},\n"
		"    {\"type\": \"river\", \"path\": [[0, 0], [5, 5]],\n"
		"     \"width\": \"wide\", \"discharge\": 3, \"material\": \"lava\"}\n"
		"  ],\n"
		"  \"simulation\": {\"solver\": \"fem\"}\n"
		"}\n";
	struct wb_scene sc;
	struct wb_diags d;
	assert_int_equal(parse(text, &sc, &d), WB_EINPUT);
	assert_int_equal(d.errors, 4);
	const struct wb_diag *g = find(&d, "terrain.metres_per_pixel");
	assert_non_null(g);
	assert_int_equal(g->line, 3);
	assert_non_null(strstr(g->msg, "found -1"));
	g = find(&d, "sources[1].width");
	assert_non_null(g);
	assert_int_equal(g->line, 8);
	assert_non_null(strstr(g->msg, "expected a number, found \"wide\""));
	g = find(&d, "sources[1].material");
	assert_non_null(g);
	assert_non_null(strstr(g->msg, "\"lava\""));
	assert_non_null(strstr(g->msg, "\"river\""));
	g = find(&d, "simulation.solver");
	assert_non_null(g);
	assert_non_null(strstr(g->msg, "\"lbm\", \"swe\""));
	wb_scene_free(&sc);
	wb_diags_release(&d);
}

static void test_unknown_key_suggestion(void **state)
{
	const char *text =
		"{\"name\": \"t\", \"terrain\": {\"heightmap\": \"t.png\", \"heigth_scale\": 3},\n"
		" \"initial_water\": {\"level\": 1}, \"simulaton\": {}}";
	struct wb_scene sc;
	struct wb_diags d;
	assert_int_equal(parse(text, &sc, &d), WB_OK);
	const struct wb_diag *g = find(&d, "terrain.heigth_scale");
	assert_non_null(g);
	assert_int_equal(g->sev, WB_SEV_WARNING);
	assert_non_null(strstr(g->msg, "did you mean \"height_scale\""));
	g = find(&d, "simulaton");
	assert_non_null(g);
	assert_non_null(strstr(g->msg, "did you mean \"simulation\""));
	wb_scene_free(&sc);
	wb_diags_release(&d);
}

static void test_full_scene(void **state)
{
	const char *text =
		"{\"name\": \"full\", \"version\": 1, \"origin\": [100, 200],\n"
		" \"terrain\": {\"heightmap\": \"h.r32f\", \"size\": [4, 3], \"height_scale\": 2},\n"
		" \"boundaries\": {\"west\": {\"type\": \"inflow\", \"discharge\": 4.42},\n"
		"   \"east\": {\"type\": \"level\", \"level\": 2}, \"north\": \"periodic\",\n"
		"   \"south\": {\"type\": \"periodic\"}},\n"
		" \"initial_water\": {\"areas\": [{\"polygon\": [[0,0],[1,0],[1,1]], \"level\": 3}]},\n"
		" \"materials\": [{\"id\": 7, \"name\": \"sea\", \"kind\": \"ocean\", \"waves\": {\"amplitude\": 0.5}}],\n"
		" \"sources\": [{\"type\": \"ocean\", \"level\": 1, \"material\": 7, \"exclude\": [[[0,0],[1,0],[1,1]]]},\n"
		"   {\"type\": \"rain\", \"rate\": 10}, {\"type\": \"sink\", \"point\": [1,1], \"drain_all\": true},\n"
		"   {\"type\": \"lake\", \"seed\": [1,1], \"level\": 5, \"material\": \"sea\"}],\n"
		" \"blockers\": [{\"polygon\": [[0,0],[2,0],[2,2]], \"bottom\": 3, \"top\": 4}],\n"
		" \"modifiers\": [{\"center\": [1,1], \"radius\": 2, \"direction\": [3,4], \"speed\": 2}],\n"
		" \"simulation\": {\"solver\": \"swe\", \"dt\": \"auto\", \"lattice_speed\": 20, \"advection\": \"semi-lagrangian\",\n"
		"   \"foam\": {\"diffusion\": 0.1}},\n"
		" \"output\": {\"lods\": 2, \"layers\": [\"height\", \"flow\"]}}";
	struct wb_scene sc;
	struct wb_diags d;
	assert_int_equal(parse(text, &sc, &d), WB_OK);
	assert_int_equal(d.warnings, 0);
	assert_int_equal(sc.terrain.format, WB_HM_R32F);
	assert_int_equal(sc.terrain.width, 4);
	assert_int_equal(sc.edges[WB_WEST].kind, WB_EDGE_INFLOW);
	assert_true(sc.edges[WB_WEST].discharge == 4.42);
	assert_int_equal(sc.edges[WB_EAST].kind, WB_EDGE_LEVEL);
	assert_int_equal(sc.edges[WB_NORTH].kind, WB_EDGE_PERIODIC);
	assert_int_equal(sc.n_sources, 4);
	assert_int_equal(sc.sources[0].material, 0);
	assert_int_equal(sc.sources[0].n_exclude, 1);
	assert_int_equal(sc.sources[3].material, 0);
	assert_true(sc.materials[0].amplitude == 0.5);
	assert_true(fabs(sc.modifiers[0].target[0] - 1.2) < 1e-12);
	assert_true(fabs(sc.modifiers[0].target[1] - 1.6) < 1e-12);
	assert_int_equal(sc.sim.solver, WB_SOLVER_SWE);
	assert_int_equal(sc.sim.maccormack, 0);
	assert_true(sc.sim.lattice_speed == 20);
	assert_true(sc.output.layers == ((1u << WB_LAYER_HEIGHT) | (1u << WB_LAYER_FLOW)));
	wb_scene_free(&sc);
	wb_diags_release(&d);
}

static void test_semantic_rules(void **state)
{
	static const struct { const char *body; const char *path; const char *msg; } cases[] = {
		{ "\"boundaries\": {\"west\": \"periodic\"}", "boundaries", "both west and east" },
		{ "\"boundaries\": {\"west\": {\"type\": \"inflow\"}}", "boundaries.west", "needs \"discharge\"" },
		{ "\"boundaries\": {\"west\": {\"type\": \"inflow\", \"velocity\": 1}}", "boundaries.west", "needs a \"depth\"" },
		{ "\"blockers\": [{\"polygon\": [[0,0],[1,0],[1,1]], \"bottom\": 3, \"top\": 2}]", "blockers[0].top", "above bottom" },
		{ "\"blockers\": [{\"polygon\": [[0,0],[1,0]], \"bottom\": 1, \"top\": 2}]", "blockers[0].polygon", "at least 3 points" },
		{ "\"sources\": [{\"type\": \"lake\", \"level\": 1, \"material\": 1}]", "sources[0]", "\"polygon\" or a \"seed\"" },
		{ "\"sources\": [{\"type\": \"geyser\"}]", "sources[0].type", "\"river\", \"spring\"" },
		{ "\"sources\": [{\"type\": \"spring\", \"point\": [1], \"discharge\": 1, \"material\": 1}]", "sources[0].point", "point [x, y]" },
		{ "\"version\": 2", "version", "version 1" },
		{ "\"output\": {\"layers\": [\"flow\"]}", "output.layers", "\"height\" layer is required" },
		{ "\"modifiers\": [{\"center\": [1,1], \"radius\": 1}]", "modifiers[0]", "target \"velocity\"" },
		{ "\"materials\": [{\"name\": \"a\", \"kind\": \"lake\"}, {\"name\": \"a\", \"kind\": \"lake\"}]", "materials[1]", "already used" },
		{ "\"simulation\": {\"max_steps\": 1.5}", "simulation.max_steps", "whole number" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[1024];
		snprintf(text, sizeof(text),
			 "{\"name\": \"t\", \"terrain\": {\"heightmap\": \"t.png\"},\n %s}",
			 cases[i].body);
		struct wb_scene sc;
		struct wb_diags d;
		enum wb_status st = parse(text, &sc, &d);
		const struct wb_diag *g = NULL;
		for (int k = 0; k < d.n; k++)
			if (d.v[k].sev == WB_SEV_ERROR && d.v[k].path &&
			    strcmp(d.v[k].path, cases[i].path) == 0 &&
			    strstr(d.v[k].msg, cases[i].msg))
				g = &d.v[k];
		if (st != WB_EINPUT || !g) {
			for (int k = 0; k < d.n; k++)
				print_error("  got: %s: %s\n", d.v[k].path ? d.v[k].path : "-", d.v[k].msg);
			fail_msg("case %zu (%s): expected an error at %s with '%s'",
				 i, cases[i].body, cases[i].path, cases[i].msg);
		}
		wb_scene_free(&sc);
		wb_diags_release(&d);
	}
}

/* Collect the property names of a schema object into a sorted list. */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void same_keys(const cJSON *schema_obj, const char *const *keys,
		      const char *what)
{
	const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema_obj, "properties");
	assert_non_null(props);
	const char *a[64], *b[64];
	int na = 0, nb = 0;
	for (const cJSON *it = props->child; it; it = it->next)
		if (strcmp(it->string, "$schema"))
			a[na++] = it->string;
	for (int i = 0; keys[i]; i++)
		b[nb++] = keys[i];
	qsort(a, (size_t)na, sizeof(*a), cmp_str);
	qsort(b, (size_t)nb, sizeof(*b), cmp_str);
	if (na != nb)
		fail_msg("%s: schema has %d keys, parser %d", what, na, nb);
	for (int i = 0; i < na; i++)
		if (strcmp(a[i], b[i]))
			fail_msg("%s: schema key '%s' vs parser key '%s'", what, a[i], b[i]);
}

static const cJSON *at(const cJSON *o, const char *path)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *tok = strtok(buf, "/"); tok && o; tok = strtok(NULL, "/"))
		o = cJSON_GetObjectItemCaseSensitive(o, tok);
	return o;
}

static void test_schema_matches_parser(void **state)
{
	unsigned char *text;
	size_t len;
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(wb_read_file("schemas/scene.schema.json", &text, &len, &d), WB_OK);
	cJSON *s = cJSON_Parse((const char *)text);
	assert_non_null(s);
	assert_string_equal(cJSON_GetObjectItem(s, "$schema")->valuestring,
			    "https://json-schema.org/draft/2020-12/schema");
	same_keys(s, wb_keys_root, "root");
	same_keys(at(s, "properties/terrain"), wb_keys_terrain, "terrain");
	same_keys(at(s, "properties/boundaries"), wb_keys_boundaries, "boundaries");
	same_keys(at(s, "$defs/edge"), wb_keys_edge, "edge");
	const cJSON *init = at(s, "properties/initial_water/oneOf");
	same_keys(cJSON_GetArrayItem(init, 1), wb_keys_initial, "initial_water");
	same_keys(at(s, "properties/materials/items"), wb_keys_material, "materials");
	same_keys(at(s, "properties/materials/items/properties/waves"), wb_keys_waves, "waves");
	same_keys(at(s, "$defs/source_river"), wb_keys_source_river, "river");
	same_keys(at(s, "$defs/source_spring"), wb_keys_source_spring, "spring");
	same_keys(at(s, "$defs/source_lake"), wb_keys_source_lake, "lake");
	same_keys(at(s, "$defs/source_ocean"), wb_keys_source_ocean, "ocean");
	same_keys(at(s, "$defs/source_rain"), wb_keys_source_rain, "rain");
	same_keys(at(s, "$defs/source_sink"), wb_keys_source_sink, "sink");
	same_keys(at(s, "properties/blockers/items"), wb_keys_blocker, "blocker");
	same_keys(at(s, "properties/modifiers/items"), wb_keys_modifier, "modifier");
	same_keys(at(s, "properties/simulation"), wb_keys_sim, "simulation");
	same_keys(at(s, "properties/simulation/properties/foam"), wb_keys_foam, "foam");
	same_keys(at(s, "properties/output"), wb_keys_output, "output");
	cJSON_Delete(s);
	free(text);
	wb_diags_release(&d);
}

/* ---- rasteriser -------------------------------------------------------- */

/* A 64x48 bowl: z = 0.01 * ((i-32)^2 + (j-24)^2) m at dx = 2 m. */
static void bowl(struct wb_heightmap *hm)
{
	memset(hm, 0, sizeof(*hm));
	hm->nx = 64;
	hm->ny = 48;
	hm->z = malloc(sizeof(float) * 64 * 48);
	for (int j = 0; j < 48; j++)
		for (int i = 0; i < 64; i++)
			hm->z[i + j * 64] = 0.01f * (float)((i - 32) * (i - 32) + (j - 24) * (j - 24));
}

static void test_raster_sources(void **state)
{
	const char *text =
		"{\"name\": \"r\", \"terrain\": {\"heightmap\": \"t.png\", \"metres_per_pixel\": 2},\n"
		" \"materials\": [{\"name\": \"w\", \"kind\": \"lake\"}],\n"
		" \"sources\": [\n"
		"  {\"type\": \"spring\", \"point\": [20, 30], \"radius\": 5, \"discharge\": 3, \"material\": \"w\"},\n"
		"  {\"type\": \"spring\", \"point\": [101, 51], \"radius\": 0.1, \"discharge\": 0.5, \"material\": \"w\"},\n"
		"  {\"type\": \"lake\", \"seed\": [65, 49], \"level\": 1.0, \"material\": \"w\"},\n"
		"  {\"type\": \"rain\", \"rate\": 36},\n"
		"  {\"type\": \"sink\", \"region\": [[0,0],[10,0],[10,10],[0,10]], \"discharge\": 0.25}],\n"
		" \"blockers\": [{\"polygon\": [[40,0],[50,0],[50,96],[40,96]], \"bottom\": 7, \"top\": 8}],\n"
		" \"modifiers\": [{\"center\": [64, 48], \"radius\": 20, \"velocity\": [1, 0], \"strength\": 2,\n"
		"   \"falloff\": \"linear\", \"falloff_width\": 10}]}";
	struct wb_scene sc;
	struct wb_diags d;
	struct wb_heightmap hm;
	struct wb_raster r;
	assert_int_equal(parse(text, &sc, &d), WB_OK);
	bowl(&hm);
	assert_int_equal(wb_raster_build(&sc, &hm, &r, &d), WB_OK);
	size_t n = 64 * 48;
	double a = r.dx * r.dx;
	/* sources integrate to their discharge; rain 36 mm/h = 1e-5 m/s over
	 * the map; the sink removes 0.25 m^3/s */
	double total = 0, rain = 1e-5 * n * a;
	for (size_t k = 0; k < n; k++)
		total += r.src[k] * a;
	assert_true(fabs(total - (3 + 0.5 + rain - 0.25)) < 1e-5 * (3 + rain));
	assert_true(fabs(r.total_inflow - (3.5 + rain)) < 1e-9);
	/* the tiny spring still lands in its cell (50, 25) */
	assert_true(r.src[50 + 25 * 64] * a > 0.49);
	/* lake: exactly the connected cells below 1 m, filled to the level */
	long lake = 0;
	for (int j = 0; j < 48; j++)
		for (int i = 0; i < 64; i++) {
			size_t k = i + (size_t)j * 64;
			int below = hm.z[k] < 1.0f;
			if (below) {
				assert_int_equal(r.body[k], 3);
				assert_true(fabs(r.h0[k] + r.z[k] - 1.0) < 1e-6);
				lake++;
			} else {
				assert_true(r.h0[k] == 0);
			}
		}
	assert_true(lake > 300);
	/* blocker over columns 20..24 */
	assert_true(r.flags[22 + 10 * 64] & WB_CELL_BLOCKER);
	assert_true(r.block_bot[22 + 10 * 64] == 7 && r.block_top[22 + 10 * 64] == 8);
	assert_false(r.flags[30 + 10 * 64] & WB_CELL_BLOCKER);
	assert_true(isinf(r.block_bot[30 + 10 * 64]));
	/* modifier: full strength in the middle, linear fade at the rim */
	assert_true(fabs(r.mod_k[32 + 24 * 64] - 2) < 1e-6);
	assert_true(r.mod_u[32 + 24 * 64] == 1 && r.mod_v[32 + 24 * 64] == 0);
	double x = (41 + 0.5) * 2, y = (24 + 0.5) * 2;
	double inward = 20 - hypot(x - 64, y - 48);
	assert_true(fabs(r.mod_k[41 + 24 * 64] - 2 * inward / 10) < 1e-5);
	assert_true(r.mod_k[60 + 24 * 64] == 0);
	wb_raster_free(&r);
	wb_heightmap_free(&hm);
	wb_scene_free(&sc);
	wb_diags_release(&d);
}

static void test_raster_ocean_and_errors(void **state)
{
	const char *text =
		"{\"name\": \"o\", \"terrain\": {\"heightmap\": \"t.png\"},\n"
		" \"materials\": [{\"name\": \"sea\", \"kind\": \"ocean\"}],\n"
		" \"sources\": [{\"type\": \"ocean\", \"level\": 5, \"material\": \"sea\",\n"
		"   \"exclude\": [[[0,0],[8,0],[8,8],[0,8]]]}]}";
	struct wb_scene sc;
	struct wb_diags d;
	struct wb_heightmap hm;
	struct wb_raster r;
	/* a slope: z = i / 4, so columns below 20 are under the sea */
	memset(&hm, 0, sizeof(hm));
	hm.nx = 64;
	hm.ny = 40;
	hm.z = malloc(sizeof(float) * 64 * 40);
	for (int j = 0; j < 40; j++)
		for (int i = 0; i < 64; i++)
			hm.z[i + j * 64] = i / 4.0f;
	assert_int_equal(parse(text, &sc, &d), WB_OK);
	assert_int_equal(wb_raster_build(&sc, &hm, &r, &d), WB_OK);
	for (int j = 0; j < 40; j++)
		for (int i = 0; i < 64; i++) {
			size_t k = i + (size_t)j * 64;
			int excluded = i < 8 && j < 8;
			int sea = i < 20 && !excluded;
			assert_int_equal(r.body[k] == 1, sea);
			assert_true(sea ? fabs(r.h0[k] - (5 - i / 4.0)) < 1e-6 : r.h0[k] == 0);
			/* held only beyond the free band from the shore and the harbour */
			int held = (r.flags[k] & WB_CELL_FIXED) != 0;
			if (held)
				assert_true(sea && i < 20 - 8 && (i >= 16 || j >= 16));
		}
	assert_true(r.flags[2 + 30 * 64] & WB_CELL_FIXED);
	wb_raster_free(&r);
	wb_scene_free(&sc);
	wb_diags_release(&d);

	/* a spring off the map and a lake seed above its level */
	const char *bad =
		"{\"name\": \"o\", \"terrain\": {\"heightmap\": \"t.png\"},\n"
		" \"materials\": [{\"name\": \"w\", \"kind\": \"lake\"}],\n"
		" \"sources\": [{\"type\": \"spring\", \"point\": [500, 3], \"discharge\": 1, \"material\": \"w\"},\n"
		"   {\"type\": \"lake\", \"seed\": [60, 3], \"level\": 2, \"material\": \"w\"}]}";
	assert_int_equal(parse(bad, &sc, &d), WB_OK);
	assert_int_equal(wb_raster_build(&sc, &hm, &r, &d), WB_EINPUT);
	assert_int_equal(d.errors, 2);
	assert_non_null(find(&d, "sources[0].point"));
	assert_non_null(strstr(find(&d, "sources[0].point")->msg, "(500, 3)"));
	assert_non_null(find(&d, "sources[1].seed"));
	assert_null(r.z);
	wb_scene_free(&sc);
	wb_heightmap_free(&hm);
	wb_diags_release(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_minimal_defaults),
		cmocka_unit_test(test_syntax_error_line),
		cmocka_unit_test(test_all_problems_reported),
		cmocka_unit_test(test_unknown_key_suggestion),
		cmocka_unit_test(test_full_scene),
		cmocka_unit_test(test_semantic_rules),
		cmocka_unit_test(test_schema_matches_parser),
		cmocka_unit_test(test_raster_sources),
		cmocka_unit_test(test_raster_ocean_and_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
