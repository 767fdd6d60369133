#!/usr/bin/env python3
"""difftest.py — differential testing of the library on generated CUDA programs.

For each program (a generator seed, or a checked-in .cu file):
  1. generate it (tests/difftest/gen.py) and compile it with nvcc, unless given built;
  2. run it on the simulator without the library under SIM_SEED=1, 2, 3 (--plain-seeds): exit status and stdout
     must be identical (a difference is a generator bug: the program is not race-free);
  3. run it with the library (LD_PRELOAD) under each configuration (AUTOGRAPH_* settings,
     another SIM_SEED, graph-API fault injection with SIM_FAIL): exit status and stdout must be
     identical to the first plain run, and the statistics must agree with the program's own count
     of its launches (by_path.runtime/driver, passthrough + replayed == launches).
Any difference, crash or time-out fails, with the seed and the command that reproduces it.

Usage:
  difftest.py [--seeds 1,2,5-9 | --count N --start S] [--hostile LIST] [--configs LIST]
              [--prog FILE.cu|BINARY …] [--jobs J] [--keep DIR] [--require-replay FRACTION]
              [--plain-seeds 1-3]
Environment: BUILD (default build), AG_LIB (default $BUILD/libautograph.so), DT_SIM (the
simulator's folder, default $BUILD/sim), CUDA_HOME, NVCC, DT_TIMEOUT (seconds per run, default
60). See docs/difftest.md.
"""
import argparse
import concurrent.futures as cf
import json
import os
import random
import re
import shlex
import subprocess
import sys
import tempfile
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEN = os.path.join(ROOT, "tests", "difftest", "gen.py")

# Library configurations: name -> environment. "fail:*" entries are expanded per program.
CONFIGS = {
    "default": {},
    "repeats1": {"AUTOGRAPH_REPEATS": "1"},
    "repeats3": {"AUTOGRAPH_REPEATS": "3"},
    "short": {"AUTOGRAPH_MIN_SEQ": "2", "AUTOGRAPH_MAX_SEQ": "4"},
    "long": {"AUTOGRAPH_MIN_SEQ": "8", "AUTOGRAPH_MAX_SEQ": "64"},
    "fuse": {"AUTOGRAPH_FUSE": "exact"},
    "seed7": {"SIM_SEED": "7"},
    "seed11-fuse": {"SIM_SEED": "11", "AUTOGRAPH_FUSE": "all", "AUTOGRAPH_REPEATS": "1"},
    "fail": {},  # each graph API failing at a point chosen per program (see fault_for)
}
DEFAULT_CONFIGS = "default,repeats1,repeats3,short,long,fuse,seed7,seed11-fuse,fail"
GRAPH_APIS = ["cuGraphCreate", "cuGraphAddKernelNode", "cuGraphInstantiateWithFlags",
              "cuGraphInstantiate", "cuGraphLaunch", "cuGraphExecKernelNodeSetParams",
              "cuGraphExecUpdate", "cuGraphExecDestroy"]


def faults_for(name):
    """(api, point) for each graph API: its 1st, 2nd or 3rd call, or every call from one on."""
    r = random.Random(zlib.crc32(name.encode()))
    return [(api, r.choice(["1", "2", "3", "1+", "2+"])) for api in GRAPH_APIS]


