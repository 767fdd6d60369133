"""torch_kernels — naming PyTorch's CUDA kernels: the family a kernel belongs to, and for the
elementwise frameworks the functor it runs. Shared by tools/calibrate-elementwise and
tests/torch/coverage.py (both read the kernels of the wheel's libtorch_cuda.so through
autograph-inspect).
"""
import re

ELEMENTWISE = ("vectorized_elementwise_kernel", "unrolled_elementwise_kernel", "elementwise_kernel")
# The frameworks for contiguous tensors, whose parameters are (int N, functor, array of char*
# data): the ones the library's chain recognition reads (src/chain.h).
CONTIGUOUS = ("vectorized_elementwise_kernel", "unrolled_elementwise_kernel")
WRAPPERS = ("AUnaryFunctor", "BUnaryFunctor", "BinaryFunctor")


def functor_of(args):
    """The functor an elementwise kernel's template arguments name: the function a lambda is
    defined in, else the first functor type that is not one of the scalar wrappers. The legacy
    framework's lambda lives in gpu_kernel_impl(_nocast)<FUNCTOR>: its functor is that one's."""
    m = re.search(r"([\w:]+)(?:<[^()]*?>)?\([^()]*\)(?: const)?::\{lambda", args)
    if m:
        fn = m.group(1).split("::")[-1]
        if fn.startswith("gpu_kernel_impl"):
            return functor_of(impl_functor(args[m.end(1) + 1:]))
        return fn
    functors = [f for f in re.findall(r"(\w*Functor\w*)", args) if f not in WRAPPERS]
    return functors[0] if functors else "(other)"


def impl_functor(text):
    """F of `F>(at::TensorIteratorBase&, F const&)…`, the text after `gpu_kernel_impl…<`: the
    first `>(at::TensorIteratorBase&` is not always its end, since a lambda defined in a function
    that takes an iterator has one in its name."""
    sep = ">(at::TensorIteratorBase&, "
    at = text.find(sep)
    while at >= 0:
        f = text[:at].rstrip()
        if text[at + len(sep):].startswith(f + " const&)"):
            return f
        at = text.find(sep, at + 1)
    return text


def split(demangled):
    """(framework or qualified name, the rest from the template arguments on) of a demangled
    kernel name, without `void ` and anonymous namespaces."""
    name = demangled[5:] if demangled.startswith("void ") else demangled
    name = name.replace("(anonymous namespace)::", "")
    cut = min([i for i in (name.find("<"), name.find("(")) if i >= 0] or [len(name)])
    return name[:cut], name[cut:]


def family(demangled):
    """The family of a kernel: its qualified name without template arguments; for PyTorch's
    elementwise frameworks, the framework and the functor it runs (or the function whose lambda
    it is), e.g. `vectorized_elementwise_kernel / sigmoid_kernel_cuda`."""
    head, rest = split(demangled)
    short_head = head.split("::")[-1]
    if short_head not in ELEMENTWISE:
        return head
    return short_head + " / " + functor_of(rest)


def contiguous_framework(demangled):
    """The contiguous elementwise framework of a kernel (CONTIGUOUS), else None."""
    short_head = split(demangled)[0].split("::")[-1]
    return short_head if short_head in CONTIGUOUS else None
