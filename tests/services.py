"""Real services for tests, started on loopback and stopped at the end: PostgreSQL from Debian's
package (the catalog of a many-machine lake) and moto's S3 server (a lake's data path on S3).

PostgreSQL: ``initdb`` into a fresh temp directory, ``pg_ctl start`` on a free loopback port with
the socket in that directory. As root, initdb and the server run as the unprivileged ``postgres``
user the Debian package creates (PostgreSQL refuses to run as root). scripts/run_tests.sh
installs the package when missing; without it the tests that need it are skipped.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def postgres_bindir() -> Path | None:
    """Debian's newest PostgreSQL server binaries (or whatever initdb is on PATH)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    return Path(on_path).resolve().parent if on_path else None


@dataclass
class PostgresServer:
    bindir: Path
    root: Path
    port: int
    user: str

    def _run(self, *args: str) -> subprocess.CompletedProcess:
        cmd = list(args)
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120)

    def start(self) -> "PostgresServer":
        self._run(str(self.bindir / "initdb"), "-D", str(self.root / "data"), "-A", "trust", "-U", "postgres",
                  "--no-sync", "-E", "UTF8")
        options = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"), "-o", options, "-l",
                  str(self.root / "server.log"), "-w", "start")
        return self

    def stop(self) -> None:
        try:
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def conninfo(self, dbname: str) -> str:
        return f"dbname={dbname} host=127.0.0.1 port={self.port} user=postgres"

    def new_database(self) -> str:
        """A fresh empty database; returns its name."""
        name = f"lake_{uuid.uuid4().hex[:12]}"
        psql = self.bindir / "psql" if (self.bindir / "psql").exists() else Path(shutil.which("psql") or "psql")
        subprocess.run([str(psql), "-q", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", "postgres",
                        "-c", f"CREATE DATABASE {name}"], check=True, capture_output=True, timeout=60)
        return name


def start_postgres() -> PostgresServer | None:
    """A running server, or None when PostgreSQL is not installed."""
    bindir = postgres_bindir()
    if bindir is None:
        return None
    root = Path(tempfile.mkdtemp(prefix="evokernel-pg-"))
    user = pwd.getpwuid(os.geteuid()).pw_name
    if os.geteuid() == 0:
        user = "postgres"
        os.chown(root, pwd.getpwnam(user).pw_uid, pwd.getpwnam(user).pw_gid)
    os.chmod(root, 0o755)
    return PostgresServer(bindir, root, free_port(), user).start()


@dataclass
class S3Server:
    endpoint: str
    bucket: str
    server: object

    def env(self) -> dict[str, str]:
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_REGION": "us-east-1"}

    def stop(self) -> None:
        self.server.stop()


def start_s3() -> S3Server:
    """moto's S3 server on a loopback port with one bucket."""
    import boto3
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing",
                          region_name="us-east-1")
    client.create_bucket(Bucket="evokernel-lake")
    return S3Server(endpoint, "evokernel-lake", server)
