"""Every change this package makes to ML-Agents' own behaviour: the registry (``patches``), the
``mlagents.stats_writer`` entry-point hook (``hook``) and one module per patch, named as the patch is listed."""
