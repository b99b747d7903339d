r"""A tiny ``sh -c`` interpreter for the scripts of ``volcanosh/example-mpi`` containers.

The container's argv is ``command + args`` (the runtime joins them, after the kubelet's ``$(VAR)`` expansion);
``sh -c SCRIPT NAME ARG1 ARG2 ...`` runs SCRIPT with ``$0`` = NAME and ``$1``... = the ARGs, as POSIX ``sh -c``
sets them. An argv that is not a shell runs as one command, its words untouched.

Words are read as POSIX ``sh`` reads them (``Shell Command Language`` 2.2 Quoting, 2.6 Word Expansions): single
quotes keep everything, double quotes expand ``$`` but never split, unquoted expansions are field-split on
whitespace, and no expansion's result is parsed again (a value ``a b``, ``$(id)`` or ``--opt="a b"`` is data). ``"$@"``
is each positional parameter as one word, ``"$*"`` all of them as one word, unquoted ``$@`` / ``$*`` split.
``$#``, ``$0``..``$9``, ``${N}``, ``$VAR``, ``${VAR}``, ``${VAR:-default}`` and ``$(cat F | tr ...)`` /
``$(sed 's/$/:N/' F | tr ...)`` are expanded.

Commands, line by line (with ``\`` continuations): ``VAR=value``, ``export VAR[=value]``, ``echo``, ``mkdir``,
``cd``, ``true``, ``/usr/sbin/sshd`` (starts, no output), ``/usr/sbin/sshd -D`` (runs until the container is
stopped), ``sleep N``, ``exit N``, ``exec COMMAND`` (COMMAND replaces the shell as PID 1, so it receives the kubelet's
SIGTERM: sshd and mpiexec end on it, ``sleep`` does not; without ``exec`` the shell stays PID 1 and SIGTERM is lost),
and ``mpiexec`` / ``mpirun`` (``mpiexec.py``: options by arity; programs ``mpi_hello_world`` and ``mpi_echo``).
Anything else: ``sh: 1: X: not found``, exit 127.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable

from airflow_provider_volcano_argo.sandbox.kubelet import mpiexec
from airflow_provider_volcano_argo.sandbox.kubelet.mpiexec import hello_lines
from airflow_provider_volcano_argo.sandbox.kubelet.programs import ContainerContext, Program

__all__ = ["ShellProgram", "argv_of", "hello_lines", "logical_lines", "script_of", "shell_invocation", "split_words"]

SHELLS = ("sh", "bash", "dash", "ash")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=")
_IFS = " \t\n"


def argv_of(container: dict) -> list[str]:
    """``command + args`` as the runtime joins them."""
    return [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]


def shell_invocation(argv: list[str]) -> tuple[str, str, list[str]] | None:
    """``(script, $0, positionals)`` of ``sh [-e...] -c SCRIPT [NAME [ARG...]]``, else None.

    POSIX ``sh -c``: the first operand after the script is ``$0``, the rest are ``$1``...
    """
    if not argv or argv[0].rsplit("/", 1)[-1] not in SHELLS:
        return None
    i = 1
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-c":
        i += 1  # -e, -x, -eu ...
    if i >= len(argv) or argv[i] != "-c":
        return None
    script = argv[i + 1] if i + 1 < len(argv) else ""
    name = argv[i + 2] if i + 2 < len(argv) else argv[0]
    return script, name, list(argv[i + 3 :])


def script_of(container: dict) -> str:
    """Return the script of ``["/bin/sh", "-c", SCRIPT]`` (a command that is not a shell: its words quoted)."""
    argv = argv_of(container)
    invocation = shell_invocation(argv)
    return invocation[0] if invocation else shlex.join(argv)


def logical_lines(script: str) -> list[str]:
    """Lines with backslash continuations joined, comments and blanks dropped."""
    joined = re.sub(r"\\\n\s*", " ", script)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def _closing_paren(text: str, start: int) -> int:
    """Index of the ``)`` closing the ``$(`` whose ``(`` is at ``start - 1``."""
    depth, quote, i = 1, "", start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == quote:
                quote = ""
            elif ch == "\\" and quote == '"':
                i += 1
        elif ch in "'\"":
            quote = ch
        elif ch == "\\":
            i += 1
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError('sh: 1: Syntax error: end of file unexpected (expecting ")")')


class _Words:
    """Builds the words of one command line from quoted and unquoted pieces."""

    def __init__(self, split: bool):
        self.split = split
        self.words: list[str] = []
        self.current = ""
        self.started = False

    def finish(self) -> None:
        if self.started:
            self.words.append(self.current)
        self.current, self.started = "", False

    def literal(self, text: str) -> None:
        self.current += text
        self.started = True

    def expanded(self, text: str, quoted: bool) -> None:
        """Add an expansion's result: field-split only when unquoted (and not in an assignment)."""
        if quoted or not self.split:
            self.literal(text)
            return
        if not text:
            return
        fields = text.split()
        if text[0] in _IFS:
            self.finish()
        for n, part in enumerate(fields):
            if n:
                self.finish()
            self.literal(part)
        if text[-1] in _IFS:
            self.finish()

    def each(self, values: list[str], quoted: bool) -> None:
        """``"$@"``: each value one word (the first joined to what precedes, the last to what follows)."""
        if not quoted:
            for value in values:
                self.expanded(value, False)
                if self.split:
                    self.finish()
            return
        for n, value in enumerate(values):
            if n:
                self.finish()
            self.literal(value)


def split_words(
    line: str,
    variables: dict[str, str],
    positionals: list[str] | None = None,
    name: str = "sh",
    capture: Callable[[str], str] | None = None,
    split: bool = True,
) -> list[str]:
    """Read ``line`` into words, expanding as ``sh`` does; expansion results are never parsed again."""
    positionals = positionals or []
    out = _Words(split)
    i, n = 0, len(line)
    quoted = False  # inside double quotes

    def parameter(key: str) -> str | list[str]:
        if key == "@":
            return list(positionals)
        if key == "*":
            return " ".join(positionals)
        if key == "#":
            return str(len(positionals))
        if key in ("?",):
            return "0"
        if key == "$":
            return "1"
        if key.isdigit():
            index = int(key)
            if index == 0:
                return name
            return positionals[index - 1] if index <= len(positionals) else ""
        return variables.get(key, "")

    def dollar(at: int) -> tuple[str | list[str] | None, int]:
        """Expand the ``$`` at ``at``; return (value, index after it); value None: a literal ``$``."""
        nxt = line[at + 1] if at + 1 < n else ""
        if nxt == "(":
            end = _closing_paren(line, at + 2)
            text = capture(line[at + 2 : end]) if capture else ""
            return text.rstrip("\n"), end + 1
        if nxt == "{":
            end = line.find("}", at + 2)
            if end < 0:
                raise ValueError("sh: 1: Syntax error: Missing '}'")
            body = line[at + 2 : end]
            key, sep, default = body.partition(":-")
            value = parameter(key)
            if sep and (value == "" or value == []):
                value = default
            return value, end + 1
        if nxt and nxt in "@*#?$" or nxt.isdigit():
            return parameter(nxt), at + 2
        match = _NAME.match(line, at + 1)
        if match:
            return parameter(match.group(0)), match.end()
        return None, at + 1

    while i < n:
        ch = line[i]
        if not quoted and ch in _IFS:
            out.finish()
            i += 1
        elif not quoted and ch == "'":
            end = line.find("'", i + 1)
            if end < 0:
                raise ValueError("sh: 1: Syntax error: Unterminated quoted string")
            out.literal(line[i + 1 : end])
            i = end + 1
        elif ch == '"' and not quoted and line.startswith('"$@"', i) and not positionals and not out.started:
            i += 4  # "$@" with no positional parameters is no word at all
        elif ch == '"':
            quoted = not quoted
            out.literal("")  # "" is a word of its own
            i += 1
        elif ch == "\\":
            if i + 1 >= n:
                i += 1
            elif quoted and line[i + 1] not in '$`"\\':
                out.literal("\\" + line[i + 1])
                i += 2
            else:
                out.literal(line[i + 1])
                i += 2
        elif ch == "$":
            value, i = dollar(i)
            if value is None:
                out.literal("$")
            elif isinstance(value, list):
                out.each(value, quoted)
            else:
                out.expanded(value, quoted)
        else:
            out.literal(ch)
            i += 1
    if quoted:
        raise ValueError("sh: 1: Syntax error: Unterminated quoted string")
    out.finish()
    return out.words


class ShellProgram(Program):
    """Runs the container's argv: an ``sh -c`` script with the subset above, or one command.

    ``mpi_programs`` names the MPI programs of an image of one's own by the sandbox program that stands for each
    (``{"solver": "mpi_echo"}``): ``mpiexec ... solver ARGS`` then prints what ``mpi_echo ARGS`` would.
    """

    def __init__(self, mpi_programs: dict[str, str] | None = None) -> None:
        self.mpi_programs = dict(mpi_programs or {})

    def run(self, ctx: ContainerContext) -> int:
        shell = _Shell(ctx)
        shell.mpi_programs = self.mpi_programs
        argv = argv_of(ctx.container)
        invocation = shell_invocation(argv)
        if invocation is None:
            if not argv:
                return 0
            ctx.handles_sigterm = argv[0] != "sleep"  # the command itself is PID 1
            code = shell.command(argv)
            return 0 if code is None else code
        script, shell.name, shell.positionals = invocation
        for line in logical_lines(script):
            if ctx.stopped.is_set():
                return 137
            try:
                code = shell.line(line)
            except ValueError as exc:
                ctx.write(str(exc))
                return 2
            if code is not None:
                return code
        return 0


class _Shell:
    def __init__(self, ctx: ContainerContext):
        self.ctx = ctx
        self.variables: dict[str, str] = dict(ctx.env)
        self.exported: set[str] = set(self.variables)
        self.name = "sh"
        self.positionals: list[str] = []
        self.mpi_programs: dict[str, str] = {}

    def words(self, text: str, split: bool = True) -> list[str]:
        return split_words(text, self.variables, self.positionals, self.name, self.capture, split)

    def capture(self, command: str) -> str:
        """``$(...)``: ``cat FILE`` or ``sed 's/$/SUFFIX/' FILE``, piped through ``tr A B`` stages."""
        stages = [s.strip() for s in command.split("|")]
        words = self.words(stages[0])
        text = ""
        if words[:1] == ["cat"] and len(words) == 2:
            text = self.ctx.read_file(words[1]) or ""
        elif words[:1] == ["sed"] and len(words) == 3:
            match = re.fullmatch(r"s/\$/(.*)/", words[1])
            content = self.ctx.read_file(words[2]) or ""
            suffix = match.group(1) if match else ""
            text = "\n".join(line + suffix for line in content.split("\n")) if content else ""
        for stage in stages[1:]:
            tr = self.words(stage)
            if tr[:1] == ["tr"] and len(tr) == 3:
                text = text.replace(tr[1].encode().decode("unicode_escape"), tr[2])
        return text

    def environment(self) -> dict[str, str]:
        return {k: v for k, v in self.variables.items() if k in self.exported}

    def line(self, line: str) -> int | None:
        assignment = _ASSIGNMENT.match(line)
        if assignment and len(self.words(line, split=False)) == 1:  # assignments are never field-split
            value = self.words(line[assignment.end() :], split=False)
            self.variables[assignment.group(1)] = value[0] if value else ""
            return None
        words = self.words(line)
        if not words:
            return None
        return self.command(words)

    def command(self, words: list[str]) -> int | None:
        ctx = self.ctx
        if words[0] == "exec" and len(words) > 1:
            # exec replaces the shell: COMMAND is now PID 1 and handles SIGTERM as it does; the script ends with it
            words = words[1:]
            ctx.handles_sigterm = words[0] != "sleep"  # coreutils sleep keeps SIGTERM's default action
            code = self.command(words)
            return 0 if code is None else code
        command = words[0]
        if command == "echo":
            args = words[1:]
            while args and args[0] in ("-e", "-n", "-E"):
                args = args[1:]
            ctx.write(" ".join(args))
        elif command == "export":
            for word in words[1:]:
                key, sep, value = word.partition("=")
                if sep:
                    self.variables[key] = value
                self.exported.add(key)
        elif command in ("mkdir", "true", ":", "cd", "set"):
            pass
        elif command.endswith("sshd"):
            if "-D" in words and not ctx.sleep(10**9):
                return 0  # stopped: sshd -D exits on SIGTERM
        elif command == "sleep":
            if not ctx.sleep(float(words[1])):
                return 137
        elif command == "exit":
            return int(words[1]) if len(words) > 1 else 0
        elif command.rsplit("/", 1)[-1] in ("mpiexec", "mpirun"):
            return self.mpiexec(words)
        else:
            ctx.write(f"sh: 1: {command}: not found")
            return 127
        return None

    def mpiexec(self, words: list[str]) -> int:
        ctx = self.ctx
        try:
            command = mpiexec.parse(words)
        except mpiexec.MpiexecError as exc:
            for text in str(exc).split("\n"):
                ctx.write(text)
            return 1
        hosts = command.hosts
        if command.hostfile and not hosts:
            content = ctx.read_file(command.hostfile)
            if content is None:
                for text in (
                    "Open RTE was unable to open the hostfile:",
                    f"    {command.hostfile}",
                    "Check to make sure the path and filename are correct.",
                ):
                    ctx.write(text)
                return 1
            hosts = [ln.split()[0] for ln in content.splitlines() if ln.strip() and not ln.startswith("#")]
        program = command.program.rsplit("/", 1)[-1]
        program = self.mpi_programs.get(program, program)
        processes = command.processes or max(len(hosts), 1)
        if program == "mpi_hello_world":
            lines = mpiexec.hello_lines(hosts, processes)
        elif program == "mpi_echo":
            env = mpiexec.rank_environment(command, self.environment())
            cwd = command.wdir or ctx.container.get("workingDir") or "/"
            lines = mpiexec.echo_lines(command, hosts, env, ctx.read_file, cwd)
        else:
            ctx.write(f'mpiexec was unable to find the specified executable file "{command.program}"')
            return 1
        for text in lines:
            ctx.write(text)
        return 0
