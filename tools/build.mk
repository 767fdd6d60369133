# Tools: the kernel inspector, the launcher, and installation (included by the top Makefile).
#
#   $(BUILD)/autograph-inspect  tools/inspect.c linked with the library's own parser (src/elf.c);
#                               tools/autograph-inspect runs it from the source tree
#   tools/autograph             the launcher (a shell script; nothing to build)
#
# Installation, honouring PREFIX and DESTDIR (and BINDIR, LIBDIR when set):
#   make install    PREFIX/lib/libautograph.so, PREFIX/bin/autograph, PREFIX/bin/autograph-inspect,
#                   and every script listed in AG_INSTALL_SCRIPTS (other fragments add theirs)
#   make uninstall  removes exactly those files
# The installed launcher finds the library as ../lib/libautograph.so next to its own folder;
# when LIBDIR is not PREFIX/lib, the absolute LIBDIR is written into the installed copy.
#
# The Python wheel (docs/install.md), with the packaging tools of `tools/setup --wheel`:
#   make wheel      $(BUILD)/wheelhouse/libautograph-VERSION-py3-none-manylinux_2_28_x86_64.whl:
#                   pip builds the package (pyproject.toml, which runs this make) in
#                   $(BUILD)/wheel-build with WHEEL_CC, by default zig's C compiler (the ziglang
#                   package) aimed at glibc 2.28, so that the library and the tools use nothing
#                   newer; auditwheel then checks that and sets the tag (WHEEL_PLAT).

BINDIR  ?= $(PREFIX)/bin
LIBDIR  ?= $(PREFIX)/lib
INSTALL ?= install

AG_INSPECT := $(BUILD)/autograph-inspect
AG_ALL += $(AG_INSPECT)
AG_INSTALL_SCRIPTS += tools/autograph
AG_INSTALL_SCRIPTS += tools/autograph-report

# The profiler-trace predictor: tools/predict.c, the trace reader tools/trace-parse.c, the
# timeline model tools/timeline.c and the fusion estimate tools/fusion.c, linked
# with the library's own engine objects (src/), not with the shims; zlib reads .json.gz.
AG_PREDICT := $(BUILD)/autograph-predict
AG_ALL += $(AG_PREDICT)
AG_PREDICT_OBJS := $(BUILD)/obj/tools/predict.o $(BUILD)/obj/tools/trace-parse.o $(BUILD)/obj/tools/timeline.o \
                   $(BUILD)/obj/tools/fusion.o \
                   $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard src/*.c))
$(BUILD)/obj/tools/predict.o: shims/cudart.def

$(AG_PREDICT): $(AG_PREDICT_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lz $(AG_LIBS) -lm

$(AG_INSPECT): $(BUILD)/obj/tools/inspect.o $(BUILD)/obj/src/elf.o
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -ldl -lpthread -lstdc++

WHEEL_PY    ?= $(BUILD)/wheel-venv/bin/python
WHEEL_PLAT  ?= manylinux_2_28_x86_64
WHEEL_CC    ?= $(abspath $(WHEEL_PY)) -m ziglang cc -target x86_64-linux-gnu.2.28 -idirafter /usr/include
WHEEL_BUILD := $(abspath $(BUILD))/wheel-build
# zig searches no system folder for libraries when it builds for a named glibc: zlib (the
# predictor's) and libstdc++ (the inspector's demangler) come from where the host compiler finds them.
WHEEL_LDFLAGS ?= -L$(dir $(shell $(CC) -print-file-name=libz.so))

.PHONY: wheel
wheel: $(BUILD)/gen/fused.fatbin
	@[ -x $(WHEEL_PY) ] || { echo "make wheel: no $(WHEEL_PY); run tools/setup --wheel" >&2; exit 1; }
	rm -rf $(BUILD)/dist $(BUILD)/wheelhouse
	@# Device code only, the same whichever compiler builds the host side: not compiled twice.
	mkdir -p $(WHEEL_BUILD)/gen && cp -p $< $(WHEEL_BUILD)/gen/fused.fatbin
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL BUILD=$(WHEEL_BUILD) CC="$(WHEEL_CC)" \
	    LDFLAGS="$(WHEEL_LDFLAGS)" ZIG_GLOBAL_CACHE_DIR=$(WHEEL_BUILD)/zig-cache \
	    ZIG_LOCAL_CACHE_DIR=$(WHEEL_BUILD)/zig-cache \
	    $(WHEEL_PY) -m pip wheel -q --disable-pip-version-check --no-deps --no-build-isolation \
	    -w $(BUILD)/dist .
	PATH=$(abspath $(dir $(WHEEL_PY))):$$PATH $(WHEEL_PY) -m auditwheel repair --plat $(WHEEL_PLAT) --only-plat \
	    -w $(BUILD)/wheelhouse $(BUILD)/dist/libautograph-*.whl
	@ls $(BUILD)/wheelhouse/*.whl

.PHONY: install uninstall
install: $(BUILD)/libautograph.so $(AG_INSPECT) $(AG_PREDICT)
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)
	$(INSTALL) -m 644 $(BUILD)/libautograph.so $(DESTDIR)$(LIBDIR)/libautograph.so
	$(INSTALL) -m 755 $(AG_INSPECT) $(DESTDIR)$(BINDIR)/autograph-inspect
	$(INSTALL) -m 755 $(AG_PREDICT) $(DESTDIR)$(BINDIR)/autograph-predict
	for s in $(AG_INSTALL_SCRIPTS); do \
	  $(INSTALL) -m 755 $$s $(DESTDIR)$(BINDIR)/$$(basename $$s) || exit 1; \
	done
	sed -i 's|^ag_installed_lib=.*|ag_installed_lib=$(LIBDIR)/libautograph.so|' \
	    $(DESTDIR)$(BINDIR)/autograph

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libautograph.so $(DESTDIR)$(BINDIR)/autograph-inspect
	rm -f $(DESTDIR)$(BINDIR)/autograph-predict
	for s in $(AG_INSTALL_SCRIPTS); do rm -f $(DESTDIR)$(BINDIR)/$$(basename $$s); done
