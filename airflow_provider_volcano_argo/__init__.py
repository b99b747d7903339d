"""Apache Airflow provider for Volcano MPI jobs submitted through Argo WorkflowTemplates."""

__version__ = "0.1.0"
