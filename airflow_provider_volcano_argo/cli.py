"""``volcano-argo``: install or update the shipped WorkflowTemplates and RBAC in a namespace."""

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
    install.add_argument("--with-rbac", action="store_true", help="also apply the Argo-side Role and RoleBinding")
    show = sub.add_parser("show", help="print a shipped manifest (template, argo-rbac or airflow-role)")
    show.add_argument("what", choices=("template", "master-after-workers", "argo-rbac", "airflow-role"))
    show.add_argument("--namespace", "-n", default="argo")
    args = parser.parse_args(argv)

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


if __name__ == "__main__":
    sys.exit(main())
