# Sanitizer builds and static analysis (included by the top Makefile).
#
#   make asan    ASan + UBSan: builds the library, the simulator and every test (C and CUDA C
#                host code) with -fsanitize=address,undefined into $(ASAN_BUILD), then runs the
#                whole suite (tests/run-tests) under it. Leak checking (LSan) is on.
#   make ubsan   the same build and run as `make asan` (one build serves both sanitizers).
#   make tsan    ThreadSanitizer, likewise, into $(TSAN_BUILD).
#   make check   static analysis (cppcheck, then clang-tidy) of src/, shims/, tests/sim/ and
#                tools/*.c; any finding fails.
#
# Contract of a sanitizer run. Everything the project builds is instrumented, nvcc-built
# programs included (their host code, through -Xcompiler), so a test program needs no help to
# run. Wherever the preload library is preloaded, the sanitizer runtime must come first in
# LD_PRELOAD (ASan refuses to start otherwise; TSan's interceptors must come before libc's, or
# it misses the locks taken in an uninstrumented program): the run exports AG_SAN_PRELOAD, the
# runtime's path, and the case scripts put it in front of the library (tests/cases/lib.sh does
# it in ag_preload; scripts that set LD_PRELOAD themselves write
# "${AG_SAN_PRELOAD:+$AG_SAN_PRELOAD }$AG_LIB"). The runtime is preloaded only together with the
# library, never alone and never into whole scripts: TSan's runtime in a process without
# instrumented code is never initialised and its setjmp interceptor jumps through a null pointer
# (bash, dash and python die of SIGSEGV at once), and the shells, compilers and python the
# scripts run are not the project's and leak by design. tests/cases/tools-launcher.sh shows how
# a script whose own programs are shells (the launcher) handles it.
#
# Every report fails the run twice over: the sanitizers stop the process with a non-zero status
# (halt_on_error, -fno-sanitize-recover=all), so the test fails, and each report is also written
# to $(BUILD)/san/report.<pid>; after the suite the target fails if any report exists, which
# catches processes whose status a test does not look at. The reports are printed then.
#
# Suppressions live in tests/sanitizers/{lsan,tsan,ubsan}.supp, one documented entry per
# problem provably outside the project (docs/ci-and-sanitizers.md, "Adding a suppression",
# says how to add one).
#
# Variables: ASAN_BUILD (default build-asan), TSAN_BUILD (default build-tsan), CHECK_BUILD
# (default build-check, for the generated headers the analysers read), SAN_JOBS (parallel jobs of
# the build, and tests run at once; default: number of CPUs), SAN_TESTS (run only the tests whose
# names contain one of these words, as tests/run-tests takes them; default: all), CPPCHECK,
# CLANG_TIDY.

ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
SAN_JOBS   ?= $(shell nproc 2>/dev/null || echo 2)
SAN_SUPP   := $(abspath tests/sanitizers)

# -O1 keeps the runs quick and the stacks readable; frame pointers make the fast unwinder's
# stacks complete.
ASAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
TSAN_FLAGS := -fsanitize=thread -fno-omit-frame-pointer
# nvcc splits -Xcompiler values at commas, so one option per -Xcompiler.
ASAN_NVFLAGS := -Xcompiler=-fsanitize=address -Xcompiler=-fsanitize=undefined \
                -Xcompiler=-fno-sanitize-recover=all -Xcompiler=-fno-omit-frame-pointer
TSAN_NVFLAGS := -Xcompiler=-fsanitize=thread -Xcompiler=-fno-omit-frame-pointer

# The runtimes, as the compiler links them (a shared libasan/libtsan).
ASAN_RT = $(realpath $(shell $(CC) -print-file-name=libasan.so))
TSAN_RT = $(realpath $(shell $(CC) -print-file-name=libtsan.so))

ASAN_ENV = ASAN_OPTIONS=halt_on_error=1:abort_on_error=0:detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1:log_path=$(abspath $(ASAN_BUILD))/san/report \
           LSAN_OPTIONS=suppressions=$(SAN_SUPP)/lsan.supp:print_suppressions=0 \
           UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=$(SAN_SUPP)/ubsan.supp:log_path=$(abspath $(ASAN_BUILD))/san/report
# Under TSan every launch costs tens of microseconds and the gaps between the launches of one
# sequence often pass the default hold bound of 1 ms (AUTOGRAPH_HOLD_US), so holds end by timeout
# and the tests' replay shares fall for no fault of the engine: the bound is 20 ms there. The
# bound's own test (rel-holds) also runs with explicit bounds of 100 µs, 20 ms and 0.
TSAN_ENV = TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:history_size=4:suppressions=$(SAN_SUPP)/tsan.supp:log_path=$(abspath $(TSAN_BUILD))/san/report \
           AUTOGRAPH_HOLD_US=20000

