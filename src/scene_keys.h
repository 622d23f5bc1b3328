/*
 * scene_keys.h - the keys each object of a scene (format v1) may hold.
 *
 * One list per object kind, NULL-terminated. scene.c warns about any other
 * key (naming the closest of these); tests/test_scene.c checks that these
 * lists and schemas/scene.schema.json name the same keys.
 */
#ifndef WB_SCENE_KEYS_H
#define WB_SCENE_KEYS_H

/*
 * Limits of a scene (README "Limits", schemas/scene.schema.json). Past any
 * of them the scene is invalid (exit 2), with an error naming the file, the
 * JSON path and the limit; nothing is read or allocated beyond them.
 */
#define WB_SCENE_MAX_BYTES ((size_t)16 << 20) /* scene file: 16 MiB */
#define WB_SCENE_MAX_DEPTH 32      /* nested arrays and objects */
#define WB_SCENE_MAX_VALUES 1000000 /* JSON values: ~70 MB of cJSON nodes */
#define WB_SCENE_MAX_KEYS 1000     /* keys in one object */
#define WB_SCENE_MAX_POINTS 100000 /* points of one polygon or path */
#define WB_SCENE_MAX_POLYGONS 10000 /* blockers, modifiers, initial areas */
#define WB_SCENE_MAX_EXCLUDE 1000  /* exclusion polygons of one ocean */
#define WB_SCENE_MAX_SOURCES 254   /* the body layer is 8-bit */
#define WB_SCENE_MAX_MATERIALS 255 /* ids 1..255 */

static const char *const wb_keys_root[] = {
	"name", "version", "origin", "terrain", "boundaries", "initial_water",
	"materials", "sources", "blockers", "modifiers", "simulation", "output",
	NULL };
static const char *const wb_keys_terrain[] = {
	"heightmap", "format", "size", "metres_per_pixel", "height_scale",
	"height_offset", NULL };
static const char *const wb_keys_boundaries[] = {
	"west", "east", "north", "south", NULL };
static const char *const wb_keys_edge[] = {
	"type", "slip", "discharge", "velocity", "depth", "level", NULL };
static const char *const wb_keys_initial[] = { "level", "areas", NULL };
static const char *const wb_keys_initial_area[] = { "polygon", "level", NULL };
static const char *const wb_keys_material[] = {
	"id", "name", "kind", "waves", NULL };
static const char *const wb_keys_waves[] = {
	"amplitude", "frequency", "speed", NULL };
static const char *const wb_keys_source_any[] = {
	"type", "name", "material", "path", "width", "discharge", "point",
	"radius", "polygon", "seed", "level", "exclude", "rate", "region",
	"drain_all", NULL };
static const char *const wb_keys_source_river[] = {
	"type", "name", "material", "path", "width", "discharge", NULL };
static const char *const wb_keys_source_spring[] = {
	"type", "name", "material", "point", "radius", "discharge", NULL };
static const char *const wb_keys_source_lake[] = {
	"type", "name", "material", "polygon", "seed", "level", NULL };
static const char *const wb_keys_source_ocean[] = {
	"type", "name", "material", "level", "exclude", NULL };
static const char *const wb_keys_source_rain[] = {
	"type", "name", "material", "rate", "region", NULL };
static const char *const wb_keys_source_sink[] = {
	"type", "name", "point", "radius", "region", "discharge", "drain_all",
	NULL };
static const char *const wb_keys_blocker[] = {
	"name", "polygon", "bottom", "top", NULL };
static const char *const wb_keys_modifier[] = {
	"name", "polygon", "center", "radius", "velocity", "direction", "speed",
	"strength", "falloff", "falloff_width", NULL };
static const char *const wb_keys_sim[] = {
	"solver", "manning", "viscosity", "lattice_speed", "dt", "max_steps",
	"tolerance", "window", "dry_depth", "seed", "advection", "foam",
	"initial", "keep_dry", "coarse_levels", "lbm_hybrid",
	"steady_acceleration", NULL };
static const char *const wb_keys_keep_dry[] = {
	"name", "point", "polygon", NULL };
static const char *const wb_keys_foam[] = {
	"trapped_air", "steepness", "trapped_air_min", "trapped_air_max",
	"steepness_min", "steepness_max", "diffusion", "dissipation", NULL };
static const char *const wb_keys_output[] = {
	"lods", "layers", "distance_max", "min_depth", "min_flow", "compression",
	NULL };

#endif
