"""Many nodes at once: run ``ortdoctor check`` across a cluster, or merge the reports nodes wrote.

* :mod:`ortdoctor.fleet.model`: one node's result, the fleet report;
* :mod:`ortdoctor.fleet.merge`: read reports from files, directories and standard input;
* :mod:`ortdoctor.fleet.lines`: put reports back together from log lines (``kubectl logs``, ``srun``);
* :mod:`ortdoctor.fleet.drift`: what differs between nodes, findings grouped by id;
* :mod:`ortdoctor.fleet.render`: text, JSON and markdown;
* :mod:`ortdoctor.fleet.ray_runner`: one check per node of a Ray cluster (the only module importing ray).

Nothing here imports onnxruntime, torch or ray at import time.
"""
