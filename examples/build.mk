# Examples (included by the top Makefile): the CUDA C example, built like the test programs
# (nvcc, shared runtime, exported CPU twins) so that it runs on a GPU and on the simulator.
#
#   examples/*.cu   → $(BUILD)/examples/NAME      (part of `make all`)
#   examples/*.py   the PyTorch examples: nothing to build (see docs-examples.md)

EXAMPLE_PROGS := $(patsubst examples/%.cu,$(BUILD)/examples/%,$(wildcard examples/*.cu))
AG_ALL += $(EXAMPLE_PROGS)

.PHONY: examples
examples: $(EXAMPLE_PROGS)

$(BUILD)/examples/%: examples/%.cu tests/sim/sim_kernel.h
	@mkdir -p $(dir $@)
	$(NVCC) $(AG_NVCCFLAGS) $(NVCCFLAGS) -o $@ $< $(AG_NVLIBS)
