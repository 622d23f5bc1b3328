# wbake — one top-level Makefile.
#   make              build the library and every program into bin/
#   make test         install missing packages, build, run every test
#   make bench        run the benchmarks ('bench <name> <value> <unit>' lines)
#   make bake         bake samples/river into out/river (with report.html)
#   make bake-world   generate the open-world terrain (build/world, 4096^2;
#                     WORLD_SIZE=N for another size) and bake samples/world
#   make fuzz         build libFuzzer targets (clang) into build/fuzz/
#   make fuzz-run     run each for FUZZ_SECONDS (20); make test does too
#                     (FUZZ_SECONDS=0 skips); new inputs go to build/fuzz/
#   make SAN=1 test   the same with ASan/UBSan (objects in build/san/); the
#                     long solver runs are shortened (WB_TEST_QUICK=1)
#   make OPENCL=1     build with the OpenCL path
#   make MPI=1        also bin-mpi/wbake: one bake over the ranks of an
#                     mpirun (Open MPI, mpicc; docs/mpi.md); make mpi
#                     builds only that
#   make fresh-check  make test in a debootstrapped minimal Debian 12 (root)
#   make V=1          show the commands

CC      ?= cc
OPT     ?= -O3
ifeq ($(shell grep -qw avx2 /proc/cpuinfo 2>/dev/null && echo y),y)
ARCH    ?= -march=x86-64-v3
endif
WARN     = -Wall -Wextra -Wshadow -Wmissing-prototypes -Wstrict-prototypes \
           -Wpointer-arith -Wformat=2 -Wvla -Wno-unused-parameter \
           -Wno-format-truncation
# -ffp-contract=off: no fused multiply-add behind our back, so that results
# do not depend on which loop iterations the compiler vectorised.
FINAL_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L $(OPT) $(ARCH) -ffp-contract=off \
           -fopenmp -g $(WARN) -Iinclude -Isrc -I/usr/include/cjson -MMD -MP $(CFLAGS)
FINAL_LDFLAGS = -fopenmp $(LDFLAGS)
LIBS     = -lpng -lz -lcjson -lm

BUILD   = build/rel
BIN     = bin
ifeq ($(SAN),1)
BUILD   = build/san
BIN     = build/san/bin
OPT     = -O1
FINAL_CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
FINAL_LDFLAGS += -fsanitize=address,undefined
endif
ifeq ($(OPENCL),1)
FINAL_CFLAGS += -DWB_OPENCL=1 -DCL_TARGET_OPENCL_VERSION=120
LIBS    += -lOpenCL
BUILD  := $(BUILD)-cl
BIN    := $(BIN)-cl
endif

ifneq ($(V),1)
Q = @
endif

