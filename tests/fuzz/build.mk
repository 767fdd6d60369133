# Fuzzing (tests/fuzz): targets for every parser of external input, built two ways.
#
#   $(BUILD)/fuzz/replay-NAME  tests/fuzz/fuzz-NAME.c with the plain corpus driver
#                              (tests/fuzz/replay.c), built by $(CC) with the library's flags;
#                              part of the test build, run by tests/cases/rel-fuzz-corpus.sh.
#   $(BUILD)/fuzz/fuzz-NAME    the same target with libFuzzer, ASan and UBSan (clang).
#   $(BUILD)/tests/progs/libr-late-{a,b,loader}.so
#                              the libraries tests/progs/r-late.cu loads late (reliability tests
#                              share this fragment; part of the test build).
#
# Targets:
#   fuzz        builds the libFuzzer binaries and fuzzes each target for FUZZ_SECONDS (30) from
#               its committed corpus (tests/fuzz/corpus/NAME) plus tests/fuzz/regress/NAME;
#               new inputs go to $(BUILD)/fuzz/corpus-NAME, findings to $(BUILD)/fuzz/crash-NAME-*.
#   fuzz-seeds  regenerates the seed corpus from the nvcc-built test kernels (tools: python3).
#   soak        the long soak: tests/cases/rel-soak.sh for SOAK_SECONDS (default 600).
#
# FUZZ_CC is the libFuzzer compiler (default: clang; Debian's clang 14 with libclang-rt-14-dev).

FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 30
SOAK_SECONDS ?= 600
FUZZ_NAMES   := $(patsubst tests/fuzz/fuzz-%.c,%,$(wildcard tests/fuzz/fuzz-*.c))
FUZZ_DEPS    := src/elf.c src/config.c src/log.c
FUZZ_REPLAY  := $(patsubst %,$(BUILD)/fuzz/replay-%,$(FUZZ_NAMES))
FUZZ_BINS    := $(patsubst %,$(BUILD)/fuzz/fuzz-%,$(FUZZ_NAMES))
AG_TEST_ALL  += $(FUZZ_REPLAY)

$(BUILD)/fuzz/replay-%: tests/fuzz/fuzz-%.c tests/fuzz/replay.c tests/fuzz/fuzz.h \
                        $(patsubst %.c,$(BUILD)/obj/%.o,$(FUZZ_DEPS))
	@mkdir -p $(dir $@)
	$(CC) $(AG_CFLAGS) $(CFLAGS) -Itests/fuzz -o $@ tests/fuzz/fuzz-$*.c tests/fuzz/replay.c \
	    $(patsubst %.c,$(BUILD)/obj/%.o,$(FUZZ_DEPS)) $(AG_LIBS)

$(BUILD)/fuzz/fuzz-%: tests/fuzz/fuzz-%.c tests/fuzz/fuzz.h $(FUZZ_DEPS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=gnu11 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
	    -fno-sanitize-recover=undefined -I$(CUDA_HOME)/include -Isrc -Itests/fuzz -o $@ \
	    tests/fuzz/fuzz-$*.c $(FUZZ_DEPS) $(AG_LIBS)

# The profiler-trace reader (tools/trace-parse.c, with zlib for .json.gz input) is linked into
# its own target only.
$(BUILD)/fuzz/replay-trace $(BUILD)/fuzz/fuzz-trace: FUZZ_DEPS += tools/trace-parse.c
$(BUILD)/fuzz/replay-trace $(BUILD)/fuzz/fuzz-trace: AG_LIBS += -lz
$(BUILD)/fuzz/replay-trace: $(BUILD)/obj/tools/trace-parse.o tools/trace-parse.h
$(BUILD)/fuzz/fuzz-trace: tools/trace-parse.c tools/trace-parse.h

.PHONY: fuzz fuzz-seeds soak
fuzz: $(FUZZ_BINS)
	@bad=""; for t in $(FUZZ_NAMES); do \
	  mkdir -p $(BUILD)/fuzz/corpus-$$t; \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	  $(BUILD)/fuzz/fuzz-$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	      -max_len=65536 -print_final_stats=1 -artifact_prefix=$(BUILD)/fuzz/crash-$$t- \
	      $(BUILD)/fuzz/corpus-$$t tests/fuzz/corpus/$$t \
	      $$(test -d tests/fuzz/regress/$$t && echo tests/fuzz/regress/$$t) || bad="$$bad $$t"; \
	done; \
	if [ -n "$$bad" ]; then echo "fuzz: findings in:$$bad (inputs: $(BUILD)/fuzz/crash-*)"; exit 1; fi; \
	echo "fuzz: no finding in $(FUZZ_NAMES)"

fuzz-seeds: $(CUBINS) $(FATBINS)
	tests/fuzz/make-seeds $(BUILD)

soak: $(AG_ALL) $(BUILD)/tests/progs/r-soak
	BUILD=$(BUILD) AG_SOAK_SECONDS=$(SOAK_SECONDS) AG_TEST_TIMEOUT=$$(( $(SOAK_SECONDS) * 3 + 120 )) \
	    tests/run-tests rel-soak

# The libraries tests/progs/r-late.cu loads late (built from the same source, next to it).
R_LATE_LIBS := $(BUILD)/tests/progs/libr-late-a.so $(BUILD)/tests/progs/libr-late-b.so \
               $(BUILD)/tests/progs/libr-late-loader.so
AG_TEST_ALL += $(R_LATE_LIBS)
$(BUILD)/tests/progs/libr-late-%.so: tests/progs/r-late.cu tests/progs/prog.h
	@mkdir -p $(dir $@)
	$(NVCC) $(AG_NVCCFLAGS) $(NVCCFLAGS) -shared -Xcompiler -fPIC \
	    $(if $(filter loader,$*),-DR_LATE_LOADER,-DR_LATE_LIB=$*) -o $@ $< $(AG_NVLIBS) -ldl
