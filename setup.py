"""mlagents-plugins: extra trainers for Unity ML-Agents, registered as ``mlagents.trainer_type`` plugins.

On Python 3.10 (<=3.10.12) ``pip install .`` resolves mlagents 1.1.0 normally.  On newer Pythons
mlagents' metadata refuses the interpreter, so ``scripts/setup_env.sh`` installs mlagents with
``--no-deps`` plus the working dependency set in ``requirements/host-py311.txt`` and then this package
with ``--no-deps``.
"""
from setuptools import find_packages, setup

# One entry point per trainer module; each returns ({name: TrainerClass}, {name: SettingsClass}).
# A trainer is only listed here once it exists.
TRAINER_ENTRY_POINTS = [
    "fast_sac = mlagents_plugins.sac.plugin:get_type_and_setting",
    "impala = mlagents_plugins.impala.plugin:get_type_and_setting",
    "muzero_repr = mlagents_plugins.muzero.plugin:get_type_and_setting",
    "taac = mlagents_plugins.taac.plugin:get_type_and_setting",
]

setup(
    name="mlagents-plugins",
    version="0.1.0",
    description="Trainer plugins for Unity ML-Agents: fast SAC, TAAC, IMPALA, MuZero-style representation learning",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["mlagents_plugins", "mlagents_plugins.*"]),
    include_package_data=True,
    python_requires=">=3.10",
    install_requires=[
        "mlagents==1.1.0",
        "mlagents-envs==1.1.0",
        "torch>=2.1.1",
        "numpy>=1.23.5,<1.24",
        "pyyaml>=3.1",
        "attrs>=19.3",
        "cattrs>=1.1,<1.7",
        "grpcio>=1.11",
        "protobuf>=3.6,<3.21",
        "onnx==1.15.0",
        "Pillow>=4.2.1",
    ],
    extras_require={"test": ["pytest>=7", "onnxruntime>=1.15", "matplotlib>=3.5"], "bench": ["matplotlib>=3.5"],
                    # Plain ray core (no extras): ray[default] needs protobuf >= 5, mlagents 1.1.0 needs < 3.21.
                    "ray": ["ray>=2.40,<3"]},
    entry_points={
        "mlagents.trainer_type": TRAINER_ENTRY_POINTS,
        # Loaded by every mlagents-learn run: restores the TorchScript ONNX exporter (see onnx_export.py)
        # for the built-in trainers too, even when no trainer of ours is used.
        "mlagents.stats_writer": ["mlagents_plugins = mlagents_plugins.plugin_hooks:stats_writers"],
        "console_scripts": [
            "mlagents-plugins-scene = mlagents_plugins.envs.standin:main",
            "mlagents-plugins-replay = mlagents_plugins.replay.cli:main",
            # mlagents-learn with --ray-* options: environment copies on a Ray cluster (see README "Many machines").
            "mlagents-plugins-learn = mlagents_plugins.ray_envs.cli:main",
        ],
    },
)