LIB_SRC   = $(sort $(wildcard src/*.c))
LIB_OBJ   = $(LIB_SRC:%.c=$(BUILD)/%.o)
# OpenCL kernels (src/cl/*.cl) are embedded into the binary as C strings.
CL_SRC    = $(sort $(wildcard src/cl/*.cl))
ifeq ($(OPENCL),1)
LIB_OBJ  += $(BUILD)/gen/cl_kernels.o
endif
LIB       = $(BUILD)/libwbake.a
TOOL_SRC  = $(sort $(wildcard tools/*.c))
PROGS     = $(BIN)/wbake $(TOOL_SRC:tools/%.c=$(BIN)/%)
# tests/test_opencl*.c only build (and run) in OPENCL=1 builds.
TEST_SRC  = $(sort $(wildcard tests/test_*.c))
ifneq ($(OPENCL),1)
TEST_SRC := $(filter-out tests/test_opencl%,$(TEST_SRC))
endif
TESTS     = $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
BENCH_SRC = $(sort $(wildcard tests/bench_*.c))
BENCHES   = $(BENCH_SRC:tests/%.c=$(BUILD)/tests/%)
FUZZ_SRC  = $(sort $(wildcard fuzz/fuzz_*.c))
REPLAYS   = $(FUZZ_SRC:fuzz/%.c=$(BUILD)/replay/%)
FUZZERS   = $(FUZZ_SRC:fuzz/%.c=build/fuzz/%)
# Engine examples (examples/*.c): standalone C99 against include/wtp*.h and
# zlib only, as an engine would build them; run by tests/cli/wtile_example_*.sh.
EXAMPLE_SRC = $(sort $(wildcard examples/*.c))
EXAMPLES  = $(EXAMPLE_SRC:examples/%.c=$(BUILD)/examples/%)

.SECONDARY:
.PHONY: all deps test-deps test bench bake bake-world fuzz clean mpi
.DEFAULT_GOAL := all

# MPI (docs/mpi.md): only src/mpi_bake.c and bake/wbake.c use MPI; they are
# compiled again with mpicc and -DWB_MPI into $(BUILD)-mpi and linked with
# the plain library (whose mpi_bake.o is empty and never pulled in).
MPICC     ?= mpicc
MPI_BUILD  = $(BUILD)-mpi
MPI_WBAKE  = $(BIN)-mpi/wbake
mpi: $(MPI_WBAKE)
$(MPI_BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  MPICC   $<")
	$(Q)$(MPICC) $(FINAL_CFLAGS) -DWB_MPI=1 -c $< -o $@
$(MPI_WBAKE): $(MPI_BUILD)/bake/wbake.o $(MPI_BUILD)/src/mpi_bake.o $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(MPICC) $(FINAL_LDFLAGS) $^ $(LIBS) -o $@
all: deps $(PROGS) $(EXAMPLES) $(if $(filter 1,$(MPI)),$(MPI_WBAKE))

deps:
	$(Q)sh scripts/deps.sh build $(if $(filter 1,$(OPENCL)),opencl) $(if $(filter 1,$(MPI)),mpi)
test-deps:
	$(Q)sh scripts/deps.sh test
# CI on a fresh minimal Debian 12 in a chroot (root; see README.md)
.PHONY: fresh-check
fresh-check:
	sh scripts/fresh-check.sh

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(FINAL_CFLAGS) -c $< -o $@

$(BUILD)/gen/cl_kernels.c: $(CL_SRC) scripts/embed.sh
	@mkdir -p $(dir $@)
	$(Q)sh scripts/embed.sh $(CL_SRC) > $@.tmp && mv $@.tmp $@
$(BUILD)/gen/cl_kernels.o: $(BUILD)/gen/cl_kernels.c
	$(Q)$(CC) $(FINAL_CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/examples/%: examples/%.c include/wtp.h include/wtp_alloc.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) -std=c99 -D_POSIX_C_SOURCE=200809L -O2 $(WARN) -Iinclude $< -lz -lm -o $@

$(BIN)/wbake: $(BUILD)/bake/wbake.o $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(FINAL_LDFLAGS) $^ $(LIBS) -o $@

$(BIN)/%: $(BUILD)/tools/%.o $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(FINAL_LDFLAGS) $^ $(LIBS) -o $@

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(FINAL_LDFLAGS) $^ $(LIBS) -lcmocka -o $@

# Fuzz targets, replayed over their corpus by make test (no clang needed).
$(BUILD)/replay/%: $(BUILD)/fuzz/%.o $(BUILD)/fuzz/replay_main.o $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(FINAL_LDFLAGS) $^ $(LIBS) -o $@
$(BUILD)/fuzz/replay_main.o: fuzz/replay_main.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(FINAL_CFLAGS) -c $< -o $@

# The fuzz build is serial: clang's -fopenmp=libgomp only links libgomp,
# defines no _OPENMP and ignores the OpenMP pragmas, so a variable used only
# in a num_threads() clause looks unused here; the gcc build, which sees the
# clauses, keeps those warnings.
FUZZ_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L -g -O1 -fopenmp=libgomp \
	-Wall -Wextra -Wno-unused-parameter -Wno-unused-variable -Wno-unused-function \
	-fsanitize=fuzzer-no-link,address,undefined -Iinclude -Isrc -I/usr/include/cjson \
	-MMD -MP
build/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $< (fuzz)")
	$(Q)clang $(FUZZ_CFLAGS) -c $< -o $@
build/fuzz/libwbake.a: $(LIB_SRC:%.c=build/fuzz/obj/%.o)
	$(Q)rm -f $@ && ar rcs $@ $^
build/fuzz/%: build/fuzz/obj/fuzz/%.o build/fuzz/libwbake.a
	@echo "  FUZZ    $@"
	$(Q)clang -fsanitize=fuzzer,address,undefined $^ $(LIBS) -lgomp -o $@

# make fuzz-run runs each target FUZZ_SECONDS (make test: the same, 20 s
# each); new inputs go to build/fuzz/corpus-new/<target>, never into the
# committed fuzz/corpus/<target>; crashes to build/fuzz/artifacts/<target>/.
FUZZ_SECONDS ?= 20
.PHONY: fuzz-run
fuzz:
	$(Q)sh scripts/deps.sh fuzz
	$(Q)$(MAKE) --no-print-directory $(FUZZERS)
	@echo "fuzzers in build/fuzz/; make fuzz-run FUZZ_SECONDS=$(FUZZ_SECONDS) runs them all, or by hand:"
	@echo "  mkdir -p build/fuzz/corpus-new/fuzz_scene"
	@echo "  build/fuzz/fuzz_scene build/fuzz/corpus-new/fuzz_scene fuzz/corpus/fuzz_scene"
	@echo "  (libFuzzer writes new inputs only into the first directory)"
fuzz-run: fuzz
	$(Q)for f in $(FUZZERS); do sh fuzz/run.sh $$f $(FUZZ_SECONDS) || exit 1; done

# make test also builds the OpenCL path and runs its tests on PoCL (CPU).
test: test-deps
	$(Q)$(MAKE) --no-print-directory $(PROGS) $(TESTS) $(REPLAYS) $(FUZZERS) $(EXAMPLES) $(MPI_WBAKE)
ifneq ($(OPENCL),1)
	$(Q)$(MAKE) --no-print-directory OPENCL=1 cl-tests
endif
	$(Q)BUILD=$(BUILD) BIN=$(BIN) MPI_BIN=$(BIN)-mpi CL_MPI_BIN=$(BIN)-cl-mpi CL_BUILD=$(BUILD)-cl CL_BIN=$(BIN)-cl FUZZ_SECONDS=$(FUZZ_SECONDS) \
	  $(if $(filter 1,$(SAN)),WB_TEST_QUICK=1) sh tests/run.sh

.PHONY: cl-tests
cl-tests:
	$(Q)$(MAKE) --no-print-directory $(PROGS) $(filter $(BUILD)/tests/test_opencl%,$(TESTS)) $(MPI_WBAKE)

ifneq ($(OPENCL),1)
BENCHES := $(filter-out $(BUILD)/tests/bench_opencl%,$(BENCHES))
endif
# bench_world runs on a world generated here (BENCH_WORLD_SIZE^2, 2048 by
# default: the dense reference steps of 4096^2 take seconds each on a
# shared 2-core machine; make BENCH_WORLD_SIZE=4096 bench for the sample).
BENCH_WORLD_SIZE ?= 2048
bench: test-deps
	$(Q)$(MAKE) --no-print-directory $(PROGS) $(BENCHES)
	$(Q)$(BIN)/mkterrain world $(BENCH_WORLD_SIZE) build/world-$(BENCH_WORLD_SIZE) >/dev/null
	$(Q)for b in $(BENCHES); do \
	  WB_WORLD_SCENE=build/world-$(BENCH_WORLD_SIZE)/scene.json $$b || exit 1; done

bake: all
	$(BIN)/wbake samples/river/scene.json -o out/river --report

# The world's terrain is generated at bake time (not committed):
# samples/world/scene.json reads build/world/terrain.png. Another size
# bakes the scene mkterrain writes next to its terrain.
WORLD_SIZE ?= 4096
bake-world: all
ifeq ($(WORLD_SIZE),4096)
	$(BIN)/mkterrain world 4096 build/world
	$(BIN)/wbake samples/world/scene.json -o out/world
else
	$(BIN)/mkterrain world $(WORLD_SIZE) build/world-$(WORLD_SIZE)
	$(BIN)/wbake build/world-$(WORLD_SIZE)/scene.json -o out/world-$(WORLD_SIZE)
endif

clean:
	rm -rf build bin bin-mpi out tests/tmp

-include $(shell find build -name '*.d' 2>/dev/null)
