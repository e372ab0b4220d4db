"""A throwaway single-node SLURM cluster on localhost for tests: munged, slurmctld and slurmd.

The daemons run in the foreground as children of this process (each in a session of its own), with a
private munge key and socket and all state, logs and pid files in one scratch folder, so that `stop`
ends exactly what `start` began. Only loopback addresses are used; the two SLURM ports are free ones
picked at start.

slurm.conf and gres.conf are written to /etc/slurm, the default path: a job step drops SLURM_CONF from
the environment of what it runs, so the nested `srun` inside every Snakemake job finds its config only
there. Files already there are moved into the scratch folder and put back by `stop` (a file left by an
earlier crashed run of this module is recognised by its marker comment and simply replaced).

By hand (as root), e.g. to try the profile:

    python tests/slurm/cluster.py start /tmp/slurm-test   # returns once the node is idle
    python tests/slurm/cluster.py stop /tmp/slurm-test
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import string
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
MARKER = "written by tests/slurm/cluster.py"  # in both config templates
CONF_DIR = Path("/etc/slurm")
CONF_FILES = ("slurm.conf", "gres.conf")
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "srun", "squeue", "scancel", "scontrol", "sinfo")
SBIN_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin", "/usr/local/sbin"])
# Character devices that stand in for GPU device files (gres.conf needs files that exist).
FAKE_GPU_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random")


class ClusterError(RuntimeError):
    """The cluster did not come up; the message carries the daemons' log tails."""


def which(name: str) -> str | None:
    return shutil.which(name, path=SBIN_PATH)


def _process_names() -> dict[int, str]:
    names = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                names[int(entry.name)] = (entry / "comm").read_text().strip()
            except OSError:
                pass
    return names


def _pids_named(name: str) -> set[int]:
    return {pid for pid, comm in _process_names().items() if comm == name}


