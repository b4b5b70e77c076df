"""The ascendc backend's build as a job the monitor runs in the confined builder.

``python -m verifier.backends.ascendc.build_job job.json``: parses the candidate's container
(verifier.backends.ascendc.candidate: data, never executed), builds it with CANN (:mod:`.build`) and
packs what the runner needs (the binding library, and for an operator project the installed vendor
package) into ``artifact.tar``; the monitor checks the library's symbols and places the archive where
the runner unpacks it into its own directory before the import. Exit status 0: built; the compiler's
feedback on stderr either way.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tarfile
from pathlib import Path

from verifier.backends.base import BuildJob

ARTIFACT = "artifact.tar"
LIBRARY_RECORD = "library.so"  # a copy of the binding library, for the monitor's symbol check


def job(candidate_source: str, soc: str, toolchains: tuple[str, ...]) -> BuildJob:
    data = {"source": candidate_source, "soc": soc}
    key = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    return BuildJob(key, "Ascend C build", (("job.json", json.dumps(data)),),
                    (sys.executable, "-m", "verifier.backends.ascendc.build_job", "job.json"), artifact=ARTIFACT,
                    records=(LIBRARY_RECORD,), toolchains=toolchains, python=True)


def main(argv: list[str]) -> int:
    from verifier.backends.ascendc.build import BUILDERS, project_dir
    from verifier.backends.ascendc.candidate import parse_candidate
    from verifier.backends.ascendc.toolchain import locate_cann

    spec = json.loads(Path(argv[1]).read_text())
    candidate = parse_candidate(spec["source"])
    work = Path.cwd()
    root = project_dir(work, candidate)
    result = BUILDERS[candidate.format](candidate, locate_cann(), root, 3600.0)
    print(result.feedback, file=sys.stderr)
    if not result.ok or result.library is None:
        return 1
    (work / LIBRARY_RECORD).write_bytes(result.library.read_bytes())
    with tarfile.open(work / ARTIFACT, "w") as tar:
        tar.add(result.library, arcname=f"lib/{result.library.name}")
        if result.opp_vendor_dir is not None:
            tar.add(result.opp_vendor_dir, arcname="vendor")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