def parse_seeds(text):
    out = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            out += list(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


class Runner:
    def __init__(self, args):
        self.a = args
        self.build = os.path.abspath(os.environ.get("BUILD", os.path.join(ROOT, "build")))
        self.lib = os.environ.get("AG_LIB", os.path.join(self.build, "libautograph.so"))
        self.sim = os.environ.get("DT_SIM", os.path.join(self.build, "sim"))
        cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
        self.nvcc = os.environ.get("NVCC", os.path.join(cuda, "bin", "nvcc"))
        self.cuda = cuda
        self.timeout = float(os.environ.get("DT_TIMEOUT", "60"))
        self.work = args.keep or tempfile.mkdtemp(prefix="difftest.")
        os.makedirs(self.work, exist_ok=True)
        base = os.environ.get("AG_SAN_PRELOAD", "")
        inherited = os.environ.get("LD_PRELOAD", "")
        self.preload_base = " ".join(x for x in (base, inherited) if x)

    # ---- building ----
    def compile(self, src, exe):
        cmd = [self.nvcc, "-O1", "--extended-lambda", "-cudart", "shared", "-Xcompiler", "-rdynamic",
               "-I" + os.path.join(ROOT, "tests"), "-I" + os.path.join(ROOT, "tests", "sim"),
               "-I" + os.path.join(ROOT, "tests", "progs"), "-I" + os.path.join(ROOT, "tests", "difftest"),
               "-diag-suppress", "177", "-o", exe, src,
               "-L" + os.path.join(self.cuda, "lib64"), "-L" + os.path.join(self.cuda, "lib64", "stubs"),
               "-Xlinker", "--as-needed", "-lcuda", "-lpthread", "-ldl"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"nvcc failed on {src}:\n{p.stderr[-3000:]}")

    def prepare(self, item):
        """item: ('seed', n) or ('file', path). Returns (name, exe, reproduce-prefix)."""
        kind, val = item
        if kind == "seed":
            name = f"seed{val}"
            src = os.path.join(self.work, name + ".cu")
            exe = os.path.join(self.work, name)
            subprocess.run([sys.executable, GEN, "--seed", str(val), "--hostile", self.a.hostile, "-o", src], check=True)
            self.compile(src, exe)
            return name, exe, f"tests/difftest/difftest.py --seeds {val} --hostile {self.a.hostile}"
        name = os.path.basename(val).split(".")[0]
        if val.endswith(".cu"):
            exe = os.path.join(self.work, name)
            self.compile(val, exe)
        else:
            exe = val
        return name, exe, f"tests/difftest/difftest.py --prog {val}"

    # ---- running ----
    def run(self, exe, env_extra, with_lib, tag, name, probe=False):
        env = dict(os.environ)
        if probe:
            # A run expected to fail half way (the program's own call takes an injected fault):
            # what a sanitizer says about a process that exits early is not the project's
            # concern, so its reports go to the scratch folder, not the build's report folder.
            for k in ("ASAN_OPTIONS", "TSAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
                if k in env:
                    env[k] = re.sub(r"log_path=[^:]*", "log_path=" + os.path.join(self.work, "probe-san"), env[k])
        env["LD_LIBRARY_PATH"] = self.sim + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        env["BUILD"] = self.build
        env.pop("SIM_FAIL", None)
        env.setdefault("SIM_SEED", "1")
        env.setdefault("DT_FLAG_SECONDS", "5")
        for k in list(env):
            if k.startswith("AUTOGRAPH_"):
                del env[k]
        env.update(env_extra)
        stats = None
        pre = self.preload_base
        if with_lib:
            pre = (pre + " " + self.lib).strip()
            stats = os.path.join(self.work, f"{name}.{tag}.json")
            if os.path.exists(stats):
                os.unlink(stats)
            env["AUTOGRAPH_STATS"] = stats
        if pre:
            env["LD_PRELOAD"] = pre
        else:
            env.pop("LD_PRELOAD", None)
        try:
            p = subprocess.run([exe], env=env, capture_output=True, timeout=self.timeout)
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            rc, out, err = "timeout", e.stdout or b"", e.stderr or b""
        shown = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env_extra.items()))
        cmd = (f"BUILD={self.build} LD_LIBRARY_PATH={self.sim} " + (f"LD_PRELOAD={self.lib} " if with_lib else "")
               + shown + f" {exe}")
        return {"rc": rc, "out": out, "err": err, "stats": stats, "cmd": cmd}

    def check_stats(self, res, out):
        """The library's statistics agree with the program's own count."""
        m = re.search(rb"launches: runtime=(\d+) driver=(\d+) cudnn=0\s*$", out)
        if not m:
            return "no launches line at the end of the output", None
        try:
            st = json.load(open(res["stats"]))
        except Exception as e:  # noqa: BLE001 — any unreadable statistics fail the run
            return f"no statistics: {e}", None
        bp = st.get("by_path", {})
        rt, drv = int(m[1]), int(m[2])
        f = re.search(rb"failed launches: (\d+)", out)
        failed = int(f[1]) if f else 0
        errs = []
        if not (rt <= (bp.get("runtime") or 0) <= rt + failed):
            errs.append(f"by_path.runtime={bp.get('runtime')} but the program made {rt} runtime launches")
        if bp.get("driver") != drv:
            errs.append(f"by_path.driver={bp.get('driver')} but the program made {drv} driver launches")
        if st.get("passthrough", 0) + st.get("replayed", 0) != st.get("launches"):
            errs.append(f"passthrough {st.get('passthrough')} + replayed {st.get('replayed')} != launches {st.get('launches')}")
        return ("; ".join(errs) or None), st

    def one(self, item):
        lines, failures, replays = [], [], {}
        try:
            name, exe, repro = self.prepare(item)
        except Exception as e:  # noqa: BLE001
            return [f"{item}: {e}"], [f"{item}: build failed"], {}
        base = [self.run(exe, {"SIM_SEED": str(s)}, False, f"plain{s}", name) for s in self.a.plain_seeds]
        b0 = base[0]
        if b0["rc"] != 0:
            failures.append(f"{name}: GENERATOR BUG: the plain run exits with {b0['rc']}\n"
                            f"  {b0['err'].decode(errors='replace')[-600:]}\n  reproduce: {repro}\n  {b0['cmd']}")
            return lines, failures, replays
        for b in base[1:]:
            if b["rc"] != b0["rc"] or b["out"] != b0["out"]:
                failures.append(f"{name}: GENERATOR BUG: the plain output varies with SIM_SEED (the program races)\n"
                                f"  reproduce: {repro}\n  {b['cmd']}")
                return lines, failures, replays
        todo = []
        for cname in self.a.configs.split(","):
            if cname == "fail":
                todo += [(f"fail-{api}-{n}", {"SIM_FAIL": f"{api}:{n}"}) for api, n in faults_for(name)]
            else:
                todo.append((cname, dict(CONFIGS[cname])))
        for cname, env in todo:
            base_ref = b0
            if "SIM_FAIL" in env:
                # The program's own graph calls would take the fault too: not comparable. The
                # faults count calls of the process, the library's and the program's together,
                # and the library's calls (a graph built, planned again or evicted) move the
                # program's to other counts: a program that makes the call at all is left out.
                api = env["SIM_FAIL"].split(":")[0]
                pf = self.run(exe, {"SIM_FAIL": f"{api}:1+"}, False, "plainfail", name, probe=True)
                if pf["rc"] != b0["rc"] or pf["out"] != b0["out"]:
                    lines.append(f"{name}: [{env['SIM_FAIL']}] not run, the program makes that call itself")
                    continue
            res = self.run(exe, env, True, cname, name)
            what = None
            if res["rc"] == "timeout":
                what = f"hang (no exit within {self.timeout:.0f} s)"
            elif res["rc"] != base_ref["rc"]:
                what = f"exit status {res['rc']} (plain: {base_ref['rc']})"
            elif res["out"] != base_ref["out"]:
                a = base_ref["out"].decode(errors="replace").splitlines()
                b = res["out"].decode(errors="replace").splitlines()
                i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
                what = (f"output differs at line {i + 1}: plain {a[i] if i < len(a) else '<end>'!r}, "
                        f"library {b[i] if i < len(b) else '<end>'!r}")
            st = None
            if what is None:
                what, st = self.check_stats(res, res["out"])
            if what:
                err = res["err"].decode(errors="replace").strip().splitlines()[-6:]
                failures.append(f"{name} [{cname}]: {what}\n    " + "\n    ".join(err)
                                + f"\n  reproduce: {repro} --configs {'fail' if cname.startswith('fail') else cname}"
                                + f"\n  run: {res['cmd']}")
            else:
                replays[cname] = (st.get("replayed", 0), st.get("launches", 0), st.get("graphs", 0))
        ok = "FAIL" if failures else "ok"
        d = replays.get("default")
        lines.append(f"{ok:4} {name}" + (f"  default: replayed {d[0]}/{d[1]} graphs {d[2]}" if d else ""))
        return lines, failures, replays


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds")
    ap.add_argument("--count", type=int)
    ap.add_argument("--start", type=int, default=1)
    ap.add_argument("--prog", nargs="*", default=[])
    ap.add_argument("--hostile", default=os.environ.get("DIFFTEST_HOSTILE", "none"))
    ap.add_argument("--configs", default=DEFAULT_CONFIGS)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--plain-seeds", default="1,2,3", help="SIM_SEEDs of the runs without the library")
    ap.add_argument("--keep")
    ap.add_argument("--require-replay", type=float, default=0.0,
                    help="fail unless this fraction of the programs replayed graphs in the default configuration")
    a = ap.parse_args()
    a.plain_seeds = parse_seeds(a.plain_seeds)
    for c in a.configs.split(","):
        if c not in CONFIGS:
            ap.error(f"unknown configuration {c}; known: {', '.join(CONFIGS)}")
    items = [("file", p) for p in a.prog]
    if a.seeds:
        items += [("seed", s) for s in parse_seeds(a.seeds)]
    if a.count:
        items += [("seed", s) for s in range(a.start, a.start + a.count)]
    if not items:
        ap.error("nothing to run: give --seeds, --count or --prog")
    r = Runner(a)
    fails, replayed = [], 0
    with cf.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        for lines, failures, replays in ex.map(r.one, items):
            for ln in lines:
                print(ln, flush=True)
            fails += failures
            if replays.get("default", (0,))[0] > 0:
                replayed += 1
    for f in fails:
        print("FAIL: " + f)
    print(f"difftest: {len(items)} programs, {len(fails)} failures, {replayed} replayed graphs by default")
    if a.require_replay and replayed < a.require_replay * len(items):
        print(f"FAIL: only {replayed} of {len(items)} programs replayed graphs (the library did nothing?)")
        return 1
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
