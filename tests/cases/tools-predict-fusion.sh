#!/usr/bin/env bash
# tools-predict-fusion.sh — autograph-predict's fusion estimate (tools/fusion.h) on a trace whose
# chains and groups of fills are known. Each of four steps launches, on stream 7, three vectorized
# elementwise kernels of one shape (a chain of 3), a GEMM, an unrolled elementwise kernel and one
# of another shape (no chain: the shapes differ); on stream 9, a layer-norm kernel (a vectorized
# kernel of no elementwise framework), two half-precision elementwise_kernel launches of one shape
# (a chain of 2), three fills of three shapes (a group of 3), then a half-precision launch, a fill
# and another half-precision launch, all of the chain's shape (no chain: the fill between them
# reads nothing; no group: one fill). So per step: 15 kernels, 13 elementwise (the layer norm is
# not), 2 chains of 5 kernels, 3 launches removed by them, 1 group of 3 fills removing 2; the
# removed kernels' time is 3 × 3 us and 2 × 3 us, and at least 2 × 512 × 4 + 1 × 256 × 2 bytes
# are not read again; in all 12 + 8 = 20 launches and 60 us. The text report and the JSON say the
# same.
. "$(dirname "$0")/lib.sh"
pred=$BUILD/autograph-predict
[ -x "$pred" ] || ag_skip "skipped: $pred is not built"
d=$AG_TMP
# Two traces: the one above, and the long runs of the last check below.
python3 - "$AG_ROOT/tests/cases/make-trace.py" "$d/fusion.json" "$d/long.json" <<'PY' || ag_fail "writing the traces failed"
import importlib.util, sys
spec = importlib.util.spec_from_file_location("mt", sys.argv[1])
mt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mt)
vec = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
unr = "void at::native::unrolled_elementwise_kernel<at::native::AbsFunctor<float>, std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::AbsFunctor<float>, std::array<char*, 2ul>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)"
half = "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::MulFunctor<c10::Half> >(at::TensorIteratorBase&, at::native::MulFunctor<c10::Half> const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::MulFunctor<c10::Half> >(at::TensorIteratorBase&, at::native::MulFunctor<c10::Half> const&)::{lambda(int)#1})"
ln = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, float const*, float const*, float*, float*, float*)"
fill = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"
tr = mt.Trace()
for s in range(4):
    tr.begin_step(s)
    tr.launch(ln, (2, 1, 1), (128, 1, 1), stream=9)
    tr.launch(half, (2, 1, 1), (128, 1, 1), stream=9)
    tr.launch(half, (2, 1, 1), (128, 1, 1), stream=9)
    for g in (3, 5, 1):
        tr.launch(fill, (g, 1, 1), (128, 1, 1), stream=9)
    tr.launch(half, (2, 1, 1), (128, 1, 1), stream=9)
    tr.launch(fill, (2, 1, 1), (128, 1, 1), stream=9)
    tr.launch(half, (2, 1, 1), (128, 1, 1), stream=9)
    for k in range(3):
        tr.launch(vec, (4, 1, 1), (128, 1, 1))
    tr.launch("ampere_sgemm_128x64_nn", (8, 1, 1), (256, 1, 1))
    tr.launch(unr, (4, 1, 1), (128, 1, 1))
    tr.launch(vec, (8, 1, 1), (128, 1, 1))
    tr.call("cudaStreamSynchronize")
    tr.end_step()
tr.write(sys.argv[2])
tr = mt.Trace()
tr.begin_step(0)
for i in range(20):
    tr.launch(fill, (1 + i % 3, 1, 1), (128, 1, 1))
for i in range(18):
    tr.launch(vec, (4, 1, 1), (128, 1, 1))
tr.call("cudaStreamSynchronize")
tr.end_step()
tr.write(sys.argv[3])
PY
"$pred" --json "$d/fusion.json" >"$d/fusion.out" || ag_fail "autograph-predict failed"
ag_expect "$d/fusion.out" "st['fusion']['kernels'] == 60" "st['fusion']['elementwise'] == 52" \
  "st['fusion']['chains'] == 8" "st['fusion']['chained'] == 20" "st['fusion']['longest'] == 3" \
  "st['fusion']['launches_removed'] == 12" "st['fusion']['kernel_ns'] == 60 * 3000" \
  "st['fusion']['elementwise_ns'] == 52 * 3000" "st['fusion']['removed_ns'] == 12 * 3000" \
  "st['fusion']['bytes_not_read'] == 4 * (2 * 512 * 4 + 256 * 2)" "st['fusion']['fill_groups'] == 4" \
  "st['fusion']['fills_grouped'] == 12" "st['fusion']['fill_launches_removed'] == 8" \
  "st['fusion']['fill_removed_ns'] == 8 * 3000"
"$pred" "$d/fusion.json" >"$d/fusion.txt" || ag_fail "autograph-predict failed (text)"
for line in '  elementwise kernels   52 of 60 (86.7%), 86.7% of kernel time' \
            '  chains                8 holding 20 kernels (longest 3)' \
            '  launches removed      12 (20.0% of kernels)' \
            '  GPU time saved        at most 36.0 us (20.0% of kernel time: the removed kernels'"'"' own)' \
            '  bytes not read again  at least 18432 (one element per thread of each removed kernel)' \
            '  groups of fills       4 holding 12 fills' \
            '  launches removed      8 (13.3% of kernels)' \
            '  GPU time saved        at most 24.0 us (13.3% of kernel time: the removed fills'"'"' own)' \
            '  in all                20 launches removed (33.3% of kernels), at most 60.0 us saved (33.3% of kernel time)'; do
  grep -qxF "$line" "$d/fusion.txt" || { sed -n '/^Fusion/,$p' "$d/fusion.txt"; ag_fail "text report lacks: $line"; }
done
# As in the library, a chain or a group holds at most 16 kernels: 20 fills in a row are two
# groups (16 and 4: 18 launches removed), 18 same-shape kernels two chains (16 and 2: 16 removed).
"$pred" --json "$d/long.json" >"$d/long.out" || ag_fail "autograph-predict failed (long runs)"
ag_expect "$d/long.out" "st['fusion']['fill_groups'] == 2" "st['fusion']['fills_grouped'] == 20" \
  "st['fusion']['fill_launches_removed'] == 18" "st['fusion']['chains'] == 2" "st['fusion']['chained'] == 18" \
  "st['fusion']['launches_removed'] == 16" "st['fusion']['longest'] == 16"
echo "ok: 8 chains of 20 kernels (12 launches removed), 4 groups of 12 fills (8 removed), in the JSON and the text; runs over 16 split"
