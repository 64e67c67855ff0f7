"""Headless stand-ins for Unity scenes (see docs/scenes.md).

* ``scenes``: numpy scene logic, ``SCENES`` by name (``ALL_SCENES`` with variants and several-behavior groups);
* ``academy``: the Unity-side runtime (behaviors, agent ids, side channels, message order);
* ``inprocess.SceneEnv``: a scene as an in-process ``BaseEnv``;
* ``standin``: a program that plays the Unity side of ML-Agents' gRPC protocol, and writes launchers;
* ``harness.train_in_process``: real ML-Agents training in-process for learning tests.
"""
