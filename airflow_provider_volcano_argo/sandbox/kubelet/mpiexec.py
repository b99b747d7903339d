"""``mpiexec`` / ``mpirun`` as a launcher parses its command line, and the two MPI programs the sandbox knows.

Options are read with their arity, as Open MPI 4.x's ``opal/util/cmd_line.c: opal_cmd_line_parse`` reads the
table of ``orte/mca/schizo/ompi/schizo_ompi.c: cmd_line_init`` and ``orte/orted/orted_submit.c`` (single- and
double-dash spellings alike), plus MPICH/Intel MPI Hydra's (``-genv K V``, ``-genvall``, ``-ppn N``, ``-f F``,
``-hosts L``): parsing stops at the first word that is not an option, which is the program; every word after it is
the program's argv, verbatim. An unknown option is Open MPI's ``mpirun: Error: unknown option "X"`` and exit 1.

Programs: ``mpi_hello_world`` (the upstream example's lines) and ``mpi_echo`` (each rank prints its argv as JSON;
rank 0 then prints the variables named in ``MPI_ECHO_ENV``, the files named in ``MPI_ECHO_FILES`` as the
launcher's container mounts them, and its working directory).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

# option -> number of values it takes
OPTIONS: dict[str, int] = {}
for _names, _arity in (
    # Open MPI mpirun / mpiexec (4.x)
    ("np n c", 1),
    ("host H", 1),
    ("hostfile machinefile default-hostfile", 1),
    ("x", 1),
    ("bind-to map-by rank-by", 1),
    ("mca gmca", 2),
    ("am tune", 1),
    ("wdir wd path prefix", 1),
    ("npernode N npersocket pernode-count", 1),
    ("rankfile rf", 1),
    ("cpus-per-proc cpus-per-rank cpu-set", 1),
    ("output-filename timeout stdin report-uri preload-files tmpdir launch-agent personality app", 1),
    ("allow-run-as-root oversubscribe nooversubscribe report-bindings tag-output timestamp-output", 0),
    ("display-map display-devel-map display-allocation use-hwthread-cpus bynode byslot bycore bysocket", 0),
    ("bind-to-core bind-to-socket bind-to-none pernode noprefix merge-stderr-to-stdout xml", 0),
    ("v verbose q quiet d debug-devel enable-recovery disable-recovery continuous", 0),
    # MPICH / Intel MPI (Hydra)
    ("genv env", 2),
    ("genvlist envlist f hosts ppn iface launcher bootstrap configfile", 1),
    ("genvall genvnone envall envnone l prepend-rank print-rank-map", 0),
):
    for _name in _names.split():
        OPTIONS[_name] = _arity


class MpiexecError(Exception):
    """What the launcher prints before it exits 1, line by line."""


@dataclass
class MpiexecCommand:
    """A parsed launcher command line."""

    launcher: str = "mpiexec"
    processes: int | None = None
    hosts: list[str] = field(default_factory=list)
    hostfile: str | None = None
    exports: dict[str, str | None] = field(default_factory=dict)  # -x VAR (None: from the launcher) / VAR=v / -genv
    export_all: bool = False
    wdir: str | None = None
    options: list[tuple[str, list[str]]] = field(default_factory=list)
    program: str = ""
    argv: list[str] = field(default_factory=list)


def parse(words: list[str]) -> MpiexecCommand:
    """Parse ``words`` (``words[0]`` the launcher) or raise ``MpiexecError`` with the launcher's text."""
    launcher = words[0].rsplit("/", 1)[-1] if words else "mpiexec"
    command = MpiexecCommand(launcher=launcher)
    i = 1
    while i < len(words):
        word = words[i]
        if not word.startswith("-") or word == "-":
            command.program, command.argv = word, list(words[i + 1 :])
            break
        if word == "--":  # opal_cmd_line_parse: the rest is the application
            if i + 1 < len(words):
                command.program, command.argv = words[i + 1], list(words[i + 2 :])
            break
        name = word.lstrip("-")
        if name not in OPTIONS:
            raise MpiexecError(f"{launcher}: Error: unknown option \"{word}\"\nType '{launcher} --help' for usage.")
        arity = OPTIONS[name]
        values = words[i + 1 : i + 1 + arity]
        if len(values) < arity:
            raise MpiexecError(
                f'{launcher}: Error: option "{word}" did not have enough parameters ({arity})\n'
                f"Type '{launcher} --help' for usage."
            )
        command.options.append((name, values))
        _apply(command, name, values)
        i += 1 + arity
    if not command.program:
        raise MpiexecError(f"No executable was specified on the {launcher} command line.\n\nAborting.")
    return command


def _apply(command: MpiexecCommand, name: str, values: list[str]) -> None:
    if name in ("np", "n", "c"):
        try:
            command.processes = int(values[0])
        except ValueError:
            raise MpiexecError(
                f"{command.launcher}: Error: the number of processes must be an integer: {values[0]}"
            ) from None
    elif name in ("host", "H", "hosts"):
        command.hosts = [h for h in values[0].split(",") if h]
    elif name in ("hostfile", "machinefile", "default-hostfile", "f"):
        command.hostfile = values[0]
    elif name == "x":
        key, sep, value = values[0].partition("=")
        command.exports[key] = value if sep else None
    elif name in ("genv", "env"):
        command.exports[values[0]] = values[1]
    elif name in ("genvlist", "envlist"):
        for key in values[0].split(","):
            command.exports.setdefault(key, None)
    elif name in ("genvall", "envall"):
        command.export_all = True
    elif name in ("wdir", "wd"):
        command.wdir = values[0]


def short_host(host: str) -> str:
    return host.split(":")[0].split(".")[0]


def placement(hosts: list[str], processes: int) -> list[str]:
    """Return the host of each rank: round-robin over the hosts (``localhost`` when none)."""
    names = [short_host(h) for h in hosts if h] or ["localhost"]
    return [names[rank % len(names)] for rank in range(processes)]


def hello_lines(hosts: list[str], processes: int) -> list[str]:
    """Return what ``mpi_hello_world`` prints: one line per rank."""
    return [
        f"Hello world from processor {host}, rank {rank} out of {processes} processors"
        for rank, host in enumerate(placement(hosts, processes))
    ]


def rank_environment(command: MpiexecCommand, launcher_env: dict[str, str]) -> dict[str, str]:
    """Return the environment the ranks see: the launcher's, with ``-x`` / ``-genv`` values set."""
    env = dict(launcher_env)
    for key, value in command.exports.items():
        if value is not None:
            env[key] = value
    return env


def echo_lines(
    command: MpiexecCommand,
    hosts: list[str],
    env: dict[str, str],
    read_file: Callable[[str], str | None],
    cwd: str,
) -> list[str]:
    """Return what ``mpi_echo`` prints (see the module's docstring)."""
    processes = command.processes or max(len(hosts), 1)
    argv = json.dumps(command.argv, separators=(",", ":"), ensure_ascii=False)
    ranks = enumerate(placement(hosts, processes))
    lines = [f"rank {rank} of {processes} on {host}: argv {argv}" for rank, host in ranks]
    for name in [n.strip() for n in env.get("MPI_ECHO_ENV", "").split(",") if n.strip()]:
        lines.append(f"env {name}={env[name]}" if name in env else f"env {name} unset")
    for path in [p.strip() for p in env.get("MPI_ECHO_FILES", "").split(",") if p.strip()]:
        content = read_file(path)
        if content is None:
            lines.append(f"file {path}: missing")
        else:
            first, *rest = content.rstrip("\n").split("\n")
            lines += [f"file {path}: {first}", *rest]
    lines.append(f"cwd {cwd}")
    return lines
