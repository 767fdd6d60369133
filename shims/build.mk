# The preload library: the engine (src/) and the exported entry points (shims/).
AG_LIB_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard src/*.c shims/*.c))
AG_ALL += $(BUILD)/libautograph.so

$(BUILD)/libautograph.so: $(AG_LIB_OBJS) shims/exports.map
	$(CC) -shared -Wl,-soname,libautograph.so -Wl,--version-script=shims/exports.map \
	    -Wl,-z,defs -o $@ $(AG_LIB_OBJS) $(LDFLAGS) $(AG_LIBS)