# san-run BUILD, CFLAGS, NVCC flags, runtime, environment: build everything in BUILD with the
# flags (passed through the environment so that the fragments' target-specific `+=` still
# apply), then run the suite and fail on any report.
define san-run
	CFLAGS='-O1 -g $(2)' LDFLAGS='$(2)' NVCCFLAGS='-O2 -g $(3)' \
	    $(MAKE) -j$(SAN_JOBS) BUILD=$(1) san-build
	rm -rf $(1)/san && mkdir -p $(1)/san
	@status=0; \
	env $(5) AG_SAN_PRELOAD='$(4)' AG_TEST_JOBS=$(SAN_JOBS) BUILD=$(1) CUDA_HOME=$(CUDA_HOME) tests/run-tests $(SAN_TESTS) || status=$$?; \
	if [ -n "$$(ls -A $(1)/san)" ]; then \
	    for f in $(1)/san/*; do echo "==== $$f"; cat "$$f"; done; \
	    echo "sanitizer reports in $(1)/san (see above)"; status=1; \
	fi; \
	exit $$status
endef

.PHONY: asan ubsan tsan check

# Everything `make test` builds but the CUDA 12 builds of the test programs (cuda12-preload, their
# only user, is skipped under the sanitizers: it runs the library's same code through the
# simulated 12 runtime, and the sanitizer stages are most of CI's time); a target of the
# sub-make, where BUILD is the sanitizer's.
# AG_TEST_ALL is only complete once every fragment is read, and fragments included after this
# one (tests/fuzz/build.mk: the corpus replay drivers, the r-late libraries) add to it, so the
# list is expanded in the recipe, not as a prerequisite (which make expands when it reads the
# rule). BUILD and the flags reach the nested make through the command line and environment.
.PHONY: san-build
san-build: all
	+$(MAKE) --no-print-directory $(filter-out $(PROGS12),$(AG_TEST_ALL))

asan:
	$(call san-run,$(ASAN_BUILD),$(ASAN_FLAGS),$(ASAN_NVFLAGS),$(ASAN_RT),$(ASAN_ENV))

ubsan: asan

tsan:
	$(call san-run,$(TSAN_BUILD),$(TSAN_FLAGS),$(TSAN_NVFLAGS),$(TSAN_RT),$(TSAN_ENV))

# ---- Static analysis ----
#
# Two analysers, each with checks chosen for real defects rather than style:
#   cppcheck   --enable=warning,portability (plus its always-on errors): uninitialised and
#              out-of-bounds accesses, null dereferences, leaks of memory and FILE*, format
#              string mismatches, sizeof mistakes. No --library=posix: its model of mmap and
#              dlopen reports the MAP_ANONYMOUS idiom and process-lifetime dlopen handles.
#   clang-tidy clang-analyzer-* (the path-sensitive Clang Static Analyzer: use after free,
#              double free, null dereference, leaks, uninitialised values, dead stores) without
#              security.insecureAPI (it flags every memcpy/snprintf) and optin.performance.Padding;
#              plus the bugprone checks that find bugs in C: wrong sizes in allocation and
#              string calls, signed char misuse, suspicious memset/semicolons/missing commas,
#              integer division in float context, too-small loop variables, infinite loops,
#              unhandled POSIX return values, async-unsafe signal handlers and spurious wakeups.
#              Left out as noise here: branch-clone, easily-swappable-parameters,
#              reserved-identifier (ag__ names), macro-parentheses (X-macro type arguments),
#              sizeof-expression (CUDA handles are pointer typedefs), suspicious-string-compare
#              (the !strcmp idiom), narrowing/implicit-widening conversions.
# Both see the flags of the real build (gnu11, the CUDA headers, the generated tables).
# A finding that is a false positive is silenced where it occurs with a comment saying why:
# `// cppcheck-suppress ID` on the line before, or `// NOLINT(check)` on the line.

CPPCHECK   ?= cppcheck
CLANG_TIDY ?= clang-tidy
CHECK_SRCS  = $(wildcard src/*.c shims/*.c tests/sim/*/*.c tools/*.c)
CHECK_INC   = -I$(CUDA_HOME)/include -Isrc -Itests/sim -I$(BUILD)/gen
TIDY_CHECKS = -*,clang-analyzer-*,-clang-analyzer-security.insecureAPI.*,-clang-analyzer-optin.performance.Padding,bugprone-bool-pointer-implicit-conversion,bugprone-infinite-loop,bugprone-integer-division,bugprone-misplaced-operator-in-strlen-in-alloc,bugprone-misplaced-pointer-arithmetic-in-alloc,bugprone-misplaced-widening-cast,bugprone-multiple-statement-macro,bugprone-not-null-terminated-result,bugprone-posix-return,bugprone-redundant-branch-condition,bugprone-signal-handler,bugprone-signed-char-misuse,bugprone-spuriously-wake-up-functions,bugprone-suspicious-memory-comparison,bugprone-suspicious-memset-usage,bugprone-suspicious-missing-comma,bugprone-suspicious-semicolon,bugprone-terminating-continue,bugprone-too-small-loop-variable,bugprone-undefined-memory-manipulation,bugprone-unused-return-value,misc-redundant-expression

# The generated tables go to their own folder, like the sanitizer builds.
CHECK_BUILD ?= build-check
check:
	$(MAKE) BUILD=$(CHECK_BUILD) check-run

.PHONY: check-run
check-run: $(AG_GEN)
	$(CPPCHECK) --enable=warning,portability --std=c11 --inline-suppr --quiet \
	    --error-exitcode=1 -j$(SAN_JOBS) -D__GNUC__=12 -D__x86_64__ -D__linux__ \
	    -Isrc -Itests/sim -I$(BUILD)/gen --suppress=missingIncludeSystem \
	    --template='{file}:{line}: {severity}({id}): {message}' $(CHECK_SRCS)
	printf '%s\n' $(CHECK_SRCS) | xargs -P$(SAN_JOBS) -I{} $(CLANG_TIDY) --quiet \
	    --checks='$(TIDY_CHECKS)' --warnings-as-errors='*' \
	    {} -- -std=gnu11 $(CHECK_INC) 2>/dev/null
