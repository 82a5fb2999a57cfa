"""Cluster glue of the launcher: the SLURM allocation read from ``scontrol`` and the Ray cluster
started across its nodes (``slurm``), and the supervisor each Ray node runs under (``ray_node``)."""
