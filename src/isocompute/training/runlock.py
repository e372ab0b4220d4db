"""One trainer per run folder: a new attempt refuses to start while a trainer of an earlier one still lives.

After `kill -9` of `snakemake` alone (not its process group), or a lost terminal, the training job it
started can live on as an orphan, still saving checkpoints into the run folder. A new attempt that
resumed beside it would read, delete and overwrite the same checkpoints. So the job holds an `flock` on
`<run>/.trainer.lock` for as long as it runs, and every training process it launches shares it; the
kernel releases it when the last of them exits, however they end, so a lock is never stale. The file
also names its holder (host, pid, SLURM job) for the refusal's message, and its modification time is a
heartbeat, refreshed while the job lives, by which `isocompute status` tells a live attempt from a dead
one on another host.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import threading
import time
from pathlib import Path
from typing import IO, Any

from isocompute.errors import IsoComputeError

LOG = logging.getLogger(__name__)
LOCK_FILE = ".trainer.lock"
HEARTBEAT_SECONDS = 30.0
# A heartbeat older than this means no live job holds the run (a job refreshes it every 30 s).
STALE_SECONDS = 180.0


class TrainerAlive(IsoComputeError, RuntimeError):
    """A trainer of an earlier attempt still writes the run folder; the message names it."""


def _process_start(pid: int) -> str | None:
    """The kernel's start tick of a live process (field 22 of /proc/<pid>/stat), which a pid reused later
    does not share; None for no process or a zombie (killed, not yet reaped)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def holder(run_dir: str | Path) -> dict[str, Any] | None:
    """Who holds (or last held) the run's lock, as the lock file says."""
    try:
        return json.loads((Path(run_dir) / LOCK_FILE).read_text())
    except (OSError, ValueError):
        return None


def describe_holder(info: dict[str, Any] | None) -> str:
    """Who holds a run's lock, for the message that refuses a second trainer."""
    if not info:
        return "holder unknown"
    job = f", SLURM job {info['slurm_job_id']}" if info.get("slurm_job_id") else ""
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info["started"]))
    return f"pid {info['pid']} on {info['host']}{job}, started {started}"


def trainer_alive(run_dir: str | Path) -> bool:
    """Whether a job still holds the run, judged from files alone: by its pid on this host, by the age of
    its heartbeat on another."""
    info = holder(run_dir)
    if info is None:
        return False
    if info.get("host") == socket.gethostname():
        start = _process_start(int(info["pid"]))
        return start is not None and start == info.get("process_start")
    try:
        age = time.time() - (Path(run_dir) / LOCK_FILE).stat().st_mtime
    except OSError:
        return False
    return age < STALE_SECONDS


class TrainerLock:
    """Held by a training job for its whole run (`with TrainerLock(run_dir):`); raises `TrainerAlive`
    when a process of an earlier attempt still holds it."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK_FILE
        self.handle: IO[str] | None = None
        self.stop = threading.Event()
        self.heartbeat: threading.Thread | None = None

    def __enter__(self) -> TrainerLock:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.handle = open(self.path, "a+")  # noqa: SIM115 - held until __exit__
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.handle.close()
            info = holder(self.run_dir)
            kill = f" (`kill {info['pid']}` on {info['host']})" if info else ""
            raise TrainerAlive(
                f"{self.run_dir} is still being written by a live trainer of an earlier attempt "
                f"({describe_holder(info)}): let it finish or end it{kill}, then run again"
            ) from None
        except OSError as error:
            LOG.warning(
                "%s: the file system takes no locks (%s); not checking for an earlier trainer",
                self.path,
                error,
            )
        info = {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "process_start": _process_start(os.getpid()),
            "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
            "started": time.time(),
        }
        self.handle.seek(0)
        self.handle.truncate()
        self.handle.write(json.dumps(info))
        self.handle.flush()
        share(self.handle)
        self.heartbeat = threading.Thread(target=self._beat, daemon=True)
        self.heartbeat.start()
        return self

    def _beat(self) -> None:
        while not self.stop.wait(HEARTBEAT_SECONDS):
            try:
                os.utime(self.path)
            except OSError:
                pass

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        if self.heartbeat is not None:
            self.heartbeat.join()
        if self.handle is not None:
            self.handle.close()


def share(handle: IO[str]) -> None:
    """Hold the lock shared: the job after writing its name, each launched training process for its life."""
    try:
        fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        pass


def join(run_dir: str | Path) -> IO[str]:
    """A launched training process's share of its job's lock, kept until the process exits."""
    handle = open(Path(run_dir) / LOCK_FILE, "a+")  # noqa: SIM115 - lives as long as the process
    share(handle)
    return handle
