r"""A tiny ``sh -c`` interpreter for the scripts of ``volcanosh/example-mpi`` containers.

Supported, line by line (with ``\`` continuations): ``VAR=value``, ``VAR=$(cat FILE | tr "\n" ",")``,
``VAR=$(sed 's/$/:N/' FILE | tr "\n" ",")``, ``echo`` with ``$VAR`` / ``${VAR}`` expansion, ``mkdir``,
``/usr/sbin/sshd`` (starts, no output), ``/usr/sbin/sshd -D`` (runs until the container is stopped),
``sleep N``, ``exit N``, ``exec COMMAND`` (COMMAND replaces the shell as PID 1, so it receives the kubelet's
SIGTERM: sshd and mpiexec end on it, ``sleep`` does not; without ``exec`` the shell stays PID 1 and SIGTERM is
lost), and ``mpiexec [--host H1,H2] -np N mpi_hello_world``, which prints one line per rank as
the upstream example's expected output shows:
``Hello world from processor <host>, rank <r> out of <N> processors``. Anything else: ``sh: 1: X: not found``,
exit 127.
"""

from __future__ import annotations

import re
import shlex

from airflow_provider_volcano_argo.sandbox.kubelet.programs import ContainerContext, Program

_VAR = re.compile(r"\$\{(\w+)\}|\$(\w+)")
_CAPTURE = re.compile(r"^(\w+)=\$\((.*)\)$")


def script_of(container: dict) -> str:
    """Return the script of ``["/bin/sh", "-c", SCRIPT]`` (command and args joined as the runtime would)."""
    argv = [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]
    if "-c" in argv:
        return argv[argv.index("-c") + 1] if argv.index("-c") + 1 < len(argv) else ""
    return " ".join(shlex.quote(a) for a in argv)


def logical_lines(script: str) -> list[str]:
    """Lines with backslash continuations joined, comments and blanks dropped."""
    joined = re.sub(r"\\\n\s*", " ", script)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def expand(text: str, variables: dict[str, str]) -> str:
    return _VAR.sub(lambda m: variables.get(m.group(1) or m.group(2), ""), text)


def hello_lines(hosts: list[str], processes: int) -> list[str]:
    """Return what ``mpi_hello_world`` prints: one line per rank, ranks placed round-robin over the hosts."""
    names = [h.split(":")[0].split(".")[0] for h in hosts if h] or ["localhost"]
    return [
        f"Hello world from processor {names[rank % len(names)]}, rank {rank} out of {processes} processors"
        for rank in range(processes)
    ]


class ShellProgram(Program):
    """Runs the container's script with the subset above."""

    def run(self, ctx: ContainerContext) -> int:
        variables = dict(ctx.env)
        for line in logical_lines(script_of(ctx.container)):
            if ctx.stopped.is_set():
                return 137
            code = self._line(ctx, line, variables)
            if code is not None:
                return code
        return 0

    def _capture(self, ctx: ContainerContext, command: str) -> str:
        stages = [s.strip() for s in command.split("|")]
        words = shlex.split(stages[0])
        text = ""
        if words[0] == "cat" and len(words) == 2:
            text = ctx.read_file(words[1]) or ""
        elif words[0] == "sed" and len(words) == 3:
            match = re.fullmatch(r"s/\$/(.*)/", words[1])
            content = ctx.read_file(words[2]) or ""
            suffix = match.group(1) if match else ""
            text = "\n".join(line + suffix for line in content.split("\n")) if content else ""
        for stage in stages[1:]:
            tr = shlex.split(stage)
            if tr[:1] == ["tr"] and len(tr) == 3:
                text = text.replace(tr[1].encode().decode("unicode_escape"), tr[2])
        return text

    def _line(self, ctx: ContainerContext, line: str, variables: dict[str, str]) -> int | None:
        capture = _CAPTURE.match(line)
        if capture:
            variables[capture.group(1)] = self._capture(ctx, capture.group(2))
            return None
        if re.fullmatch(r"\w+=\S*", line):
            name, value = line.split("=", 1)
            variables[name] = expand(value, variables)
            return None
        words = shlex.split(expand(line, variables))
        if words[0] == "exec" and len(words) > 1:
            # exec replaces the shell: COMMAND is now PID 1 and handles SIGTERM as it does; the script ends with it
            words = words[1:]
            ctx.handles_sigterm = words[0] != "sleep"  # coreutils sleep keeps SIGTERM's default action
            code = self._line(ctx, shlex.join(words), variables)
            return 0 if code is None else code
        command = words[0]
        if command == "echo":
            ctx.write(" ".join(w for w in words[1:] if w != "-e"))
        elif command in ("mkdir", "true", ":", "cd"):
            pass
        elif command.endswith("sshd"):
            if "-D" in words and not ctx.sleep(10**9):
                return 0  # stopped: sshd -D exits on SIGTERM
        elif command == "sleep":
            if not ctx.sleep(float(words[1])):
                return 137
        elif command == "exit":
            return int(words[1]) if len(words) > 1 else 0
        elif command in ("mpiexec", "mpirun"):
            return self._mpiexec(ctx, words)
        else:
            ctx.write(f"sh: 1: {command}: not found")
            return 127
        return None

    def _mpiexec(self, ctx: ContainerContext, words: list[str]) -> int:
        hosts: list[str] = []
        processes = 1
        program = ""
        i = 1
        while i < len(words):
            word = words[i]
            if word in ("--host", "-host", "-H") and i + 1 < len(words):
                hosts = [h for h in words[i + 1].split(",") if h]
                i += 2
            elif word in ("-np", "-n") and i + 1 < len(words):
                processes = int(words[i + 1])
                i += 2
            elif word.startswith("-"):
                i += 1
            else:
                program = word
                break
        if program != "mpi_hello_world":
            ctx.write(f'mpiexec was unable to find the specified executable file "{program}"')
            return 1
        for text in hello_lines(hosts, processes):
            ctx.write(text)
        return 0
