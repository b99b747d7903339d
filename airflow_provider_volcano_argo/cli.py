"""``volcano-argo``: install or update the shipped WorkflowTemplates and RBAC; clean up orphaned runs (``gc``)."""

from __future__ import annotations

import argparse
import sys

import yaml


def main(argv: list[str] | None = None) -> int:
    """Run the console script."""
    parser = argparse.ArgumentParser(prog="volcano-argo", description=__doc__)
    sub = parser.add_subparsers(dest="action", required=True)
    install = sub.add_parser("install-templates", help="create or update the WorkflowTemplates (+ RBAC)")
    install.add_argument("--namespace", "-n", default="argo")
    install.add_argument("--conn-id", default="kubernetes_default", help="Airflow kubernetes connection to use")
    install.add_argument(
        "--with-rbac", action="store_true", help="also apply the service account argo and its Role and RoleBinding"
    )
    show = sub.add_parser("show", help="print a shipped manifest (template, argo-rbac or airflow-role)")
    show.add_argument("what", choices=("template", "master-after-workers", "argo-rbac", "airflow-role"))
    show.add_argument("--namespace", "-n", default="argo")
    gc = sub.add_parser(
        "gc",
        help="stop or delete the Workflows whose task instance no longer runs, per its on_kill_action (dry run)",
    )
    gc.add_argument("--namespace", "-n", action="append", help="namespace to sweep (repeatable; default: the "
                    "connection's, else 'default')")  # fmt: skip
    gc.add_argument("--conn-id", default="kubernetes_default", help="Airflow kubernetes connection to use")
    gc.add_argument("--apply", action="store_true", help="act; without it, only print what it would do")
    gc.add_argument("--grace", type=float, default=None, metavar="SECONDS",
                    help="leave a run alone for so long after its task instance ended (default 60)")  # fmt: skip
    gc.add_argument("--every", type=float, default=None, metavar="SECONDS",
                    help="sweep again every so many seconds, until stopped (a sidecar or service)")  # fmt: skip
    gc.add_argument("--quiet", "-q", action="store_true", help="print only the Workflows to clean up")
    args = parser.parse_args(argv)

    if args.action == "gc":
        if args.every is not None and not args.every > 0 or args.grace is not None and not args.grace >= 0:
            parser.error("--every must be > 0 and --grace >= 0 seconds")
        return _gc(args)

    from airflow_provider_volcano_argo import templates

    if args.action == "show":
        docs = {
            "template": lambda: templates.workflow_templates([templates.DEFAULT_TEMPLATE], args.namespace),
            "master-after-workers": lambda: templates.workflow_templates(
                [templates.MASTER_AFTER_WORKERS_TEMPLATE], args.namespace
            ),
            "argo-rbac": lambda: templates.argo_rbac(args.namespace),
            "airflow-role": lambda: templates.airflow_roles(args.namespace),
        }[args.what]()
        print(yaml.safe_dump_all(docs, sort_keys=False), end="")
        return 0

    from airflow_provider_volcano_argo.exceptions import VolcanoArgoError
    from airflow_provider_volcano_argo.hooks.connection import KubernetesConnection

    hook = KubernetesConnection(args.conn_id).hook()
    try:
        for body in templates.workflow_templates(templates.TEMPLATE_FILES, args.namespace):
            print(hook.apply_workflow_template(body))
        if args.with_rbac:
            from kubernetes.utils import create_from_dict

            for doc in templates.argo_rbac(args.namespace):
                create_from_dict(hook.api_client, doc, namespace=args.namespace, apply=True)
                print(f"applied {doc['kind']} {args.namespace}/{doc['metadata']['name']}")
    except VolcanoArgoError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def _gc(args: argparse.Namespace) -> int:
    from airflow_provider_volcano_argo import reaper
    from airflow_provider_volcano_argo.hooks.connection import KubernetesConnection

    connection = KubernetesConnection(args.conn_id)
    namespaces = args.namespace or [connection.hook().resolve_namespace(None)]
    grace = reaper.DEFAULT_GRACE if args.grace is None else args.grace
    return reaper.run(connection, namespaces, apply=args.apply, grace=grace, every=args.every, quiet=args.quiet)


if __name__ == "__main__":
    sys.exit(main())
