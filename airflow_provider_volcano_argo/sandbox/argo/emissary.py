"""``/var/run/argo/argoexec emissary -- CMD``: Argo's wrapper of a step's main container, around an emulated image.

The real ``argoexec`` runs a pod's ``init`` and ``wait`` containers and resource steps (``kubelet/process.py``);
what the main container of a container step runs is the user's image, which the emulated kubelet plays
(``kubelet/programs.py``), so the wrapper's side of the protocol with ``wait`` is played here. Follows
argoproj/argo-workflows v4.0.5 and v3.7 ``cmd/argoexec/commands/emissary.go`` (``NewEmissaryCommand``,
``startCommand``, ``saveParameter``) and ``workflow/executor/emissary/emissary.go`` (the files under
``/var/run/argo``):

- the exit code goes to ``/var/run/argo/ctr/NAME/exitcode`` whatever happens (64 until the command ran; a command
  ended by a signal is 137), which is what ``wait`` polls for;
- the template is read from ``/var/run/argo/template`` (``init`` wrote it); without it the container fails;
- with ``ARGO_INCLUDE_SCRIPT_OUTPUT=true`` the output is copied to ``ctr/NAME/stdout`` and ``ctr/NAME/combined``;
- the main container copies each output parameter's ``valueFrom.path`` to ``/var/run/argo/outputs/parameters/``.

Emissary forwards every signal to its child, which is not PID 1, so SIGTERM ends the command even when the
command has no handler (a shell would ignore it as PID 1). Artifacts are not emulated (no artifact repository).
"""

from __future__ import annotations

import json

from airflow_provider_volcano_argo.sandbox.kubelet.programs import ContainerContext, Program

VAR_RUN_ARGO = "/var/run/argo"
EMISSARY = f"{VAR_RUN_ARGO}/argoexec"


def inner_command(command: list[str]) -> list[str] | None:
    """Return the command emissary runs (after ``--``), or None if ``command`` is not ``argoexec emissary``."""
    if len(command) < 2 or command[0] != EMISSARY or command[1] != "emissary" or "--" not in command:
        return None
    return command[command.index("--") + 1 :]


class EmissaryProgram(Program):
    """Run ``inner`` (the image's program) with the command after ``--``, as emissary runs it."""

    def __init__(self, inner: Program):
        self.inner = inner

    def run(self, ctx: ContainerContext) -> int:
        outer = ctx.container
        name = ctx.env.get("ARGO_CONTAINER_NAME", outer["name"])
        ctr = f"{VAR_RUN_ARGO}/ctr/{name}"
        code = 64
        write = ctx.write
        try:
            raw = ctx.read_file(f"{VAR_RUN_ARGO}/template")
            if raw is None:
                ctx.write(f"Error: failed to read template: open {VAR_RUN_ARGO}/template: no such file or directory")
                return code
            template = json.loads(raw)
            command = inner_command([str(w) for w in (outer.get("command") or []) + (outer.get("args") or [])])
            ctx.container = {**outer, "command": command or [], "args": []}
            ctx.forwards_sigterm = True
            if ctx.env.get("ARGO_INCLUDE_SCRIPT_OUTPUT") == "true":
                self._capture(ctx, ctr)
            code = self.inner.run(ctx)
            if ctx.stopped.is_set() and code != 0:
                code = 137  # emissary: a child ended by a signal has no exit code of its own
            if name == "main":
                self._save_parameters(ctx, template)
            return code
        finally:
            ctx.container, ctx.write = outer, write
            ctx.write_file(f"{ctr}/exitcode", str(code))

    @staticmethod
    def _capture(ctx: ContainerContext, ctr: str) -> None:
        """Copy each line the program writes to ``ctr/stdout`` and ``ctr/combined`` too (emulated output is stdout)."""
        write = ctx.write
        files = (
            [ctx.volumes.host_path(ctx.container, f"{ctr}/{n}") for n in ("stdout", "combined")] if ctx.volumes else []
        )

        def tee(text: str, *args, **kwargs) -> None:
            write(text, *args, **kwargs)
            for file in files:
                if file is not None:
                    file.parent.mkdir(parents=True, exist_ok=True)
                    with open(file, "a") as out:
                        out.write(f"{text}\n")

        ctx.write = tee

    @staticmethod
    def _save_parameters(ctx: ContainerContext, template: dict) -> None:
        for param in (template.get("outputs") or {}).get("parameters") or []:
            path = (param.get("valueFrom") or {}).get("path")
            if not path:
                continue
            value = ctx.read_file(path)
            if value is None:  # might be optional: wait reports it
                ctx.write(f'level=error msg="cannot save parameter, does not exist" src={path}')
                continue
            ctx.write_file(f"{VAR_RUN_ARGO}/outputs/parameters/{path.lstrip('/')}", value)