def _tree(pid: int) -> list[int]:
    """A process and all its descendants, parents first."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(children.get(current, []))
    return tree


def _kill_trees(pids: set[int]) -> None:
    for pid in pids:
        for member in _tree(pid):
            try:
                os.kill(member, signal.SIGKILL)
            except ProcessLookupError:
                pass


def unavailable() -> str | None:
    """Why a cluster cannot be started here, or None when it can."""
    missing = [name for name in (*DAEMONS, *CLIENTS) if which(name) is None]
    if missing:
        return f"SLURM/munge not installed ({', '.join(missing)} missing; .ci/install-slurm installs them)"
    if os.geteuid() != 0:
        return "starting slurmd and writing /etc/slurm/slurm.conf need root"
    running = sorted({comm for comm in _process_names().values() if comm in ("slurmctld", "slurmd")})
    if running:
        return f"{', '.join(running)} already running on this machine: not starting a second cluster"
    return None


def _free_ports(count: int) -> list[int]:
    """Distinct TCP ports free on 127.0.0.1 (all held open until each is known, so none repeats)."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _hardware() -> dict[str, int]:
    """CPUs and memory (MB) as slurmd itself detects them (`slurmd -C`)."""
    out = subprocess.run([which("slurmd"), "-C"], capture_output=True, text=True, timeout=30).stdout
    fields = dict(item.split("=", 1) for item in out.split() if "=" in item)
    return {"cpus": int(fields.get("CPUs", os.cpu_count() or 1)), "memory": int(fields["RealMemory"])}


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@dataclass
class LocalCluster:
    """One node, one partition (`test`), `gpus` fake GPUs; state under `root`."""

    root: Path
    gpus: int = 1
    memory_margin_mb: int = 2048
    node: str = field(default_factory=lambda: socket.gethostname().split(".")[0])
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    _stepds_before: set[int] = field(default_factory=set)

    @property
    def log_dir(self) -> Path:
        return self.root / "log"

    @property
    def jobcomp(self) -> Path:
        """Where slurmctld appends one line per finished job (jobcomp/filetxt)."""
        return self.log_dir / "jobcomp.txt"

    @property
    def env(self) -> dict[str, str]:
        """The environment for daemons and client commands: this one less any SLURM settings (so the
        default config path is used and no outer allocation leaks in), PATH with the sbin folders."""
        prefixes = ("SLURM_", "SBATCH_", "SRUN_", "SALLOC_", "SQUEUE_", "SINFO_", "SACCT_", "SCANCEL_")
        env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
        env["PATH"] = SBIN_PATH
        return env

    # -- start ------------------------------------------------------------------------------------------

    def start(self, timeout: float = 60) -> None:
        """Write the configs, start munged, slurmctld, slurmd; return once the node is idle."""
        reason = unavailable()
        if reason:
            raise ClusterError(reason)
        self.root = self.root.resolve()
        for sub in ("ctld", "spool", "log", "munge", "etc-backup"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        # munged wants the folders of its socket and key searchable by all and writable by root only
        for folder in (self.root, self.root / "munge"):
            os.chmod(folder, 0o711)
        if len(str(self.root / "munge/munge.socket")) > 100:
            raise ClusterError(f"{self.root} is too long a path for munged's socket (at most 107 bytes)")
        self._stepds_before = _pids_named("slurmstepd")
        (self.root / "stepds-before.json").write_text(json.dumps(sorted(self._stepds_before)))
        try:
            self._write_configs()
            self._start_munged()
            self._spawn("slurmctld", [which("slurmctld"), "-D", "-c"])
            self._wait(lambda: self._ok("scontrol", "ping"), 20, "slurmctld does not answer `scontrol ping`")
            self._spawn("slurmd", [which("slurmd"), "-D", "-N", self.node])
            self._wait_for_idle_node(timeout)
        except BaseException:
            self.stop()
            raise

    def _write_configs(self) -> None:
        hardware = _hardware()
        memory = max(1024, hardware["memory"] - max(self.memory_margin_mb, hardware["memory"] // 10))
        ctld_port, slurmd_port = _free_ports(2)
        values = {
            "host": self.node,
            "node": self.node,
            "ctld_port": ctld_port,
            "slurmd_port": slurmd_port,
            "munge_socket": self.root / "munge/munge.socket",
            "state": self.root,
            "cpus": hardware["cpus"],
            "memory": memory,
            "gpus": self.gpus,
            "gpu_files": ",".join(FAKE_GPU_FILES[: self.gpus]),
        }
        self.settings = {**values, "munge_socket": str(values["munge_socket"]), "state": str(self.root)}
        CONF_DIR.mkdir(parents=True, exist_ok=True)
        backup = self.root / "etc-backup"
        for name in CONF_FILES:
            target = CONF_DIR / name
            if target.exists() and not (backup / name).exists() and not self._is_ours(target):
                shutil.copy2(target, backup / name)
            text = string.Template((HERE / f"{name}.in").read_text()).substitute(values)
            target.write_text(text)
        (self.root / "cluster.json").write_text(json.dumps(self.settings, indent=1))

    @staticmethod
    def _is_ours(path: Path) -> bool:
        try:
            return MARKER in path.read_text(errors="replace")
        except OSError:
            return False

    def _start_munged(self) -> None:
        munge = self.root / "munge"
        key = munge / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o600)
        self._spawn(
            "munged",
            [
                which("munged"),
                "--foreground",
                "--force",
                f"--socket={munge / 'munge.socket'}",
                f"--key-file={key}",
                f"--pid-file={munge / 'munged.pid'}",
                f"--log-file={self.log_dir / 'munged.log'}",
                f"--seed-file={munge / 'munged.seed'}",
            ],
        )
        self._wait(lambda: (munge / "munge.socket").exists(), 15, "munged did not create its socket")

    def _spawn(self, name: str, argv: list[str]) -> None:
        with open(self.log_dir / f"{name}.out", "ab") as out:
            self.processes[name] = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
            )
        self._save_pids()

    def _save_pids(self) -> None:
        pids = {name: process.pid for name, process in self.processes.items()}
        (self.root / "pids.json").write_text(json.dumps(pids))

    def _ok(self, *argv: str) -> bool:
        try:
            return subprocess.run(argv, env=self.env, capture_output=True, timeout=10).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def _wait(self, ready, timeout: float, message: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = [name for name, process in self.processes.items() if process.poll() is not None]
            if dead:
                raise ClusterError(f"{', '.join(dead)} exited during start-up\n{self.logs()}")
            if ready():
                return
            time.sleep(0.25)
        raise ClusterError(f"{message} after {timeout:.0f} s\n{self.logs()}")

    def node_state(self) -> str:
        result = subprocess.run(
            ["sinfo", "-h", "-N", "-n", self.node, "-o", "%T"],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=10,
        )
        return result.stdout.strip().lower()

    def _wait_for_idle_node(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        restarted = False
        started = time.monotonic()
        while time.monotonic() < deadline:
            state = self.node_state()
            if state == "idle":
                return
            if (
                not restarted
                and time.monotonic() - started > 10
                and state.startswith(("down", "unk", "drain"))
            ):
                # seen with slurm 22.05: a slurmd that registered too early stays down; a restart fixes it
                self._end("slurmd")
                self._spawn("slurmd", [which("slurmd"), "-D", "-N", self.node])
                subprocess.run(
                    ["scontrol", "update", f"NodeName={self.node}", "State=RESUME"],
                    env=self.env,
                    capture_output=True,
                )
                restarted = True
            time.sleep(0.5)
        raise ClusterError(
            f"node {self.node} not idle after {timeout:.0f} s (state {state!r})\n{self.logs()}"
        )

    # -- stop -------------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Cancel every job, end the daemons (slurmd, slurmctld, munged), put /etc/slurm back."""
        try:
            if "slurmctld" in self.processes and self.processes["slurmctld"].poll() is None:
                self._cancel_all_jobs()
        finally:
            for name in reversed(DAEMONS):
                self._end(name)
            # a job step that outlived slurmd (it should not: every job was cancelled) goes with its job
            _kill_trees(_pids_named("slurmstepd") - self._stepds_before)
            self._wait_for_exits()
            self._restore_configs()
            (self.root / "pids.json").unlink(missing_ok=True)

    def _wait_for_exits(self, timeout: float = 10) -> None:
        """Give the steps' and slurmctld's helpers that outlived their parents the moment it takes the
        system to reap them, so none is still listed when stop returns."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not (_pids_named("slurmstepd") - self._stepds_before) and not _pids_named("slurmscriptd"):
                return
            time.sleep(0.2)

    def _cancel_all_jobs(self) -> None:
        squeue = ["squeue", "-h", "-o", "%A", "-t", "PENDING,RUNNING,SUSPENDED,COMPLETING,CONFIGURING"]
        ids = subprocess.run(squeue, env=self.env, capture_output=True, text=True, timeout=10).stdout.split()
        if not ids:
            return
        subprocess.run(["scancel", *ids], env=self.env, capture_output=True, timeout=10)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if not subprocess.run(
                squeue, env=self.env, capture_output=True, text=True, timeout=10
            ).stdout.split():
                return
            time.sleep(0.5)

    def _end(self, name: str, grace: float = 15) -> None:
        process = self.processes.pop(name, None)
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(grace)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        self._save_pids()

    def _restore_configs(self) -> None:
        backup = self.root / "etc-backup"
        for name in CONF_FILES:
            target = CONF_DIR / name
            if (backup / name).exists():
                shutil.move(backup / name, target)
            elif target.exists() and self._is_ours(target):
                target.unlink()

    # -- reading ----------------------------------------------------------------------------------------

    def logs(self) -> str:
        """The tails of the daemons' logs, for error messages."""
        names = ["slurmctld.log", "slurmd.log", "munged.out"]
        return "\n".join(
            f"--- {name}\n{_tail(self.log_dir / name)}" for name in names if (self.log_dir / name).exists()
        )

    def finished_jobs(self) -> list[dict[str, str]]:
        """jobcomp's record of every finished job, one dict of its `Key=Value` fields per job."""
        if not self.jobcomp.exists():
            return []
        return [
            dict(item.split("=", 1) for item in line.split() if "=" in item)
            for line in self.jobcomp.read_text().splitlines()
            if line.strip()
        ]


class _Detached(LocalCluster):
    """A cluster stopped by a later `stop` command: its daemons are known by pid only."""

    def _end(self, name: str, grace: float = 15) -> None:
        pids = json.loads((self.root / "pids.json").read_text()) if (self.root / "pids.json").exists() else {}
        pid = pids.get(name)
        if pid is None or _process_names().get(pid) != name:
            return
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while pid in _process_names() and time.monotonic() < deadline:
            time.sleep(0.2)
        if pid in _process_names():
            os.kill(pid, signal.SIGKILL)

    def stop(self) -> None:
        try:
            self._cancel_all_jobs()
        except (OSError, subprocess.SubprocessError):
            pass
        for name in reversed(DAEMONS):
            self._end(name)
        before_file = self.root / "stepds-before.json"
        before = set(json.loads(before_file.read_text())) if before_file.exists() else set()
        _kill_trees(_pids_named("slurmstepd") - before)
        self._stepds_before = before
        self._wait_for_exits()
        self._restore_configs()
        (self.root / "pids.json").unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print(__doc__)
        return 2
    command, root = argv[0], Path(argv[1]).resolve()
    if command == "start":
        cluster = LocalCluster(root)
        cluster.start()
        # leave the daemons running after this process exits; `stop` ends them by pid
        cluster.processes.clear()
        print(f"node {cluster.node} idle; slurmctld on 127.0.0.1:{cluster.settings['ctld_port']}")
    else:
        _Detached(root).stop()
        print("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
