#!/usr/bin/env python3
"""gen.py — generator of random, race-free CUDA C programs for differential testing.

Usage: gen.py --seed S [--hostile LIST] [-o FILE]

Writes one CUDA C program (tests/difftest/dt.h holds its kernels and CPU twins) whose output,
a checksum of every buffer it reads back, is the same under every SIM_SEED and with or without
the library. LIST is a comma-separated subset of HOSTILE (or "all", or "none"): the hostile
moves the program may make besides the ordinary ones. See docs/difftest.md.

How race freedom is kept. The generator runs a model of CUDA's ordering rules alongside the
code it writes, with vector clocks: each stream has the clock of its last operation, an
operation inherits its stream's clock (and, by the legacy default stream's implicit
synchronisation, the clocks of blocking streams or of the legacy stream), an event carries the
clock of its stream when recorded, a wait joins it in, and the host knows a set of completed
operations (a synchronisation, a poll that saw completion, a synchronous copy back to the host,
a flag the host saw). Each buffer remembers its last write and the reads since. Before an
operation touches a buffer, every conflicting earlier access must be ordered before it (or
known complete); where one is not, the generator inserts a synchronisation of a randomly
chosen kind. Where CUDA leaves a guarantee open, the model assumes the weaker one: a pageable
copy to the device is not known complete when it returns, an event recorded on the legacy stream
is not assumed to cover blocking streams, a host source of any copy is read until the copy is
known complete. The host reads only what the model proves complete.
"""
import argparse
import random
import sys

NMAX = 2048

HOSTILE = {
    "flag": "the host spins on host-mapped memory a kernel writes, with no CUDA call",
    "attr": "the shared-memory limit of a kernel raised, used, lowered, used",
    "badlaunch": "a launch with an invalid configuration now and then, its error checked",
    "modules": "a cubin module unloaded and another loaded in its place between iterations",
    "plugins": "a plugin dlopened, run, dlclosed, and another one loaded in its place",
    "image": "a module whose image is unmapped after cuModuleLoadData; a kernel without parameters",
    "fusegeom": "PyTorch-named elementwise chains launched with a grid that covers part of the tensor",
    "reset": "cudaDeviceReset between epochs, everything created again",
    "symbols": "cudaMemcpyTo/FromSymbolAsync in stream order on a __device__ array (tests the simulator)",
    "notready": "stream and event queries that may say 'not ready', the last error not cleared (tests the simulator)",
    "badgrid": "now and then, in a repeated sequence, a launch that differs from the valid one in its place only "
               "in its grid (zero, grid.y or grid.z above 65535, a cooperative grid too large, a cluster that "
               "does not divide it) or its shared-memory limit, or a memset past its allocation; statuses printed",
    "sticky": "a kernel that makes an illegal access (a sticky device fault) after the last iteration, then the "
              "usual sequence again for a few iterations, each status printed",
}
# The invalid configurations of "badgrid", one hostile step each (see op_badgrid).
BADGRID_KINDS = ["zero", "zero_checked", "gridyz", "coop", "cluster", "shmem", "memset_edge", "memset_size"]
DT_EDGE = NMAX * 4 + 256  # bytes of dt_edge, the buffer the memsets of "badgrid" run past



class Stream:
    def __init__(self, idx, name, kind, thread=None):
        self.idx, self.name, self.kind, self.thread = idx, name, kind, thread

    def implicit(self):
        """Blocking streams (and per-thread default streams) synchronise with the legacy one."""
        return self.kind in ("blocking", "ptd")


class Buf:
    def __init__(self, name, kind, size=NMAX):
        self.name, self.kind, self.size = name, kind, size
        self.last_write = None  # (stream index, op number) or None for the host
        self.reads = []
        self.alive = True


def join(a, b):
    return [max(x, y) for x, y in zip(a, b)]


