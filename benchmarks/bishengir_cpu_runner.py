"""Can bishengir's CPU runner execute a Triton kernel's lowered HIVM program on this CPU? (issue 25)

Re-runs the investigation behind the README's finding on whatever ascendnpu-ir is installed, for a
masked vector add (4000 of 4096 elements, BLOCK 1024, 4 programs):

1. triton-ascend's front end and ``ttadapter`` stage make the linalg module bishengir-compile takes.
2. A host entry function is appended (``hacc.host_func_type<host_entry>``, static memref arguments,
   a loop over the program ids calling the kernel): the CPU runner wants exactly one host entry
   whose arguments are all shaped, and a Triton kernel is a device function with scalar arguments.
3. For each stop point of the pipeline, ``bishengir-compile --enable-cpu-runner-after=PASS`` lowers
   the module there to LLVM-dialect MLIR; LLVM 19's ``mlir-translate`` and ``llc`` (Debian
   ``llvm-19``, ``mlir-19-tools``, ``libmlir-19``) make an object; a C driver runs the host entry on
   known inputs and checks the 4000 sums and the untouched tail.
4. The HIVM module bishengir hands to CANN's hivmc (after UB planning and sync insertion) is lowered
   with ``bishengir-opt --hivm-lower-to-cpu-backend --convert-hivm-to-std``: what it still calls.

Run: .venv/bin/python -m benchmarks.bishengir_cpu_runner   (needs the triton-ascend toolchain, gcc,
and ``apt-get install llvm-19 mlir-19-tools libmlir-19``)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

LLVM = Path("/usr/lib/llvm-19")
STOPS = ("adapt-triton-kernel", "hfusion-legalize-bool", "hfusion-add-ffts-addr", "convert-hfusion-to-hivm",
         "hivm-bind-sub-block", "hivm-plan-memory", "hivm-inject-sync")
FLAGS = ("--target=Ascend910B2", "--enable-auto-multi-buffer=true", "--enable-auto-bind-sub-block=true",
         "--enable-hfusion-compile=true", "--enable-hivm-compile=true", "--enable-triton-kernel-compile=true")
MAKE_LINALG = r'''
import sys
sys.path.insert(0, sys.argv[1])
import triton, triton.language as tl
from driver import prepare_triton
from triton._C.libtriton import ir
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask, other=0.0) + tl.load(b_ptr + offs, mask=mask, other=0.0), mask=mask)

backend = prepare_triton("Ascend910B2")(GPUTarget("npu", "Ascend910B2", 0))
options = backend.parse_options({})
src = ASTSource(add_kernel, {"a_ptr": "*fp32", "b_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 1024})
context = ir.context(); ir.load_dialects(context); backend.load_dialects(context)
module = src.make_ir(options, backend.get_codegen_implementation(), backend.get_module_map(), context)
stages = {}; backend.add_stages(stages, options)
metadata = {"hash": "x", "target": backend.target, **options.__dict__}
print(str(stages["ttadapter"](stages["ttir"](module, metadata), metadata)))
'''
HOST = '''
  func.func @host_entry(%a: memref<4096xf32>, %b: memref<4096xf32>, %c: memref<4096xf32>) attributes {hacc.function_kind = #hacc.function_kind<HOST>, hacc.host_func_type = #hacc.host_func_type<host_entry>} {
    %ws = memref.alloc() : memref<64xi8>
    %wsd = memref.cast %ws : memref<64xi8> to memref<?xi8>
    %ad = memref.cast %a : memref<4096xf32> to memref<?xf32>
    %bd = memref.cast %b : memref<4096xf32> to memref<?xf32>
    %cd = memref.cast %c : memref<4096xf32> to memref<?xf32>
    %n = arith.constant 4000 : i32
    %g = arith.constant 4 : i32
    %one = arith.constant 1 : i32
    %zero = arith.constant 0 : i32
    %lo = arith.constant 0 : index
    %hi = arith.constant 4 : index
    %st = arith.constant 1 : index
    scf.for %p = %lo to %hi step %st {
      %pid = arith.index_cast %p : index to i32
      func.call @add_kernel(%wsd, %wsd, %ad, %bd, %cd, %n, %g, %one, %one, %pid, %zero, %zero) : (memref<?xi8>, memref<?xi8>, memref<?xf32>, memref<?xf32>, memref<?xf32>, i32, i32, i32, i32, i32, i32, i32) -> ()
    }
    return
  }
}
'''
DRIVER_C = r'''
#include <stdio.h>
void host_entry(float*,float*,long,long,long, float*,float*,long,long,long, float*,float*,long,long,long);
void *getFileHandle(void *p) { return 0; }
void closeFileHandle(void *p) {}
void _mlir_ciface_getDataF32(void *m) {}
void _mlir_ciface_printDataF32(void *f, void *m) {}
int main(void) {
  static float a[4096], b[4096], c[4096];
  for (int i = 0; i < 4096; i++) { a[i] = i * 0.5f; b[i] = 1.0f - i; c[i] = -7.0f; }
  host_entry(a, a, 0, 4096, 1, b, b, 0, 4096, 1, c, c, 0, 4096, 1);
  int bad = 0, kept = 0;
  for (int i = 0; i < 4000; i++) bad += c[i] != a[i] + b[i];
  for (int i = 4000; i < 4096; i++) kept += c[i] == -7.0f;
  printf("ran on this CPU: %d of 4000 sums wrong, %d of 96 tail elements untouched\n", bad, kept);
  return bad != 0 || kept != 96;
}
'''


def _run(argv, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kw)


def _strip_hacc(text: str) -> str:
    """Drop the NPU-only attributes upstream mlir-translate cannot parse."""
    text = re.sub(r"^module attributes \{.*\} \{", "module {", text, count=1, flags=re.M)
    text = re.sub(r"hacc\.[a-z_]+ = #hacc\.[a-z_]+<[^>]*>", "", text)
    text = re.sub(r",?\s*hacc\.entry", "", text)
    return re.sub(r"attributes \{\s*\}", "", re.sub(r",\s*\}", "}", text))


def _first_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if "error" in ln.lower() and not ln.lstrip().startswith("#")]
    return (lines or [text.strip().splitlines()[-1] if text.strip() else "no output"])[0][:220]


def try_stop(stop: str, module: Path, work: Path, env: dict) -> str:
    out = work / f"{stop}.llvm.mlir"
    run = _run(["bishengir-compile", module, *FLAGS, f"--enable-cpu-runner-after={stop}", "-o", out], env=env, cwd=work)
    if run.returncode != 0 or not out.is_file():
        return f"bishengir-compile exit {run.returncode}: {_first_error(run.stdout + run.stderr)}"
    out.write_text(_strip_hacc(out.read_text()))
    ll, obj, exe = work / f"{stop}.ll", work / f"{stop}.o", work / f"{stop}.run"
    for argv in ([LLVM / "bin/mlir-translate", "--mlir-to-llvmir", out, "-o", ll],
                 [LLVM / "bin/llc", "-O2", "-filetype=obj", "-relocation-model=pic", ll, "-o", obj],
                 [LLVM / "bin/llvm-objcopy", "--redefine-sym", "main=bishengir_main", obj],
                 ["gcc", work / "driver.c", obj, f"-L{LLVM / 'lib'}", "-l:libmlir_c_runner_utils.so.19.1",
                  f"-Wl,-rpath,{LLVM / 'lib'}", "-o", exe]):
        step = _run(argv, cwd=work)
        if step.returncode != 0:
            return f"{Path(str(argv[0])).name} failed: {_first_error(step.stdout + step.stderr)}"
    ran = _run([exe], cwd=work)
    return ran.stdout.strip() or f"exit {ran.returncode}"


def hivm_calls(module: Path, work: Path, env: dict) -> str:
    dump = work / "handed-to-hivmc.mlir"
    _run(["bishengir-compile", module, *FLAGS, "-o", work / "npu"], env={**env, "EVOKERNEL_HIVM_DUMP": str(dump)}, cwd=work)
    if not dump.is_file():
        return "no HIVM module was handed over"
    lowered = _run(["bishengir-opt", dump, "--hivm-lower-to-cpu-backend", "--convert-hivm-to-std"], env=env, cwd=work)
    calls = sorted(set(re.findall(r"call @([A-Za-z0-9_]+)", lowered.stdout)) - {"printf"})
    return f"calls {', '.join(calls)}: defined only in ascendnpuir/lib/meta_op.*.bc (target hiipu64-hisilicon-cce)"


def main() -> int:
    from verifier.backends.triton_ascend.gate import driver_env
    from verifier.backends.triton_ascend.toolchain import locate

    toolchain = locate()
    if not (LLVM / "bin" / "mlir-translate").is_file() or shutil.which("gcc") is None:
        print("needs gcc and LLVM 19's MLIR tools: apt-get install llvm-19 mlir-19-tools libmlir-19")
        return 1
    work = Path(tempfile.mkdtemp(prefix="evokernel-cpu-runner-"))
    env = {**driver_env(toolchain, work), "TRITON_DISABLE_LINE_INFO": "1"}  # no trailing #loc aliases
    (work / "make_linalg.py").write_text(MAKE_LINALG)  # @triton.jit needs its source in a file
    made = _run([toolchain.python, work / "make_linalg.py",
                 Path(__file__).resolve().parents[1] / "verifier/backends/triton_ascend"], env=env, cwd=work)
    if made.returncode != 0:
        print(f"making the linalg module failed: {_first_error(made.stderr)}")
        return 1
    linalg = re.sub(r', mix_mode = "[a-z]+", parallel_mode = "[a-z]+"', "", made.stdout.strip())
    (work / "add.mlir").write_text(linalg)
    module = work / "add_host.mlir"
    module.write_text(linalg[: linalg.rstrip().rfind("}")] + HOST)
    (work / "driver.c").write_text(DRIVER_C)
    print(f"bishengir-compile {toolchain.env.versions.get('bishengir-compile')}, work in {work}")
    for stop in STOPS:
        print(f"  --enable-cpu-runner-after={stop}: {try_stop(stop, module, work, env)}", flush=True)
    print(f"  HIVM module handed to hivmc, --hivm-lower-to-cpu-backend --convert-hivm-to-std: {hivm_calls(work / 'add.mlir', work, env)}")
    if os.environ.get("KEEP") != "1":
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
