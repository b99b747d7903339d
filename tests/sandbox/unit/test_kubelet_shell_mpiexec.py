"""The emulated ``sh -c``: positional parameters and quoting; ``mpiexec``'s options by arity; ``mpi_echo``."""

from __future__ import annotations

import json
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_volcano_argo.sandbox.kubelet import mpiexec
from airflow_provider_volcano_argo.sandbox.kubelet.programs import ContainerContext
from airflow_provider_volcano_argo.sandbox.kubelet.shell import ShellProgram, shell_invocation, split_words

HOSTILE = ["--in", "/data/a b", "$(id)", '--opt="a b"', "{{workflow.name}}", "it's", "$HOME", "a\tb", "", "*", "\\n"]


def test_sh_c_sets_dollar_zero_and_the_positionals_from_command_and_args():
    argv = ["/bin/sh", "-c", "script"] + ["name", "a b", "c"]
    assert shell_invocation(argv) == ("script", "name", ["a b", "c"])
    assert shell_invocation(["sh", "-e", "-c", "s"]) == ("s", "sh", [])
    assert shell_invocation(["mpiexec", "-c", "2"]) is None  # not a shell: runs as it is


def test_quoted_at_is_each_positional_as_one_word_verbatim():
    words = split_words('run "$@" end', {}, HOSTILE)
    assert words == ["run", *HOSTILE, "end"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(), max_size=6))
def test_quoted_at_keeps_any_argument_verbatim(args):
    assert split_words('exec prog "$@"', {}, args) == ["exec", "prog", *args]


def test_star_and_unquoted_at_field_split_and_quoted_star_is_one_word():
    args = ["a b", "c", ""]
    assert split_words("x $@", {}, args) == ["x", "a", "b", "c"]
    assert split_words("x $*", {}, args) == ["x", "a", "b", "c"]
    assert split_words('x "$*"', {}, args) == ["x", "a b c "]
    assert split_words('x "pre$@post"', {}, ["1", "2"]) == ["x", "pre1", "2post"]
    assert split_words('x "$@"', {}, []) == ["x"]
    assert split_words('x "$1" $# "$0" ${2:-none} "${3}"', {}, ["a b", "c"], name="me") == [
        "x",
        "a b",
        "2",
        "me",
        "c",
        "",
    ]


def test_an_expanded_value_is_never_parsed_again():
    variables = {"V": "--opt=\"a b\" $(id) 'q'"}
    assert split_words('cmd "$V"', variables) == ["cmd", variables["V"]]
    assert split_words("cmd $V", variables) == ["cmd", '--opt="a', 'b"', "$(id)", "'q'"]
    assert split_words("cmd 'single $V' \"dq \\$V \\\\\" a\\ b", variables) == ["cmd", "single $V", "dq $V \\", "a b"]


def test_mpiexec_reads_each_option_with_its_arity_and_the_rest_is_the_programs_argv():
    command = mpiexec.parse(
        [
            "mpirun",
            "--allow-run-as-root",
            "-np",
            "4",
            "--host",
            "w0,w1",
            "--mca",
            "btl_tcp_if_include",
            "eth0",
            "-x",
            "LD_LIBRARY_PATH",
            "-x",
            "MODE=fast",
            "--bind-to",
            "none",
            "--map-by",
            "slot",
            "--rank-by",
            "core",
            "-wdir",
            "/work",
            "--oversubscribe",
            "--report-bindings",
            "--tag-output",
            "-genv",
            "OMP_NUM_THREADS",
            "2",
            "-genvall",
            "-ppn",
            "1",
            "mpi_echo",
            "-np",
            "1",
            "--mca",
            *HOSTILE,
        ]
    )
    assert command.processes == 4 and command.hosts == ["w0", "w1"] and command.wdir == "/work"
    assert command.exports == {"LD_LIBRARY_PATH": None, "MODE": "fast", "OMP_NUM_THREADS": "2"}
    assert ("mca", ["btl_tcp_if_include", "eth0"]) in command.options
    assert command.program == "mpi_echo"
    assert command.argv == ["-np", "1", "--mca", *HOSTILE]


@pytest.mark.parametrize(
    ("words", "first_line"),
    [
        (["mpirun", "--no-such", "prog"], 'mpirun: Error: unknown option "--no-such"'),
        (["mpiexec", "-np"], 'mpiexec: Error: option "-np" did not have enough parameters (1)'),
        (["mpiexec", "--mca", "k"], 'mpiexec: Error: option "--mca" did not have enough parameters (2)'),
        (["mpiexec", "-np", "2"], "No executable was specified on the mpiexec command line."),
    ],
)
def test_bad_launcher_command_lines_are_the_launchers_errors(words, first_line):
    with pytest.raises(mpiexec.MpiexecError) as raised:
        mpiexec.parse(words)
    assert str(raised.value).split("\n")[0] == first_line


def _run(script: str, args: list[str], env: dict[str, str] | None = None, files=None, working_dir=None):
    lines: list[str] = []
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {}}
    container = {"name": "c", "command": ["/bin/sh", "-c", script], "args": args}
    if working_dir:
        container["workingDir"] = working_dir
    ctx = ContainerContext(pod, container, lambda line, **_: lines.append(line), threading.Event(), api=None)
    ctx.environment = dict(env or {})
    ctx.read_file = lambda path: (files or {}).get(path)  # type: ignore[method-assign]
    return ShellProgram().run(ctx), lines


def test_mpi_echo_prints_each_ranks_argv_then_env_files_and_cwd_once():
    script = 'exec mpiexec --allow-run-as-root --host w-0.j,w-1.j -np 2 -x MODE=fast -genv K "v w" mpi_echo "$@"'
    env = {"MPI_ECHO_ENV": "MODE,K,HOME,NOPE", "MPI_ECHO_FILES": "/etc/cfg/a,/nope", "HOME": "/root"}
    code, lines = _run(script, ["sh", *HOSTILE], env, {"/etc/cfg/a": "line 1\nline 2\n"}, working_dir="/w")
    assert code == 0
    argv = json.dumps(HOSTILE, separators=(",", ":"), ensure_ascii=False)
    assert lines == [
        f"rank 0 of 2 on w-0: argv {argv}",
        f"rank 1 of 2 on w-1: argv {argv}",
        "env MODE=fast",
        "env K=v w",
        "env HOME=/root",
        "env NOPE unset",
        "file /etc/cfg/a: line 1",
        "line 2",
        "file /nope: missing",
        "cwd /w",
    ]


def test_an_unknown_launcher_option_exits_1_with_open_mpis_text():
    code, lines = _run("mpirun --frobnicate mpi_echo", [])
    assert code == 1
    assert lines == ['mpirun: Error: unknown option "--frobnicate"', "Type 'mpirun --help' for usage."]


def test_hello_world_from_a_hostfile_as_the_upstream_example():
    script = (
        'MPI_HOST=$(cat /etc/volcano/mpiworker.host | tr "\\n" ",")\nmpiexec --host ${MPI_HOST} -np 2 mpi_hello_world'
    )
    code, lines = _run(script, [], files={"/etc/volcano/mpiworker.host": "j-w-0.j\nj-w-1.j"})
    assert code == 0
    assert lines == [
        "Hello world from processor j-w-0, rank 0 out of 2 processors",
        "Hello world from processor j-w-1, rank 1 out of 2 processors",
    ]
    code, lines = _run("mpiexec --hostfile /etc/h -n 1 mpi_echo", [], files={"/etc/h": "a slots=1\n"})
    assert lines[0] == "rank 0 of 1 on a: argv []" and lines[-1] == "cwd /"