class Gen:
    def __init__(self, seed, hostile, drop_fixes=False):
        self.seed = seed
        self.drop_fixes = drop_fixes  # a self-check: the same program without its synchronisations
        self.muted = False
        self.r = random.Random(seed)
        self.hostile = hostile
        r = self.r
        # ---- the program's shape ----
        self.nthreads = r.choice([1, 1, 2, 2, 3])
        self.iters = r.randint(8, 16)
        self.epochs = 2 if "reset" in hostile else 1
        self.n0 = r.choice([1000, 1024, 2048, 777, 1536])
        self.block = r.choice([64, 128, 256])
        self.ndev = r.randint(5, 9)
        self.feat = {
            "graph": r.random() < 0.5,
            "torch": r.random() < 0.5,
            "big": r.random() < 0.6,
            "shm": r.random() < 0.5,
            "tmp": r.random() < 0.6,
            "hostfn": r.random() < 0.6,
            "driver": r.random() < 0.4,
            "limits": r.random() < 0.5,
            "flag": "flag" in hostile and r.random() < 0.8,
            "attr": "attr" in hostile and r.random() < 0.8,
            "badlaunch": "badlaunch" in hostile and r.random() < 0.7,
            "modules": "modules" in hostile and r.random() < 0.8,
            "plugins": "plugins" in hostile and r.random() < 0.7,
            "image": "image" in hostile and r.random() < 0.7,
            "fusegeom": "fusegeom" in hostile and r.random() < 0.8,
            "symbols": "symbols" in hostile,
            "notready": "notready" in hostile,
            "badgrid": "badgrid" in hostile,
            "sticky": "sticky" in hostile,
        }
        # Drawn apart from r, so that programs without the move are the ones they always were.
        bg = random.Random(f"{seed}/badgrid")
        self.bg_kinds = bg.sample(BADGRID_KINDS, k=bg.randint(2, 4)) if self.feat["badgrid"] else []
        self.bg_period = bg.choice([2, 3, 4])
        self.bg_yz = bg.choice(["y", "z"])
        self.sticky_iters = bg.randint(2, 4)
        self.sticky_len = bg.randint(3, 8)
        self.sticky_seq = None  # (stream, y, x) of the sequence the fault interrupts
        self.bad_period = r.choice([1, 2, 4])
        if self.feat["fusegeom"]:
            self.feat["torch"] = True
        if self.feat["torch"]:
            self.ndev = max(self.ndev, 7)
        if self.feat["modules"] or self.feat["image"]:
            self.feat["driver"] = True
        kinds = [r.choice(["blocking", "nonblocking"]) for _ in range(r.randint(1, 3))]
        self.created = kinds
        self.out = []  # lines of each thread: list of lists
        self.chunks = []  # (thread, lines)
        self.cur = None
        self.turn = 0
        self.events_used = 0
        self.flag_v = 0
        self.slots = 0
        self.hostfns = 0
        self.tmps = 0
        self.fixmemo = {}
        self.prints = 0
        self.bound = set()

    # ---------------------------------------------------------------- the model
    def reset_model(self):
        self.streams = [Stream(0, "cudaStreamLegacy", "legacy")]
        for i, k in enumerate(self.created):
            self.streams.append(Stream(len(self.streams), f"dt_s[{i}]", k))
        for t in range(self.nthreads):
            self.streams.append(Stream(len(self.streams), "cudaStreamPerThread", "ptd", thread=t))
        if self.feat["graph"]:
            self.cap = [Stream(len(self.streams), "dt_cap[0]", "nonblocking"),
                        Stream(len(self.streams) + 1, "dt_cap[1]", "nonblocking")]
            self.streams += self.cap
        ns = len(self.streams)
        self.C = [[0] * ns for _ in range(ns)]
        self.H = [0] * ns
        self.ptd_event = {}  # thread -> clock of its published event
        self.bufs = {}
        for i in range(self.ndev):
            self.bufs[f"D{i}"] = Buf(f"dt_d[{i}]", "dev")
        if self.feat["graph"]:
            for i in range(3):
                self.bufs[f"G{i}"] = Buf(f"dt_g[{i}]", "dev")
        if self.feat["symbols"]:
            self.bufs["Y"] = Buf("dt_sym", "sym", 256)
        if any(k.startswith("memset") for k in self.bg_kinds):
            # Written by memsets only and never read: its contents are not printed.
            self.bufs["E"] = Buf("dt_edge", "edge", DT_EDGE // 4)
        for i in range(3):
            self.bufs[f"P{i}"] = Buf(f"dt_p[{i}]", "pinned")
            self.bufs[f"Q{i}"] = Buf(f"dt_q[{i}]", "page")

    def op_clock(self, s):
        c = list(self.C[s.idx])
        if s.kind == "legacy":
            for o in self.streams:
                if o.implicit():
                    c = join(c, self.C[o.idx])
        elif s.implicit():
            c = join(c, self.C[0])
        return c

    def covered(self, acc, clock):
        if acc is None:
            return True
        s, k = acc
        return clock[s] >= k or self.H[s] >= k

    def pending(self, names, write, clock):
        """Earlier accesses of the buffers not ordered before an op with this clock."""
        out = []
        for n in names:
            b = self.bufs[n]
            accs = [b.last_write] + (b.reads if write else [])
            for a in accs:
                if not self.covered(a, clock):
                    out.append(a)
        return out

    def record(self, s, reads, writes):
        c = self.op_clock(s)
        c[s.idx] += 1
        self.C[s.idx] = c
        acc = (s.idx, c[s.idx])
        for n in reads:
            self.bufs[n].reads.append(acc)
        for n in writes:
            b = self.bufs[n]
            b.last_write = acc
            b.reads = []
        return acc

    def host_access(self, reads, writes):
        for n in reads:
            self.bufs[n].reads.append(None)
        for n in writes:
            b = self.bufs[n]
            b.last_write, b.reads = None, []

    # ---------------------------------------------------------------- emission
    def emit(self, line):
        if not self.muted:
            self.cur.append(line)

    def thread_switch(self, t):
        if self.cur is not None and self.cur_thread == t:
            return
        if self.cur is not None:
            self.close_chunk()
        self.cur_thread = t
        self.cur = []
        if t not in self.bound:
            # A thread's first runtime call makes the device's primary context current there:
            # the driver-API calls that may come first need it (again after a reset).
            self.bound.add(t)
            self.emit("CHECK_CUDA(cudaSetDevice(0));")

    def close_chunk(self, final=False):
        t = self.cur_thread
        ptd = self.ptd(t)
        # A worker publishes an event on its per-thread stream, so other threads can order after it.
        if not final:
            self.emit(f"CHECK_CUDA(cudaEventRecord(dt_ptd_ev[{t}], cudaStreamPerThread));")
        self.ptd_event[t] = list(self.C[ptd.idx])
        self.chunks.append((t, self.cur))
        self.cur = None

    def ptd(self, t):
        return [s for s in self.streams if s.kind == "ptd" and s.thread == t][0]

    def sname(self, s):
        if s.kind == "legacy":
            return self.r.choice(["0", "cudaStreamLegacy"])
        return s.name

    def usable(self, t):
        return [s for s in self.streams if (s.kind != "ptd" or s.thread == t) and s not in getattr(self, "cap", [])]

    def new_event(self):
        self.events_used += 1
        return f"dt_ev[{self.events_used % 8}]"

    def fix_host(self, acc, key):
        """Make the host know that access acc is complete."""
        s = self.streams[acc[0]]
        t = self.cur_thread
        choices = ["ssync", "esync", "poll_s", "poll_e", "dsync"]
        how = self.fixmemo.setdefault(("h", key, s.idx), self.r.choice(choices))
        if s.kind == "ptd" and s.thread != t:
            # Another thread's per-thread stream: its published event, or the whole device.
            if how == "dsync":
                self.emit("CHECK_CUDA(cudaDeviceSynchronize());")
                self.H = join(self.H, [max(c) for c in zip(*self.C)])
            else:
                f = "dt_poll_event" if how.startswith("poll") else "sync_event"
                if f == "dt_poll_event":
                    self.emit(f"dt_poll_event(dt_ptd_ev[{s.thread}]);")
                else:
                    self.emit(f"CHECK_CUDA(cudaEventSynchronize(dt_ptd_ev[{s.thread}]));")
                self.H = join(self.H, self.ptd_event[s.thread])
            return
        nm = self.sname(s)
        if how == "ssync":
            self.emit(f"CHECK_CUDA(cudaStreamSynchronize({nm}));")
            self.H = join(self.H, self.C[s.idx])
        elif how == "poll_s":
            self.emit(f"dt_poll_stream({nm});")
            self.H = join(self.H, self.C[s.idx])
        elif how in ("esync", "poll_e"):
            ev = self.new_event()
            self.emit(f"CHECK_CUDA(cudaEventRecord({ev}, {nm}));")
            if how == "esync":
                self.emit(f"CHECK_CUDA(cudaEventSynchronize({ev}));")
            else:
                self.emit(f"dt_poll_event({ev});")
            self.H = join(self.H, self.C[s.idx])
        else:
            self.emit("CHECK_CUDA(cudaDeviceSynchronize());")
            self.H = join(self.H, [max(c) for c in zip(*self.C)])

    def fix_dev(self, acc, dst, key):
        """Order access acc before the next op on stream dst (or make the host know it done)."""
        s = self.streams[acc[0]]
        how = self.fixmemo.setdefault(("d", key, s.idx, dst.idx),
                                      self.r.choice(["event", "event", "event", "host"]))
        if how == "host":
            return self.fix_host(acc, key)
        t = self.cur_thread
        if s.kind == "ptd" and s.thread != t:
            self.emit(f"CHECK_CUDA(cudaStreamWaitEvent({self.sname(dst)}, dt_ptd_ev[{s.thread}], 0));")
            self.C[dst.idx] = join(self.C[dst.idx], self.ptd_event[s.thread])
            return
        ev = self.new_event()
        self.emit(f"CHECK_CUDA(cudaEventRecord({ev}, {self.sname(s)}));")
        self.emit(f"CHECK_CUDA(cudaStreamWaitEvent({self.sname(dst)}, {ev}, 0));")
        self.C[dst.idx] = join(self.C[dst.idx], self.C[s.idx])

    def dev_op(self, s, reads, writes, lines, key):
        """A stream operation: orders it after what it conflicts with, emits it, records it."""
        self.order_before(s, reads, writes, key)
        for ln in lines:
            self.emit(ln)
        return self.record(s, reads, writes)

    def order_before(self, s, reads, writes, key):
        """Orders the next operation on stream s after the accesses it conflicts with."""
        for _ in range(20):
            c = self.op_clock(s)
            p = self.pending(reads, False, c) + self.pending(writes, True, c)
            if not p:
                break
            self.muted = self.drop_fixes
            self.fix_dev(p[0], s, key)
            self.muted = False
        else:
            raise RuntimeError("model: cannot order an operation")

    def host_op(self, reads, writes, lines, key):
        for _ in range(20):
            p = self.pending(reads, False, self.H) + self.pending(writes, True, self.H)
            if not p:
                break
            self.muted = self.drop_fixes
            self.fix_host(p[0], key)
            self.muted = False
        else:
            raise RuntimeError("model: cannot complete for the host")
        for ln in lines:
            self.emit(ln)
        self.host_access(reads, writes)

    # ---------------------------------------------------------------- operations
    def grid(self, n):
        return (n + self.block - 1) // self.block

    def launch(self, kernel, n, s, *args, shm=0, api=None):
        api = api or self.r.choice(["<<<>>>"] * 4 + ["cudaLaunchKernel"])
        g = self.grid(n)
        nm = self.sname(s)
        if api == "<<<>>>":
            return [f"PROG_LAUNCH({kernel}, {g}, {self.block}, {shm}, {nm}, {', '.join(args)});"]
        ptrs = [f"(void *)&a{i}" for i in range(len(args))]
        lines = ["{"]
        for i, a in enumerate(args):
            lines.append(f"  auto a{i} = {a};")
        lines.append(f"  void *args[] = {{{', '.join(ptrs)}}};")
        lines.append(f"  CHECK_CUDA(cudaLaunchKernel((const void *){kernel}, dim3({g}), dim3({self.block}), args, {shm}, {nm}));")
        lines.append("  PROG_RT();")
        lines.append("}")
        return lines

    def pick_dev(self, k, exclude=()):
        names = [n for n, b in self.bufs.items() if b.kind == "dev" and b.alive and not n.startswith("G")
                 and n not in exclude and not n.startswith("T")]
        return self.r.sample(names, k)

    def op_kernel(self, s, it, key, shape_n):
        r = self.r
        n = shape_n
        kind = r.choice(["fill", "axpy", "axpy", "scale", "mix", "mix"] + (["big", "big"] if self.feat["big"] else [])
                        + (["shm"] if self.feat["shm"] else []) + (["drv"] if self.feat["driver"] else [])
                        + (["sym_to", "sym_k", "sym_from"] if self.feat["symbols"] else []))
        if kind == "fill":
            y, = self.pick_dev(1)
            return self.dev_op(s, [], [y], self.launch("dt_fill", n, s, self.bufs[y].name, str(n), f"{key * 7 + it % 3}u"), key)
        if kind == "axpy":
            y, x = self.pick_dev(2)
            if r.random() < 0.2:
                x = r.choice(["P0", "P1"])  # a kernel reading pinned host memory directly
            a = f"{0.25 + 0.125 * ((it + key) % 5):.3f}f"
            return self.dev_op(s, [x, y], [y], self.launch("dt_axpy", n, s, self.bufs[y].name, self.bufs[x].name, a, str(n)), key)
        if kind == "scale":
            y, = self.pick_dev(1)
            a = f"{-0.5 + 0.0625 * (it % 7):.4f}f"
            return self.dev_op(s, [y], [y], self.launch("dt_scale", n, s, self.bufs[y].name, a, str(n)), key)
        if kind == "mix":
            y, a, b = self.pick_dev(3)
            return self.dev_op(s, [a, b], [y], self.launch("dt_mix", n, s, self.bufs[y].name, self.bufs[a].name, self.bufs[b].name, str(n), str((key + it) % 5)), key)
        if kind == "big":
            y, x = self.pick_dev(2)
            g = self.grid(n)
            lines = ["{", "  DtBig p;", f"  p.y = {self.bufs[y].name}; p.x = {self.bufs[x].name}; p.n = {n}; p.k = {it % 4};",
                     f"  for (int j = 0; j < DT_BIG_N; j++) p.c[j] = dt_val({key + (it // 4)}u, j);",
                     f"  PROG_LAUNCH(dt_big, {g}, {self.block}, 0, {self.sname(s)}, p);", "}"]
            return self.dev_op(s, [x], [y], lines, key)
        if kind == "shm":
            y, = self.pick_dev(1)
            shm = self.block * 4 * r.choice([1, 2, 4])
            return self.dev_op(s, [y], [y], self.launch("dt_shm", n, s, self.bufs[y].name, str(n), shm=shm), key)
        if kind == "drv":
            y, x = self.pick_dev(2)
            return self.dev_op(s, [x, y], [y], self.drv_launch(s, y, x, n, it), key)
        sym_bytes = "DT_SYM_N * sizeof(float)"
        if kind == "sym_to":
            x, = self.pick_dev(1)
            return self.dev_op(s, [x], ["Y"], [f"CHECK_CUDA(cudaMemcpyToSymbolAsync(dt_sym, {self.bufs[x].name}, {sym_bytes}, 0, cudaMemcpyDeviceToDevice, {self.sname(s)}));"], key)
        if kind == "sym_k":
            y, = self.pick_dev(1)
            return self.dev_op(s, ["Y", y], [y], self.launch("dt_symk", n, s, self.bufs[y].name, str(n)), key)
        if kind == "sym_from":
            y, = self.pick_dev(1)
            return self.dev_op(s, ["Y"], [y], [f"CHECK_CUDA(cudaMemcpyFromSymbolAsync({self.bufs[y].name}, dt_sym, {sym_bytes}, 0, cudaMemcpyDeviceToDevice, {self.sname(s)}));"], key)

    def drv_launch(self, s, y, x, n, it):
        g = self.grid(n)
        if self.mod_gen == 2:
            args = [f"int n = {n};", f"float a = {0.5 + 0.25 * (it % 2)}f;", f"float *y = {self.bufs[y].name};",
                    f"const float *x = {self.bufs[x].name};", "void *args[] = {&n, &a, &y, &x};", "CUfunction f = dt_fn2;"]
        else:
            args = [f"float *y = {self.bufs[y].name};", f"const float *x = {self.bufs[x].name};",
                    f"float a = {0.5 + 0.25 * (it % 2)}f;", f"int n = {n};", "void *args[] = {&y, &x, &a, &n};", "CUfunction f = dt_fn;"]
        return (["{"] + ["  " + a for a in args]
                + [f"  CHECK_CU(dt_cuLaunchKernel(f, {g}, 1, 1, {self.block}, 1, 1, 0, (CUstream){self.sname(s)}, args, NULL));",
                   "  PROG_DRV();", "}"])

    def op_copy(self, s, it, key):
        r = self.r
        kind = r.choice(["d2d_async", "d2d_sync", "h2d_pinned", "h2d_page_async", "h2d_sync", "memset_async", "memset_sync"])
        bytes_ = f"{NMAX} * sizeof(float)"
        if kind == "d2d_async":
            y, x = self.pick_dev(2)
            return self.dev_op(s, [x], [y], [f"CHECK_CUDA(cudaMemcpyAsync({self.bufs[y].name}, {self.bufs[x].name}, {bytes_}, cudaMemcpyDeviceToDevice, {self.sname(s)}));"], key)
        if kind == "d2d_sync":
            y, x = self.pick_dev(2)
            return self.dev_op(self.streams[0], [x], [y], [f"CHECK_CUDA(cudaMemcpy({self.bufs[y].name}, {self.bufs[x].name}, {bytes_}, cudaMemcpyDeviceToDevice));"], key)
        if kind in ("h2d_pinned", "h2d_page_async", "h2d_sync"):
            y, = self.pick_dev(1)
            src = r.choice(["P0", "P1", "P2"]) if kind == "h2d_pinned" else r.choice(["Q0", "Q1", "Q2", "P2"])
            self.host_write(src, it, key)
            if kind == "h2d_sync":
                return self.dev_op(self.streams[0], [src], [y], [f"CHECK_CUDA(cudaMemcpy({self.bufs[y].name}, {self.bufs[src].name}, {bytes_}, cudaMemcpyHostToDevice));"], key)
            return self.dev_op(s, [src], [y], [f"CHECK_CUDA(cudaMemcpyAsync({self.bufs[y].name}, {self.bufs[src].name}, {bytes_}, cudaMemcpyHostToDevice, {self.sname(s)}));"], key)
        y, = self.pick_dev(1)
        byte = r.choice(["0", "0x3e"])
        if kind == "memset_async":
            return self.dev_op(s, [], [y], [f"CHECK_CUDA(cudaMemsetAsync({self.bufs[y].name}, {byte}, {bytes_}, {self.sname(s)}));"], key)
        return self.dev_op(self.streams[0], [], [y], [f"CHECK_CUDA(cudaMemset({self.bufs[y].name}, {byte}, {bytes_}));"], key)

    def host_write(self, src, it, key):
        b = self.bufs[src]
        self.host_op([], [src], [f"for (int j = 0; j < {NMAX}; j++) {b.name}[j] = dt_val({1000 + key * 13 + it}u, j);"], key)

    def op_read(self, s, it, key):
        """Reads a device buffer back and prints its checksum."""
        r = self.r
        y = r.choice([n for n, b in self.bufs.items() if b.kind == "dev" and b.alive])
        self.prints += 1
        label = f"r{self.prints}"
        if r.random() < 0.5:
            dst = r.choice(["Q0", "Q1", "Q2", "P0"])
            # Synchronous copy to the host: complete when it returns.
            acc = self.dev_op(self.streams[0], [y], [dst], [f"CHECK_CUDA(cudaMemcpy({self.bufs[dst].name}, {self.bufs[y].name}, {NMAX} * sizeof(float), cudaMemcpyDeviceToHost));"], key)
            self.H[acc[0]] = max(self.H[acc[0]], acc[1])
            self.H = join(self.H, self.C[0])
        else:
            dst = r.choice(["P0", "P1", "P2", "Q1"])
            self.dev_op(s, [y], [dst], [f"CHECK_CUDA(cudaMemcpyAsync({self.bufs[dst].name}, {self.bufs[y].name}, {NMAX} * sizeof(float), cudaMemcpyDeviceToHost, {self.sname(s)}));"], key)
        self.host_op([dst], [], [f'dt_print("{label}", {self.bufs[dst].name}, {NMAX});'], key)

    def op_hostfn(self, s, it, key):
        src = self.r.choice(["P0", "P1", "P2", "Q0"])
        k = self.hostfns
        self.hostfns += 1
        slot = f"S{k}"
        self.bufs[slot] = Buf(f"dt_slot[{k}]", "slot", 1)
        self.dev_op(s, [src], [slot], [f"dt_hf[{k}].src = {self.bufs[src].name}; dt_hf[{k}].n = {NMAX}; dt_hf[{k}].out = &dt_slot[{k}];",
                                       f"CHECK_CUDA(cudaLaunchHostFunc({self.sname(s)}, dt_hostfn, &dt_hf[{k}]));"], key)
        self.pending_slots.append(slot)

    def flush_slots(self, key):
        for slot in self.pending_slots:
            b = self.bufs[slot]
            self.host_op([slot], [], [f'printf("{slot}: %016llx\\n", {b.name});'], key)
        self.pending_slots = []

    def op_tmp(self, s, it, key, n):
        """cudaMallocAsync, fill, use, read, cudaFreeAsync: a pointer that changes."""
        k = self.tmps % 4
        self.tmps += 1
        t = f"T{self.tmps}"
        self.bufs[t] = Buf(f"dt_tmp[{k}]", "dev")
        self.dev_op(s, [], [t], [f"CHECK_CUDA(cudaMallocAsync((void **)&dt_tmp[{k}], {NMAX} * sizeof(float), {self.sname(s)}));"], key)
        self.dev_op(s, [], [t], self.launch("dt_fill", NMAX, s, f"dt_tmp[{k}]", str(NMAX), f"{key + it}u"), key)
        y, = self.pick_dev(1)
        s2 = self.r.choice(self.usable(self.cur_thread))
        self.dev_op(s2, [t, y], [y], self.launch("dt_axpy", n, s2, self.bufs[y].name, f"dt_tmp[{k}]", "0.5f", str(n)), key)
        s3 = self.r.choice(self.usable(self.cur_thread))
        self.dev_op(s3, [], [t], [f"CHECK_CUDA(cudaFreeAsync(dt_tmp[{k}], {self.sname(s3)}));"], key)
        self.bufs[t].alive = False

    def op_graph_launch(self, s, key):
        gb = ["G0", "G1", "G2"]
        self.dev_op(s, ["G0"], gb, [f"CHECK_CUDA(cudaGraphLaunch(dt_gexec, {self.sname(s)}));"], key)

    def op_sync_noise(self, s, key):
        r = self.r
        k = r.choice(["peek_s", "peek_e", "lasterr", "ssync", "dsync"] + (["limit"] if self.feat["limits"] else [])
                     + (["peek_s", "peek_e"] * 3 if self.feat["notready"] else []))
        keep = "_keep" if self.feat["notready"] else ""
        if k == "peek_s":
            self.emit(f"dt_peek_stream{keep}({self.sname(s)});")
        elif k == "peek_e":
            ev = self.new_event()
            self.emit(f"CHECK_CUDA(cudaEventRecord({ev}, {self.sname(s)}));")
            self.emit(f"dt_peek_event{keep}({ev});")
        elif k == "lasterr":
            self.emit("CHECK_CUDA(cudaPeekAtLastError());")
            self.emit("CHECK_CUDA(cudaGetLastError());")
        elif k == "ssync":
            self.emit(f"CHECK_CUDA(cudaStreamSynchronize({self.sname(s)}));")
            self.H = join(self.H, self.C[s.idx])
        elif k == "dsync":
            self.emit("CHECK_CUDA(cudaDeviceSynchronize());")
            self.H = join(self.H, [max(c) for c in zip(*self.C)])
        else:
            v = r.choice([1024, 2048, 4096])
            self.emit(f"CHECK_CU(dt_cuCtxSetLimit(CU_LIMIT_STACK_SIZE, {v}));")
            self.emit(f"CHECK_CU(dt_cuCtxSetCacheConfig({r.choice(['CU_FUNC_CACHE_PREFER_NONE', 'CU_FUNC_CACHE_PREFER_SHARED', 'CU_FUNC_CACHE_PREFER_L1'])}));")

    # ---------------------------------------------------------------- hostile moves
    def op_flag(self, s, it, key):
        """produce, then raise_flag, on one stream; the host spins on the flag."""
        y, x = self.pick_dev(2)
        n = self.n0
        self.dev_op(s, [x, y], [y], self.launch("dt_axpy", n, s, self.bufs[y].name, self.bufs[x].name, "0.25f", str(n), api="<<<>>>"), key)
        self.flag_v += 1
        acc = self.dev_op(s, [], [], self.launch("dt_flag", 1, s, "dt_flagp", str(self.flag_v), api="<<<>>>"), key)
        self.emit(f"dt_wait_flag(dt_flagp, {self.flag_v});")
        # Seeing the flag, the host knows the flag kernel and everything before it done.
        self.H = join(self.H, self.C[s.idx])

    def op_attr(self, s, it, key, n):
        y, = self.pick_dev(1)
        nb = min(self.grid(n), 8)
        self.emit("CHECK_CUDA(cudaFuncSetAttribute((const void *)dt_shm, cudaFuncAttributeMaxDynamicSharedMemorySize, 96 * 1024));")
        self.dev_op(s, [y], [y], [f"PROG_LAUNCH(dt_shm, {nb}, {self.block}, 96 * 1024, {self.sname(s)}, {self.bufs[y].name}, {nb * self.block});"], key)
        self.emit("CHECK_CUDA(cudaFuncSetAttribute((const void *)dt_shm, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024));")
        self.dev_op(s, [y], [y], [f"PROG_LAUNCH(dt_shm, {nb}, {self.block}, 64 * 1024, {self.sname(s)}, {self.bufs[y].name}, {nb * self.block});"], key)

    def op_badlaunch(self, s, it, key):
        """Valid launches around one with an invalid configuration (every period-th iteration),
        all on one stream, so that the failed one sits inside a repeated sequence."""
        y, x = self.pick_dev(2)
        n = self.n0
        self.dev_op(s, [y], [y], self.launch("dt_scale", n, s, self.bufs[y].name, "0.75f", str(n), api="<<<>>>"), key)
        if it % self.bad_period == self.bad_period - 1:
            self.emit(f"dt_scale<<<1, 2048, 0, {self.sname(s)}>>>({self.bufs[y].name}, 0.5f, 16);")
            self.emit(f'printf("bad launch {it}: %d\\n", (int)cudaGetLastError());')
            self.emit("dt_failed_launches++;")
        self.dev_op(s, [x, y], [y], self.launch("dt_axpy", n, s, self.bufs[y].name, self.bufs[x].name, "0.5f", str(n), api="<<<>>>"), key)

    def op_badgrid(self, s, it, key, kind):
        """A valid launch, then in the same place every iteration a launch (or memset) that every
        period-th iteration differs from the valid one only in what a repeated sequence does not
        hash: the grid, the function's shared-memory limit, the memset's destination. All on one
        stream and one buffer, so that nothing is inserted between a failed call and the status
        printed after it. The program prints each status; a library that holds the invalid one
        acknowledges it, or reports its error later from another call."""
        bad = it % self.bg_period == self.bg_period - 1
        y, = self.pick_dev(1)
        n, blk = self.n0, self.block
        g = self.grid(n)
        nm = self.sname(s)
        Y = self.bufs[y].name
        lbl = f"bad {kind} {it}"
        count = "dt_failed_launches++;" if bad else "PROG_RT();"
        self.dev_op(s, [y], [y], self.launch("dt_scale", n, s, Y, "0.75f", str(n), api="<<<>>>"), key)
        args = [f"  float *a0 = {Y};", "  float a1 = 0.5f;", f"  int a2 = {n};", "  void *args[] = {&a0, &a1, &a2};"]
        status = [f'  printf("{lbl}: %d\\n", (int)e);', '  (void)cudaGetLastError();', f"  {count}"]
        if kind == "zero":
            # Unchecked, as most code leaves launches: the error is seen later, by the last-error
            # calls after the next (valid) launch.
            self.dev_op(s, [y], [y], [f"dt_scale<<<{0 if bad else g}, {blk}, 0, {nm}>>>({Y}, 0.5f, {n});", count], key)
            self.dev_op(s, [y], [y], [f"dt_scale<<<{g}, {blk}, 0, {nm}>>>({Y}, -0.5f, {n});", "PROG_RT();"], key)
            self.emit(f'printf("{lbl}: peek %d\\n", (int)cudaPeekAtLastError());')
            self.emit(f'printf("{lbl}: get %d\\n", (int)cudaGetLastError());')
        elif kind in ("zero_checked", "gridyz"):
            if kind == "zero_checked":
                grid = f"dim3({0 if bad else g})"
            else:
                big = "65536" if self.bg_yz == "y" else "70000"
                grid = f"dim3({g}, {big if bad and self.bg_yz == 'y' else 1}, {big if bad and self.bg_yz == 'z' else 1})"
            self.dev_op(s, [y], [y], ["{"] + args + [
                f"  cudaError_t e = cudaLaunchKernel((const void *)dt_scale, {grid}, dim3({blk}), args, 0, {nm});"]
                + status + ["}"], key)
        elif kind == "coop":
            # Cooperative: valid with the tensor's grid; now and then far more blocks than can be
            # co-resident, then the usual fallback to the small grid.
            lines = ["{"] + args + [
                f"  cudaError_t e = cudaLaunchCooperativeKernel((const void *)dt_scale, dim3({100000 if bad else g}), dim3({blk}), args, 0, {nm});"] + status
            if bad:
                lines += ["  if (e == cudaErrorCooperativeLaunchTooLarge) {",
                          f"    CHECK_CUDA(cudaLaunchCooperativeKernel((const void *)dt_scale, dim3({g}), dim3({blk}), args, 0, {nm}));",
                          "    PROG_RT();", "  }"]
            self.dev_op(s, [y], [y], lines + ["}"], key)
        elif kind == "cluster":
            # Clusters of two blocks: the grid is even, now and then odd.
            ge = g + g % 2
            self.dev_op(s, [y], [y], ["{"] + args + [
                "  cudaLaunchConfig_t cfg = {};",
                f"  cfg.gridDim = dim3({ge + 1 if bad else ge}); cfg.blockDim = dim3({blk}); cfg.stream = {nm};",
                "  cudaLaunchAttribute at[1];",
                "  at[0].id = cudaLaunchAttributeClusterDimension;",
                "  at[0].val.clusterDim.x = 2; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;",
                "  cfg.attrs = at; cfg.numAttrs = 1;",
                "  cudaError_t e = cudaLaunchKernelExC(&cfg, (const void *)dt_scale, args);"] + status + ["}"], key)
        elif kind == "shmem":
            # 80 KiB of dynamic shared memory under a limit of 96 KiB, now and then of 64 KiB.
            nb = min(g, 8)
            self.emit(f"CHECK_CUDA(cudaFuncSetAttribute((const void *)dt_shm, cudaFuncAttributeMaxDynamicSharedMemorySize, {64 if bad else 96} * 1024));")
            self.dev_op(s, [y], [y], ["{", f"  float *a0 = {Y};", f"  int a1 = {nb * blk};", "  void *args[] = {&a0, &a1};",
                                      f"  cudaError_t e = cudaLaunchKernel((const void *)dt_shm, dim3({nb}), dim3({blk}), args, 80 * 1024, {nm});"]
                        + status + ["}"], key)
        else:
            # The same size every iteration: a destination past the end of dt_edge, or one from
            # which the size runs past it, now and then.
            if kind == "memset_edge":
                size, off = 256, DT_EDGE + 512 if bad else 0
            else:
                size, off = 4096, DT_EDGE - 1024 if bad else 0
            self.dev_op(s, [], ["E"], ["{", f"  cudaError_t e = cudaMemsetAsync(dt_edge + {off}, {it % 3}, {size}, {nm});",
                                       f'  printf("{lbl}: %d\\n", (int)e);', "  (void)cudaGetLastError();", "}"], key)

    def op_sticky(self, s, it, key):
        """The sequence a device fault will interrupt after the last iteration (sticky_tail)."""
        y, x = self.pick_dev(2)
        self.sticky_seq = (s, y, x)
        # Ordered first, then an event record that ends the sequence before it on the stream: the
        # sticky sequence begins one, with its first launch, as after the fault, where a library
        # may hold that launch.
        self.order_before(s, [x, y], [y], key)
        self.emit(f"CHECK_CUDA(cudaEventRecord({self.new_event()}, {self.sname(s)}));")
        for ln in self.sticky_launches(s, y, x, it, None):
            self.dev_op(s, [x, y], [y], ln, key)

    def sticky_launches(self, s, y, x, it, status):
        """The launches of the sticky sequence, each checked, or with its status printed under
        the label status."""
        n = self.n0
        Y, X = self.bufs[y].name, self.bufs[x].name
        calls = [("dt_scale", [f"float *a0 = {Y};", f"float a1 = {0.75 - 0.25 * (j % 3)}f;", f"int a2 = {n};"]) if j % 2 == 0 else
                 ("dt_axpy", [f"float *a0 = {Y};", f"const float *a1 = {X};", f"float a2 = {0.25 + 0.125 * ((it + j) % 3)}f;", f"int a3 = {n};"])
                 for j in range(self.sticky_len)]
        out = []
        for j, (kern, decl) in enumerate(calls):
            call = f"cudaLaunchKernel((const void *){kern}, dim3({self.grid(n)}), dim3({self.block}), args, 0, {self.sname(s)})"
            ptrs = ", ".join(f"&a{i}" for i in range(len(decl)))
            body = ["{"] + ["  " + d for d in decl] + [f"  void *args[] = {{{ptrs}}};"]
            if status is None:
                body += [f"  CHECK_CUDA({call});", "  PROG_RT();"]
            else:
                body += [f"  cudaError_t e = {call};", f'  printf("{status} launch {j}: %d\\n", (int)e);', "  dt_failed_launches++;"]
            out.append(body + ["}"])
        return out

    def sticky_tail(self):
        """A kernel that makes an illegal access on the sticky sequence's stream; the stream's
        synchronisation reports the fault, and from then on every call returns it: the sequence
        launched again for a few iterations, each launch's status and each synchronisation's
        printed. The device is idle and everything read back when this begins. (Were the sequence
        replayed between the fault and the launches after it, a library would see its graph fail
        and stop holding it: the launches after the fault are the first it may hold.)"""
        if self.sticky_seq is None:
            return
        s, y, x = self.sticky_seq
        # Unchecked: on a GPU the fault may already be there when a last-error call asks.
        self.emit(f"dt_fault<<<1, 32, 0, {self.sname(s)}>>>((float *)NULL);")
        self.emit("PROG_RT();")
        self.emit(f'printf("sticky fault sync: %d\\n", (int)cudaStreamSynchronize({self.sname(s)}));')
        for k in range(self.sticky_iters):
            for ln in self.sticky_launches(s, y, x, self.iters + 1 + k, f"sticky {k}"):
                self.emit_lines(ln)
            self.emit(f'printf("sticky {k} sync: %d\\n", (int)cudaStreamSynchronize({self.sname(s)}));')
        self.emit('printf("sticky peek: %d\\n", (int)cudaPeekAtLastError());')
        self.emit('printf("sticky get: %d\\n", (int)cudaGetLastError());')
        self.emit('printf("sticky device sync: %d\\n", (int)cudaDeviceSynchronize());')

    def emit_lines(self, lines):
        for ln in lines:
            self.emit(ln)

    def op_torch(self, s, it, key, n, partial):
        r = self.r
        x, w, t1, h, g, t2, o = self.pick_dev(7) if self.ndev >= 7 else (None,) * 7
        if x is None:
            return
        threads = 128
        grid = (n + 4 * threads - 1) // (4 * threads)
        if partial and grid > 1:
            grid -= 1
        nm = self.sname(s)
        B = lambda z: self.bufs[z].name
        self.dev_op(s, [x, w], [t1], [f"dt_torch_add({n}, {B(t1)}, {B(x)}, {B(w)}, {grid}, {threads}, {nm});"], key)
        self.dev_op(s, [t1], [h], [f"dt_torch_relu({n}, {B(h)}, {B(t1)}, {grid}, {threads}, {nm});"], key)
        self.dev_op(s, [h, g], [t2], [f"dt_torch_mul({n}, {B(t2)}, {B(h)}, {B(g)}, {grid}, {threads}, {nm});"], key)
        self.dev_op(s, [t2, x], [o], [f"dt_torch_add({n}, {B(o)}, {B(t2)}, {B(x)}, {grid}, {threads}, {nm});"], key)

    # ---------------------------------------------------------------- program structure
    def setup_code(self):
        L = []
        L.append("static void dt_setup(void) {")
        for i, k in enumerate(self.created):
            fl = "cudaStreamNonBlocking" if k == "nonblocking" else "cudaStreamDefault"
            if self.r.random() < 0.3 and k == "blocking":
                L.append(f"  CHECK_CUDA(cudaStreamCreate(&dt_s[{i}]));")
            else:
                L.append(f"  CHECK_CUDA(cudaStreamCreateWithFlags(&dt_s[{i}], {fl}));")
        if self.feat["graph"]:
            L.append("  for (int i = 0; i < 2; i++) CHECK_CUDA(cudaStreamCreateWithFlags(&dt_cap[i], cudaStreamNonBlocking));")
            L.append("  for (int i = 0; i < 2; i++) CHECK_CUDA(cudaEventCreateWithFlags(&dt_cap_ev[i], cudaEventDisableTiming));")
        flags = ["cudaEventDefault", "cudaEventDisableTiming", "cudaEventBlockingSync | cudaEventDisableTiming"]
        for i in range(8):
            L.append(f"  CHECK_CUDA(cudaEventCreateWithFlags(&dt_ev[{i}], {flags[i % 3]}));")
        L.append(f"  for (int t = 0; t < {self.nthreads}; t++) CHECK_CUDA(cudaEventCreateWithFlags(&dt_ptd_ev[t], cudaEventDisableTiming));")
        L.append(f"  for (int i = 0; i < {self.ndev}; i++) CHECK_CUDA(cudaMalloc((void **)&dt_d[i], {NMAX} * sizeof(float)));")
        if self.feat["graph"]:
            L.append(f"  for (int i = 0; i < 3; i++) CHECK_CUDA(cudaMalloc((void **)&dt_g[i], {NMAX} * sizeof(float)));")
        L.append(f"  CHECK_CUDA(cudaMallocHost((void **)&dt_p[0], {NMAX} * sizeof(float)));")
        L.append(f"  CHECK_CUDA(cudaHostAlloc((void **)&dt_p[1], {NMAX} * sizeof(float), cudaHostAllocDefault));")
        L.append(f"  CHECK_CUDA(cudaHostAlloc((void **)&dt_p[2], {NMAX} * sizeof(float), cudaHostAllocPortable));")
        L.append("  CHECK_CUDA(cudaHostAlloc((void **)&dt_flagp, sizeof(int), cudaHostAllocMapped));")
        if "E" in self.bufs:
            L.append(f"  CHECK_CUDA(cudaMalloc((void **)&dt_edge, {DT_EDGE}));")
        L.append("  *dt_flagp = 0;")
        if self.feat["driver"]:
            L.append("  dt_driver_init();")
            L.append(f"  dt_mod = dt_load_module(\"dt-mod.cubin\", {self.r.choice([1, 2, 2]) if self.feat['image'] else 0});")
            L.append("  CHECK_CU(dt_cuModuleGetFunction(&dt_fn, dt_mod, \"dtm_axpy\"));")
            L.append("  CHECK_CU(dt_cuModuleGetFunction(&dt_fn_tick, dt_mod, \"dtm_tick\"));")
        elif self.feat["limits"]:
            L.append("  dt_driver_init();")
        L.append("}")
        return L

    def init_buffers(self):
        """Every device buffer and pinned buffer gets values, on the legacy stream."""
        s0 = self.streams[0]
        order = sorted(self.bufs.items(), key=lambda kv: kv[1].kind == "sym")
        for n, b in order:
            if b.kind == "dev":
                self.dev_op(s0, [], [n], [f"PROG_LAUNCH(dt_fill, {NMAX // 256}, 256, 0, 0, {b.name}, {NMAX}, {len(n) * 31 + ord(n[-1])}u);"], 0)
            elif b.kind == "sym":
                self.dev_op(s0, ["Q0"], [n], ["CHECK_CUDA(cudaMemcpyToSymbol(dt_sym, dt_q[0], DT_SYM_N * sizeof(float)));"], 0)
            elif b.kind in ("pinned", "page"):
                self.host_op([], [n], [f"for (int j = 0; j < {NMAX}; j++) {b.name}[j] = dt_val({ord(n[0]) + ord(n[-1])}u, j);"], 0)

    def capture(self):
        """The program's own capture: fork/join over two streams, instantiated once."""
        mode = self.r.choice(["cudaStreamCaptureModeGlobal", "cudaStreamCaptureModeThreadLocal", "cudaStreamCaptureModeRelaxed"])
        a, b = self.cap
        # The captured streams must not run earlier work on the graph's buffers meanwhile:
        # the graph launch is what the model records, capture itself runs nothing.
        n = self.n0
        g = self.grid(n)
        L = [f"CHECK_CUDA(cudaStreamBeginCapture(dt_cap[0], {mode}));",
             f"PROG_LAUNCH(dt_fill, {g}, {self.block}, 0, dt_cap[0], dt_g[0], {n}, 77u);",
             "CHECK_CUDA(cudaEventRecord(dt_cap_ev[0], dt_cap[0]));",
             "CHECK_CUDA(cudaStreamWaitEvent(dt_cap[1], dt_cap_ev[0], 0));",
             f"PROG_LAUNCH(dt_scale, {g}, {self.block}, 0, dt_cap[1], dt_g[2], 0.5f, {n});",
             f"PROG_LAUNCH(dt_mix, {g}, {self.block}, 0, dt_cap[0], dt_g[1], dt_g[0], dt_g[0], {n}, 3);",
             "CHECK_CUDA(cudaEventRecord(dt_cap_ev[1], dt_cap[1]));",
             "CHECK_CUDA(cudaStreamWaitEvent(dt_cap[0], dt_cap_ev[1], 0));",
             "CHECK_CUDA(cudaStreamEndCapture(dt_cap[0], &dt_graph));",
             "CHECK_CUDA(cudaGraphInstantiate(&dt_gexec, dt_graph, 0));",
             "CHECK_CUDA(cudaGraphDestroy(dt_graph));"]
        # The captured launches are counted as launches the program made (they are not run).
        for ln in L:
            self.emit(ln)

    def body(self, epoch):
        r = self.r
        self.pending_slots = []
        self.thread_switch(0)
        self.init_buffers()
        if self.feat["graph"]:
            self.capture()
        # The template: a fixed list of steps, made again each iteration with other scalars.
        steps = []
        nsteps = r.randint(6, 14)
        for i in range(nsteps):
            steps.append((r.randrange(self.nthreads), r.choice(
                ["kernel"] * 8 + ["copy"] * 2 + ["read"] + ["noise"]
                + (["hostfn"] if self.feat["hostfn"] else []) + (["tmp"] if self.feat["tmp"] else [])
                + (["graph"] if self.feat["graph"] else []) + (["torch"] if self.feat["torch"] else [])),
                r.random()))
        hostile_steps = []
        for h in ("flag", "attr", "badlaunch", "fusegeom", "modules"):
            if self.feat[h]:
                hostile_steps.append((r.randrange(len(steps) + 1), h, r.randrange(self.nthreads)))
        for h in ["badgrid:" + k for k in self.bg_kinds] + (["sticky"] if self.feat["sticky"] else []):
            hostile_steps.append((r.randrange(len(steps) + 1), h, r.randrange(self.nthreads)))
        stream_of = {}
        shape_iters = set(r.sample(range(2, self.iters), k=min(2, self.iters - 2))) if r.random() < 0.6 else set()
        self.mod_gen = 1
        self.vary = random.Random(f"{self.seed}/vary/{epoch}")
        for it in range(self.iters):
            n = self.n0 if it not in shape_iters else max(64, self.n0 // 2 + 17)
            if self.feat["plugins"] and it in (1, self.iters // 2 + 1):
                # Plugin A, then at once (so that it lands where A was) plugin B.
                self.thread_switch(0)
                self.plugin_run(it, plugin="a")
                self.plugin_run(it, plugin="b")
            seq = list(enumerate(steps))
            for pos, h, ht in sorted(hostile_steps, reverse=True):
                seq.insert(pos, ((-1, h), (ht, h, 0.0)))
            for key, (t, kind, p) in seq:
                if kind == "noise" and p < 0.5 and it % 3 == 1:
                    continue  # now and then a step is missing: the sequence changes
                # The same choices every iteration (the sequence repeats), other ones now and then.
                variant = it if self.vary.random() < 0.08 else 0
                self.r = random.Random(f"{self.seed}/{epoch}/{key}/{variant}")
                self.thread_switch(t)
                skey = (key, t)
                if skey not in stream_of:
                    # The fault comes on thread 0 (sticky_tail): not on another's per-thread stream.
                    stream_of[skey] = r.choice([c for c in self.usable(t) if kind != "sticky" or c.kind != "ptd"])
                s = stream_of[skey]
                k = key if isinstance(key, int) else 100 + len(kind)
                if kind == "kernel":
                    for j in range(1 + int(p * 4)):
                        self.op_kernel(s, it, k * 8 + j, n)
                elif kind == "copy":
                    self.op_copy(s, it, k)
                elif kind == "read":
                    self.op_read(s, it, k)
                elif kind == "noise":
                    self.op_sync_noise(s, k)
                elif kind == "hostfn":
                    self.op_hostfn(s, it, k)
                elif kind == "tmp":
                    self.op_tmp(s, it, k, n)
                elif kind == "graph":
                    self.op_graph_launch(s, k)
                elif kind == "torch":
                    self.op_torch(s, it, k, n, partial=False)
                elif kind == "fusegeom":
                    self.op_torch(s, it, k, n, partial=True)
                elif kind == "flag":
                    self.op_flag(s, it, k)
                elif kind == "attr":
                    self.op_attr(s, it, k, n)
                elif kind == "badlaunch":
                    self.op_badlaunch(s, it, k)
                elif kind == "modules":
                    self.op_modules(s, it, k)
                elif kind.startswith("badgrid:"):
                    self.op_badgrid(s, it, k, kind.split(":")[1])
                elif kind == "sticky":
                    self.op_sticky(s, it, k)
            if self.feat["image"]:
                self.thread_switch(0)
                s = stream_of.get((0, 0)) or self.streams[0]
                self.dev_op(s, [], [], [f"CHECK_CU(dt_cuLaunchKernel(dt_fn_tick, 2, 1, 1, 32, 1, 1, 0, (CUstream){self.sname(s)}, NULL, NULL));", "PROG_DRV();"], 200)
            if self.pending_slots and r.random() < 0.5:
                self.thread_switch(0)
                self.flush_slots(300)
        # The end of an epoch: everything read back.
        self.thread_switch(0)
        self.emit("CHECK_CUDA(cudaDeviceSynchronize());")
        self.H = join(self.H, [max(c) for c in zip(*self.C)])
        self.flush_slots(400)
        for nme, b in self.bufs.items():
            if b.kind == "dev" and b.alive:
                self.emit(f"CHECK_CUDA(cudaMemcpy(dt_q[0], {b.name}, {NMAX} * sizeof(float), cudaMemcpyDeviceToHost));")
                self.emit(f'dt_print("e{epoch} {nme}", dt_q[0], {NMAX});')
            elif b.kind == "pinned":
                self.emit(f'dt_print("e{epoch} {nme}", {b.name}, {NMAX});')
        if self.feat["image"]:
            self.emit('printf("ticks: %lu\\n", dtm_ticks);')
        if self.feat["graph"]:
            self.emit("CHECK_CUDA(cudaGraphExecDestroy(dt_gexec));")
        if self.feat["driver"]:
            self.emit("CHECK_CU(dt_cuModuleUnload(dt_mod));")
        if self.feat["sticky"] and epoch == 0:
            # With two epochs the device reset between them clears the fault.
            self.sticky_tail()

    def op_modules(self, s, it, key):
        """Two driver launches of the module's kernel each iteration; half way, right after
        them, the module is unloaded and another one loaded (its handles may be the old ones)."""
        y, x = self.pick_dev(2)
        for j in range(2):
            self.dev_op(s, [x, y], [y], self.drv_launch(s, y, x, self.n0, it + j), key)
        if it == self.iters // 2:
            self.swap_module()

    def swap_module(self):
        """Unloads the module and loads the other one (its handles may be the old ones)."""
        self.emit("CHECK_CU(dt_cuModuleUnload(dt_mod));")
        self.emit("dt_mod = dt_load_module(\"dt-mod2.cubin\", 0);")
        self.emit("CHECK_CU(dt_cuModuleGetFunction(&dt_fn2, dt_mod, \"dtm2_mix\"));")
        self.mod_gen = 2
        if self.feat["image"]:
            self.feat["image"] = False

    def plugin_run(self, it, plugin):
        y, = self.pick_dev(1)
        s = self.streams[0]
        self.emit("{")
        self.emit("  dt_plugin_run_t run;")
        self.emit(f"  void *h = dt_plugin_open(\"libdt-plugin-{plugin}.so\", &run);")
        for k in range(6):
            self.dev_op(s, [y], [y], [f"  for (int c = run({self.bufs[y].name}, {self.n0}, {it + k}, 0); c > 0; c--) PROG_RT();"], 500)
        self.emit("  CHECK_CUDA(cudaDeviceSynchronize());")
        self.H = join(self.H, [max(c) for c in zip(*self.C)])
        self.emit("  CHECK(dlclose(h) == 0);")
        self.emit("}")

    def program(self):
        self.reset_model()
        setup = self.setup_code()
        self.cur = None
        for e in range(self.epochs):
            if e > 0:
                self.thread_switch(0)
                self.emit("CHECK_CUDA(cudaDeviceReset());")
                self.emit("dt_setup();")
                self.reset_model()
                self.ptd_event = {}
                self.bound = {0}
            self.body(e)
        self.thread_switch(0)
        if self.feat["badlaunch"] or self.feat["badgrid"] or self.feat["sticky"]:
            # Launches that failed are launches the program made; a library may count them or not.
            self.emit('printf("failed launches: %lu\\n", dt_failed_launches);')
        self.emit("prog_print_launches();")
        # After a device fault that no reset cleared, the last chunk records no event: the call
        # would fail, and no thread waits for it.
        self.close_chunk(final=self.feat["sticky"] and self.epochs == 1)

        out = []
        out.append(f"/* Generated by tests/difftest/gen.py --seed {self.seed} --hostile {','.join(sorted(self.hostile)) or 'none'}")
        out.append(f" * threads={self.nthreads} iterations={self.iters} epochs={self.epochs} n={self.n0} block={self.block}")
        out.append(f" * features: {' '.join(k for k, v in sorted(self.feat.items()) if v)} */")
        out.append('#include "dt.h"')
        out.append("")
        out.append(f"static cudaStream_t dt_s[{max(1, len(self.created))}], dt_cap[2];")
        out.append("static cudaEvent_t dt_ev[8], dt_cap_ev[2], dt_ptd_ev[4];")
        out.append(f"static float *dt_d[{self.ndev}], *dt_g[3], *dt_p[3], *dt_tmp[4];")
        out.append(f"static float dt_q[3][{NMAX}];")
        out.append("static int *dt_flagp;")
        if "E" in self.bufs:
            out.append("static char *dt_edge;")
        out.append(f"static DtHostFn dt_hf[{max(1, self.hostfns)}];")
        out.append(f"static unsigned long long dt_slot[{max(1, self.hostfns)}];")
        out.append("static cudaGraph_t dt_graph DT_UNUSED;")
        out.append("static cudaGraphExec_t dt_gexec DT_UNUSED;")
        out.append("static CUmodule dt_mod DT_UNUSED;")
        out.append("static CUfunction dt_fn DT_UNUSED, dt_fn2 DT_UNUSED, dt_fn_tick DT_UNUSED;")
        out.append("")
        out += setup
        out.append("")
        by_thread = {t: [] for t in range(self.nthreads)}
        for g, (t, lines) in enumerate(self.chunks):
            by_thread[t].append((g, lines))
        for t in range(1, self.nthreads):
            out.append(f"static void *dt_thread{t}(void *) {{")
            for g, lines in by_thread[t]:
                out.append(f"  dt_turn_wait({g});")
                out += ["  " + ln for ln in lines]
                out.append(f"  dt_turn_pass({g});")
            out.append("  return NULL;")
            out.append("}")
            out.append("")
        out.append("int main(void) {")
        out.append("  setvbuf(stdout, NULL, _IOLBF, 0);")
        out.append("  dt_setup();")
        out.append(f"  pthread_t th[{self.nthreads}] DT_UNUSED;")
        for t in range(1, self.nthreads):
            out.append(f"  CHECK(pthread_create(&th[{t}], NULL, dt_thread{t}, NULL) == 0);")
        for g, lines in by_thread[0]:
            out.append(f"  dt_turn_wait({g});")
            out += ["  " + ln for ln in lines]
            out.append(f"  dt_turn_pass({g});")
        for t in range(1, self.nthreads):
            out.append(f"  CHECK(pthread_join(th[{t}], NULL) == 0);")
        out.append("  return 0;")
        out.append("}")
        return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--hostile", default="none", help="comma-separated: " + ",".join(HOSTILE) + ", all or none")
    ap.add_argument("-o", "--output")
    ap.add_argument("--drop-fixes", action="store_true",
                    help="self-check: leave out the synchronisations the model inserts (the program races)")
    a = ap.parse_args()
    if a.hostile in ("", "none"):
        hostile = set()
    elif a.hostile == "all":
        hostile = set(HOSTILE)
    else:
        hostile = set(a.hostile.split(","))
        bad = hostile - set(HOSTILE)
        if bad:
            ap.error("unknown hostile move(s): " + ",".join(sorted(bad)))
    text = Gen(a.seed, hostile, a.drop_fixes).program()
    if a.output:
        with open(a.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
