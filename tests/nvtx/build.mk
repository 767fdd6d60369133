# The NVTX recording tool (tests/nvtx/inject.c): an injection library that NVTX v3 loads through
# NVTX_INJECTION64_PATH, writing what it receives to $NVTX_RECORD_FILE; tests/cases/nvtx.sh
# runs the test programs under it. Headers only from the toolkit: NVTX needs no link library.
NVTX_RECORD := $(BUILD)/tests/nvtx/libnvtx-record.so
AG_TEST_ALL += $(NVTX_RECORD)

$(NVTX_RECORD): tests/nvtx/inject.c
	@mkdir -p $(dir $@)
	$(CC) $(AG_CFLAGS) $(CFLAGS) -shared -o $@ $< -lpthread
